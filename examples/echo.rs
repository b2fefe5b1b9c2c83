//! Three small services in one binary: `echo` (optionally slow), `whoami`,
//! which says which replica answered, and `wait`, which gives up after its
//! timeout. Handy to try `serve`, scaling out, timeouts and graceful shutdown.
//!
//! ```text
//! cargo run --example echo -- serve
//! cargo run --example echo -- call echo --args '{"text": "hi", "delay_ms": 200}'
//! ```

use std::time::Duration;

use serde::Serialize;
use tool_service::{tool_service, Context};

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

/// Who asked, and which replica answered.
#[derive(Debug, Serialize)]
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

fn main() -> std::process::ExitCode {
    tool_service::run()
}
