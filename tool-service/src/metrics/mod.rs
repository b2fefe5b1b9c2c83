//! Prometheus metrics of a serving process, per service.
//!
//! `serve` and `mcp --listen` expose them on `http://0.0.0.0:8000/metrics`
//! by default (`--metrics-port`, `--no-metrics`; `mcp` on stdio only when
//! `--metrics` or `--metrics-port` asks), in Prometheus' text format, with
//! the probes `/livez` and `/readyz` (and `/readyz/pulsar`, `/readyz/mcp`). Names
//! follow TrustGraph's processors where one exists, so existing dashboards
//! keep working; `processor` is the service id:
//!
//! | metric | type | labels | meaning |
//! |---|---|---|---|
//! | `tg_dynamic_tool_service_invocation_total` | counter | `processor` | requests answered with a result (as TrustGraph's `DynamicToolService` counts) |
//! | `tg_consumer_processing_total` | counter | `processor`, `consumer`, `status` | requests handled, `status` `ok` or `error` |
//! | `tg_consumer_request_duration_seconds` | histogram | `processor`, `consumer` | time from taking a request to sending its last frame |
//! | `tg_consumer_state` | gauge | `processor`, `consumer`, `tg_consumer_state` | 1 for the current state: `running` while subscribed and the broker connected, else `stopped` |
//! | `tg_tool_service_broker_connected` | gauge | none | 1 while the Pulsar broker answers this process's connection, 0 while it does not (probed every 2 s; absent when nothing is served on Pulsar) |
//! | `tg_tool_service_errors_total` | counter | `processor`, `type` | error frames by error type, refusals included |
//! | `tg_tool_service_in_flight` | gauge | `processor` | requests being handled now |
//! | `tg_tool_service_oversized_responses_total` | counter | `processor` | responses (or chunks) too large for the broker, answered with a `response-too-large` error instead, or not at all when even that would not fit |
//! | `tg_tool_service_send_failures_total` | counter | `processor` | response frames the broker did not take (timeout, refusal, closed producer) |
//! | `tg_tool_service_mcp_connections` | gauge | none | connections open on the MCP port (absent unless MCP is served over HTTP) |
//! | `tg_tool_service_mcp_connections_closed_total` | counter | `reason` | MCP connections a limit closed or refused: `over-capacity` (refused: every open one was answering), `evicted` (an idle one, closed to make room), `header-timeout`, `body-timeout` |
//! | `tg_tool_service_mcp_auth_refusals_total` | counter | `reason` | MCP requests refused by the port's OAuth authorization (absent unless it is on): `missing_token`, `malformed_header`, `malformed_token`, `token_too_large`, `algorithm`, `unknown_key`, `signature`, `issuer`, `audience`, `expired`, `not_yet_valid`, `inactive`, `insufficient_scope`, `issuer_unavailable` |
//! | `tg_tool_service_mcp_auth_keys_loaded` | gauge | none | 1 once the authorization server's keys are loaded (until then `/readyz/mcp` fails) |
//! | `tg_tool_service_trace_spans_dropped_total` | counter | none | with the `otel` feature, while tracing is on: spans not exported (the export queue was full, or the collector did not take their batch) |
//! | `tg_tool_service_trace_spans_exported_total` | counter | none | with `otel`: spans the collector took |
//! | `tg_tool_service_trace_contexts_ignored_total` | counter | none | with `otel`: malformed `traceparent`s ignored |
//!
//! The application's own metrics (a pool's size, a cache's hits) are
//! rendered after these, from an [`AppMetrics`] the setup hook puts in the
//! [`State`](crate::State): closures that write the text format, or a
//! `prometheus_client` registry with the `prometheus-client` feature.
//!
//! `consumer` is always `request`. Calls that come over MCP (`mcp`, `serve
//! --mcp-listen`) are counted apart, in samples that also carry
//! `transport="mcp"`; Pulsar's samples carry no `transport` label, so
//! dashboards made for TrustGraph's processors see what they always saw.
//! Recording costs a few atomic operations per request; error counts take a
//! lock, on errors only.
//!
//! # Probes
//!
//! The metrics listener answers Kubernetes' probes:
//! `/livez` (and `/healthz`) with 200 while the process answers at all, and
//! `/readyz` with 200 only while every transport it serves is ready and
//! shutdown has not begun: on Pulsar, the broker is connected and every
//! service served is subscribed; over MCP, its listener (or stdio session) is
//! up. Otherwise it answers 503 with the failing conditions, one per line:
//! `not subscribed: wait-service` while the broker cannot be reached at start
//! or while a consumer is made again, `broker not connected` during an
//! outage, `not served over mcp: joke-service` before MCP serves, `not ready:
//! REASON` while the application's own check fails, and `shutting down` from
//! the moment SIGINT or SIGTERM starts the drain, so that a rollout sends no
//! more requests to a replica that is leaving while it finishes what it has.
//! `/readyz/pulsar` and `/readyz/mcp` say the same for one transport. A
//! process that serves both (`serve --mcp-listen`) should give a load
//! balancer's MCP pool `/readyz/mcp`: a broker outage fails `/readyz` and
//! `/readyz/pulsar` only, and Pulsar needs no balancer (its replicas pull
//! from the broker). `tests/offline/ops.rs` probes all three while the broker
//! does not answer. `--no-metrics` turns the probes off
//! with the metrics; `--metrics-address 127.0.0.1` keeps both on the host.
//! `tests/broker/operations.rs` follows `/readyz` through an unreachable broker, a
//! start and a drain with a request in flight; `tests/broker/broker_restart.rs`
//! through a broker restart (gauge 1 → 0 → 1, `/readyz` 503 → 200).
//!
//! The endpoint serves at most 16 connections at once and closes the others at
//! once; a client has 2 s to ask and read, so idle connections cannot pile up
//! file descriptors (`tests/broker/security.rs`); a failing `accept` is logged at most
//! every 10 s.
//!
//! # Why not `prometheus-client`
//!
//! The Prometheus project's crate was measured against this module side by
//! side (0.26.0, same families, labels and buckets, with criterion and
//! callgrind; the comparison bench was `bench/benches/metrics.rs`, removed
//! after commit 415baa7 with these figures kept here). Its
//! `prometheus_text` encoder can give these exact names (registered without
//! `_total`, which it appends) and the same samples; its OpenMetrics encoder, the one its docs show, cannot
//! (`# TYPE` without `_total`, `le="1.0"`, `# EOF`). Against it, this
//! module records the ok path in about half the instructions (82 against
//! 155), an error in a seventh (179 against 1,205: its family key allocates
//! the error type), renders 1.6× faster, keeps its histogram lock-free and
//! its output in a fixed order, and needs no dependency. Switching would
//! remove about 100 of these lines and add 7 crates. Kept; native
//! histograms or exemplars would be the reason to revisit.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

