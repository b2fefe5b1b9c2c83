use tool_service::tool_service;

/// Tell a joke.
///
/// # Arguments
/// * `topic` - The topic.
#[tool_service(topic = "joke", tool(name = "tell-joke", arguments(subject = "What to joke about")))]
async fn tell_joke(topic: String) -> String {
    topic
}

fn main() {}
