use tool_service::tool_service;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct JokeConfig {
    style: Option<String>,
}

/// Tell a joke.
#[tool_service(topic = "joke")]
async fn tell_joke(#[conifg] config: JokeConfig) -> String {
    config.style.unwrap_or_default()
}

fn main() {}
