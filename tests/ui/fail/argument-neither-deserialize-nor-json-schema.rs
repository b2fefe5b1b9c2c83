use tool_service::tool_service;

struct Topic(String);

/// Tell a joke.
///
/// # Arguments
/// * `topic` - The topic.
#[tool_service(topic = "joke")]
async fn tell_joke(topic: Topic) -> String {
    topic.0
}

fn main() {}
