//! Five small services in one binary: `echo` (optionally slow), the same on
//! persistent topics (`durable-echo`), `whoami`, which says which replica
//! answered, `wait`, which gives up after its timeout, and `blob`, which
//! returns (or streams) as many bytes as asked. Handy to try `serve`, scaling
//! out, redelivery, timeouts, graceful shutdown and the broker's maximum
//! message size.
//!
//! ```text
//! cargo run --example echo -- serve
//! cargo run --example echo -- call echo --args '{"text": "hi", "delay_ms": 200}'
//! cargo run --example echo -- call blob --args '{"bytes": 6000000}'   # response-too-large
//! ```

use std::time::Duration;

use serde::Serialize;
use tool_service::{tool_service, Chunks, Context, StreamClosed};

/// Echo the text back.
///
/// # Arguments
/// * `text` - The text to send back.
/// * `delay_ms` - Wait this many milliseconds first (default 0).
#[tool_service(topic = "echo")]
pub async fn echo(text: String, delay_ms: Option<u64>) -> String {
    if let Some(delay) = delay_ms.filter(|delay| *delay > 0) {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    text
}

/// Echo the text back, on persistent topics: a request that a replica took
/// but never answered (it was killed) is delivered again, to another replica.
///
/// # Arguments
/// * `text` - The text to send back.
/// * `delay_ms` - Wait this many milliseconds first (default 0).
#[tool_service(
    topic = "durable-echo",
    request_queue = "persistent://tg/request/durable-echo",
    response_queue = "persistent://tg/response/durable-echo"
)]
pub async fn durable_echo(text: String, delay_ms: Option<u64>) -> String {
    echo(text, delay_ms).await
}

/// Who asked, and which replica answered.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Identity {
    /// The calling user, if the request named one.
    pub user: Option<String>,
    /// The request id.
    pub request_id: String,
    /// The service id.
    pub service: &'static str,
    /// The process id of the replica that answered.
    pub pid: u32,
}

/// Say who asked and which replica answered.
#[tool_service(topic = "whoami")]
pub async fn whoami(#[context] ctx: Context) -> Identity {
    Identity {
        user: ctx.user().map(str::to_owned),
        request_id: ctx.request_id().to_owned(),
        service: ctx.service_id(),
        pid: std::process::id(),
    }
}

/// Split a text into its words. Read-only and closed-world, for MCP hosts
/// that decide by the hints whether to ask before a call.
///
/// # Arguments
/// * `text` - The text to split.
#[tool_service(
    topic = "words",
    annotations(read_only, open_world = false),
    tool(title = "Split into words")
)]
pub async fn words(text: String) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

/// Wait, then say how long. A request is cancelled and answered with a
/// `timeout` error after 2 s (`serve --timeout wait-service=…` changes that).
///
/// # Arguments
/// * `ms` - How many milliseconds to wait.
#[tool_service(topic = "wait", timeout = "2s")]
pub async fn wait(ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("waited {ms} ms")
}

/// Return a text of the given size, or stream it in chunks.
///
/// # Arguments
/// * `bytes` - How many bytes of text.
/// * `chunks` - Stream it as this many chunks of `bytes` each, then end
///   with "done" (default: no streaming, one response of `bytes`).
#[tool_service(topic = "blob")]
pub async fn blob(
    bytes: usize,
    chunks: Option<usize>,
    #[stream] out: Chunks,
) -> Result<String, StreamClosed> {
    match chunks {
        None => Ok("x".repeat(bytes)),
        Some(count) => {
            for _ in 0..count {
                out.send("x".repeat(bytes)).await?;
            }
            Ok(String::from("done"))
        }
    }
}

fn main() -> std::process::ExitCode {
    tool_service::run!()
}
