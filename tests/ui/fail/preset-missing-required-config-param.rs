use tool_service::tool_service;

/// Query a collection.
#[tool_service(topic = "rag", tool(name = "query-customers", config(limit = 5)))]
async fn query(#[config_param] collection: String, #[config_param] limit: Option<u32>) -> String {
    format!("{collection} {limit:?}")
}

fn main() {}
