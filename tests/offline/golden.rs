//! The wire vectors of the contract decode and encode as TrustGraph's do.

use serde_json::Value;
use tool_service::descriptor::{ToolDescriptor, ToolServiceDescriptor};
use tool_service::wire::{Frame, Request};
use tool_service::ToolError;

fn golden(name: &str) -> String {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn json(name: &str) -> Value {
    serde_json::from_str(&golden(name)).unwrap()
}

#[test]
fn requests_of_both_generations_decode() {
    let original = Request::decode(golden("request-original.json").as_bytes()).unwrap();
    assert_eq!(original.user.as_deref(), Some("alice"));
    assert_eq!(original.config, r#"{"style": "pun"}"#);
    assert_eq!(original.arguments, r#"{"topic": "programming"}"#);
    let current = Request::decode(golden("request-trustgraph-2.json").as_bytes()).unwrap();
    assert_eq!(current.user, None);
    assert_eq!(current.arguments, original.arguments);
}

#[test]
fn response_frames_encode_exactly() {
    let success = Frame::last(Ok("Here's a pun for you: …".into()));
    assert_eq!(
        serde_json::from_slice::<Value>(&success.encode()).unwrap(),
        json("response-success.json")
    );
    let failure = Frame::last(Err(ToolError::new("…")));
    assert_eq!(
        serde_json::from_slice::<Value>(&failure.encode()).unwrap(),
        json("response-error.json")
    );
    let decoded = Frame::decode(golden("response-error.json").as_bytes()).unwrap();
    assert_eq!(decoded, failure);
}

#[test]
fn descriptors_round_trip() {
    for name in ["joke-service.json", "custom-rag.json"] {
        let descriptor: ToolServiceDescriptor = serde_json::from_value(json(name)).unwrap();
        assert_eq!(
            serde_json::to_value(&descriptor).unwrap(),
            json(name),
            "{name}"
        );
    }
    for name in [
        "tell-joke.json",
        "query-customers.json",
        "query-products.json",
    ] {
        let descriptor: ToolDescriptor = serde_json::from_value(json(name)).unwrap();
        assert_eq!(
            serde_json::to_value(&descriptor).unwrap(),
            json(name),
            "{name}"
        );
    }
}
