#[path = "../support.rs"]
mod support;

use serde_json::json;
use tool_service::tool_service;

/// Count, taking what an LLM writes.
///
/// # Arguments
/// * `limit` - How many.
#[tool_service(topic = "count")]
async fn count(limit: u32) -> String {
    limit.to_string()
}

/// Count, taking the arguments only as their types say.
///
/// # Arguments
/// * `limit` - How many.
#[tool_service(topic = "count-strictly", strict)]
async fn count_strictly(limit: u32) -> String {
    limit.to_string()
}

fn main() {
    assert_eq!(support::response("count", json!({}), json!({"limit": "5"})), "5");
    assert_eq!(support::response("count-strictly", json!({}), json!({"limit": 5})), "5");
    let refused = support::error("count-strictly", json!({}), json!({"limit": "5"}));
    assert_eq!(
        refused.message(),
        "invalid arguments: `limit` must be an integer of at least 0; got the text \"5\""
    );
}