mod http;

pub use http::serve_metrics;
#[cfg(feature = "mcp")]
pub(crate) use http::Throttle;
// Public for the broker tests only.
#[doc(hidden)]
pub use http::MAX_CONNECTIONS;

/// The port TrustGraph processors serve metrics on.
pub const DEFAULT_METRICS_PORT: u16 = 8000;

/// Upper bounds of the latency histogram's buckets, in seconds: finer than
/// TrustGraph's below 50 ms, where Rust handlers answer, and the same above.
const BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    120.0,
];

/// The metrics of every service in a process.
#[derive(Debug, Default)]
pub struct Metrics {
    services: Mutex<Vec<Arc<ServiceMetrics>>>,
    /// Set when shutdown begins: not ready any more.
    draining: AtomicBool,
    /// [`BROKER_UNKNOWN`], [`BROKER_LOST`] or [`BROKER_CONNECTED`].
    broker: AtomicU8,
    /// The application's own, rendered after ours.
    app: Mutex<Option<AppMetrics>>,
    /// The application's own readiness condition.
    app_ready: Mutex<Option<ReadinessCheck>>,
    /// The MCP port's connections, once MCP is served over HTTP.
    mcp_http: std::sync::OnceLock<McpHttpMetrics>,
    /// The MCP port's authorization, once it is on.
    mcp_auth: std::sync::OnceLock<McpAuthMetrics>,
}

/// The MCP port's authorization: refusals by reason, and whether the
/// issuer's keys are loaded.
#[derive(Debug, Default)]
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
struct McpAuthMetrics {
    keys_loaded: AtomicBool,
    refused: Mutex<BTreeMap<&'static str, u64>>,
}

/// The MCP port's connections: open now, and closed by a limit, by why.
#[derive(Debug, Default)]
struct McpHttpMetrics {
    open: std::sync::atomic::AtomicU64,
    closed: Mutex<BTreeMap<&'static str, u64>>,
}

