//! Serving every registered service on an Apache Pulsar broker.
//!
//! One client connection per process; per service a Shared consumer on its
//! request topic (subscription `{id}-request`, initial position Latest) and a
//! producer on its response topic. Each request is decoded, handled with at
//! most `concurrency` in flight, answered under the same `id` property, and
//! only then acknowledged.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use pulsar::consumer::{ConsumerOptions, InitialPosition};
use pulsar::producer::Producer;
use pulsar::{Consumer, Pulsar, SubType, TokioExecutor};
use tokio::sync::{watch, Mutex};
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::broker::BrokerOptions;
use crate::dispatch::{self, FrameSink};
use crate::log_text::Untrusted;
use crate::metrics::{Metrics, ServiceMetrics};
use crate::wire::{Frame, UNKNOWN_ID};
use crate::{Registry, Service, ToolError};

/// Requests a service handles at once unless its attribute or `--concurrency`
/// says otherwise.
///
/// Tool handlers mostly wait on I/O (APIs, databases, LLMs), so a service
/// should keep many requests in flight; 64 keeps a slow downstream from
/// piling up unbounded work and memory.
pub const DEFAULT_CONCURRENCY: usize = 64;

/// How many requests the broker may push to a replica ahead of its handlers
/// (Pulsar's own default receiver queue size; larger when the concurrency
/// is). On a non-persistent topic the broker drops messages for a consumer
/// without room, so a small window would lose bursts; replicas on a Shared
/// subscription still take turns.
pub const RECEIVE_WINDOW: usize = 1000;

/// How long one request may run unless the service's `timeout` attribute or
/// `--timeout` says otherwise: as long as TrustGraph's `ToolServiceClient`
/// waits for an answer by default, since a later answer reaches nobody.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

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
    /// The largest response message to publish, in bytes, when it must be
    /// below what the broker announces (e.g. a topic policy sets a lower
    /// `maxMessageSize`). The broker's own limit always applies.
    pub max_message_size: Option<usize>,
}

impl ServeOptions {
    /// Serve every service on the broker at `url`, with the defaults.
    ///
    /// ```
    /// let options = tool_service::serve::ServeOptions::new("pulsar://127.0.0.1:6650");
    /// assert_eq!(options.grace_period, tool_service::serve::DEFAULT_GRACE_PERIOD);
    /// ```
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            broker: BrokerOptions::new(url),
            concurrency: None,
            only: Vec::new(),
            receive_window: None,
            grace_period: DEFAULT_GRACE_PERIOD,
            timeout: DEFAULT_TIMEOUT,
            service_timeouts: Vec::new(),
            metrics: None,
            log_payloads: false,
            max_message_size: None,
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
        self.service_timeouts
            .iter()
            .rev()
            .find(|(id, _)| id == service.id())
            .map(|(_, limit)| *limit)
            .or(service.timeout())
            .unwrap_or(self.timeout)
    }

    /// The concurrency a service runs with.
    pub fn concurrency_of(&self, service: Service) -> usize {
        self.concurrency
            .or(service.concurrency())
            .unwrap_or(DEFAULT_CONCURRENCY)
            .max(1)
    }

    /// The receive window a service runs with.
    pub fn receive_window_of(&self, service: Service) -> usize {
        self.receive_window
            .unwrap_or(RECEIVE_WINDOW)
            .max(self.concurrency_of(service))
    }
}

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// `--only` named a service this binary does not have.
    #[error("no service `{id}` in this binary (known: {known})")]
    UnknownService {
        /// The id asked for.
        id: String,
        /// The ids there are.
        known: String,
    },
    /// Nothing to serve.
    #[error("no tool services are registered in this binary")]
    NothingToServe,
    /// The broker could not be reached before shutdown.
    #[error("cannot connect to the Pulsar broker at {url}: {}", crate::broker::describe(.source))]
    Connect {
        /// The broker URL.
        url: String,
        /// The client's error.
        source: Box<pulsar::Error>,
    },
    /// The metrics endpoint could not be opened.
    #[error("cannot serve metrics on {address}: {source}; pick another port with --metrics-port or turn metrics off with --no-metrics")]
    Metrics {
        /// The address asked for.
        address: SocketAddr,
        /// Why it could not be bound.
        source: std::io::Error,
    },
    /// A consumer or producer could not be created.
    #[error("service `{service}`: cannot {what} on `{topic}`: {source}")]
    Topic {
        /// The service id.
        service: String,
        /// `subscribe` or `publish`.
        what: &'static str,
        /// The topic.
        topic: String,
        /// The client's error.
        source: Box<pulsar::Error>,
    },
}

