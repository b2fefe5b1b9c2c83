#[path = "../support.rs"]
mod support;

use serde_json::json;
use tool_service::tool_service;

/// Describe a thing.
///
/// # Arguments
/// * `type` - The kind of thing.
#[tool_service(topic = "describe", tool(config(r#match = "exact")))]
async fn describe(r#type: String, #[config_param] r#match: String) -> String {
    format!("{type} {match}", type = r#type, match = r#match)
}

fn main() {
    let tree = support::descriptors();
    assert_eq!(tree["tool"]["describe"]["arguments"][0]["name"], "type");
    assert_eq!(tree["tool"]["describe"]["match"], "exact");
    assert_eq!(support::response("describe", json!({}), json!({"type": "fruit"})), "fruit exact");
}
