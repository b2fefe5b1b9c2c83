use tool_service::tool_service;

/// Tell a joke.
#[tool_service(topic = "joke")]
async fn tell_joke(#[config_param(rename = "joke-style")] style: Option<String>) -> String {
    style.unwrap_or_default()
}

fn main() {}
