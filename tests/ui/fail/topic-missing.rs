use tool_service::tool_service;

/// Tell a joke.
#[tool_service(id = "joke-service")]
async fn tell_joke() -> String {
    String::from("a joke")
}

fn main() {}
