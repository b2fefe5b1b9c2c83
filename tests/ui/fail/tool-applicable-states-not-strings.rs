use tool_service::tool_service;

/// Tell a joke.
#[tool_service(topic = "joke", tool(name = "tell-joke", applicable_states = [start]))]
async fn tell_joke() -> String {
    String::from("a joke")
}

fn main() {}
