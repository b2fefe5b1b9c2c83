use tool_service::tool_service;

/// Tell a joke.
#[tool_service(topic = "joke", queue = "non-persistent://tg/request/joke")]
async fn tell_joke() -> String {
    String::from("a joke")
}

fn main() {}
