#[path = "../support.rs"]
mod support;

mod facade {
    pub use ::tool_service as runtime;
}

use serde_json::json;

/// Reach the runtime through a re-export.
///
/// # Arguments
/// * `text` - The text.
#[facade::runtime::tool_service(topic = "facade", crate = "crate::facade::runtime")]
async fn shout(text: String) -> String {
    text.to_uppercase()
}

fn main() {
    assert_eq!(support::response("shout", json!({}), json!({"text": "hi"})), "HI");
}
