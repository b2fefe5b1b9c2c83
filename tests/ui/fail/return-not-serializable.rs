use tool_service::tool_service;

struct Joke {
    text: String,
}

/// Tell a joke.
#[tool_service(topic = "joke")]
async fn tell_joke() -> Joke {
    Joke { text: String::from("a joke") }
}

fn main() {}
