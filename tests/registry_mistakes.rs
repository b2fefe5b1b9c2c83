//! Mistakes the macro cannot see are caught when the registry is collected,
//! all at once, each naming both definitions or the tool at fault.

use schemars::JsonSchema;
use serde::Deserialize;
use tool_service::{tool_service, Problem, Registry};

mod first {
    use super::*;

    /// A service.
    #[tool_service(topic = "shared-topic", id = "twice")]
    pub(crate) async fn one() {}
}

mod second {
    use super::*;

    /// The same id again.
    #[tool_service(topic = "other-topic", id = "twice", tool(name = "one"))]
    pub(crate) async fn two() {}

    /// The same request queue as `first::one`.
    #[tool_service(
        topic = "third",
        request_queue = "non-persistent://tg/request/shared-topic"
    )]
    pub(crate) async fn three() {}
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RagConfig {
    collection: String,
    #[serde(default)]
    limit: u32,
}

/// Presets that do not fit the config struct.
#[tool_service(
    topic = "rag",
    tool(name = "unknown-param", config(collection = "c", colection = "typo")),
    tool(name = "missing-required", config(limit = 3)),
    tool(name = "wrong-type", config(collection = 5)),
    tool(name = "good", config(collection = "c"))
)]
pub async fn rag(#[config] config: RagConfig) -> String {
    format!("{} {}", config.collection, config.limit)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Undocumented {
    pub text: String,
}

/// Arguments without descriptions.
#[tool_service(topic = "undocumented")]
pub async fn undocumented(#[args] args: Undocumented) -> String {
    args.text
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Reserved {
    pub name: Option<String>,
}

/// A config param named like a tool field.
#[tool_service(topic = "reserved")]
pub async fn reserved(#[config] config: Reserved) -> String {
    config.name.unwrap_or_default()
}

#[test]
fn every_problem_is_reported_at_once() {
    let error = Registry::collect().unwrap_err();
    let messages: Vec<String> = error.problems().iter().map(ToString::to_string).collect();
    let find = |needle: &str| {
        messages
            .iter()
            .find(|message| message.contains(needle))
            .unwrap_or_else(|| panic!("no problem mentions {needle:?}: {messages:#?}"))
            .clone()
    };

    let duplicate_id = find("service id `twice` is defined twice");
    assert!(
        duplicate_id.contains("registry_mistakes::first::one (tests/registry_mistakes.rs:"),
        "{duplicate_id}"
    );
    assert!(
        duplicate_id.contains("registry_mistakes::second::two (tests/registry_mistakes.rs:"),
        "{duplicate_id}"
    );

    let duplicate_tool = find("tool name `one` is defined twice");
    assert!(
        duplicate_tool.contains("first::one") && duplicate_tool.contains("second::two"),
        "{duplicate_tool}"
    );

    let duplicate_queue =
        find("request queue `non-persistent://tg/request/shared-topic` is used twice");
    assert!(
        duplicate_queue.contains("first::one") && duplicate_queue.contains("second::three"),
        "{duplicate_queue}"
    );

    assert_eq!(
        find("`colection`"),
        "tool `unknown-param`: `colection` is not a config param of service `rag-service` (known: collection, limit)"
    );
    assert_eq!(
        find("tool `missing-required`"),
        "tool `missing-required`: required config param `collection` of service `rag-service` is not set; add `config(collection = …)` to the tool"
    );
    let wrong_type = find("tool `wrong-type`");
    assert!(
        wrong_type.contains("field `collection`: invalid type: integer `5`, expected a string"),
        "{wrong_type}"
    );
    assert!(
        !messages
            .iter()
            .any(|message| message.contains("tool `good`")),
        "{messages:#?}"
    );

    assert_eq!(
        find("argument `text`"),
        "tool `undocumented`: argument `text` has no description; add a doc comment to its field or `arguments(text = \"…\")` to the tool"
    );
    assert!(find("config param `name` collides").starts_with("service `reserved-service`"));

    assert_eq!(messages.len(), 8, "{messages:#?}");
    let descriptor_problems = error
        .problems()
        .iter()
        .filter(|problem| matches!(problem, Problem::Descriptor(_)));
    assert_eq!(descriptor_problems.count(), 5);
    assert!(error
        .to_string()
        .starts_with("8 problems in the registered tool services:"));
}

#[test]
fn the_cargo_test_guard_fails_with_the_binarys_message() {
    let panic = std::panic::catch_unwind(|| {
        tool_service::Registry::collect().unwrap();
    })
    .unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    let error = Registry::collect().unwrap_err().to_string();
    assert!(
        error.starts_with("8 problems in the registered tool services:\n  - "),
        "{error}"
    );
    assert_eq!(
        message,
        &format!("called `Result::unwrap()` on an `Err` value: {error}")
    );
}
