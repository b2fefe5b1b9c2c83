//! Queue names in TrustGraph's `class:topicspace:topic` form are served on
//! the topics TrustGraph's Pulsar backend maps them to, and descriptors
//! write them in that form.
use tool_service::Registry;

/// Tell a joke.
#[tool_service::tool_service(
    topic = "joke",
    request_queue = "request:tg:joke",
    response_queue = "response:tg:joke"
)]
async fn joke() -> &'static str {
    "a pun"
}

/// Work through a flow.
#[tool_service::tool_service(
    topic = "flowing",
    request_queue = "flow:acme:in:shard-1",
    response_queue = "notify:acme:out"
)]
async fn flowing() {}

fn main() {
    let registry = Registry::collect().unwrap();
    let joke = registry.service("joke-service").unwrap();
    assert_eq!(joke.request_queue(), "non-persistent://tg/request/joke");
    assert_eq!(joke.response_queue(), "non-persistent://tg/response/joke");
    let flowing = registry.service("flowing-service").unwrap();
    assert_eq!(flowing.request_queue(), "persistent://acme/flow/in:shard-1");
    assert_eq!(flowing.response_queue(), "non-persistent://acme/notify/out");
    let flowing = registry.service_descriptor("flowing-service").unwrap();
    assert_eq!(flowing.request_queue, "flow:acme:in:shard-1");
    assert_eq!(flowing.response_queue, "notify:acme:out");
}
