use tool_service::tool_service;

const STYLE: &str = "pun";

/// Tell a joke.
#[tool_service(topic = "joke", tool(config(style = STYLE)))]
async fn tell_joke(#[config_param] style: Option<String>) -> String {
    style.unwrap_or_default()
}

fn main() {}
