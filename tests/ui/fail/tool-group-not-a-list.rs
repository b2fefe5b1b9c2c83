use tool_service::tool_service;

/// Tell a joke.
#[tool_service(topic = "joke", tool(name = "tell-joke", group = "ops"))]
async fn tell_joke() -> String {
    String::from("a joke")
}

fn main() {}
