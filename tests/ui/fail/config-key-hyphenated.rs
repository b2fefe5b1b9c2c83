use tool_service::tool_service;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
struct IndexConfig {
    index_url: String,
}

/// Search an index.
#[tool_service(topic = "search", tool(name = "search-docs", config(index-url = "https://index.example")))]
async fn search(#[config] config: IndexConfig) -> String {
    config.index_url
}

fn main() {}