/// What a service did while serving.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServiceReport {
    /// Requests answered (success or error frame) and acknowledged.
    pub answered: u64,
    /// Requests still running when the grace period ended (not acknowledged,
    /// so a persistent topic redelivers them).
    pub abandoned: u64,
    /// Requests answered at once with an `overloaded` or `unavailable` error
    /// (non-persistent request topics only; included in `answered`).
    pub refused: u64,
}

/// Serves the registry's services until `shutdown` completes, then lets
/// in-flight requests finish within the grace period. While the broker is
/// unreachable at start, retries with backoff (and logs each attempt).
///
/// ```no_run
/// use tool_service::serve::{serve, ServeOptions};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = tool_service::Registry::collect()?;
/// let options = ServeOptions::new("pulsar://127.0.0.1:6650");
/// serve(&registry, &options, async { tokio::signal::ctrl_c().await.unwrap() }).await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// See [`ServeError`]: start-up problems, or a consumer/producer that cannot
/// be created.
pub async fn serve(
    registry: &Registry,
    options: &ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<HashMap<&'static str, ServiceReport>, ServeError> {
    let (stop, stopped) = watch::channel(false);
    let signal = async move {
        shutdown.await;
        let _ = stop.send(true);
    };
    let work = async {
        let mut give_up = stopped.clone();
        let started = Serving::start(registry, options, async move {
            stop_requested(&mut give_up).await
        })
        .await;
        let serving = match started {
            Ok(serving) => serving,
            Err(ServeError::Connect { .. }) if *stopped.borrow() => return Ok(HashMap::new()),
            Err(error) => return Err(error),
        };
        let mut stopped = stopped.clone();
        Ok(serving
            .run_until(async move { stop_requested(&mut stopped).await })
            .await)
    };
    tokio::pin!(signal);
    tokio::pin!(work);
    let mut signalled = false;
    loop {
        tokio::select! {
            result = &mut work => return result,
            _ = &mut signal, if !signalled => signalled = true,
        }
    }
}

/// Services that are subscribed and about to serve: requests published from
/// now on are answered.
///
/// ```no_run
/// use tool_service::serve::{ServeOptions, Serving};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = tool_service::Registry::collect()?;
/// let options = ServeOptions::new("pulsar://127.0.0.1:6650");
/// let serving = Serving::start(&registry, &options, std::future::pending()).await?;
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let server = tokio::spawn(serving.run_until(async { let _ = stopped.await; }));
/// // … send requests …
/// stop.send(()).unwrap();
/// let reports = server.await?;
/// # Ok(()) }
/// ```
#[must_use = "nothing is served until `run_until` runs"]
pub struct Serving {
    workers: Vec<Worker>,
    grace_period: Duration,
    metrics: Arc<Metrics>,
    metrics_endpoint: Option<MetricsEndpoint>,
}

/// The metrics server task; stopped when dropped (also when start-up fails
/// after it was bound).
struct MetricsEndpoint {
    address: SocketAddr,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl std::fmt::Debug for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serving")
            .field(
                "services",
                &self
                    .workers
                    .iter()
                    .map(|worker| worker.service.id())
                    .collect::<Vec<_>>(),
            )
            .field("grace_period", &self.grace_period)
            .field("metrics", &self.metrics_address())
            .finish()
    }
}

