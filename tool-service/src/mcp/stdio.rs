//! MCP over standard input and output: one client, the process's own.

use rmcp::ServiceExt;

use super::{McpOptions, McpServer, SchemaFlavor};
use crate::host::{Host, Transport, TransportRun};

/// Serves MCP over standard input and output until the client closes them
/// or the host's drain begins; then lets calls in flight finish (the
/// host's drain). Nothing else may write to standard output.
///
/// # Errors
/// The transport failed to start (the `initialize` handshake did not
/// complete).
async fn serve_stdio(server: McpServer) -> Result<(), std::io::Error> {
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
        () = server.host().draining() => {
            server.set_serving(false);
            server.host().drained().await;
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
    server: McpOptions,
}

impl StdioTransport {
    /// The server's name and version in `initialize` (this crate's until
    /// set).
    #[must_use]
    pub fn named(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.server.name = name.into();
        self.server.version = version.into();
        self
    }

    /// The JSON Schema dialect of the tools' schemas (the MCP
    /// specification's until set).
    #[must_use]
    pub fn schema_flavor(mut self, flavor: SchemaFlavor) -> Self {
        self.server.schema_flavor = flavor;
        self
    }
}

impl Transport for StdioTransport {
    fn name(&self) -> &'static str {
        "mcp"
    }
}

impl crate::host::sealed::Runs for StdioTransport {
    fn run(self: Box<Self>, host: Host) -> TransportRun {
        let server = McpServer::new(host, self.server);
        Box::pin(async move {
            serve_stdio(server).await?;
            Ok(Vec::new())
        })
    }
}
