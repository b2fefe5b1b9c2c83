use tool_service::tool_service;

/// Tell a joke.
#[tool_service(topic = "joke")]
const fn tell_joke() -> &'static str {
    "a joke"
}

fn main() {}
