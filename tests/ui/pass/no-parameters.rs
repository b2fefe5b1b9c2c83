#[path = "../support.rs"]
mod support;

use serde_json::json;
use tool_service::tool_service;

/// Ring the bell.
#[tool_service(topic = "bell")]
async fn ring() {}

fn main() {
    let tree = support::descriptors();
    assert_eq!(tree["tool-service"]["bell-service"]["config-params"], json!([]));
    assert_eq!(tree["tool"]["ring"]["arguments"], json!([]));
    assert_eq!(tree["tool"]["ring"]["description"], "Ring the bell.");
    assert_eq!(support::response("ring", json!({"ignored": 1}), json!({"extra": true})), "");
}
