//! The headings of `--help`: every flag of a serving command under the one
//! of its group, set flag by flag (`help_heading`), since clap's
//! `next_help_heading` would carry a group's heading over to the flags
//! that follow it.

/// `serve`'s broker, and how it publishes answers.
#[cfg(feature = "pulsar")]
pub(super) const PULSAR: &str = "Pulsar";
/// What to serve and each service's limits.
pub(super) const SERVICES: &str = "Services and limits";
/// The metrics endpoint and the probes.
pub(super) const METRICS: &str = "Metrics and probes";
/// The log lines.
pub(super) const LOGGING: &str = "Logging";
/// `serve --announce` and what goes with it.
#[cfg(feature = "pulsar")]
pub(super) const ANNOUNCE: &str = "Announcing to TrustGraph";
/// The MCP port over HTTP: where, its token, its guards and TLS.
pub(super) const MCP_HTTP: &str = "MCP over HTTP";
/// OAuth 2.1 on the MCP port.
#[cfg(feature = "mcp")]
pub(super) const OAUTH: &str = "MCP authorization (OAuth 2.1)";
