use tool_service::tool_service;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct JokeConfig {
    style: Option<String>,
}

/// Tell a joke.
#[tool_service(topic = "joke")]
async fn tell_joke(#[config] first: JokeConfig, #[config] second: JokeConfig) -> String {
    format!("{:?} {:?}", first.style, second.style)
}

fn main() {}
