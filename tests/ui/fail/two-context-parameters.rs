use tool_service::{tool_service, Context};

/// Tell a joke.
#[tool_service(topic = "joke")]
async fn tell_joke(#[context] ctx: Context, #[context] again: &Context) -> String {
    format!("{} {}", ctx.request_id(), again.request_id())
}

fn main() {}
