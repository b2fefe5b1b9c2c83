use tool_service::tool_service;

/// Tell a joke.
#[tool_service(topic = "joke", timeout = "30")]
async fn tell_joke() -> String {
    String::from("a joke")
}

/// Tell a slow joke.
#[tool_service(topic = "slow-joke", timeout = 30)]
async fn tell_slow_joke() -> String {
    String::from("a joke")
}

/// Tell an instant joke.
#[tool_service(topic = "instant-joke", timeout = "0ms")]
async fn tell_instant_joke() -> String {
    String::from("a joke")
}

fn main() {}
