//! `#[state]` parameters, borrowed or as an `Arc`, several per service, and
//! one value shared by two services.
use std::sync::Arc;

use tool_service::{tool_service, wire::Request, Registry, State};

pub struct Greeting(&'static str);
pub struct Counter(std::sync::atomic::AtomicU64);

/// Greet.
///
/// # Arguments
/// * `name` - Who.
#[tool_service(topic = "greet")]
async fn greet(#[state] greeting: &Greeting, name: String, #[state] counter: Arc<Counter>) -> String {
    counter.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{} {name}", greeting.0)
}

/// How many greetings so far.
#[tool_service(topic = "greetings")]
async fn greetings(#[state] counter: &Counter) -> u64 {
    counter.0.load(std::sync::atomic::Ordering::Relaxed)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let registry = Registry::collect().unwrap().with_state(
        State::new()
            .with(Greeting("Hello,"))
            .with(Counter(std::sync::atomic::AtomicU64::new(0))),
    );
    let call = |name: &str, arguments: serde_json::Value| {
        let frames = runtime
            .block_on(registry.call(name, "id", Request::new(serde_json::json!({}), arguments)))
            .unwrap();
        frames[0].response.clone()
    };
    assert_eq!(call("greet", serde_json::json!({"name": "Ada"})), "Hello, Ada");
    assert_eq!(call("greetings", serde_json::json!({})), "1");
    let types: Vec<_> = registry.service("greet-service").unwrap().state_types().collect();
    assert_eq!(types.len(), 2);
    // Without the values, the services cannot start, and say why.
    let bare = Registry::collect().unwrap();
    let error = bare.check_state(bare.services().iter().copied()).unwrap_err().to_string();
    assert!(error.contains("service `greet-service` takes a `"), "{error}");
    assert!(error.contains("Greeting` as #[state], and none was provided"), "{error}");
}
