#[path = "../support.rs"]
mod support;

use serde::Deserialize;
use serde_json::json;
use tool_service::tool_service;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
struct SearchConfig {
    /// Index name.
    index_name: String,
    #[serde(rename = "k")]
    top_k: u32,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct SearchArgs {
    /// What to search for.
    search_text: String,
    /// Only this language.
    #[serde(rename = "lang")]
    language_code: Option<String>,
}

/// Search an index.
#[tool_service(topic = "search", tool(name = "search-docs", config("index-name" = "docs", k = 3)))]
async fn search(#[config] config: SearchConfig, #[args] args: SearchArgs) -> String {
    format!("{} {} {} {:?}", config.index_name, config.top_k, args.search_text, args.language_code)
}

fn main() {
    let tree = support::descriptors();
    assert_eq!(
        tree["tool-service"]["search-service"]["config-params"],
        json!([{"name": "index-name", "required": true}, {"name": "k", "required": true}])
    );
    let arguments = &tree["tool"]["search-docs"]["arguments"];
    assert_eq!(arguments[0]["name"], "searchText");
    assert_eq!(arguments[1]["name"], "lang");
    assert_eq!(tree["tool"]["search-docs"]["index-name"], "docs");
    assert_eq!(
        support::response("search-docs", json!({}), json!({"searchText": "rust", "lang": "en"})),
        "docs 3 rust Some(\"en\")"
    );
    let error = support::error("search-docs", json!({}), json!({"search_text": "rust"}));
    assert!(error.message().contains("`searchText` is missing; it must be a text"), "{error:?}");
}
