use tool_service::tool_service;

#[tool_service(topic = "joke")]
struct Joke;

fn main() {}
