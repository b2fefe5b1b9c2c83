use tool_service::tool_service;

/// Tell a joke.
///
/// # Arguments
/// * `topic` - The topic for the joke.
/// * `tpoic` - A typo.
#[tool_service(topic = "joke")]
async fn tell_joke(topic: String) -> String {
    topic
}

fn main() {}
