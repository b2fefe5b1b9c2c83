use tool_service::tool_service;

/// Tell a joke.
#[tool_service(topic = "joke", rate = "0/s")]
async fn tell_joke() -> String {
    String::from("a joke")
}

/// Tell a fast joke.
#[tool_service(topic = "fast-joke", rate = "100 per second")]
async fn tell_fast_joke() -> String {
    String::from("a joke")
}

/// Tell a counted joke.
#[tool_service(topic = "counted-joke", rate = 100)]
async fn tell_counted_joke() -> String {
    String::from("a joke")
}

/// Tell a daily joke.
#[tool_service(topic = "daily-joke", rate = "10/d")]
async fn tell_daily_joke() -> String {
    String::from("a joke")
}

fn main() {}