/// A readiness condition of the application's own (its database answers,
/// its cache is warm), which `GET /readyz` checks beside tool-service's:
/// put one in the [`State`](crate::State) the setup hook returns.
///
/// The check runs on every probe and must not block: for a condition that
/// takes I/O to learn, let a task of the setup hook's keep a flag current,
/// and read the flag here.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use tool_service::metrics::{Metrics, ReadinessCheck};
/// use tool_service::State;
///
/// let db_up = Arc::new(AtomicBool::new(false));
/// let seen = Arc::clone(&db_up);
/// let state = State::new().with(ReadinessCheck::new(move || {
///     if seen.load(Ordering::Relaxed) { Ok(()) } else { Err("the database does not answer".into()) }
/// }));
///
/// // What `serve` does with it: `/readyz` fails while the check does.
/// let metrics = Metrics::new();
/// metrics.add_state(&state);
/// assert!(metrics.readiness().unwrap_err().contains("not ready: the database does not answer\n"));
/// db_up.store(true, Ordering::Relaxed);
/// assert!(!metrics.readiness().unwrap_err().contains("database"));
/// ```
#[derive(Clone)]
pub struct ReadinessCheck(Arc<dyn Fn() -> Result<(), String> + Send + Sync>);

impl ReadinessCheck {
    /// A check that says why the application is not ready, or `Ok(())`.
    pub fn new(check: impl Fn() -> Result<(), String> + Send + Sync + 'static) -> Self {
        Self(Arc::new(check))
    }
}

impl fmt::Debug for ReadinessCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReadinessCheck")
    }
}

/// Samples of an application's own, in Prometheus' text format (`# HELP`
/// and `# TYPE` lines included), written when `/metrics` is scraped.
///
/// Closures `Fn(&mut String)` are collectors; so is a
/// `prometheus_client::registry::Registry`, with the `prometheus-client`
/// feature (its Prometheus text encoder, the format `/metrics` serves).
pub trait Collect: Send + Sync + 'static {
    /// Appends the samples to `out`.
    fn collect(&self, out: &mut String);
}

impl<F: Fn(&mut String) + Send + Sync + 'static> Collect for F {
    fn collect(&self, out: &mut String) {
        self(out);
    }
}

#[cfg(feature = "prometheus-client")]
#[cfg_attr(docsrs, doc(cfg(feature = "prometheus-client")))]
impl Collect for prometheus_client::registry::Registry {
    fn collect(&self, out: &mut String) {
        // Writing to a String cannot fail; a metric's own encoder that
        // fails leaves what it wrote so far.
        let _ = prometheus_client::encoding::prometheus_text::encode(out, self);
    }
}

/// The application's own metrics, which `serve`'s `/metrics` renders after
/// tool-service's: put one in the [`State`](crate::State) the setup hook
/// returns. TrustGraph's families stay as they are; give yours a prefix of
/// your own.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use tool_service::metrics::{AppMetrics, Metrics};
/// use tool_service::State;
///
/// let hits = Arc::new(AtomicU64::new(3));
/// let seen = Arc::clone(&hits);
/// let state = State::new().with(AppMetrics::new().with(move |out: &mut String| {
///     out.push_str("# HELP tickets_cache_hits_total Cache hits\n");
///     out.push_str("# TYPE tickets_cache_hits_total counter\n");
///     out.push_str(&format!("tickets_cache_hits_total {}\n", seen.load(Ordering::Relaxed)));
/// }));
///
/// // What `serve` does with it:
/// let metrics = Metrics::new();
/// metrics.add_state(&state);
/// assert!(metrics.render().ends_with("tickets_cache_hits_total 3\n"));
/// ```
///
/// With the `prometheus-client` feature, a registry is a collector:
///
/// ```
/// # #[cfg(feature = "prometheus-client")] {
/// use prometheus_client::metrics::gauge::Gauge;
/// use prometheus_client::registry::Registry;
/// use tool_service::metrics::{AppMetrics, Metrics};
///
/// let idle: Gauge = Gauge::default();
/// let mut registry = Registry::default();
/// registry.register("tickets_pool_idle", "Idle connections", idle.clone());
/// idle.set(4);
/// let state = tool_service::State::new().with(AppMetrics::new().with(registry));
/// let metrics = Metrics::new();
/// metrics.add_state(&state);
/// assert!(metrics.render().contains("\ntickets_pool_idle 4\n"));
/// # }
/// ```
#[derive(Clone, Default)]
pub struct AppMetrics {
    collectors: Vec<Arc<dyn Collect>>,
}

