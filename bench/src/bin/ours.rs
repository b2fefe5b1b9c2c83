//! The benchmarked tools written with `#[tool_service]`, run with `serve`.

use tool_service::{tool_service, ToolError};
use tool_service_bench::{joke, EchoArgs, JokeArgs, JokeConfig};

/// Echo the text back.
#[tool_service(topic = "bench-echo")]
async fn echo(#[args] args: EchoArgs) -> String {
    args.text
}

/// Tell a joke on a given topic.
#[tool_service(
    topic = "bench-joke",
    tool(name = "bench-tell-joke", config(style = "pun"))
)]
async fn tell_joke(
    #[config] config: JokeConfig,
    #[args] args: JokeArgs,
) -> Result<String, ToolError> {
    if args.topic.is_empty() {
        return Err(ToolError::new("give a topic"));
    }
    Ok(joke(&args.topic, config.style.as_deref().unwrap_or("pun")))
}

fn main() -> std::process::ExitCode {
    tool_service::run()
}
