#[path = "../support.rs"]
mod support;

use std::borrow::Cow;

use serde_json::json;
use tool_service::{tool_service, ToolError, TypedError};

#[derive(Debug, thiserror::Error)]
enum LookupError {
    #[error("no entry named {0}")]
    Missing(String),
}

impl TypedError for LookupError {
    fn error_type(&self) -> Cow<'static, str> {
        "not-found".into()
    }
}

/// Look up an entry.
///
/// # Arguments
/// * `key` - The key.
#[tool_service(topic = "lookup")]
async fn lookup(key: String) -> Result<String, LookupError> {
    Err(LookupError::Missing(key))
}

/// Fail with a plain message.
///
/// # Arguments
/// * `why` - The reason.
#[tool_service(topic = "plain")]
async fn plain(why: String) -> Result<u8, String> {
    Err(why)
}

/// Fail with a chosen type.
#[tool_service(topic = "chosen")]
async fn chosen() -> Result<(), ToolError> {
    Err(ToolError::with_type("rate-limited", "slow down"))
}

/// Panic.
///
/// # Arguments
/// * `now` - Whether to panic.
#[tool_service(topic = "panics")]
async fn panics(now: bool) -> String {
    if now {
        panic!("the handler gave up");
    }
    String::from("fine")
}

fn main() {
    let error = support::error("lookup", json!({}), json!({"key": "k"}));
    assert_eq!((error.kind(), error.message()), ("not-found", "no entry named k"));
    let error = support::error("plain", json!({}), json!({"why": "because"}));
    assert_eq!((error.kind(), error.message()), ("tool-service-error", "because"));
    let error = support::error("chosen", json!({}), json!({}));
    assert_eq!((error.kind(), error.message()), ("rate-limited", "slow down"));
    std::panic::set_hook(std::boxed::Box::new(|_| {}));
    let error = support::error("panics", json!({}), json!({"now": true}));
    assert_eq!((error.kind(), error.message()), ("handler-panic", "the tool handler panicked: the handler gave up"));
    assert_eq!(support::response("panics", json!({}), json!({"now": false})), "fine");
}
