//! What serving a registry's services means on any transport, written
//! once: the [`Host`].
//!
//! Pulsar ([`serve`](crate::pulsar::serve)) and MCP ([`mcp`](crate::mcp)) are
//! sibling transports over one host, which [`Transports`] runs together in
//! one process. Each transport does its own protocol's work only; the host
//! owns what happens to a call:
//!
//! - **selection**: which services are served ([`HostOptions::only`]),
//!   refused at start when there are none, when an id is unknown (with the
//!   ids there are), or when a `#[state]` value a service takes was never
//!   provided;
//! - **policy per service**, resolved once: the timeout, the concurrency
//!   and the rate limit, from the attribute and the options;
//! - **[admission](#admission)**: the drain's refusal, the byte budget
//!   (`--memory-budget`), the rate limit and one concurrency permit per
//!   call, in that order, with the same error types and sentences on every
//!   transport;
//! - **the drain**: every call admitted on any transport counted, new ones
//!   refused once the host closes, one grace period for all, and one
//!   warning for what it abandons;
//! - **each call's span and metrics**: its timing, and its error type on
//!   its span, the same for the same failure on every transport;
//! - **the metrics** of every transport, in one exposition, and the
//!   endpoint that serves them with the probes.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use tool_service::host::{Host, HostOptions};
//! use tool_service::{tool_service, Rate, Registry};
//!
//! /// Say hello.
//! #[tool_service(topic = "hello", timeout = "5s", rate = "100/s")]
//! async fn hello() -> &'static str {
//!     "hello"
//! }
//!
//! let registry = Arc::new(Registry::collect().unwrap());
//! let mut options = HostOptions::default();
//! options.rates.push((Some("hello-service".into()), Some(Rate::per_second(10))));
//! let host = Host::new(Arc::clone(&registry), &options).unwrap();
//! let service = registry.service("hello-service").unwrap();
//! assert_eq!(host.timeout_of(service), Some(Duration::from_secs(5)));
//! assert_eq!(host.rate_of(service), Some(Rate::per_second(10)));
//!
//! options.only = vec!["helo-service".into()];
//! let refused = Host::new(registry, &options).unwrap_err();
//! assert_eq!(refused.to_string(), "no service `helo-service` in this binary (known: hello-service)");
//! ```
//!
//! # Admission
//!
//! A call is admitted in this order; each step that refuses answers at
//! once, with its own error type and sentence:
//!
//! 1. **The drain** (`unavailable`, "the service is shutting down; try
//!    again"): a replica that is stopping takes nothing, so the caller
//!    retries elsewhere at once, and no other step spends anything on it.
//! 2. **The byte budget** (`overloaded`), unless the transport holds back
//!    instead of refusing (a persistent Pulsar topic is not read while the
//!    budget is spent): before the rate, so that a call refused for memory
//!    spends none of the rate.
//! 3. **The rate limit** (`rate-limited`): spent by every call that will
//!    run, at once or after a wait, so a burst over the rate is answered at
//!    once rather than queued.
//! 4. **The service's concurrency**: one permit per call in its handler,
//!    shared by every transport of the replica. The one step that waits:
//!    over MCP a call waits for a permit, in arrival order; over Pulsar a
//!    request waits in the worker's read-ahead, and is answered
//!    `overloaded` when that is full too. A call still waiting when the
//!    drain begins is refused as in step 1.
//!
//! An admitted call counts for the drain until its answer is delivered
//! (over Pulsar: until the broker confirms it), and so does a refusal that
//! is not delivered at once.
//!
//! # Rate limits
//!
//! A service's `rate = "100/s"` attribute, [`HostOptions::rates`] (`--rate
//! [SERVICE_ID=]RATE`, which wins) or neither: no limit. A limit is **per
//! replica**, over every transport the replica serves, with bursts of up to
//! its count at once (a token bucket); three replicas of a `100/s` service
//! take up to 300 calls a second. A call over the limit is answered at once,
//! never queued: over Pulsar with an error frame of type `rate-limited`, over
//! MCP with an `isError` result, both saying when to try again, and counted
//! in `tg_tool_service_errors_total{type="rate-limited"}`.

mod budget;
mod call;
mod limiter;
mod serve;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify, Semaphore};

pub(crate) use budget::Budget;
#[cfg(feature = "pulsar")]
pub(crate) use budget::Held;
pub use budget::DEFAULT_MEMORY_BUDGET;
#[cfg(feature = "pulsar")]
pub(crate) use call::Permit;
pub(crate) use call::{refused, OverBudget};
#[cfg(feature = "pulsar")]
pub(crate) use call::{Admitted, Call, Refusing};
pub(crate) use limiter::RateLimiter;
pub(crate) use serve::{sealed, TransportRun};
pub use serve::{RunError, Running, Served, ServiceReport, Transport, TransportError, Transports};

