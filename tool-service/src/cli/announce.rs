//! The `announce` and `withdraw` commands: one config request to
//! TrustGraph's config service, and an exit code that says how it went.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use crate::pulsar::announce::{self, Announcement, OnClash};
use crate::registry::Registry;

use super::serve::BrokerArgs;
use super::CliResult;

/// What `announce` and `withdraw` both take.
#[derive(Debug, clap::Args)]
pub(crate) struct TargetArgs {
    #[command(flatten)]
    broker: BrokerArgs,
    /// The TrustGraph workspace.
    #[arg(long, env = "TOOL_SERVICE_WORKSPACE", default_value = announce::DEFAULT_WORKSPACE)]
    workspace: String,
    /// Only this service id and its tools (repeatable; the variable takes a
    /// comma-separated list).
    #[arg(
        long,
        env = "TOOL_SERVICE_ONLY",
        value_delimiter = ',',
        value_name = "SERVICE_ID"
    )]
    only: Vec<String>,
    /// How long to wait for each of the config service's replies; units ms,
    /// s, m, h.
    #[arg(long, env = "TOOL_SERVICE_ANNOUNCE_TIMEOUT", default_value = "10s", value_name = "DURATION", value_parser = crate::duration::parse)]
    timeout: Duration,
    /// Print the config request instead of sending it.
    #[arg(long)]
    dry_run: bool,
    /// Announce (or withdraw) the tools as `mcp-tool` tools served by the
    /// MCP server at URL (`mcp --listen`, `serve --mcp-listen`), for
    /// TrustGraph's mcp-tool processor, instead of as `tool-service` tools.
    #[arg(long, env = "TOOL_SERVICE_MCP_URL", value_name = "URL", value_parser = super::parse_mcp_url)]
    mcp_url: Option<String>,
    /// With --mcp-url: the token goes into each `mcp` item as its
    /// `auth-token`.
    #[command(flatten)]
    mcp_token: super::McpTokenArgs,
    #[command(flatten)]
    names: super::QueueNamesArgs,
}

/// Which of the two commands.
#[derive(Debug)]
pub(crate) enum Change {
    Announce(OnClash),
    Withdraw,
}

/// Runs `announce` or `withdraw`.
pub(super) async fn run(
    registry: &Registry,
    change: Change,
    args: TargetArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> CliResult {
    let mut announcement = Announcement::new(registry, &args.only)?
        .in_workspace(args.workspace)
        .with_queue_names(args.names.queue_names);
    if let Some(url) = args.mcp_url {
        announcement = announcement.over_mcp(url, args.mcp_token.token()?);
    }
    if matches!(change, Change::Announce(_)) {
        for warning in announcement.first_frame_only() {
            writeln!(err, "warning: {warning}")?;
        }
    }
    if args.dry_run {
        let request = match change {
            Change::Announce(_) => announcement.put_request(),
            Change::Withdraw => announcement.delete_request(),
        };
        serde_json::to_writer_pretty(&mut *out, &request)?;
        writeln!(out)?;
        writeln!(
            err,
            "dry run: nothing was sent; the request would go to {}",
            announce::request_queue(announcement.workspace())
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let broker = args.broker.options()?;
    let url = broker.url().to_owned();
    let pulsar = tokio::time::timeout(args.timeout, broker.connect())
        .await
        .map_err(|_| {
            format!(
                "cannot connect to the Pulsar broker at {url} within {}",
                crate::duration::format(args.timeout)
            )
        })?
        .map_err(|error| {
            format!(
                "cannot connect to the Pulsar broker at {url}: {}",
                crate::pulsar::broker::describe(&error)
            )
        })?;
    match change {
        Change::Announce(on_clash) => {
            let announced =
                announce::announce(&pulsar, &announcement, args.timeout, on_clash).await?;
            writeln!(out, "{announced}")?;
        }
        Change::Withdraw => {
            let withdrawn = announce::withdraw(&pulsar, &announcement, args.timeout).await?;
            writeln!(out, "{withdrawn}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
