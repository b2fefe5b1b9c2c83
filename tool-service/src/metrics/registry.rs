//! [`Metrics`], the metrics of a serving process: each service's, found or
//! made by id and transport, and what belongs to the process (the drain,
//! the broker connection, the MCP port's connections and authorization,
//! the application's own metrics and readiness check).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::app::AppMetrics;
use super::readiness::ReadinessCheck;
use super::service::{ServiceMetrics, Via};

/// The metrics of every service in a process.
#[derive(Debug, Default)]
pub struct Metrics {
    pub(super) services: Mutex<Vec<Arc<ServiceMetrics>>>,
    /// Set when shutdown begins: not ready any more.
    pub(super) draining: AtomicBool,
    /// [`BROKER_UNKNOWN`], [`BROKER_LOST`] or [`BROKER_CONNECTED`].
    pub(super) broker: AtomicU8,
    /// The application's own, rendered after ours.
    pub(super) app: Mutex<Option<AppMetrics>>,
    /// The application's own readiness condition.
    pub(super) app_ready: Mutex<Option<ReadinessCheck>>,
    /// The MCP port's connections, once MCP is served over HTTP.
    pub(super) mcp_http: std::sync::OnceLock<McpHttpMetrics>,
    /// The MCP port's authorization, once it is on.
    pub(super) mcp_auth: std::sync::OnceLock<McpAuthMetrics>,
    /// Each hosted service's concurrency limit, over every transport.
    pub(super) concurrency: Mutex<Vec<(&'static str, usize)>>,
}

/// The MCP port's authorization: refusals by reason, and whether the
/// issuer's keys are loaded.
#[derive(Debug, Default)]
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(super) struct McpAuthMetrics {
    /// Whether the authorization server's keys are loaded: `None` until an
    /// issuer is configured (a port with the static token only counts its
    /// refusals here, and has no keys to wait for).
    pub(super) keys_loaded: std::sync::OnceLock<AtomicBool>,
    pub(super) refused: Mutex<BTreeMap<&'static str, u64>>,
}

/// The MCP port's connections: open now, the cap, and closed by a limit,
/// by why.
#[derive(Debug, Default)]
pub(super) struct McpHttpMetrics {
    pub(super) open: std::sync::atomic::AtomicU64,
    pub(super) cap: std::sync::atomic::AtomicU64,
    pub(super) closed: Mutex<BTreeMap<&'static str, u64>>,
}

/// Why the MCP port's authorization refused a request: the `reason` label
/// of `tg_tool_service_mcp_auth_refusals_total`.
#[cfg(feature = "mcp")]
pub(crate) const MCP_AUTH_REASONS: [&str; 16] = [
    "missing_token",
    "malformed_header",
    "malformed_token",
    "not_accepted",
    "token_type",
    "token_too_large",
    "algorithm",
    "unknown_key",
    "signature",
    "issuer",
    "audience",
    "expired",
    "not_yet_valid",
    "inactive",
    "insufficient_scope",
    "issuer_unavailable",
];

/// Why a limit closed an MCP connection (or refused one), as counted in
/// `tg_tool_service_mcp_connections_closed_total{reason}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CloseReason {
    /// A new one over the cap while each open one was answering.
    OverCapacity,
    /// An idle one, closed to make room for a new one.
    Evicted,
    /// No whole request head within the header timeout.
    HeaderTimeout,
    /// No whole body within the body timeout.
    BodyTimeout,
}

impl CloseReason {
    /// Every reason, in the order the metric lists them.
    pub(crate) const ALL: [Self; 4] = [
        Self::OverCapacity,
        Self::Evicted,
        Self::HeaderTimeout,
        Self::BodyTimeout,
    ];

    /// Its label value (snake case, as every label value of ours).
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::OverCapacity => "over_capacity",
            Self::Evicted => "evicted",
            Self::HeaderTimeout => "header_timeout",
            Self::BodyTimeout => "body_timeout",
        }
    }
}

/// No broker connection to speak of (nothing served on Pulsar yet).
pub(super) const BROKER_UNKNOWN: u8 = 0;
pub(super) const BROKER_LOST: u8 = 1;
pub(super) const BROKER_CONNECTED: u8 = 2;

// Every public method is in this one block, as the docs show it; the
// work behind `readiness` and `render` is in readiness.rs and render.rs.
impl Metrics {
    /// No services yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The metrics of the service `id` on Pulsar, created on first use.
    #[cfg_attr(not(feature = "pulsar"), allow(dead_code))]
    pub(crate) fn service(&self, id: &'static str) -> Arc<ServiceMetrics> {
        self.service_on(id, Via::Pulsar)
    }

    /// The metrics of the service `id`'s calls over `transport` (MCP's
    /// samples are labelled `transport="mcp"`).
    pub(crate) fn service_on(&self, id: &'static str, transport: Via) -> Arc<ServiceMetrics> {
        let mut services = self.services.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = services
            .iter()
            .find(|service| service.processor == id && service.transport == transport)
        {
            return Arc::clone(found);
        }
        let created = Arc::new(ServiceMetrics::new(id, transport));
        services.push(Arc::clone(&created));
        created
    }

    /// The concurrency limit of the service `id`, over every transport
    /// (`tg_tool_service_concurrency_limit`).
    pub(crate) fn set_concurrency_limit(&self, id: &'static str, limit: usize) {
        let mut limits = self
            .concurrency
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match limits.iter_mut().find(|(service, _)| *service == id) {
            Some(found) => found.1 = limit,
            None => limits.push((id, limit)),
        }
    }