impl fmt::Debug for AppMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppMetrics")
            .field("collectors", &self.collectors.len())
            .finish()
    }
}

impl AppMetrics {
    /// No collectors yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// These metrics and `collector`'s, rendered in the order added.
    #[must_use]
    pub fn with(mut self, collector: impl Collect) -> Self {
        self.collectors.push(Arc::new(collector));
        self
    }

    fn collect(&self, out: &mut String) {
        for collector in &self.collectors {
            let start = out.len();
            collector.collect(out);
            if out.len() > start && !out.ends_with('\n') {
                out.push('\n');
            }
        }
    }
}

/// Why the MCP port's authorization refused a request: the `reason` label
/// of `tg_tool_service_mcp_auth_refusals_total`.
#[cfg(feature = "mcp")]
pub(crate) const MCP_AUTH_REASONS: [&str; 14] = [
    "missing_token",
    "malformed_header",
    "malformed_token",
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

/// Why a limit closed an MCP connection (or refused one): every new one
/// over the cap while each open one was answering (`over-capacity`), an idle
/// one closed to make room for a new one (`evicted`), no whole request head
/// within the header timeout (`header-timeout`), no whole body within the
/// body timeout (`body-timeout`).
pub(crate) const MCP_CLOSE_REASONS: [&str; 4] =
    ["over-capacity", "evicted", "header-timeout", "body-timeout"];

/// No broker connection to speak of (nothing served on Pulsar yet).
const BROKER_UNKNOWN: u8 = 0;
const BROKER_LOST: u8 = 1;
const BROKER_CONNECTED: u8 = 2;

impl Metrics {
    /// No services yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The metrics of the service `id` on Pulsar, created on first use.
    #[cfg_attr(not(feature = "pulsar"), allow(dead_code))]
    pub(crate) fn service(&self, id: &'static str) -> Arc<ServiceMetrics> {
        self.service_on(id, None)
    }

    /// The metrics of the service `id`'s calls over another transport
    /// (`Some("mcp")`), labelled `transport="mcp"`; `None` is Pulsar's.
    pub(crate) fn service_on(
        &self,
        id: &'static str,
        transport: Option<&'static str>,
    ) -> Arc<ServiceMetrics> {
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

    /// Counts an MCP connection closed or refused by a limit: one of
    /// [`MCP_CLOSE_REASONS`].
    #[cfg(feature = "mcp")]
    pub(crate) fn mcp_connection_closed(&self, reason: &'static str) {
        let http = self.mcp_http.get_or_init(McpHttpMetrics::default);
        *http
            .closed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(reason)
            .or_default() += 1;
    }

    /// Records whether the authorization server's keys are loaded: until
    /// they are, MCP is not ready.
    #[cfg(feature = "mcp")]
    pub(crate) fn mcp_auth_keys_loaded(&self, loaded: bool) {
        self.mcp_auth
            .get_or_init(McpAuthMetrics::default)
            .keys_loaded
            .store(loaded, Ordering::Relaxed);
    }

    /// Counts a request the MCP port's authorization refused, by reason.
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

    fn broker_lost(&self) -> bool {
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
        let transport = match transport {
            "pulsar" => None,
            other => Some(other),
        };
        self.check(Some(transport))
    }

    /// The failing conditions of every transport (`None`) or one
    /// (`Some(None)` is Pulsar).
    fn check(&self, only: Option<Option<&str>>) -> Result<(), String> {
        let mut failing = String::new();
        if self.draining.load(Ordering::Relaxed) {
            failing.push_str("shutting down\n");
        }
        let pulsar = only.is_none_or(|transport| transport.is_none());
        if pulsar && self.broker_lost() {
            failing.push_str("broker not connected\n");
        }
        let check = self
            .app_ready
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(Err(reason)) = check.map(|check| (check.0)()) {
            let _ = writeln!(failing, "not ready: {}", reason.trim_end());
        }
        let mcp = only.is_none_or(|transport| transport == Some("mcp"));
        if mcp
            && self
                .mcp_auth
                .get()
                .is_some_and(|auth| !auth.keys_loaded.load(Ordering::Relaxed))
        {
            failing.push_str("the authorization server's keys are not loaded\n");
        }
        let services = self.services.lock().unwrap_or_else(PoisonError::into_inner);
        let mut served = 0;
        for service in services
            .iter()
            .filter(|service| only.is_none_or(|transport| transport == service.transport))
        {
            served += 1;
            if !service.running.load(Ordering::Relaxed) {
                let _ = match service.transport {
                    None => writeln!(failing, "not subscribed: {}", service.processor),
                    Some(transport) => {
                        writeln!(
                            failing,
                            "not served over {transport}: {}",
                            service.processor
                        )
                    }
                };
            }
        }
        if served == 0 && failing.is_empty() {
            match only {
                None => failing.push_str("no service subscribed yet\n"),
                Some(transport) => {
                    let _ = writeln!(
                        failing,
                        "nothing is served over {}",
                        transport.unwrap_or("pulsar")
                    );
                }
            }
        }
        if failing.is_empty() {
            Ok(())
        } else {
            Err(failing)
        }
    }

    /// Everything, in Prometheus' text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let services = self
            .services
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut out = String::new();
        per_service(
            &mut out,
            "tg_dynamic_tool_service_invocation_total",
            "counter",
            "Dynamic tool service invocation count",
            &services,
            |service| service.ok.load(Ordering::Relaxed).to_string(),
        );
        family(
            &mut out,
            "tg_consumer_processing_total",
            "counter",
            "Processing count",
            &services,
            |out, name, service| {
                for (status, count) in [
                    ("ok", service.ok.load(Ordering::Relaxed)),
                    ("error", service.failed.load(Ordering::Relaxed)),
                ] {
                    let _ = writeln!(
                        out,
                        "{name}{{{},consumer=\"request\",status=\"{status}\"}} {count}",
                        service.labels()
                    );
                }
            },
        );
        family(
            &mut out,
            "tg_consumer_request_duration_seconds",
            "histogram",
            "Request latency (seconds)",
            &services,
            |out, name, service| service.latency.render(out, name, &service.labels()),
        );
        family(
            &mut out,
            "tg_consumer_state",
            "gauge",
            "Consumer state",
            &services,
            |out, name, service| {
                let running = service.running.load(Ordering::Relaxed)
                    && !(service.transport.is_none() && self.broker_lost());
                for (state, on) in [("stopped", !running), ("running", running)] {
                    let _ = writeln!(
                        out,
                        "{name}{{{},consumer=\"request\",{name}=\"{state}\"}} {}",
                        service.labels(),
                        u8::from(on)
                    );
                }
            },
        );
        family(
            &mut out,
            "tg_tool_service_errors_total",
            "counter",
            "Error frames sent, by error type",
            &services,
            |out, name, service| {
                let errors = service
                    .errors
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                for (kind, count) in errors.iter() {
                    let _ = writeln!(
                        out,
                        "{name}{{{},type=\"{}\"}} {count}",
                        service.labels(),
                        escape(kind)
                    );
                }
            },
        );
        per_service(
            &mut out,
            "tg_tool_service_oversized_responses_total",
            "counter",
            "Responses too large for the broker's maximum message size",
            &services,
            |service| service.oversized.load(Ordering::Relaxed).to_string(),
        );
        per_service(
            &mut out,
            "tg_tool_service_send_failures_total",
            "counter",
            "Response frames the broker did not take",
            &services,
            |service| service.send_failures.load(Ordering::Relaxed).to_string(),
        );
        per_service(
            &mut out,
            "tg_tool_service_in_flight",
            "gauge",
            "Requests being handled",
            &services,
            |service| service.in_flight.load(Ordering::Relaxed).to_string(),
        );
        if let Some(http) = self.mcp_http.get() {
            let name = "tg_tool_service_mcp_connections";
            let _ = writeln!(out, "# HELP {name} Connections open on the MCP port");
            let _ = writeln!(out, "# TYPE {name} gauge");
            let _ = writeln!(out, "{name} {}", http.open.load(Ordering::Relaxed));
            let name = "tg_tool_service_mcp_connections_closed_total";
            let _ = writeln!(
                out,
                "# HELP {name} MCP connections closed or refused by a limit, by reason"
            );
            let _ = writeln!(out, "# TYPE {name} counter");
            let closed = http.closed.lock().unwrap_or_else(PoisonError::into_inner);
            for reason in MCP_CLOSE_REASONS {
                let count = closed.get(reason).copied().unwrap_or(0);
                let _ = writeln!(out, "{name}{{reason=\"{reason}\"}} {count}");
            }
        }
        #[cfg(feature = "mcp")]
        if let Some(auth) = self.mcp_auth.get() {
            let name = "tg_tool_service_mcp_auth_refusals_total";
            let _ = writeln!(
                out,
                "# HELP {name} MCP requests refused by the port's authorization, by reason"
            );
            let _ = writeln!(out, "# TYPE {name} counter");
            let refused = auth.refused.lock().unwrap_or_else(PoisonError::into_inner);
            for reason in MCP_AUTH_REASONS {
                let count = refused.get(reason).copied().unwrap_or(0);
                let _ = writeln!(out, "{name}{{reason=\"{reason}\"}} {count}");
            }
            let name = "tg_tool_service_mcp_auth_keys_loaded";
            let _ = writeln!(
                out,
                "# HELP {name} Whether the authorization server's keys are loaded"
            );
            let _ = writeln!(out, "# TYPE {name} gauge");
            let _ = writeln!(
                out,
                "{name} {}",
                u8::from(auth.keys_loaded.load(Ordering::Relaxed))
            );
        }
        let broker = self.broker.load(Ordering::Relaxed);
        if broker != BROKER_UNKNOWN {
            let name = "tg_tool_service_broker_connected";
            let _ = writeln!(out, "# HELP {name} Whether the Pulsar broker answers");
            let _ = writeln!(out, "# TYPE {name} gauge");
            let _ = writeln!(out, "{name} {}", u8::from(broker == BROKER_CONNECTED));
        }
        #[cfg(feature = "otel")]
        if crate::otel::enabled() {
            for (name, help, value) in [
                (
                    "tg_tool_service_trace_spans_dropped_total",
                    "Spans not exported: the export queue was full, or the collector did not take their batch",
                    crate::otel::spans_dropped(),
                ),
                (
                    "tg_tool_service_trace_spans_exported_total",
                    "Spans the collector took",
                    crate::otel::spans_exported(),
                ),
                (
                    "tg_tool_service_trace_contexts_ignored_total",
                    "Malformed traceparent values ignored (their requests started traces of their own)",
                    crate::otel::contexts_ignored(),
                ),
            ] {
                let _ = writeln!(out, "# HELP {name} {help}");
                let _ = writeln!(out, "# TYPE {name} counter");
                let _ = writeln!(out, "{name} {value}");
            }
        }
        let app = self
            .app
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(app) = app {
            app.collect(&mut out);
        }
        out
    }
}

fn family(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    services: &[Arc<ServiceMetrics>],
    mut samples: impl FnMut(&mut String, &str, &ServiceMetrics),
) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for service in services {
        samples(out, name, service);
    }
}