use crate::error::ToolError;
use crate::metrics::Metrics;
use crate::rate::Rate;
use crate::registry::{Registry, SelectError};
use crate::service::Service;

/// Requests a service handles at once unless its attribute or `--concurrency`
/// says otherwise.
///
/// Tool handlers mostly wait on I/O (APIs, databases, LLMs), so a service
/// should keep many requests in flight; 64 keeps a slow downstream from
/// piling up unbounded work and memory.
pub const DEFAULT_CONCURRENCY: usize = 64;

/// How long one request may run unless the service's `timeout` attribute or
/// `--timeout` says otherwise: as long as TrustGraph's `ToolServiceClient`
/// waits for an answer by default, since a later answer reaches nobody.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// How long calls in flight may take to finish once serving stops.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(30);

/// What to serve and the policy of each service, for every transport.
///
/// ```
/// use std::time::Duration;
/// use tool_service::host::HostOptions;
/// use tool_service::Rate;
///
/// let mut options = HostOptions::default();
/// options.only = vec!["joke-service".into()];
/// options.timeout = Duration::from_secs(30);
/// options.rates.push((None, Some(Rate::per_second(50))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostOptions {
    /// Serve only these service ids (all when empty).
    pub only: Vec<String>,
    /// Overrides the concurrency of every service that
    /// [`Self::service_concurrency`] does not name, when set.
    pub concurrency: Option<usize>,
    /// Per-service concurrency by service id; these win over
    /// [`Self::concurrency`] and the attribute.
    pub service_concurrency: Vec<(String, usize)>,
    /// How long one request may run, for services whose `timeout` attribute
    /// sets none (default [`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// Per-service timeouts by service id; these win over the attribute.
    pub service_timeouts: Vec<(String, Duration)>,
    /// Rate limits: `(None, rate)` for every service whose attribute sets
    /// none, `(Some(id), rate)` for one service, over its attribute; a
    /// `None` rate lifts the limit. The last entry that applies wins.
    pub rates: Vec<(Option<String>, Option<Rate>)>,
    /// How long calls in flight may take to finish once serving stops.
    pub grace_period: Duration,
    /// The request bytes a replica holds in memory at once, queued and
    /// running, over every service and transport (default
    /// [`DEFAULT_MEMORY_BUDGET`]). Over it, a persistent topic is not read
    /// until answers free some, and a non-persistent topic's requests and
    /// MCP calls are answered `overloaded` at once. A request larger than
    /// the budget still runs, alone. The Pulsar client's read-ahead on
    /// persistent topics is sized to fit it too.
    pub memory_budget: usize,
}

impl Default for HostOptions {
    fn default() -> Self {
        Self {
            only: Vec::new(),
            concurrency: None,
            service_concurrency: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            service_timeouts: Vec::new(),
            rates: Vec::new(),
            grace_period: DEFAULT_GRACE_PERIOD,
            memory_budget: DEFAULT_MEMORY_BUDGET,
        }
    }
}

impl HostOptions {
    /// How long one request of `service` may run: a `service_timeouts`
    /// entry, else the service's `timeout` attribute, else
    /// [`Self::timeout`].
    pub fn timeout_of(&self, service: Service) -> Duration {
        self.service_timeouts
            .iter()
            .rev()
            .find(|(id, _)| id == service.id())
            .map(|(_, limit)| *limit)
            .or(service.timeout())
            .unwrap_or(self.timeout)
    }

    /// The requests `service` handles at once, over every transport: a
    /// [`Self::service_concurrency`] entry, else [`Self::concurrency`],
    /// else its attribute's, else [`DEFAULT_CONCURRENCY`]; at least one.
    pub fn concurrency_of(&self, service: Service) -> usize {
        self.service_concurrency
            .iter()
            .rev()
            .find(|(id, _)| id == service.id())
            .map(|(_, limit)| *limit)
            .or(self.concurrency)
            .or(service.concurrency())
            .unwrap_or(DEFAULT_CONCURRENCY)
            .max(1)
    }

    /// The rate limit of `service`: the last [`Self::rates`] entry that
    /// names it, else its attribute's, else the last entry for every
    /// service; none: no limit.
    pub fn rate_of(&self, service: Service) -> Option<Rate> {
        let named = self
            .rates
            .iter()
            .rev()
            .find(|(id, _)| id.as_deref() == Some(service.id()));
        if let Some((_, rate)) = named {
            return *rate;
        }
        service.rate().or_else(|| {
            self.rates
                .iter()
                .rev()
                .find(|(id, _)| id.is_none())
                .and_then(|(_, rate)| *rate)
        })
    }

