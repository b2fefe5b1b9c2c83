use tool_service::tool_service;

#[derive(schemars::JsonSchema)]
struct JokeConfig {
    style: String,
}

/// Tell a joke.
#[tool_service(topic = "joke", tool(config(style = "pun")))]
async fn tell_joke(#[config] config: JokeConfig) -> String {
    config.style
}

fn main() {}
