use tool_service::tool_service;

const TOPIC: &str = "joke";

/// Tell a joke.
#[tool_service(topic = TOPIC)]
async fn tell_joke() -> String {
    String::from("a joke")
}

fn main() {}
