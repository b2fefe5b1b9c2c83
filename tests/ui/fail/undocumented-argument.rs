use tool_service::tool_service;

/// Tell a joke.
///
/// # Arguments
/// * `topic` - The topic for the joke.
#[tool_service(topic = "joke")]
async fn tell_joke(topic: String, audience: String) -> String {
    format!("a joke about {topic} for {audience}")
}

fn main() {}
