use tool_service::tool_service;

/// Tell a joke.
#[tool_service(topc = "joke")]
async fn tell_joke() -> String {
    String::from("a joke")
}

fn main() {}