    /// Every service id these options name, to check that the binary has
    /// them.
    fn named_ids(&self) -> impl Iterator<Item = &str> {
        self.only
            .iter()
            .map(String::as_str)
            .chain(self.service_timeouts.iter().map(|(id, _)| id.as_str()))
            .chain(self.service_concurrency.iter().map(|(id, _)| id.as_str()))
            .chain(self.rates.iter().filter_map(|(id, _)| id.as_deref()))
    }
}

/// The services of a registry as served on every transport of a process:
/// selected and checked once, with their policies, one drain and one set
/// of metrics. Cheap to clone; clones share everything.
///
/// See the [module documentation](self).
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Arc<Registry>,
    services: Vec<Hosted>,
    metrics: Arc<Metrics>,
    grace_period: Duration,
    /// The replica's byte budget, over every service and transport.
    budget: Arc<Budget>,
    /// Calls admitted and not answered yet, over every transport, and
    /// whether new ones are refused.
    in_flight: AtomicUsize,
    closing: AtomicBool,
    idle: Notify,
    /// Where the drain is, for the transports to wait on (`closing` says
    /// the same for admission, which reads it on every call without a
    /// lock).
    phase: watch::Sender<Phase>,
    /// Calls still running when the grace period ended.
    abandoned: AtomicUsize,
}

/// Where a host's drain is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Serving,
    /// New calls are refused; those admitted may finish.
    Draining,
    /// The drain is over: what still runs is abandoned.
    Over,
}

/// One service as hosted: its policy, resolved once.
#[derive(Debug)]
pub(crate) struct Hosted {
    pub(crate) service: Service,
    pub(crate) timeout: Duration,
    pub(crate) concurrency: usize,
    /// One per call in the service's handler, over every transport.
    pub(crate) permits: Arc<Semaphore>,
    /// Shared by every transport: the limit is the replica's.
    pub(crate) limiter: Option<Arc<RateLimiter>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("services", &self.inner.services)
            .field("grace_period", &self.inner.grace_period)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// Selects and checks the services `options` asks for, and resolves
    /// their policies.
    ///
    /// # Errors
    /// [`SelectError`]: no services at all, an id in `options` (`only`, a
    /// timeout or a rate) this binary does not have, or a `#[state]` value
    /// a selected service takes that was never provided.
    pub fn new(registry: Arc<Registry>, options: &HostOptions) -> Result<Self, SelectError> {
        check_names(&registry, options)?;
        let services = registry.select(&options.only)?;
        let services: Vec<Hosted> = services
            .into_iter()
            .map(|service| Hosted {
                service,
                timeout: options.timeout_of(service),
                concurrency: options.concurrency_of(service),
                permits: Arc::new(Semaphore::new(options.concurrency_of(service))),
                limiter: options
                    .rate_of(service)
                    .map(|rate| Arc::new(RateLimiter::new(rate))),
            })
            .collect();
        let metrics = Arc::new(Metrics::new());
        metrics.add_state(registry.state());
        for hosted in &services {
            metrics.set_concurrency_limit(hosted.service.id(), hosted.concurrency);
        }
        Ok(Self {
            inner: Arc::new(Inner {
                registry,
                services,
                metrics,
                grace_period: options.grace_period,
                budget: Budget::new(options.memory_budget),
                in_flight: AtomicUsize::new(0),
                closing: AtomicBool::new(false),
                idle: Notify::new(),
                phase: watch::Sender::new(Phase::Serving),
                abandoned: AtomicUsize::new(0),
            }),
        })
    }

    /// The registry the services come from.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }

