#![deny(warnings, unused_qualifications, unused_results, missing_debug_implementations)]
#![deny(clippy::all)]

use serde::Deserialize;
use tool_service::{tool_service, Chunks, Context, ToolError};

// Names a careless expansion would pick up instead of the real ones.
#[allow(dead_code)]
struct Box;
#[allow(dead_code)]
struct Option;
#[allow(dead_code)]
struct String;
#[allow(dead_code)]
enum Result {
    Ok,
    Err,
}

/// Config.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct Config {
    style: core::option::Option<std::string::String>,
}

/// Everything, under strict lints.
///
/// # Arguments
/// * `topic` - The topic.
#[tool_service(topic = "strict", concurrency = 4, timeout = "5s", rate = "10/s", tool(name = "strict-a"), tool(name = "strict-b", description = "B"))]
pub async fn strict(
    #[config] config: Config,
    topic: std::string::String,
    #[config_param] extra: core::option::Option<u8>,
    #[context] ctx: Context,
    #[stream] out: &Chunks,
) -> core::result::Result<std::string::String, ToolError> {
    out.send(topic.clone()).await.map_err(|error| ToolError::new(error.to_string()))?;
    Ok(format!("{:?} {topic} {extra:?} {}", config.style, ctx.service_id()))
}

fn main() {}
