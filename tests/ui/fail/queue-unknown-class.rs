/// Tell a joke.
#[tool_service::tool_service(topic = "joke", request_queue = "query:tg:joke")]
async fn joke() -> &'static str {
    "a pun"
}

fn main() {}