impl Serving {
    /// Connects (retrying until `give_up` completes) and subscribes every
    /// selected service.
    ///
    /// # Errors
    /// See [`ServeError`].
    pub async fn start(
        registry: &Registry,
        options: &ServeOptions,
        give_up: impl Future<Output = ()>,
    ) -> Result<Self, ServeError> {
        let services = select_services(registry, &options.only)?;
        for (id, _) in &options.service_timeouts {
            if registry.service(id).is_none() {
                return Err(unknown_service(registry, id));
            }
        }
        if let Some(warning) = options.broker.cleartext_token_warning() {
            tracing::warn!("{warning}");
        }
        let metrics = Arc::new(Metrics::new());
        // Bound before connecting, so a taken port fails at once.
        let metrics_endpoint = match options.metrics {
            Some(address) => {
                let listener = crate::metrics::bind(address)
                    .await
                    .map_err(|source| ServeError::Metrics { address, source })?;
                let bound = listener.local_addr().unwrap_or(address);
                tracing::info!("metrics on http://{bound}/metrics");
                let server = tokio::spawn(crate::metrics::serve_metrics(
                    listener,
                    Arc::clone(&metrics),
                ));
                Some(MetricsEndpoint {
                    address: bound,
                    server,
                })
            }
            None => None,
        };
        let (pulsar, broker) =
            options
                .broker
                .connect_with_retry(give_up)
                .await
                .map_err(|source| ServeError::Connect {
                    url: options.broker.url().to_owned(),
                    source: Box::new(source),
                })?;
        let max_message_size = options
            .max_message_size
            .map_or(broker.max_message_size, |max| {
                max.min(broker.max_message_size)
            });
        tracing::info!(
            url = %options.broker.url(),
            broker = %broker.server_version,
            max_message_size,
            "connected to Pulsar"
        );
        let mut workers = Vec::with_capacity(services.len());
        for service in services {
            workers.push(
                Worker::start(
                    &pulsar,
                    service,
                    metrics.service(service.id()),
                    Limits {
                        concurrency: options.concurrency_of(service),
                        window: options.receive_window_of(service),
                        timeout: options.timeout_of(service),
                        log_payloads: options.log_payloads,
                        max_message_size,
                    },
                )
                .await?,
            );
        }
        tracing::info!(services = workers.len(), "ready");
        Ok(Self {
            workers,
            grace_period: options.grace_period,
            metrics,
            metrics_endpoint,
        })
    }

    /// The metrics of the services being served.
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.metrics)
    }

    /// Where metrics are served (with the port chosen when 0 was asked for).
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics_endpoint
            .as_ref()
            .map(|endpoint| endpoint.address)
    }

    /// Serves until `shutdown` completes, then lets in-flight requests finish
    /// within the grace period, closes consumers and producers, and reports
    /// per service.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()>,
    ) -> HashMap<&'static str, ServiceReport> {
        // Metrics stay served until the last report is in.
        let Self {
            workers,
            grace_period: grace,
            metrics_endpoint: _metrics_endpoint,
            ..
        } = self;
        let (stop, stopped) = watch::channel(false);
        let mut running = JoinSet::new();
        for worker in workers {
            let stopped = stopped.clone();
            running.spawn(async move { (worker.service.id(), worker.run(stopped, grace).await) });
        }
        let collect = async {
            let mut reports = HashMap::new();
            while let Some(joined) = running.join_next().await {
                match joined {
                    Ok((id, report)) => {
                        reports.insert(id, report);
                    }
                    Err(error) => tracing::error!(%error, "a service worker failed"),
                }
            }
            reports
        };
        tokio::pin!(collect);
        tokio::pin!(shutdown);
        tokio::select! {
            reports = &mut collect => reports,
            _ = &mut shutdown => {
                let _ = stop.send(true);
                collect.await
            }
        }
    }
}

fn select_services(registry: &Registry, only: &[String]) -> Result<Vec<Service>, ServeError> {
    if registry.services().is_empty() {
        return Err(ServeError::NothingToServe);
    }
    if only.is_empty() {
        return Ok(registry.services().to_vec());
    }
    only.iter()
        .map(|id| {
            registry
                .service(id)
                .ok_or_else(|| unknown_service(registry, id))
        })
        .collect()
}

