//! What to serve and how: [`ServeOptions`] and the defaults it falls back on.

use std::net::SocketAddr;
use std::time::Duration;

pub use super::budget::DEFAULT_MEMORY_BUDGET;
pub use crate::dispatch::{DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT};

use crate::broker::BrokerOptions;
use crate::spec::Service;

/// How many requests the broker may push to a replica ahead of its handlers
/// (Pulsar's own default receiver queue size; larger when the concurrency
/// is). On a non-persistent topic the broker drops messages for a consumer
/// without room, so a small window would lose bursts; replicas on a Shared
/// subscription still take turns.
pub const RECEIVE_WINDOW: usize = 1000;

/// How long in-flight requests may take to finish after a shutdown signal.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(30);

/// What to serve, and how.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The broker.
    pub broker: BrokerOptions,
    /// Overrides every service's concurrency when set.
    pub concurrency: Option<usize>,
    /// Serve only these service ids (all when empty).
    pub only: Vec<String>,
    /// Requests a replica takes ahead of its handlers, per service
    /// (default [`RECEIVE_WINDOW`], never below the concurrency).
    pub receive_window: Option<usize>,
    /// How long in-flight requests may take to finish on shutdown.
    pub grace_period: Duration,
    /// Per-request timeout of services whose attribute sets none
    /// (default [`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// Per-request timeouts by service id; these win over the attribute.
    pub service_timeouts: Vec<(String, Duration)>,
    /// Log each request's `user`, `config` and `arguments` (at info level).
    /// Off by default: config often holds credentials and arguments hold
    /// whatever the LLM was told.
    pub log_payloads: bool,
    /// Where to serve Prometheus metrics (see [`crate::metrics`]); none by
    /// default here, `0.0.0.0:8000` from the command line.
    pub metrics: Option<SocketAddr>,
    /// The request bytes a replica holds in memory at once, queued and
    /// running, over every service (default [`DEFAULT_MEMORY_BUDGET`]).
    /// Over it, a persistent topic is not read until answers free some, and
    /// a non-persistent topic's requests are answered `overloaded` at once.
    /// A request larger than the budget still runs, alone. The Pulsar
    /// client's read-ahead on persistent topics is sized to fit it too.
    pub memory_budget: usize,
    /// The largest response message to publish, in bytes, when it must be
    /// below what the broker announces (e.g. a topic policy sets a lower
    /// `maxMessageSize`). The broker's own limit always applies.
    pub max_message_size: Option<usize>,
    /// Announce the served services to TrustGraph's config service once
    /// they are subscribed (see [`crate::announce`]); none by default.
    pub announce: Option<AnnounceOptions>,
    /// Record into these metrics (and serve them) instead of new ones: how
    /// an MCP server in the same process (`serve --mcp-listen`) shares the
    /// metrics endpoint.
    pub shared_metrics: Option<std::sync::Arc<crate::metrics::Metrics>>,
}

/// How `serve` announces its services to TrustGraph's config service.
///
/// ```
/// use tool_service::serve::{AnnounceOptions, ServeOptions};
///
/// let mut options = ServeOptions::new("pulsar://127.0.0.1:6650");
/// options.announce = Some(AnnounceOptions::new("team-a").withdraw_on_exit(true));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AnnounceOptions {
    /// The workspace (default [`crate::announce::DEFAULT_WORKSPACE`]).
    pub workspace: String,
    /// How long each config request waits for its reply.
    pub timeout: Duration,
    /// What to do with items of the same names that are someone else's.
    pub on_clash: crate::announce::OnClash,
    /// Withdraw the services' items at shutdown. Off by default: replicas
    /// share their services, and one replica stopping must not take the
    /// tools away from the others.
    pub withdraw_on_exit: bool,
    /// Announce the tools as `mcp-tool` tools of this MCP server instead of
    /// as `tool-service` tools (see [`Announcement::over_mcp`]).
    ///
    /// [`Announcement::over_mcp`]: crate::announce::Announcement::over_mcp
    pub mcp: Option<crate::announce::McpTarget>,
}

impl AnnounceOptions {
    /// Announce to `workspace`, refusing clashes, not withdrawing on exit.
    pub fn new(workspace: impl Into<String>) -> Self {
        Self {
            workspace: workspace.into(),
            timeout: crate::announce::DEFAULT_TIMEOUT,
            on_clash: crate::announce::OnClash::Refuse,
            withdraw_on_exit: false,
            mcp: None,
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
        Self::new(crate::announce::DEFAULT_WORKSPACE)
    }
}

impl ServeOptions {
    /// Serve every service on the broker at `url`, with the defaults.
    ///
    /// ```
    /// let options = tool_service::serve::ServeOptions::new("pulsar://127.0.0.1:6650");
    /// assert_eq!(options.grace_period, tool_service::serve::DEFAULT_GRACE_PERIOD);
    /// ```
    pub fn new(url: impl Into<String>) -> Self {
        Self::with_broker(BrokerOptions::new(url))
    }

    /// Serve every service on this broker, with the defaults.
    ///
    /// ```
    /// use tool_service::broker::BrokerOptions;
    /// use tool_service::serve::ServeOptions;
    ///
    /// let broker = BrokerOptions::new("pulsar+ssl://broker:6651").with_tls_ca_file("/etc/ca.pem");
    /// let options = ServeOptions::with_broker(broker);
    /// assert_eq!(options.broker.url(), "pulsar+ssl://broker:6651");
    /// ```
    pub fn with_broker(broker: BrokerOptions) -> Self {
        Self {
            broker,
            concurrency: None,
            only: Vec::new(),
            receive_window: None,
            memory_budget: DEFAULT_MEMORY_BUDGET,
            grace_period: DEFAULT_GRACE_PERIOD,
            timeout: DEFAULT_TIMEOUT,
            service_timeouts: Vec::new(),
            metrics: None,
            log_payloads: false,
            max_message_size: None,
            announce: None,
            shared_metrics: None,
        }
    }

    /// How long one request of `service` may run: a `service_timeouts`
    /// entry, else the service's `timeout` attribute, else [`Self::timeout`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_service::serve::ServeOptions;
    ///
    /// /// Say hi.
    /// #[tool_service::tool_service(topic = "hi", timeout = "5s")]
    /// async fn hi() -> &'static str { "hi" }
    ///
    /// let service = tool_service::Registry::collect().unwrap().service("hi-service").unwrap();
    /// let mut options = ServeOptions::new("pulsar://127.0.0.1:6650");
    /// options.timeout = Duration::from_secs(60);
    /// assert_eq!(options.timeout_of(service), Duration::from_secs(5));
    /// options.service_timeouts.push(("hi-service".into(), Duration::from_secs(1)));
    /// assert_eq!(options.timeout_of(service), Duration::from_secs(1));
    /// ```
    pub fn timeout_of(&self, service: Service) -> Duration {
        crate::dispatch::timeout_of(service, &self.service_timeouts, self.timeout)
    }

    /// The concurrency a service runs with.
    pub fn concurrency_of(&self, service: Service) -> usize {
        crate::dispatch::concurrency_of(service, self.concurrency)
    }

    /// The receive window a service runs with.
    pub fn receive_window_of(&self, service: Service) -> usize {
        self.receive_window
            .unwrap_or(RECEIVE_WINDOW)
            .max(self.concurrency_of(service))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_documented_values() {
        let options = ServeOptions::new("pulsar://x");
        assert_eq!(options.concurrency, None);
        assert!(options.only.is_empty());
        assert_eq!(DEFAULT_CONCURRENCY, 64);
        assert_eq!(options.timeout, DEFAULT_TIMEOUT);
    }
}
