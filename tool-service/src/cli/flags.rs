//! Flags and value parsers that several commands share: the queue names
//! of descriptors, an MCP server's bearer token and URL, token files,
//! sizes and per-service timeouts.

#[cfg(any(feature = "pulsar", feature = "mcp"))]
use std::path::PathBuf;

use super::BoxError;
use crate::descriptor::QueueNames;

/// The token in `path`, without surrounding whitespace.
#[cfg(any(feature = "pulsar", feature = "mcp"))]
pub(super) fn read_token_file(flag: &str, path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("{flag} {}: cannot read the token: {error}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!(
            "{flag} {}: the file is empty; it should hold the token",
            path.display()
        ));
    }
    Ok(token.to_owned())
}

/// How descriptors write a service's queues: `descriptors`, `announce` and
/// `serve --announce` take it.
#[derive(Debug, Clone, Copy, clap::Args)]
pub(crate) struct QueueNamesArgs {
    /// How `tool-service` items write their queues: `trustgraph`
    /// (`request:tg:joke`, which TrustGraph reads on every backend) or
    /// `pulsar` (`non-persistent://tg/request/joke`, for a release that
    /// reads only those). Both name the same Pulsar topic.
    #[arg(
        long,
        env = QUEUE_NAMES_ENV,
        default_value = "trustgraph",
        value_name = "FORM",
        value_parser = clap::builder::ValueParser::new(str::parse::<QueueNames>)
    )]
    pub(crate) queue_names: QueueNames,
}

/// The variable of `--queue-names`.
const QUEUE_NAMES_ENV: &str = "TOOL_SERVICE_QUEUE_NAMES";

impl QueueNamesArgs {
    /// As with no command (the descriptors are printed): the variable, or
    /// the default.
    pub(crate) fn from_env() -> Result<Self, BoxError> {
        let queue_names = match std::env::var(QUEUE_NAMES_ENV) {
            Ok(text) => text
                .parse()
                .map_err(|error| format!("{QUEUE_NAMES_ENV}: {error}"))?,
            Err(_) => QueueNames::default(),
        };
        Ok(Self { queue_names })
    }
}

/// An MCP server's bearer token: what `mcp` and `serve --mcp-listen` require
/// of every request, and what `announce --mcp-url` hands to TrustGraph.
#[cfg(any(feature = "pulsar", feature = "mcp"))]
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct McpTokenArgs {
    /// A file holding the MCP server's bearer token (`Authorization: Bearer
    /// TOKEN`; read once at start, surrounding whitespace ignored).
    #[arg(help_heading = super::headings::MCP_HTTP, long, env = "TOOL_SERVICE_MCP_TOKEN_FILE", value_name = "FILE")]
    mcp_token_file: Option<PathBuf>,
    /// The bearer token itself. Prefer --mcp-token-file: a file is not
    /// inherited by every child process, as the environment is.
    #[arg(
        help_heading = super::headings::MCP_HTTP,
        long,
        env = "TOOL_SERVICE_MCP_TOKEN",
        hide_env_values = true,
        conflicts_with = "mcp_token_file"
    )]
    mcp_token: Option<String>,
}

#[cfg(any(feature = "pulsar", feature = "mcp"))]
impl McpTokenArgs {
    /// The token, read from its file when one is named; none when neither
    /// is given (or the variable is empty).
    pub(super) fn token(&self) -> Result<Option<String>, String> {
        match &self.mcp_token_file {
            Some(path) => read_token_file("--mcp-token-file", path).map(Some),
            None => Ok(self.mcp_token.clone().filter(|token| !token.is_empty())),
        }
    }
}

/// An MCP server's URL: `http://` or `https://`.
#[cfg(feature = "pulsar")]
pub(super) fn parse_mcp_url(text: &str) -> Result<String, String> {
    if text.starts_with("http://") || text.starts_with("https://") {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "`{text}` is not an http:// or https:// URL; give the MCP server's URL, e.g. http://joke-tools:8900/mcp"
        ))
    }
}

/// A size in bytes: a number, with an optional unit (`B`, `KB`, `KiB`,
/// `MB`, `MiB`, `GB`, `GiB`, any case).
#[cfg(any(feature = "pulsar", feature = "mcp"))]
pub(super) fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = unit.trim();
    let scale: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "kib" => 1 << 10,
        "mb" => 1_000_000,
        "mib" => 1 << 20,
        "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "`{unit}` is not a unit of size; use B, KB, KiB, MB, MiB, GB or GiB, e.g. 128MiB"
            ))
        }
    };
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size; give a number and a unit, e.g. 128MiB"))?;
    number
        .checked_mul(scale)
        .filter(|&bytes| bytes > 0)
        .and_then(|bytes| usize::try_from(bytes).ok())
        .ok_or_else(|| {
            format!("`{text}` is not a usable size: it must be above zero and fit in memory")
        })
}

#[cfg(any(feature = "pulsar", feature = "mcp"))]
pub(super) fn parse_timeout(text: &str) -> Result<(Option<String>, std::time::Duration), String> {
    match text.rsplit_once('=') {
        Some((id, limit)) if !id.is_empty() => {
            Ok((Some(id.to_owned()), crate::duration::parse(limit)?))
        }
        _ => Ok((None, crate::duration::parse(text)?)),
    }
}

#[cfg(all(test, any(feature = "pulsar", feature = "mcp")))]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_units_in_any_case() {
        assert_eq!(parse_size("128MiB"), Ok(128 << 20));
        assert_eq!(parse_size("64 mib"), Ok(64 << 20));
        assert_eq!(parse_size("500MB"), Ok(500_000_000));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("2kb"), Ok(2000));
        assert!(parse_size("0").unwrap_err().contains("above zero"));
        assert!(parse_size("12 parsecs")
            .unwrap_err()
            .contains("not a unit of size"));
        assert!(parse_size("MiB").unwrap_err().contains("not a size"));
        assert!(parse_size("99999999999GiB").is_err());
    }

    #[test]
    #[cfg(all(feature = "pulsar", feature = "mcp"))]
    fn the_memory_budget_flag_defaults_to_the_library_default() {
        use clap::CommandFactory;

        let cli = crate::cli::Cli::command();
        for command in ["serve", "mcp"] {
            let flag = cli
                .find_subcommand(command)
                .unwrap()
                .get_arguments()
                .find(|arg| arg.get_id() == "memory_budget")
                .unwrap();
            let default = flag.get_default_values()[0].to_str().unwrap();
            assert_eq!(parse_size(default), Ok(crate::host::DEFAULT_MEMORY_BUDGET));
        }
    }
}