fn unknown_service(registry: &Registry, id: &str) -> ServeError {
    ServeError::UnknownService {
        id: id.to_owned(),
        known: registry
            .services()
            .iter()
            .map(|service| service.id())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Parses a duration written as a whole number and a unit: `250ms`, `30s`,
/// `5m`, `1h`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let problem = || {
        format!(
            "`{text}` is not a duration; write a whole number and a unit (ms, s, m or h), e.g. 30s"
        )
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(problem)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| problem())?;
    let limit = match unit {
        "ms" => Duration::from_millis(number),
        "s" => Duration::from_secs(number),
        "m" => Duration::from_secs(number.saturating_mul(60)),
        "h" => Duration::from_secs(number.saturating_mul(3600)),
        _ => return Err(problem()),
    };
    if limit.is_zero() {
        return Err(format!("`{text}`: a timeout must be longer than zero"));
    }
    Ok(limit)
}

/// Shows a duration the way [`parse_duration`] reads it.
pub(crate) fn format_duration(limit: Duration) -> String {
    let ms = limit.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// Completes once a stop has been requested (or can no longer be).
async fn stop_requested(stopped: &mut watch::Receiver<bool>) {
    loop {
        if *stopped.borrow_and_update() {
            return;
        }
        if stopped.changed().await.is_err() {
            return;
        }
    }
}

type RequestMessage = pulsar::consumer::Message<Vec<u8>>;

/// How much one service's worker takes on.
#[derive(Debug, Clone, Copy)]
struct Limits {
    concurrency: usize,
    window: usize,
    timeout: Duration,
    log_payloads: bool,
    max_message_size: usize,
}

/// The consumer loop of one service.
struct Worker {
    service: Service,
    concurrency: usize,
    window: usize,
    timeout: Duration,
    log_payloads: bool,
    max_message_size: usize,
    metrics: Arc<ServiceMetrics>,
    /// The client, to subscribe again should the request stream end.
    pulsar: Pulsar<TokioExecutor>,
    /// Flow permits of the consumer.
    permits: usize,
    consumer: Consumer<Vec<u8>, TokioExecutor>,
    producer: Arc<Mutex<Producer<TokioExecutor>>>,
}

impl Worker {
    async fn start(
        pulsar: &Pulsar<TokioExecutor>,
        service: Service,
        metrics: Arc<ServiceMetrics>,
        limits: Limits,
    ) -> Result<Self, ServeError> {
        let Limits {
            concurrency,
            window,
            timeout,
            log_payloads,
            max_message_size,
        } = limits;
        let request_queue = service.request_queue();
        let response_queue = service.response_queue();
        // Flow permits: a persistent topic holds back what a replica has no
        // room for (so replicas share fairly); a non-persistent one drops it,
        // so there the client library may always read ahead.
        let permits = if request_queue.starts_with("persistent://") {
            window
        } else {
            window.max(RECEIVE_WINDOW)
        };
        let consumer = subscribe(pulsar, service, permits)
            .await
            .map_err(|source| topic_error(service, "subscribe", &request_queue, source))?;
        let producer = crate::broker::producer(pulsar, &response_queue)
            .await
            .map_err(|source| topic_error(service, "publish", &response_queue, source))?;
        // Topic lookups may have opened connections of their own.
        crate::pulsar_compat::nodelay::apply();
        tracing::info!(
            service = service.id(),
            %request_queue,
            %response_queue,
            subscription = %service.subscription(),
            concurrency,
            timeout = %format_duration(timeout),
            "serving"
        );
        metrics.set_running(true);
        Ok(Self {
            service,
            concurrency,
            window,
            timeout,
            log_payloads,
            max_message_size,
            metrics,
            pulsar: pulsar.clone(),
            permits,
            consumer,
            producer: Arc::new(Mutex::new(producer)),
        })
    }

    async fn run(mut self, mut stopped: watch::Receiver<bool>, grace: Duration) -> ServiceReport {
        let mut report = ServiceReport::default();
        let mut in_flight: JoinSet<(RequestMessage, bool)> = JoinSet::new();
        // Requests taken from the broker but not started yet. Reading ahead
        // keeps the client library from stalling, which on a non-persistent
        // topic would make the broker drop requests silently.
        let mut backlog: VecDeque<RequestMessage> = VecDeque::new();
        let window = self.window;
        let persistent = self.service.request_queue().starts_with("persistent://");
        loop {
            tokio::select! {
                biased;
                _ = stop_requested(&mut stopped) => break,
                Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                    self.settle(done, &mut report).await;
                    self.start_waiting(&mut in_flight, &mut backlog);
                }
                // A persistent topic keeps what we do not take; a
                // non-persistent one drops it, so there we always read and
                // answer what does not fit with an `overloaded` error.
                next = self.consumer.next(), if !persistent || backlog.len() < window => match next {
                    Some(Ok(message)) => {
                        if in_flight.len() < self.concurrency {
                            self.spawn(&mut in_flight, message, None);
                        } else if backlog.len() < window {
                            backlog.push_back(message);
                        } else {
                            report.refused += 1;
                            let error = ToolError::with_type(
                                ToolError::OVERLOADED,
                                format!(
                                    "the service is at capacity ({} requests running, {} waiting); try again later",
                                    in_flight.len(),
                                    backlog.len()
                                ),
                            );
                            self.spawn(&mut in_flight, message, Some(error));
                        }
                    }
                    // A message the client cannot decode (a hostile
                    // producer's batch count, an unknown compression) is
                    // skipped; the consumer goes on.
                    Some(Err(error)) if !crate::pulsar_compat::errors::consumer_lost(&error) => {
                        tracing::warn!(service = self.service.id(), error = %Untrusted::text(&error.to_string()), "a request the Pulsar client cannot decode was skipped");
                    }
                    // The client reports a consumer it could not re-create
                    // (e.g. the topic was deleted and could not be created
                    // again) as one error, after which the stream stays
                    // silent for good; or it ends the stream. Either way,
                    // subscribe again rather than fall silent.
                    Some(Err(error)) => {
                        tracing::error!(service = self.service.id(), %error, "the request consumer failed; subscribing again");
                        if !self.resubscribe(&mut stopped, &mut in_flight, &mut backlog).await {
                            break;
                        }
                    }
                    None => {
                        tracing::error!(service = self.service.id(), "the request stream ended; subscribing again");
                        if !self.resubscribe(&mut stopped, &mut in_flight, &mut backlog).await {
                            break;
                        }
                    }
                },
            }
        }
        // Requests not started are not taken: a persistent topic redelivers
        // them (to another replica); on a non-persistent one the caller hears
        // at once that it should try again.
        for message in backlog.drain(..) {
            if persistent {
                if let Err(error) = self.consumer.nack(&message).await {
                    tracing::warn!(service = self.service.id(), %error, "cannot return a request to the broker");
                }
            } else {
                report.refused += 1;
                let error = ToolError::with_type(
                    ToolError::UNAVAILABLE,
                    "the service is shutting down; try again",
                );
                self.spawn(&mut in_flight, message, Some(error));
            }
        }
        tracing::info!(
            service = self.service.id(),
            in_flight = in_flight.len(),
            "stopping: finishing in-flight requests"
        );
        let deadline = tokio::time::Instant::now() + grace;
        while !in_flight.is_empty() {
            match tokio::time::timeout_at(deadline, in_flight.join_next()).await {
                Ok(Some(done)) => self.settle(done, &mut report).await,
                Ok(None) => break,
                Err(_) => {
                    report.abandoned = in_flight.len() as u64;
                    tracing::warn!(
                        service = self.service.id(),
                        abandoned = report.abandoned,
                        "grace period over: abandoning requests still running"
                    );
                    in_flight.abort_all();
                    break;
                }
            }
        }
        self.metrics.set_running(false);
        if let Err(error) = self.consumer.close().await {
            tracing::debug!(service = self.service.id(), %error, "closing the consumer");
        }
        if let Err(error) = self.producer.lock().await.close().await {
            tracing::debug!(service = self.service.id(), %error, "closing the producer");
        }
        tracing::info!(
            service = self.service.id(),
            answered = report.answered,
            "stopped"
        );
        report
    }

    /// Replaces the consumer with a new one on the same subscription,
    /// retrying with backoff until that works (true), or until a stop is
    /// requested (false). The new consumer is subscribed before the old one
    /// is dropped, so a non-persistent topic loses nothing in between;
    /// requests the old one had already received join the backlog. On a
    /// persistent topic the broker may deliver those not acknowledged yet
    /// once more.
    async fn resubscribe(
        &mut self,
        stopped: &mut watch::Receiver<bool>,
        in_flight: &mut JoinSet<(RequestMessage, bool)>,
        backlog: &mut VecDeque<RequestMessage>,
    ) -> bool {
        let mut backoff = Duration::from_millis(100);
        let consumer = loop {
            match subscribe(&self.pulsar, self.service, self.permits).await {
                Ok(consumer) => break consumer,
                Err(error) => {
                    tracing::warn!(service = self.service.id(), %error, retry_in = ?backoff, "cannot subscribe again; retrying");
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = stop_requested(stopped) => return false,
            }
            backoff = (backoff * 2).min(Duration::from_secs(3));
        };
        let mut old = std::mem::replace(&mut self.consumer, consumer);
        let mut handed_over = 0;
        while let Some(Some(Ok(message))) = futures_util::FutureExt::now_or_never(old.next()) {
            backlog.push_back(message);
            handed_over += 1;
        }
        // Dropped, not closed: `close` goes through the consumer's engine,
        // which may be stuck delivering to a queue nobody reads any more.
        // Dropping the queue stops the engine, and the engine closes the
        // consumer on the broker as it goes.
        drop(old);
        tracing::info!(service = self.service.id(), handed_over, "subscribed again");
        self.start_waiting(in_flight, backlog);
        true
    }

    /// Starts waiting requests while there is room.
    fn start_waiting(
        &self,
        in_flight: &mut JoinSet<(RequestMessage, bool)>,
        backlog: &mut VecDeque<RequestMessage>,
    ) {
        while in_flight.len() < self.concurrency {
            let Some(message) = backlog.pop_front() else {
                break;
            };
            self.spawn(in_flight, message, None);
        }
    }

    /// Starts serving one request, or answers it with `refusal` at once.
    fn spawn(
        &self,
        in_flight: &mut JoinSet<(RequestMessage, bool)>,
        message: RequestMessage,
        refusal: Option<ToolError>,
    ) {
        let service = self.service;
        let producer = Arc::clone(&self.producer);
        let limits = dispatch::Limits::default()
            .with_timeout(self.timeout)
            .with_max_message_size(self.max_message_size);
        let metrics = Arc::clone(&self.metrics);
        let log_payloads = self.log_payloads;
        let id = crate::broker::message_id(&message)
            .unwrap_or(UNKNOWN_ID)
            .to_owned();
        let span = tracing::info_span!("request", service = service.id(), request_id = %Untrusted::id(&id));
        in_flight.spawn(
            async move {
                if log_payloads {
                    log_payload(&message.payload.data);
                }
                if !answerable(&id, limits) {
                    // Even an error frame would carry the id, and not fit:
                    // acknowledged unanswered, or it would come back.
                    metrics.oversized();
                    tracing::error!(
                        id_bytes = id.len(),
                        "the request id is too long for any answer to fit the broker's maximum message size; dropping the request"
                    );
                    return (message, true);
                }
                let mut sink = PulsarSink {
                    producer: &producer,
                    failed: None,
                };
                let result = match refusal {
                    None => {
                        let in_flight = metrics.start();
                        let started = Instant::now();
                        let result =
                            dispatch::dispatch_with(service, &id, &message.payload.data, limits, &mut sink)
                                .await;
                        if result.is_ok() {
                            let elapsed = started.elapsed();
                            // The type only: messages may quote argument values.
                            tracing::debug!(error = sink.failed.as_deref().map(|kind| tracing::field::debug(Untrusted::text(kind))), ?elapsed, "answered");
                            if sink.failed.as_deref() == Some(ToolError::RESPONSE_TOO_LARGE) {
                                metrics.oversized();
                            }
                            in_flight.finish(sink.failed.as_deref(), elapsed);
                        }
                        result
                    }
                    Some(error) => {
                        metrics.refused(error.kind());
                        sink.send(&id, Frame::last(Err(error)))
                            .await
                            .map(|()| false)
                    }
                };
                let sent = match result {
                    Ok(_) => true,
                    Err(error) => {
                        metrics.send_failed();
                        tell_send_failure(&id, &error, &mut sink).await
                    }
                };
                (message, sent)
            }
            .instrument(span),
        );
    }

    async fn settle(
        &mut self,
        done: Result<(RequestMessage, bool), tokio::task::JoinError>,
        report: &mut ServiceReport,
    ) {
        match done {
            Ok((message, true)) => {
                report.answered += 1;
                if let Err(error) = self.consumer.ack(&message).await {
                    tracing::warn!(service = self.service.id(), %error, "cannot acknowledge a request");
                }
            }
            Ok((message, false)) => {
                if let Err(error) = self.consumer.nack(&message).await {
                    tracing::warn!(service = self.service.id(), %error, "cannot negatively acknowledge a request");
                }
            }
            Err(error) => {
                tracing::error!(service = self.service.id(), %error, "a request task failed")
            }
        }
    }
}

/// The service's Shared consumer on its request topic.
async fn subscribe(
    pulsar: &Pulsar<TokioExecutor>,
    service: Service,
    permits: usize,
) -> Result<Consumer<Vec<u8>, TokioExecutor>, pulsar::Error> {
    pulsar
        .consumer()
        .with_topic(service.request_queue())
        .with_subscription(service.subscription())
        .with_subscription_type(SubType::Shared)
        .with_batch_size(u32::try_from(permits).unwrap_or(u32::MAX))
        .with_options(ConsumerOptions::default().with_initial_position(InitialPosition::Latest))
        .build::<Vec<u8>>()
        .await
}

fn topic_error(
    service: Service,
    what: &'static str,
    topic: &str,
    source: pulsar::Error,
) -> ServeError {
    ServeError::Topic {
        service: service.id().to_owned(),
        what,
        topic: topic.to_owned(),
        source: Box::new(source),
    }
}

/// Whether an answer to the request `id` can fit the broker's limit at all:
/// every frame carries the id, and an error frame of our own needs less
/// than 1 KiB besides. Arithmetic only: this runs for every request.
fn answerable(id: &str, limits: dispatch::Limits) -> bool {
    const ERROR_FRAME: usize = 1024;
    limits
        .max_message_size
        .is_none_or(|max| id.len() + crate::wire::MESSAGE_OVERHEAD + ERROR_FRAME <= max)
}

/// After a frame of the answer to `id` could not be published: logs it, and
/// tries once to end the response with a `send-failed` error frame, so that
/// the caller is not left waiting. Returns whether that got through (the
/// request is then acknowledged: answered). When it did not, the broker is
/// unreachable for now, and the request is returned to it (redelivered on a
/// persistent topic).
async fn tell_send_failure(id: &str, error: &pulsar::Error, sink: &mut PulsarSink<'_>) -> bool {
    let cause = crate::pulsar_compat::errors::describe_send_error(error);
    tracing::error!(cause = %Untrusted::text(&cause), "cannot send the response");
    let hint = if cause.contains("maximum message size") {
        "; if a topic policy sets a lower maxMessageSize than the broker, give it to serve with --max-message-size"
    } else {
        ""
    };
    let notice = Frame::last(Err(ToolError::with_type(
        ToolError::SEND_FAILED,
        format!("the tool's response could not be published: {cause}{hint}"),
    )));
    match sink.send(id, notice).await {
        Ok(()) => true,
        Err(error) => {
            let cause = crate::pulsar_compat::errors::describe_send_error(&error);
            tracing::warn!(cause = %Untrusted::text(&cause), "cannot send the send-failed notice either; the request is returned to the broker");
            false
        }
    }
}

/// Logs what a request carries (only with `log_payloads`).
fn log_payload(payload: &[u8]) {
    match crate::wire::Request::decode(payload) {
        Ok(request) => tracing::info!(
            user = request.user.as_deref().map(|user| tracing::field::debug(Untrusted::id(user))),
            config = %Untrusted::payload(&request.config),
            arguments = %Untrusted::payload(&request.arguments),
            "request"
        ),
        Err(_) => tracing::info!(
            payload = %Untrusted::payload(&String::from_utf8_lossy(payload)),
            "request (not decodable)"
        ),
    }
}

/// Sends frames to a service's response topic, each under the request's `id`.
struct PulsarSink<'a> {
    producer: &'a Mutex<Producer<TokioExecutor>>,
    /// The error type of the last frame, if it was an error.
    failed: Option<String>,
}

