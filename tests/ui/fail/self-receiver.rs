use tool_service::tool_service;

struct Comedian;

impl Comedian {
    /// Tell a joke.
    #[tool_service(topic = "joke")]
    async fn tell_joke(&self) -> String {
        String::from("a joke")
    }
}

fn main() {}
