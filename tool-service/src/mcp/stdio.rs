//! MCP over standard input and output: one client, the process's own.

use std::future::Future;

use rmcp::ServiceExt;

use super::{Identity, McpServer, SchemaFlavor};
use crate::host::{Host, Sealed, Transport, TransportRun};

/// Serves MCP over standard input and output until the client closes them
/// or `shutdown` completes; then lets calls in flight finish within the
/// host's grace period. Nothing else may write to standard output.
///
/// # Errors
/// The transport failed to start (the `initialize` handshake did not
/// complete).
pub async fn serve_stdio(
    server: McpServer,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), std::io::Error> {
    let running = server
        .clone()
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    server.set_serving(true);
    let token = running.cancellation_token();
    tokio::select! {
        ended = running.waiting() => {
            ended.map_err(std::io::Error::other)?;
        }
        () = shutdown => {
            server.drain(server.host().grace_period()).await;
            token.cancel();
        }
    }
    Ok(())
}

/// MCP on standard input and output as one of a host's transports (see
/// [`Transports`](crate::host::Transports)): when the client closes them,
/// the host's other transports stop too.
#[derive(Debug, Default)]
pub struct StdioTransport {
    identity: Identity,
}

impl StdioTransport {
    /// The server's name and version in `initialize` (this crate's until
    /// set).
    #[must_use]
    pub fn named(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.identity.named(name, version);
        self
    }

    /// The JSON Schema dialect of the tools' schemas (the MCP
    /// specification's until set).
    #[must_use]
    pub fn schema_flavor(mut self, flavor: SchemaFlavor) -> Self {
        self.identity.schema_flavor = flavor;
        self
    }
}

impl Transport for StdioTransport {
    fn name(&self) -> &'static str {
        "mcp"
    }

    fn run(self: Box<Self>, host: Host, _: Sealed) -> TransportRun {
        let server = self.identity.server(&host);
        Box::pin(async move {
            serve_stdio(server, host.draining()).await?;
            Ok(())
        })
    }
}
