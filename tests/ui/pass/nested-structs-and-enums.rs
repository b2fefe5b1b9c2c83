#[path = "../support.rs"]
mod support;

use serde::{Deserialize, Serialize};
use serde_json::json;
use tool_service::tool_service;

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Unit {
    Celsius,
    Fahrenheit,
}

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct Place {
    city: String,
    country: Option<String>,
}

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct Forecast {
    place: Place,
    unit: Unit,
    days: Vec<u8>,
}

/// Echo a forecast request back as JSON.
///
/// # Arguments
/// * `place` - Where.
/// * `unit` - Which temperature unit.
/// * `days` - Which days ahead.
/// * `threshold` - Only report temperatures above this.
#[tool_service(topic = "forecast")]
async fn forecast(place: Place, unit: Unit, days: Vec<u8>, threshold: f64) -> Forecast {
    let _ = threshold;
    Forecast { place, unit, days }
}

fn main() {
    let tree = support::descriptors();
    let types: Vec<&str> = tree["tool"]["forecast"]["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|argument| argument["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["object", "string", "array", "number"]);
    let text = support::response(
        "forecast",
        json!({}),
        json!({"place": {"city": "Oslo"}, "unit": "celsius", "days": [1, 2], "threshold": 0.5}),
    );
    assert_eq!(text, r#"{"place":{"city":"Oslo","country":null},"unit":"celsius","days":[1,2]}"#);
    let error = support::error("forecast", json!({}), json!({"place": {"city": "Oslo"}, "unit": "kelvin", "days": [], "threshold": 1}));
    assert!(
        error.message().contains("`unit` must be one of: `celsius`, `fahrenheit`; got the text \"kelvin\""),
        "{error:?}"
    );
}
