use tool_service::tool_service;

/// Tell a joke.
#[tool_service(topic = "joke", tool(name = "tell-joke", config(stlye = "pun")))]
async fn tell_joke(#[config_param] style: Option<String>) -> String {
    style.unwrap_or_default()
}

fn main() {}
