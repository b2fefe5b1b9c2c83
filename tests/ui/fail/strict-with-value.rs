use tool_service::tool_service;

/// Count.
///
/// # Arguments
/// * `limit` - How many.
#[tool_service(topic = "count", strict = true)]
async fn count(limit: u32) -> String {
    limit.to_string()
}

/// Count again.
///
/// # Arguments
/// * `limit` - How many.
#[tool_service(topic = "count-again", strict, strict)]
async fn count_again(limit: u32) -> String {
    limit.to_string()
}

fn main() {}
