//! `list`: the services, their queues and subscription, and their tools,
//! for people.

use std::io::Write;
use std::process::ExitCode;

use super::CliResult;
use crate::registry::Registry;

/// Prints each service with its queues, subscription and tools.
pub(super) fn list(registry: &Registry, out: &mut dyn Write) -> CliResult {
    for service in registry.services() {
        writeln!(out, "{}", service.id())?;
        writeln!(out, "  request   {}", service.request_queue())?;
        writeln!(out, "  response  {}", service.response_queue())?;
        writeln!(out, "  subscription {} (Shared)", service.subscription())?;
        if service.is_streaming() {
            writeln!(out, "  streaming")?;
        }
        for name in service.tool_names() {
            writeln!(out, "  tool      {name}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
