use tool_service::tool_service;

/// Tell a joke.
///
/// # Arguments
/// * `topic` - The topic.
#[tool_service(topic = "joke")]
async fn tell_joke<T: std::fmt::Display>(topic: T) -> String {
    format!("a joke about {topic}")
}

fn main() {}
