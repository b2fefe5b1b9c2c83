use std::cell::RefCell;

use tool_service::tool_service;

/// Count.
#[tool_service(topic = "count")]
async fn count(#[state] counter: &RefCell<u64>) -> u64 {
    *counter.borrow()
}

fn main() {}
