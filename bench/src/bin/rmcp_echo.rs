//! The MCP baseline: the benchmark's echo tool written with rmcp's own
//! `#[tool]` macros, served as rmcp's documentation serves a tool: its
//! `StreamableHttpService` with the default configuration but for sessions
//! (none, as `ours mcp` keeps none), on hyper (HTTP/1.1, `/mcp`), or on
//! stdio.
//!
//! ```text
//! rmcp_echo --listen 127.0.0.1:8901
//! rmcp_echo --stdio
//! ```

use std::sync::Arc;

use hyper_util::rt::TokioIo;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{tool, tool_router, ServiceExt};

/// The echo tool's arguments.
#[derive(serde::Deserialize, rmcp::schemars::JsonSchema)]
struct EchoArgs {
    /// What to echo.
    text: String,
}

/// The server: one tool.
#[derive(Clone)]
struct Echo;

#[tool_router(server_handler)]
impl Echo {
    #[tool(name = "echo", description = "Echo the text back.")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|arg| arg == "--stdio") {
        let running = Echo.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        return Ok(());
    }
    let listen = args
        .iter()
        .position(|arg| arg == "--listen")
        .and_then(|at| args.get(at + 1))
        .ok_or("usage: rmcp_echo --listen HOST:PORT | --stdio")?;
    // Without sessions, as `ours mcp` serves: like against like.
    let mcp = StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_legacy_session_mode(false),
    );
    let listener = tokio::net::TcpListener::bind(listen).await?;
    eprintln!("rmcp_echo: serving MCP on http://{listen}/mcp");
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let mcp = mcp.clone();
        let service =
            hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let mut mcp = mcp.clone();
                async move { tower_service::Service::call(&mut mcp, request).await }
            });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
