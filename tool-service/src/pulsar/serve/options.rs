//! What to serve and how: [`ServeOptions`] and the defaults it falls back on.

use std::time::Duration;

use crate::pulsar::broker::BrokerOptions;

/// How many requests the broker may push to a replica ahead of its handlers
/// (Pulsar's own default receiver queue size; larger when the concurrency
/// is). On a non-persistent topic the broker drops messages for a consumer
/// without room, so a small window would lose bursts; replicas on a Shared
/// subscription still take turns.
pub const DEFAULT_RECEIVE_WINDOW: usize = 1000;

/// What to serve, and how.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// The broker.
    pub broker: BrokerOptions,
    /// Requests a replica takes ahead of its handlers, per service
    /// (default [`DEFAULT_RECEIVE_WINDOW`], never below the concurrency).
    pub receive_window: Option<usize>,
    /// Log each request's `user`, `config` and `arguments` (at info level).
    /// Off by default: config often holds credentials and arguments hold
    /// whatever the LLM was told.
    pub log_payloads: bool,
    /// The largest response message to publish, in bytes, when it must be
    /// below what the broker announces (e.g. a topic policy sets a lower
    /// `maxMessageSize`). The broker's own limit always applies.
    pub max_message_size: Option<usize>,
    /// Send the answers that are ready together as one Pulsar batch (on by
    /// default). An answer never waits for a timer: what is ready goes as
    /// soon as the previous batch has the broker's receipt, so a request
    /// alone is answered as fast as without batching, and under load many
    /// answers share one frame (about two thirds of the CPU per request).
    /// Off, each answer is its own message, sent at once even while earlier
    /// ones wait for their receipts, for consumers that cannot read batches
    /// (every Pulsar client can).
    pub batch_responses: bool,
    /// Announce the served services to TrustGraph's config service once
    /// they are subscribed (see [`crate::pulsar::announce`]); none by default.
    pub announce: Option<AnnounceOptions>,
}

/// How `serve` announces its services to TrustGraph's config service.
///
/// ```
/// use tool_service::pulsar::serve::{AnnounceOptions, ServeOptions};
///
/// let mut options = ServeOptions::new("pulsar://127.0.0.1:6650");
/// options.announce = Some(AnnounceOptions::new("team-a").withdraw_on_exit(true));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AnnounceOptions {
    /// The workspace (default [`crate::pulsar::announce::DEFAULT_WORKSPACE`]).
    pub workspace: String,
    /// How long each config request waits for its reply.
    pub timeout: Duration,
    /// What to do with items of the same names that are someone else's.
    pub on_clash: crate::pulsar::announce::OnClash,
    /// Withdraw the services' items at shutdown. Off by default: replicas
    /// share their services, and one replica stopping must not take the
    /// tools away from the others.
    pub withdraw_on_exit: bool,
    /// Announce the tools as `mcp-tool` tools of this MCP server instead of
    /// as `tool-service` tools (see [`Announcement::over_mcp`]).
    ///
    /// [`Announcement::over_mcp`]: crate::pulsar::announce::Announcement::over_mcp
    pub mcp: Option<crate::pulsar::announce::McpTarget>,
    /// How the `tool-service` items write their queues (by default
    /// TrustGraph's `request:tg:joke`, which every TrustGraph backend reads).
    pub queue_names: crate::descriptor::QueueNames,
}

impl AnnounceOptions {
    /// Announce to `workspace`, refusing clashes, not withdrawing on exit.
    pub fn new(workspace: impl Into<String>) -> Self {
        Self {
            workspace: workspace.into(),
            timeout: crate::pulsar::announce::DEFAULT_TIMEOUT,
            on_clash: crate::pulsar::announce::OnClash::Refuse,
            withdraw_on_exit: false,
            mcp: None,
            queue_names: crate::descriptor::QueueNames::default(),
        }
    }

    /// Withdraw the services' items at shutdown.
    #[must_use]
    pub fn withdraw_on_exit(mut self, withdraw: bool) -> Self {
        self.withdraw_on_exit = withdraw;
        self
    }
}

impl Default for AnnounceOptions {
    fn default() -> Self {
        Self::new(crate::pulsar::announce::DEFAULT_WORKSPACE)
    }
}

impl ServeOptions {
    /// Serve every service on the broker at `url`, with the defaults.
    ///
    /// ```
    /// let options = tool_service::pulsar::serve::ServeOptions::new("pulsar://127.0.0.1:6650");
    /// assert!(options.batch_responses);
    /// ```
    pub fn new(url: impl Into<String>) -> Self {
        Self::with_broker(BrokerOptions::new(url))
    }

    /// Serve every service on this broker, with the defaults.
    ///
    /// ```
    /// use tool_service::pulsar::broker::BrokerOptions;
    /// use tool_service::pulsar::serve::ServeOptions;
    ///
    /// let broker = BrokerOptions::new("pulsar+ssl://broker:6651").with_tls_ca_file("/etc/ca.pem");
    /// let options = ServeOptions::with_broker(broker);
    /// assert_eq!(options.broker.url(), "pulsar+ssl://broker:6651");
    /// ```
    pub fn with_broker(broker: BrokerOptions) -> Self {
        Self {
            broker,
            receive_window: None,
            log_payloads: false,
            max_message_size: None,
            batch_responses: true,
            announce: None,
        }
    }

    /// The receive window of a service that runs `concurrency` calls at
    /// once.
    pub(crate) fn receive_window_of(&self, concurrency: usize) -> usize {
        self.receive_window
            .unwrap_or(DEFAULT_RECEIVE_WINDOW)
            .max(concurrency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_documented_values() {
        let options = ServeOptions::new("pulsar://x");
        assert_eq!(options.receive_window, None);
        assert_eq!(options.receive_window_of(64), DEFAULT_RECEIVE_WINDOW);
        assert_eq!(options.receive_window_of(5000), 5000);
        assert!(options.batch_responses);
    }
}
