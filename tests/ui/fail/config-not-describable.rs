use tool_service::tool_service;

#[derive(serde::Deserialize)]
struct JokeConfig {
    style: Option<String>,
}

/// Tell a joke.
#[tool_service(topic = "joke")]
async fn tell_joke(#[config] config: JokeConfig) -> String {
    config.style.unwrap_or_default()
}

fn main() {}
