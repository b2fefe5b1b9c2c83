// Shared by the compile-pass cases: call a tool in-process and read descriptors.
#![allow(dead_code)]

use tool_service::wire::{Frame, Request};
use tool_service::Registry;

pub fn registry() -> Registry {
    Registry::collect().unwrap_or_else(|error| panic!("{error}"))
}

pub fn call(name: &str, config: serde_json::Value, arguments: serde_json::Value) -> Vec<Frame> {
    call_as(name, None, config, arguments)
}

pub fn call_as(name: &str, user: Option<&str>, config: serde_json::Value, arguments: serde_json::Value) -> Vec<Frame> {
    let mut request = Request::new(config, arguments);
    request.user = user.map(str::to_owned);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(registry().call(name, "test-id", request))
        .unwrap()
}

pub fn response(name: &str, config: serde_json::Value, arguments: serde_json::Value) -> String {
    let frames = call(name, config, arguments);
    let last = frames.last().expect("a last frame");
    assert!(last.end_of_stream);
    if let Some(error) = &last.error {
        panic!("unexpected error frame: {error:?}");
    }
    last.response.clone()
}

pub fn error(name: &str, config: serde_json::Value, arguments: serde_json::Value) -> tool_service::ToolError {
    let frames = call(name, config, arguments);
    assert_eq!(frames.len(), 1);
    frames[0].error.clone().expect("an error frame")
}

pub fn descriptors() -> serde_json::Value {
    serde_json::to_value(registry().descriptors()).unwrap()
}