    /// The MCP port's connection cap; renders the MCP connection families
    /// from then on.
    #[cfg(feature = "mcp")]
    pub(crate) fn mcp_max_connections(&self, cap: usize) {
        let http = self.mcp_http.get_or_init(McpHttpMetrics::default);
        http.cap
            .store(u64::try_from(cap).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Counts a connection opened (`true`) or closed (`false`) on the MCP
    /// port, and renders the MCP connection families from the first call.
    #[cfg(feature = "mcp")]
    pub(crate) fn mcp_connection(&self, opened: bool) {
        let open = &self.mcp_http.get_or_init(McpHttpMetrics::default).open;
        if opened {
            open.fetch_add(1, Ordering::Relaxed);
        } else {
            open.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Counts an MCP connection closed or refused by a limit.
    #[cfg(feature = "mcp")]
    pub(crate) fn mcp_connection_closed(&self, reason: CloseReason) {
        let http = self.mcp_http.get_or_init(McpHttpMetrics::default);
        *http
            .closed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(reason.label())
            .or_default() += 1;
    }

    /// Records whether the authorization server's keys are loaded: until
    /// they are, MCP is not ready.
    #[cfg(feature = "mcp")]
    pub(crate) fn mcp_auth_keys_loaded(&self, loaded: bool) {
        self.mcp_auth
            .get_or_init(McpAuthMetrics::default)
            .keys_loaded
            .get_or_init(AtomicBool::default)
            .store(loaded, Ordering::Relaxed);
    }

    /// Counts a request the MCP port's bearer check refused, by reason.
    #[cfg(feature = "mcp")]
    pub(crate) fn mcp_auth_refused(&self, reason: &'static str) {
        *self
            .mcp_auth
            .get_or_init(McpAuthMetrics::default)
            .refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(reason)
            .or_default() += 1;
    }

    /// Marks the process as shutting down: [`Self::readiness`] fails from
    /// now on (`serve` calls it when SIGINT or SIGTERM starts the drain).
    pub(crate) fn set_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// Records whether the Pulsar broker answers this process's connection
    /// (`serve` probes it every 2 s). While it does not, every consumer
    /// reports `stopped`, [`Self::readiness`] fails with `broker not
    /// connected`, and `tg_tool_service_broker_connected` is 0.
    #[cfg_attr(not(feature = "pulsar"), allow(dead_code))]
    pub(crate) fn set_broker_connected(&self, connected: bool) {
        let state = if connected {
            BROKER_CONNECTED
        } else {
            BROKER_LOST
        };
        self.broker.store(state, Ordering::Relaxed);
    }

    /// Renders the [`AppMetrics`] in `state` after ours, and makes its
    /// [`ReadinessCheck`] a condition of [`Self::readiness`], for those it
    /// has (`serve` calls it with the setup hook's state).
    pub fn add_state(&self, state: &crate::state::State) {
        if let Some(app) = state.get::<AppMetrics>() {
            *self.app.lock().unwrap_or_else(PoisonError::into_inner) = Some((*app).clone());
        }
        if let Some(check) = state.get::<ReadinessCheck>() {
            *self
                .app_ready
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some((*check).clone());
        }
    }

    /// Whether the broker was connected and is not now.
    pub(super) fn broker_lost(&self) -> bool {
        self.broker.load(Ordering::Relaxed) == BROKER_LOST
    }

    /// Whether the process is ready for requests on every transport it
    /// serves, as `GET /readyz` says: shutdown has not begun, the
    /// application's [`ReadinessCheck`] (if any) passes, and each
    /// transport is ready (see [`Self::readiness_of`]). Otherwise the
    /// conditions that fail, one per line.
    ///
    /// # Errors
    /// The failing conditions, as text for a probe's body.
    pub fn readiness(&self) -> Result<(), String> {
        self.check(None)
    }

    /// Whether one transport, `"pulsar"` or `"mcp"`, is ready, as `GET
    /// /readyz/pulsar` and `GET /readyz/mcp` say: shutdown has not begun,
    /// the application's [`ReadinessCheck`] passes, and for Pulsar the
    /// broker is connected and every service is subscribed; for MCP every
    /// service is served (its listener or stdio is up). A broker outage
    /// fails `/readyz/pulsar` (and `/readyz`), not `/readyz/mcp`: a process
    /// that serves both stays in a load balancer's MCP pool while its MCP
    /// side works.
    ///
    /// # Errors
    /// The failing conditions, as text for a probe's body.
    pub fn readiness_of(&self, transport: &str) -> Result<(), String> {
        match [Via::Pulsar, Via::Mcp]
            .into_iter()
            .find(|via| via.name() == transport)
        {
            Some(via) => self.check(Some(via)),
            None => Err(format!("nothing is served over {transport}\n")),
        }
    }

    /// Everything, in Prometheus' text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        self.exposition()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every label value of a reason is its own, in snake case, as
    /// Prometheus label values of ours are written.
    #[test]
    fn reasons_have_distinct_snake_case_labels() {
        let close: Vec<&str> = CloseReason::ALL.map(CloseReason::label).to_vec();
        #[cfg(feature = "mcp")]
        let lists = [close.as_slice(), MCP_AUTH_REASONS.as_slice()];
        #[cfg(not(feature = "mcp"))]
        let lists = [close.as_slice()];
        for labels in lists {
            let distinct: std::collections::BTreeSet<_> = labels.iter().collect();
            assert_eq!(distinct.len(), labels.len(), "{labels:?}");
            for label in labels {
                assert!(
                    label.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                    "{label}"
                );
            }
        }
    }
}