impl FrameSink for PulsarSink<'_> {
    type Error = pulsar::Error;

    async fn send(&mut self, id: &str, frame: Frame) -> Result<(), Self::Error> {
        if let (true, Some(error)) = (frame.end_of_stream, &frame.error) {
            self.failed = Some(error.kind().to_owned());
        }
        crate::broker::publish(self.producer, id, frame.encode()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_registry_has_nothing_to_serve() {
        let registry = Registry::from_services([]).unwrap();
        let error = select_services(&registry, &[]).unwrap_err();
        assert!(matches!(error, ServeError::NothingToServe));
    }

    #[tokio::test]
    async fn stop_requested_completes_on_a_stop_or_a_dropped_sender() {
        let (stop, mut stopped) = watch::channel(false);
        let waiting = tokio::spawn(async move { stop_requested(&mut stopped).await });
        stop.send(true).unwrap();
        waiting.await.unwrap();
        let (stop, mut stopped) = watch::channel(false);
        drop(stop);
        stop_requested(&mut stopped).await;
    }

    #[test]
    fn an_error_frame_fits_the_room_answerable_keeps_for_it() {
        let limits = dispatch::Limits::default().with_max_message_size(64 * 1024);
        let id = "i".repeat(60 * 1024);
        assert!(answerable(&id, limits));
        // The largest error frames serve sends itself.
        let frame = Frame::last(Err(ToolError::with_type(
            ToolError::SEND_FAILED,
            format!(
                "the tool's response could not be published: {}…; if a topic policy sets a \
                 lower maxMessageSize than the broker, give it to serve with --max-message-size",
                "c".repeat(300)
            ),
        )));
        assert!(
            frame.message_size(&id) <= 64 * 1024,
            "{}",
            frame.message_size(&id)
        );
        assert!(!answerable(&"i".repeat(64 * 1024), limits));
        assert!(answerable(
            &"i".repeat(64 * 1024),
            dispatch::Limits::default()
        ));
    }

    #[test]
    fn defaults_are_documented_values() {
        let options = ServeOptions::new("pulsar://x");
        assert_eq!(options.concurrency, None);
        assert!(options.only.is_empty());
        assert_eq!(DEFAULT_CONCURRENCY, 64);
        assert_eq!(options.timeout, DEFAULT_TIMEOUT);
    }

    /// Says "hi".
    #[crate::tool_service(topic = "serve-tests-hi")]
    async fn hi() -> &'static str {
        "hi"
    }

    #[tokio::test]
    async fn a_failed_start_closes_the_metrics_port() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .unwrap()
            .port();
        let registry = Registry::collect().unwrap();
        // Port 9 (discard) on loopback is closed on these machines.
        let mut options = ServeOptions::new("pulsar://127.0.0.1:9");
        options.only = vec![String::from("serve-tests-hi-service")];
        options.metrics = Some(SocketAddr::from(([127, 0, 0, 1], port)));
        let started = Serving::start(
            &registry,
            &options,
            tokio::time::sleep(Duration::from_millis(200)),
        )
        .await;
        assert!(matches!(started, Err(ServeError::Connect { .. })));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "the metrics port is still open"
        );
    }

    #[test]
    fn durations_read_and_show_alike() {
        for (text, limit) in [
            ("250ms", Duration::from_millis(250)),
            ("30s", Duration::from_secs(30)),
            ("5m", Duration::from_secs(300)),
            ("1h", Duration::from_secs(3600)),
        ] {
            assert_eq!(parse_duration(text), Ok(limit));
        }
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(format_duration(Duration::from_secs(600)), "600s");
        for bad in ["", "30", "1.5s", "30 s", "-1s", "s", "9x"] {
            let error = parse_duration(bad).unwrap_err();
            assert!(error.contains("e.g. 30s"), "{bad:?}: {error}");
        }
        assert!(parse_duration("0s")
            .unwrap_err()
            .contains("longer than zero"));
    }
}
