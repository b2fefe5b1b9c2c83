//! `list`: the services, their queues and subscription, their policy
//! (concurrency, timeout, rate limit) and their tools (with MCP's title and
//! hints), for people.

use std::io::Write;
use std::process::ExitCode;

use super::CliResult;
use crate::registry::Registry;

/// Prints each service with its queues, subscription, policy and tools.
pub(super) fn list(registry: &Registry, out: &mut dyn Write) -> CliResult {
    for service in registry.services() {
        writeln!(out, "{}", service.id())?;
        writeln!(out, "  request   {}", service.request_queue())?;
        writeln!(out, "  response  {}", service.response_queue())?;
        writeln!(out, "  subscription {} (Shared)", service.subscription())?;
        if service.is_streaming() {
            writeln!(out, "  streaming")?;
        }
        if service.is_blocking() {
            writeln!(out, "  blocking")?;
        }
        #[cfg(any(feature = "pulsar", feature = "mcp"))]
        writeln!(out, "  policy    {}", policy(*service))?;
        for tool in service.spec().tools {
            write!(out, "  tool      {}", tool.name)?;
            if let Some(title) = tool.title {
                write!(out, " \"{title}\"")?;
            }
            let hints = tool.annotations.words();
            if !hints.is_empty() {
                write!(out, " ({})", hints.join(", "))?;
            }
            writeln!(out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A service's policy as served with no flags: its attribute's, else the
/// defaults (`--concurrency`, `--timeout` and `--rate` change it).
#[cfg(any(feature = "pulsar", feature = "mcp"))]
fn policy(service: crate::service::Service) -> String {
    let options = crate::host::HostOptions::default();
    let rate = options
        .rate_of(service)
        .map_or_else(|| String::from("none"), |rate| rate.to_string());
    format!(
        "concurrency {}, timeout {}, rate {rate}",
        options.concurrency_of(service),
        crate::duration::format(options.timeout_of(service)),
    )
}
