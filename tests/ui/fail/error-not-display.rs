use tool_service::tool_service;

#[derive(Debug)]
struct NoJoke;

/// Tell a joke.
#[tool_service(topic = "joke")]
async fn tell_joke() -> Result<String, NoJoke> {
    Err(NoJoke)
}

fn main() {}
