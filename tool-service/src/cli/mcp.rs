//! The `mcp` command, and the MCP flags `serve --mcp-listen` shares with it.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::mcp::{HttpOptions, McpOptions, McpServer};
use crate::registry::Registry;

use super::{BoxError, CliResult, Meta};

/// How an MCP server over HTTP is reached: its token and the host names and
/// origins it answers.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct McpHttpArgs {
    /// Every request must carry this bearer token.
    #[command(flatten)]
    mcp_token: super::McpTokenArgs,
    /// Also answer requests whose `Host` is this name (repeatable; e.g. the
    /// service's name in a container network; `*` answers any). localhost,
    /// 127.0.0.1 and ::1 are always answered.
    #[arg(
        long,
        env = "TOOL_SERVICE_MCP_ALLOWED_HOST",
        value_delimiter = ',',
        value_name = "HOST"
    )]
    mcp_allowed_host: Vec<String>,
    /// Also accept browser requests from this origin, e.g.
    /// `https://app.example.com` (repeatable; local origins always pass).
    #[arg(
        long,
        env = "TOOL_SERVICE_MCP_ALLOWED_ORIGIN",
        value_delimiter = ',',
        value_name = "ORIGIN"
    )]
    mcp_allowed_origin: Vec<String>,
}

impl McpHttpArgs {
    /// The HTTP options, with the token read from its file.
    pub(super) fn options(&self, grace_period: Duration) -> Result<HttpOptions, BoxError> {
        let token = self.mcp_token.token()?;
        let defaults = HttpOptions::default();
        let allowed_hosts = defaults
            .allowed_hosts
            .iter()
            .chain(&self.mcp_allowed_host)
            .cloned()
            .collect();
        Ok(HttpOptions {
            allowed_hosts,
            allowed_origins: self.mcp_allowed_origin.clone(),
            token,
            grace_period,
            ..defaults
        })
    }
}

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct McpArgs {
    /// Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio.
    #[arg(long, env = "TOOL_SERVICE_MCP_LISTEN", value_name = "HOST:PORT")]
    listen: Option<SocketAddr>,
    #[command(flatten)]
    http: McpHttpArgs,
    /// Serve only the tools of this service id (repeatable; the variable
    /// takes a comma-separated list).
    #[arg(
        long,
        env = "TOOL_SERVICE_ONLY",
        value_delimiter = ',',
        value_name = "SERVICE_ID"
    )]
    only: Vec<String>,
    /// Calls each service handles at once; more wait [default: the
    /// service's `concurrency`, else 64].
    #[arg(long, env = "TOOL_SERVICE_CONCURRENCY", value_parser = clap::value_parser!(u32).range(1..))]
    concurrency: Option<u32>,
    /// How long one call may run before it is cancelled and answered with a
    /// `timeout` error, for services whose `timeout` attribute sets none
    /// [default: 600s]. `SERVICE_ID=DURATION` sets one service's timeout.
    #[arg(long, env = "TOOL_SERVICE_TIMEOUT", value_delimiter = ',', value_name = "[SERVICE_ID=]DURATION", value_parser = super::parse_timeout)]
    timeout: Vec<(Option<String>, Duration)>,
    /// Seconds calls in flight may take to finish after SIGINT/SIGTERM.
    #[arg(
        long,
        env = "TOOL_SERVICE_GRACE_PERIOD",
        default_value_t = 30,
        value_name = "SECONDS"
    )]
    grace_period: u64,
    #[command(flatten)]
    log: super::LogArgs,
}

/// What `mcp` runs, checked before any hook.
#[derive(Debug)]
pub(super) struct McpRun {
    listen: Option<SocketAddr>,
    http: HttpOptions,
    options: McpOptions,
    pub(super) grace_period: Duration,
}

/// The server options of the flags `mcp` and `serve` share.
pub(super) fn server_options(
    meta: Option<Meta>,
    only: &[String],
    concurrency: Option<u32>,
    timeouts: &[(Option<String>, Duration)],
) -> McpOptions {
    let mut options = match meta {
        Some(meta) => McpOptions::new(meta.name, meta.version),
        None => McpOptions::default(),
    };
    options.only = only.to_vec();
    options.concurrency = concurrency.map(|n| n as usize);
    for (service, limit) in timeouts {
        match service {
            Some(id) => options.service_timeouts.push((id.clone(), *limit)),
            None => options.timeout = *limit,
        }
    }
    options
}

/// Checks the flags, and sets up logging (to standard error).
pub(super) fn prepare(
    args: McpArgs,
    registry: &Registry,
    meta: Option<Meta>,
) -> Result<McpRun, BoxError> {
    super::init_logging(&args.log)?;
    for id in args
        .only
        .iter()
        .chain(args.timeout.iter().filter_map(|(id, _)| id.as_ref()))
    {
        if registry.service(id).is_none() {
            return Err(registry.unknown_service(id).into());
        }
    }
    let grace_period = Duration::from_secs(args.grace_period);
    Ok(McpRun {
        listen: args.listen,
        http: args.http.options(grace_period)?,
        options: server_options(meta, &args.only, args.concurrency, &args.timeout),
        grace_period,
    })
}

/// Serves MCP on stdio or HTTP until the client leaves (stdio) or SIGINT or
/// SIGTERM.
pub(super) async fn run(registry: &Registry, run: McpRun) -> CliResult {
    let server = McpServer::new(Arc::new(registry.clone()), run.options)?;
    match run.listen {
        None => {
            crate::mcp::serve_stdio(server, run.grace_period, super::shutdown_signal()).await?;
        }
        Some(address) => {
            let listener = bind(address).await?;
            crate::mcp::serve_http(server, listener, run.http, super::shutdown_signal()).await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The MCP listener, or an error that says which address was taken.
pub(super) async fn bind(address: SocketAddr) -> Result<tokio::net::TcpListener, BoxError> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| format!("cannot serve MCP on {address}: {error}").into())
}
