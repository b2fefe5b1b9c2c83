//! The spec's `custom-rag` service: one service behind two tools, each with
//! its own `collection`.
//!
//! ```text
//! cargo run --example custom_rag
//! cargo run --example custom_rag -- call query-customers --args '{"question": "who ordered gears?"}'
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_service::{tool_service, ToolError};

/// What a tool of this service fixes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct RagConfig {
    /// The collection to search.
    pub collection: String,
    /// How many passages to return.
    #[serde(default = "default_limit")]
    pub max_results: usize,
}

fn default_limit() -> usize {
    3
}

/// What the LLM asks.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct QueryArgs {
    /// The question to answer from the collection.
    pub question: String,
}

/// One passage found.
#[derive(Debug, Serialize, PartialEq)]
pub struct Passage {
    /// Where it comes from.
    pub source: String,
    /// The text.
    pub text: String,
}

const CUSTOMERS: [(&str, &str); 3] = [
    ("crm/acme", "Acme Corp ordered 400 gears in March."),
    ("crm/globex", "Globex asked for a quote on springs."),
    ("crm/initech", "Initech renewed its support contract."),
];

const PRODUCTS: [(&str, &str); 3] = [
    (
        "catalog/gear",
        "Gears come in brass and steel, 10 to 200 teeth.",
    ),
    ("catalog/spring", "Springs are rated from 5 N to 500 N."),
    ("catalog/bolt", "Bolts ship in boxes of 100."),
];

/// Answer questions from a custom knowledge collection.
#[tool_service(
    topic = "custom-rag",
    id = "custom-rag",
    tool(
        name = "query-customers",
        description = "Query the customer knowledge base",
        config(collection = "customers"),
        arguments(question = "The question to ask about customers")
    ),
    tool(
        name = "query-products",
        description = "Query the product knowledge base",
        config(collection = "products", "max-results" = 2),
        arguments(question = "The question to ask about products")
    )
)]
pub async fn custom_rag(
    #[config] config: &RagConfig,
    #[args] args: QueryArgs,
) -> Result<Vec<Passage>, ToolError> {
    let documents: &[(&str, &str)] = match config.collection.as_str() {
        "customers" => &CUSTOMERS,
        "products" => &PRODUCTS,
        other => {
            return Err(ToolError::with_type(
                "not-found",
                format!("no collection named `{other}`"),
            ))
        }
    };
    let words: Vec<String> = args
        .question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| word.len() > 3)
        .map(str::to_lowercase)
        .collect();
    let mut hits: Vec<(usize, Passage)> = documents
        .iter()
        .map(|(source, text)| {
            let lower = text.to_lowercase();
            let score = words
                .iter()
                .filter(|word| lower.contains(word.trim_end_matches('s')))
                .count();
            (
                score,
                Passage {
                    source: (*source).into(),
                    text: (*text).into(),
                },
            )
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    hits.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    Ok(hits
        .into_iter()
        .take(config.max_results)
        .map(|(_, passage)| passage)
        .collect())
}

fn main() -> std::process::ExitCode {
    tool_service::run!()
}

/// The one-line guard: `cargo test` fails, with the message the binary would
/// print, when a service or tool preset has a mistake the compiler cannot
/// see.
#[test]
fn tool_services_are_valid() {
    tool_service::Registry::collect().unwrap();
}
