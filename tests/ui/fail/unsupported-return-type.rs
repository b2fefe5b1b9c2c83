use tool_service::tool_service;

/// Tell a joke.
#[tool_service(topic = "joke")]
async fn tell_joke() -> impl std::fmt::Display {
    "a joke"
}

fn main() {}
