use tool_service::tool_service;

#[tool_service(topic = "joke")]
async fn tell_joke() -> String {
    String::from("a joke")
}

fn main() {}