    /// The services served, in the order selected.
    pub fn services(&self) -> impl Iterator<Item = Service> + '_ {
        self.inner.services.iter().map(|hosted| hosted.service)
    }

    /// How long one request of `service` may run (none: not served here).
    pub fn timeout_of(&self, service: Service) -> Option<Duration> {
        self.hosted(service.id()).map(|hosted| hosted.timeout)
    }

    /// The requests `service` handles at once (none: not served here).
    pub fn concurrency_of(&self, service: Service) -> Option<usize> {
        self.hosted(service.id()).map(|hosted| hosted.concurrency)
    }

    /// The rate limit of `service` on this replica (none: no limit, or not
    /// served here).
    pub fn rate_of(&self, service: Service) -> Option<Rate> {
        self.hosted(service.id())
            .and_then(|hosted| hosted.limiter.as_ref())
            .map(|limiter| limiter.rate())
    }

    /// The metrics of every transport of this host.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.metrics
    }

    /// How long calls in flight may take to finish once serving stops.
    pub fn grace_period(&self) -> Duration {
        self.inner.grace_period
    }

    /// The replica's byte budget.
    pub(crate) fn budget(&self) -> &Arc<Budget> {
        &self.inner.budget
    }

    pub(crate) fn hosted_services(&self) -> &[Hosted] {
        &self.inner.services
    }

    pub(crate) fn hosted(&self, id: &str) -> Option<&Hosted> {
        self.inner
            .services
            .iter()
            .find(|hosted| hosted.service.id() == id)
    }

    /// Whether new calls are refused (the drain has begun).
    pub fn is_closing(&self) -> bool {
        self.inner.closing.load(Ordering::Acquire)
    }

    /// Calls admitted and not answered yet, over every transport.
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::Acquire)
    }

    /// The drain of every transport: refuses new calls from now on
    /// (answered "the service is shutting down; try again"), marks the
    /// metrics as draining (`/readyz` 503), and waits up to `grace` for the
    /// calls admitted on every transport to finish; whether they all did.
    /// When they did not, it logs the one "grace period over" warning, and
    /// the transports abandon what still runs.
    pub async fn drain(&self, grace: Duration) -> bool {
        self.inner.closing.store(true, Ordering::Release);
        self.inner.metrics.set_draining();
        let begins = self.inner.phase.send_if_modified(|phase| {
            let begins = *phase == Phase::Serving;
            if begins {
                *phase = Phase::Draining;
            }
            begins
        });
        if !begins {
            // Another transport began it: the same drain, ended together.
            self.drained().await;
            return self.abandoned() == 0;
        }
        tracing::info!(
            in_flight = self.in_flight(),
            "stopping: finishing calls in flight"
        );
        let idle = async {
            loop {
                let notified = self.inner.idle.notified();
                if self.in_flight() == 0 {
                    return;
                }
                notified.await;
            }
        };
        let drained = tokio::time::timeout(grace, idle).await.is_ok();
        if !drained {
            let abandoned = self.in_flight();
            self.inner.abandoned.store(abandoned, Ordering::Release);
            tracing::warn!(
                abandoned,
                "grace period over: abandoning calls still running"
            );
        }
        self.inner.phase.send_replace(Phase::Over);
        drained
    }

    /// Calls still running when the drain's grace period ended (none
    /// before it ends).
    pub fn abandoned(&self) -> usize {
        self.inner.abandoned.load(Ordering::Acquire)
    }

    /// Completes once the drain has begun.
    pub(crate) fn draining(&self) -> impl Future<Output = ()> + Send + 'static {
        self.reached(Phase::Draining)
    }

    /// Completes once the drain is over: what still runs is abandoned.
    pub(crate) fn drained(&self) -> impl Future<Output = ()> + Send + 'static {
        self.reached(Phase::Over)
    }

    fn reached(&self, phase: Phase) -> impl Future<Output = ()> + Send + 'static {
        let mut phases = self.inner.phase.subscribe();
        async move {
            // The sender lives as long as the host, which outlives this.
            let _ = phases.wait_for(|now| *now >= phase).await;
        }
    }

    /// Serves `/metrics`, `/livez` and `/readyz` (and `/readyz/pulsar`,
    /// `/readyz/mcp`) at `address` while the endpoint lives.
    pub(crate) async fn open_metrics_endpoint(
        &self,
        address: SocketAddr,
    ) -> std::io::Result<MetricsEndpoint> {
        let listener = tokio::net::TcpListener::bind(address).await?;
        let bound = listener.local_addr().unwrap_or(address);
        tracing::info!("metrics on http://{bound}/metrics");
        let server = tokio::spawn(crate::metrics::serve_metrics(
            listener,
            Arc::clone(&self.inner.metrics),
        ));
        Ok(MetricsEndpoint {
            address: bound,
            _server: AbortOnDrop(server),
        })
    }
}

/// Refuses `options` for `registry` before any state is built: no services
/// at all, or an id (in `only`, a timeout or a rate) it does not have.
pub(crate) fn check_names(registry: &Registry, options: &HostOptions) -> Result<(), SelectError> {
    if registry.services().is_empty() {
        return Err(SelectError::NothingToServe);
    }
    match options
        .named_ids()
        .find(|id| registry.service(id).is_none())
    {
        Some(unknown) => Err(registry.unknown_service(unknown)),
        None => Ok(()),
    }
}

/// The refusal of a call that arrives once the drain has begun.
pub(crate) fn shutting_down() -> ToolError {
    ToolError::with_type(
        ToolError::UNAVAILABLE,
        "the service is shutting down; try again",
    )
}

/// The endpoint of the metrics and probes, served while this lives.
pub(crate) struct MetricsEndpoint {
    /// Where it listens (read by `Serving::metrics_address`).
    #[cfg_attr(not(feature = "pulsar"), allow(dead_code))]
    pub(crate) address: SocketAddr,
    _server: AbortOnDrop,
}

/// A task that stops when this is dropped (also when start-up fails after
/// it was spawned).
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests;
