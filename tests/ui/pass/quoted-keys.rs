// Keys that are not identifiers are written as strings, in `config(…)` and
// in `arguments(…)` alike.
#[path = "../support.rs"]
mod support;

use serde_json::json;
use tool_service::tool_service;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
struct IndexConfig {
    index_url: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
struct SearchArgs {
    /// What to search for.
    search_text: String,
    max_results: Option<u32>,
}

/// Search an index.
#[tool_service(
    topic = "search",
    tool(
        name = "search-docs",
        config("index-url" = "https://docs.example"),
        arguments("max-results" = "How many hits to return, at most")
    )
)]
async fn search(#[config] config: IndexConfig, #[args] args: SearchArgs) -> String {
    format!("{} {} {:?}", config.index_url, args.search_text, args.max_results)
}

fn main() {
    let tree = support::descriptors();
    let tool = &tree["tool"]["search-docs"];
    assert_eq!(tool["index-url"], "https://docs.example");
    assert_eq!(tool["arguments"][1]["name"], "max-results");
    // The preset's description, then what the schema adds (`Option<u32>`).
    assert_eq!(
        tool["arguments"][1]["description"],
        "How many hits to return, at most. Optional. At least 0."
    );
    assert_eq!(
        support::response("search-docs", json!({}), json!({"search-text": "rust", "max-results": 3})),
        "https://docs.example rust Some(3)"
    );
}
