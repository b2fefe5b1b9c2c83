use tool_service::tool_service;

/// Tell a joke.
#[tool_service(topic = "joke", colour = "blue", concurrency = 0, id = "joke service")]
fn tell_joke(topic: String) -> String {
    topic
}

fn main() {
    // The function is still there: no "cannot find function" follows.
    let _ = tell_joke(String::new());
}