/// A family of one sample per service, labelled with the service only.
fn per_service(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    services: &[Arc<ServiceMetrics>],
    value: impl Fn(&ServiceMetrics) -> String,
) {
    family(out, name, kind, help, services, |out, name, service| {
        per_processor(out, name, service, value(service));
    });
}

/// One sample labelled with the service (and transport) only.
fn per_processor(out: &mut String, name: &str, service: &ServiceMetrics, value: impl fmt::Display) {
    let _ = writeln!(out, "{name}{{{}}} {value}", service.labels());
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The metrics of one service.
#[derive(Debug)]
pub(crate) struct ServiceMetrics {
    processor: &'static str,
    /// None: Pulsar; else the transport's label.
    transport: Option<&'static str>,
    ok: AtomicU64,
    failed: AtomicU64,
    in_flight: AtomicI64,
    running: AtomicBool,
    oversized: AtomicU64,
    send_failures: AtomicU64,
    latency: Histogram,
    errors: Mutex<Vec<(String, u64)>>,
}

impl ServiceMetrics {
    fn new(processor: &'static str, transport: Option<&'static str>) -> Self {
        Self {
            processor,
            transport,
            ok: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            in_flight: AtomicI64::new(0),
            running: AtomicBool::new(false),
            oversized: AtomicU64::new(0),
            send_failures: AtomicU64::new(0),
            latency: Histogram::default(),
            errors: Mutex::new(Vec::new()),
        }
    }

    /// `processor="…"`, and `transport="…"` for another transport than
    /// Pulsar.
    fn labels(&self) -> String {
        match self.transport {
            None => format!("processor=\"{}\"", self.processor),
            Some(transport) => {
                format!("processor=\"{}\",transport=\"{transport}\"", self.processor)
            }
        }
    }

    /// A request is being handled; count it as in flight until the returned
    /// guard is finished or dropped.
    pub(crate) fn start(self: &Arc<Self>) -> InFlight {
        let _ = self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight {
            service: Arc::clone(self),
        }
    }

    /// Counts a request answered at once without running the handler
    /// (`overloaded`, `unavailable`).
    pub(crate) fn refused(&self, kind: &str) {
        self.count_error(kind);
    }

    /// Counts a response too large for the broker.
    #[cfg_attr(not(feature = "pulsar"), allow(dead_code))]
    pub(crate) fn oversized(&self) {
        let _ = self.oversized.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a response frame the broker did not take.
    #[cfg_attr(not(feature = "pulsar"), allow(dead_code))]
    pub(crate) fn send_failed(&self) {
        let _ = self.send_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Marks the service's consumer as running or stopped.
    pub(crate) fn set_running(&self, running: bool) {
        self.running.store(running, Ordering::Relaxed);
    }

    fn count_error(&self, kind: &str) {
        let mut errors = self.errors.lock().unwrap_or_else(PoisonError::into_inner);
        match errors.iter_mut().find(|(known, _)| known == kind) {
            Some((_, count)) => *count += 1,
            None => errors.push((kind.to_owned(), 1)),
        }
    }
}

/// One request in flight; see `ServiceMetrics::start`.
#[derive(Debug)]
#[must_use = "the request counts as in flight until finished"]
pub(crate) struct InFlight {
    service: Arc<ServiceMetrics>,
}

impl InFlight {
    /// The request was answered: with a result (`error` is `None`) or with
    /// an error frame of type `error`, `elapsed` after it was taken.
    pub(crate) fn finish(self, error: Option<&str>, elapsed: Duration) {
        let service = &self.service;
        match error {
            None => {
                let _ = service.ok.fetch_add(1, Ordering::Relaxed);
            }
            Some(kind) => {
                let _ = service.failed.fetch_add(1, Ordering::Relaxed);
                service.count_error(kind);
            }
        }
        service.latency.observe(elapsed);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let _ = self.service.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A latency histogram with fixed buckets.
#[derive(Debug, Default)]
struct Histogram {
    /// Observations per bucket (not cumulative); the last is `+Inf` only.
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let index = BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(BUCKETS.len());
        let _ = self.buckets[index].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let _ = self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        let labels = format!("{labels},consumer=\"request\"");
        for (index, count) in self.buckets.iter().enumerate() {
            cumulative += count.load(Ordering::Relaxed);
            let bound = BUCKETS
                .get(index)
                .map_or_else(|| String::from("+Inf"), ToString::to_string);
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {cumulative}");
        }
        let sum = Duration::from_nanos(self.sum_nanos.load(Ordering::Relaxed)).as_secs_f64();
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {cumulative}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_counts_its_calls_and_their_errors_by_type() {
        let metrics = Metrics::new();
        let joke = metrics.service("joke-service");
        let request = joke.start();
        request.finish(None, Duration::from_millis(3));
        joke.start()
            .finish(Some("timeout"), Duration::from_secs(30));
        let text = metrics.render();
        assert!(text
            .contains("tg_dynamic_tool_service_invocation_total{processor=\"joke-service\"} 1\n"));
        assert!(text.contains(
            "tg_tool_service_errors_total{processor=\"joke-service\",type=\"timeout\"} 1\n"
        ));
    }

    #[test]
    fn an_application_check_holds_readiness_back_until_it_passes() {
        let db_up = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&db_up);
        let state = crate::state::State::new().with(ReadinessCheck::new(move || {
            if seen.load(Ordering::Relaxed) {
                Ok(())
            } else {
                Err("the database does not answer".into())
            }
        }));
        let metrics = Metrics::new();
        metrics.add_state(&state);
        metrics.service("tickets-service").set_running(true);
        assert_eq!(
            metrics.readiness().unwrap_err(),
            "not ready: the database does not answer\n"
        );
        db_up.store(true, Ordering::Relaxed);
        assert!(metrics.readiness().is_ok());
    }

    #[test]
    fn calls_over_another_transport_are_labelled_with_it() {
        let metrics = Metrics::new();
        let calls = metrics.service_on("joke-service", Some("mcp"));
        calls.start().finish(None, Duration::from_millis(1));
        assert!(metrics.render().contains(
            "tg_dynamic_tool_service_invocation_total{processor=\"joke-service\",transport=\"mcp\"} 1\n"
        ));
    }

    #[test]
    fn a_lost_broker_fails_readiness_until_it_answers_again() {
        let metrics = Metrics::new();
        metrics.service("joke-service").set_running(true);
        metrics.set_broker_connected(false);
        assert_eq!(metrics.readiness().unwrap_err(), "broker not connected\n");
        assert!(metrics
            .render()
            .contains("tg_tool_service_broker_connected 0\n"));
        metrics.set_broker_connected(true);
        assert!(metrics.readiness().is_ok());
    }

    #[test]
    fn readiness_waits_for_every_subscription_and_ends_with_the_drain() {
        let metrics = Metrics::new();
        assert!(metrics.readiness().is_err());
        let joke = metrics.service("joke-service");
        assert_eq!(
            metrics.readiness().unwrap_err(),
            "not subscribed: joke-service\n"
        );
        joke.set_running(true);
        assert!(metrics.readiness().is_ok());
        metrics.set_draining();
        assert_eq!(metrics.readiness().unwrap_err(), "shutting down\n");
    }

    #[test]
    fn a_broker_outage_fails_pulsar_readiness_not_mcp() {
        let metrics = Metrics::new();
        metrics.service("joke-service").set_running(true);
        metrics
            .service_on("joke-service", Some("mcp"))
            .set_running(true);
        metrics.set_broker_connected(false);
        assert!(metrics.readiness_of("mcp").is_ok());
        assert_eq!(
            metrics.readiness_of("pulsar").unwrap_err(),
            "broker not connected\n"
        );
        assert_eq!(metrics.readiness().unwrap_err(), "broker not connected\n");
        assert_eq!(
            metrics.readiness_of("grpc").unwrap_err(),
            "nothing is served over grpc\n"
        );
    }

    #[test]
    fn renders_counters_histogram_and_gauges() {
        let metrics = Metrics::new();
        let joke = metrics.service("joke-service");
        joke.set_running(true);
        joke.start().finish(None, Duration::from_micros(300));
        joke.start().finish(None, Duration::from_millis(40));
        joke.start()
            .finish(Some("tool-service-error"), Duration::from_secs(200));
        joke.refused("overloaded");
        let running = joke.start();
        assert!(Arc::ptr_eq(&joke, &metrics.service("joke-service")));
        let text = metrics.render();
        for line in [
            "# TYPE tg_dynamic_tool_service_invocation_total counter",
            "tg_dynamic_tool_service_invocation_total{processor=\"joke-service\"} 2",
            "tg_consumer_processing_total{processor=\"joke-service\",consumer=\"request\",status=\"ok\"} 2",
            "tg_consumer_processing_total{processor=\"joke-service\",consumer=\"request\",status=\"error\"} 1",
            "# TYPE tg_consumer_request_duration_seconds histogram",
            "tg_consumer_request_duration_seconds_bucket{processor=\"joke-service\",consumer=\"request\",le=\"0.0005\"} 1",
            "tg_consumer_request_duration_seconds_bucket{processor=\"joke-service\",consumer=\"request\",le=\"0.05\"} 2",
            "tg_consumer_request_duration_seconds_bucket{processor=\"joke-service\",consumer=\"request\",le=\"120\"} 2",
            "tg_consumer_request_duration_seconds_bucket{processor=\"joke-service\",consumer=\"request\",le=\"+Inf\"} 3",
            "tg_consumer_request_duration_seconds_count{processor=\"joke-service\",consumer=\"request\"} 3",
            "tg_consumer_request_duration_seconds_sum{processor=\"joke-service\",consumer=\"request\"} 200.0403",
            "tg_consumer_state{processor=\"joke-service\",consumer=\"request\",tg_consumer_state=\"running\"} 1",
            "tg_consumer_state{processor=\"joke-service\",consumer=\"request\",tg_consumer_state=\"stopped\"} 0",
            "tg_tool_service_errors_total{processor=\"joke-service\",type=\"tool-service-error\"} 1",
            "tg_tool_service_errors_total{processor=\"joke-service\",type=\"overloaded\"} 1",
            "tg_tool_service_in_flight{processor=\"joke-service\"} 1",
        ] {
            assert!(
                text.lines().any(|candidate| candidate == line),
                "missing {line:?} in\n{text}"
            );
        }
        drop(running);
        assert!(metrics
            .render()
            .contains("tg_tool_service_in_flight{processor=\"joke-service\"} 0\n"));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
