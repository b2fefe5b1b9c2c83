use tool_service::tool_service;

/// Tell a joke.
///
/// # Arguments
/// * `topic` - The topic.
#[tool_service(topic = "joke")]
async fn tell_joke(topic: &str) -> String {
    topic.to_owned()
}

fn main() {}
