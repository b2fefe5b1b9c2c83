#[path = "../support.rs"]
mod support;

use serde_json::json;
use tool_service::tool_service;

/// Forecast the weather.
///
/// # Arguments
/// * `city` - Where.
/// * `days` - How many days ahead.
/// * `unit` - The temperature unit.
/// * `margin` - How sure, as a share.
/// * `tags` - Labels for the report.
/// * `hourly` - Whether to list every hour.
#[tool_service(topic = "bounded-forecast")]
async fn forecast(
    #[arg(length(min = 1, max = 40))] city: String,
    #[arg(range(min = 1, max = 30), default = 7)] days: u32,
    #[arg(default = "celsius")] unit: String,
    #[arg(range(min = 0.5, max = 1), default = 1)] margin: f64,
    #[arg(length(max = 3))] tags: Option<Vec<String>>,
    #[arg(default = false)] hourly: bool,
) -> String {
    format!("{city} {days} {unit} {margin} {tags:?} {hourly}")
}

fn main() {
    let tree = support::descriptors();
    let arguments = tree["tool"]["forecast"]["arguments"].as_array().unwrap();
    let described = |name: &str| {
        arguments
            .iter()
            .find(|argument| argument["name"] == name)
            .unwrap()["description"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(described("city"), "Where. 1 to 40 characters.");
    assert_eq!(
        described("days"),
        "How many days ahead. Optional. From 1 to 30. Default: `7`."
    );
    assert_eq!(
        described("unit"),
        "The temperature unit. Optional. Default: `celsius`."
    );
    assert_eq!(
        described("margin"),
        "How sure, as a share. Optional. From 0.5 to 1. Default: `1`."
    );
    assert_eq!(
        described("tags"),
        "Labels for the report. Optional. A list of strings. At most 3 items."
    );
    // Left out: the defaults.
    assert_eq!(
        support::response("forecast", json!({}), json!({"city": "Oslo"})),
        "Oslo 7 celsius 1 None false"
    );
    assert_eq!(
        support::response(
            "forecast",
            json!({}),
            json!({"city": "Oslo", "days": "3", "unit": "kelvin", "margin": 0.5, "tags": ["a"], "hourly": true})
        ),
        "Oslo 3 kelvin 0.5 Some([\"a\"]) true"
    );
    // A length counts characters as JSON Schema's `minLength` does,
    // spaces too (the attribute guide says so, and how to ask for text
    // that is not blank).
    assert_eq!(
        support::response("forecast", json!({}), json!({"city": "   "})),
        "    7 celsius 1 None false"
    );
    // Outside a bound: an argument error in the description's words.
    for (arguments, message) in [
        (json!({"city": "Oslo", "days": 40}), "`days` must be an integer from 1 to 30; got 40"),
        (json!({"city": ""}), "`city` must be a text of 1 to 40 characters; got the text \"\""),
        (json!({"city": "Oslo", "margin": 0.1}), "`margin` must be a number from 0.5 to 1; got 0.1"),
        (
            json!({"city": "Oslo", "tags": ["a", "b", "c", "d"]}),
            "`tags` must be a list of at most 3 items, each a text; got a list of 4 items",
        ),
    ] {
        let error = support::error("forecast", json!({}), arguments);
        assert_eq!(error.kind(), tool_service::ToolError::INVALID_ARGUMENTS);
        assert_eq!(error.message(), format!("invalid arguments: {message}"));
    }
}
