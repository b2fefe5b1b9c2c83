#[path = "../support.rs"]
mod support;

use serde_json::json;
use tool_service::{tool_service, Chunks, StreamClosed};

/// Count up.
///
/// # Arguments
/// * `to` - The last number.
#[tool_service(topic = "count")]
async fn count(to: u32, #[stream] out: Chunks) -> Result<(), StreamClosed> {
    for n in 1..=to {
        out.send(n.to_string()).await?;
    }
    Ok(())
}

fn main() {
    let frames = support::call("count", json!({}), json!({"to": 40}));
    assert_eq!(frames.len(), 41);
    for (n, frame) in frames[..40].iter().enumerate() {
        assert_eq!(frame.response, (n + 1).to_string());
        assert!(!frame.end_of_stream);
    }
    assert!(frames[40].end_of_stream);
    assert_eq!(frames[40].response, "");
    assert!(tool_service::Registry::collect().unwrap().service("count-service").unwrap().is_streaming());
}
