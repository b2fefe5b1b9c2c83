//! Serving every registered service on an Apache Pulsar broker.
//!
//! One client connection per process; per service a Shared consumer on its
//! request topic (subscription `{id}-request`, initial position Latest) and a
//! producer on its response topic. Each request is decoded, handled with at
//! most `concurrency` in flight, answered under the same `id` property, and
//! only then acknowledged.
//!
// The guide below links other guides as files (for GitHub and a
// checkout). A label's first definition wins, so these, read first, send
// its labels to the items and sections of the rustdoc pages instead.
//! [trustgraph-guide]: crate::pulsar::announce
//! [attribute-blocking]: macro@crate::tool_service#blocking-handlers
//!
#![doc = include_str!("../../../docs/pulsar.md")]

mod batch;
mod broker_health;
mod broker_io;
mod busy;
mod gate;
mod options;
mod worker;

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;

pub use options::{AnnounceOptions, ServeOptions, DEFAULT_RECEIVE_WINDOW};

use crate::host::{AbortOnDrop, Host, MetricsEndpoint};
use crate::metrics::Metrics;
use crate::registry::Registry;
use worker::{PulsarWorker, WorkerOptions};

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The services asked for cannot be served: none at all, an unknown id
    /// (in `only` or a per-service timeout), or `#[state]` never provided.
    #[error(transparent)]
    Select(#[from] crate::registry::SelectError),
    /// The broker could not be reached before shutdown, or refused this
    /// process.
    #[error("cannot connect to the Pulsar broker at {url}: {source}")]
    Connect {
        /// The broker URL.
        url: String,
        /// Why.
        source: Box<crate::pulsar::broker::ConnectError>,
    },
    /// The metrics endpoint could not be opened.
    #[error("cannot serve metrics on {address}: {source}")]
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
#[non_exhaustive]
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
/// use tool_service::pulsar::serve::{serve, ServeOptions};
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
    let host = Host::new(Arc::new(registry.clone()), &options.host)?;
    serve_on_host(&host, options, shutdown).await
}

/// [`serve`] on a host that other transports share.
async fn serve_on_host(
    host: &Host,
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
        let started =
            Serving::start_on(
                host,
                options,
                async move { stop_requested(&mut give_up).await },
            )
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

/// Pulsar as one of a host's transports, beside MCP: see
/// [`Transports`](crate::host::Transports). The host's options, not
/// `options.host`, apply, and the host's metrics endpoint, not
/// `options.metrics`, serves its metrics.
///
/// If it cannot start (the broker refuses this process, a topic cannot be
/// subscribed), the host's other transports stop too.
#[derive(Debug)]
pub struct PulsarTransport {
    options: ServeOptions,
}

impl PulsarTransport {
    /// Pulsar, as `options` says (but for `host` and `metrics`).
    pub fn new(options: ServeOptions) -> Self {
        Self { options }
    }
}

impl crate::host::Transport for PulsarTransport {
    fn name(&self) -> &'static str {
        "pulsar"
    }

    fn run(self: Box<Self>, host: Host, _: crate::host::Sealed) -> crate::host::TransportRun {
        let mut options = self.options;
        options.metrics = None;
        // Counted at once: the host's `/readyz` names them from its first
        // answer.
        count_services(&host);
        Box::pin(async move {
            let draining = host.draining();
            serve_on_host(&host, &options, draining).await?;
            Ok(())
        })
    }
}

/// Services that are subscribed and about to serve: requests published from
/// now on are answered.
///
/// ```no_run
/// use tool_service::pulsar::serve::{ServeOptions, Serving};
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
    workers: Vec<PulsarWorker>,
    /// Admission and the drain, shared with other transports.
    host: Host,
    metrics: Arc<Metrics>,
    metrics_endpoint: Option<MetricsEndpoint>,
    /// Keeps TCP_NODELAY on reconnected broker connections while serving.
    nodelay: crate::pulsar::compat::nodelay::Ticker,
    /// What to announce, on which client.
    announcing: Option<Announcing>,
    /// Probes the broker connection while serving.
    watcher: AbortOnDrop,
}

/// The services' announcement, made beside the consumer loops.
struct Announcing {
    pulsar: pulsar::Pulsar<pulsar::TokioExecutor>,
    announcement: crate::pulsar::announce::Announcement,
    options: AnnounceOptions,
}

impl Announcing {
    /// The announcement of the services `workers` serve, as `announce`
    /// asks.
    fn new(
        registry: &Registry,
        workers: &[PulsarWorker],
        pulsar: &pulsar::Pulsar<pulsar::TokioExecutor>,
        announce: AnnounceOptions,
    ) -> Self {
        let ids: Vec<String> = workers
            .iter()
            .map(|worker| worker.service.id().to_owned())
            .collect();
        let mut announcement = crate::pulsar::announce::Announcement::new(registry, &ids)
            .expect("the services served are the registry's")
            .in_workspace(announce.workspace.clone())
            .with_queue_names(announce.queue_names);
        if let Some(mcp) = &announce.mcp {
            announcement = announcement.over_mcp(mcp.url.clone(), mcp.token.clone());
        }
        Self {
            pulsar: pulsar.clone(),
            announcement,
            options: announce,
        }
    }

    /// Announces until it is done (or refused for good); at shutdown,
    /// withdraws what it announced if asked to.
    async fn run(self, mut stopped: watch::Receiver<bool>) {
        let Self {
            pulsar,
            announcement,
            options,
        } = self;
        for warning in announcement.first_frame_only() {
            tracing::warn!("{warning}");
        }
        let announced = tokio::select! {
            announced = crate::pulsar::announce::keep_announcing(&pulsar, &announcement, options.timeout, options.on_clash) => announced.is_ok(),
            _ = stop_requested(&mut stopped) => false,
        };
        if !(announced && options.withdraw_on_exit) {
            return;
        }
        stop_requested(&mut stopped).await;
        match crate::pulsar::announce::withdraw(&pulsar, &announcement, options.timeout).await {
            Ok(withdrawn) => tracing::info!(workspace = %options.workspace, "{withdrawn}"),
            Err(error) => {
                tracing::warn!(workspace = %options.workspace, "cannot withdraw: {error}")
            }
        }
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
            .field("grace_period", &self.host.grace_period())
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
        let host = Host::new(Arc::new(registry.clone()), &options.host)?;
        Self::start_on(&host, options, give_up).await
    }

    /// [`Self::start`] on a host that other transports share (its
    /// selection, policies, metrics and rate limits); `options.host` is not
    /// read.
    pub(crate) async fn start_on(
        host: &Host,
        options: &ServeOptions,
        give_up: impl Future<Output = ()>,
    ) -> Result<Self, ServeError> {
        if let Some(warning) = options.broker.cleartext_token_warning() {
            tracing::warn!("{warning}");
        }
        let metrics = Arc::clone(host.metrics());
        count_services(host);
        // Bound before connecting, so a taken port fails at once.
        let metrics_endpoint = bind_metrics(host, options).await?;
        let (pulsar, max_message_size) = connect(options, give_up).await?;
        metrics.set_broker_connected(true);
        let nodelay = crate::pulsar::compat::nodelay::keep_applying();
        let workers = subscribe(host, options, &pulsar, &metrics, max_message_size).await?;
        let watcher = watch_broker(&pulsar, &workers, options, &metrics);
        tracing::info!(
            services = workers.len(),
            worker_threads = tokio::runtime::Handle::current().metrics().num_workers(),
            "ready"
        );
        let announcing = options
            .announce
            .clone()
            .map(|announce| Announcing::new(host.registry(), &workers, &pulsar, announce));
        Ok(Self {
            workers,
            host: host.clone(),
            metrics,
            metrics_endpoint,
            nodelay,
            announcing,
            watcher,
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
    ///
    /// Every service's consumer loop runs inside this future rather than as
    /// a task of its own: requests that are ready on their first poll are
    /// answered by the loop, and the others run as tasks on the runtime.
    /// Awaiting it from `block_on` (as `run!()` does) keeps the loops off the
    /// worker threads; spawning it (`tokio::spawn(serving.run_until(..))`)
    /// puts all of them in that one task, which is fine for a few services
    /// and light traffic.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()>,
    ) -> HashMap<&'static str, ServiceReport> {
        // Metrics stay served until the last report is in.
        let Self {
            workers,
            host,
            metrics: _metrics,
            metrics_endpoint: _metrics_endpoint,
            nodelay: _nodelay,
            announcing,
            watcher,
        } = self;
        let (stop, stopped) = watch::channel(false);
        // The announcement is a task of its own: it may wait on the config
        // service for longer than the loops run, and withdraws (if asked)
        // while they drain.
        let announcing = announcing.map(|announcing| tokio::spawn(announcing.run(stopped.clone())));
        // Every service's consumer loop runs inside this future, not as a
        // task: under `run()`, on the thread that drives the runtime, which
        // leaves the worker threads to the Pulsar client and to handlers.
        let loops = workers
            .into_iter()
            .map(|worker| async move { (worker.service.id(), worker.run().await) });
        let collect = async {
            futures_util::future::join_all(loops)
                .await
                .into_iter()
                .collect::<HashMap<_, _>>()
        };
        tokio::pin!(collect);
        tokio::pin!(shutdown);
        let reports = tokio::select! {
            reports = &mut collect => reports,
            _ = &mut shutdown => {
                // The drain is no outage: consumers and producers close.
                drop(watcher);
                let _ = stop.send(true);
                // The host's drain, shared with its other transports: not
                // ready from its first moment (so that a rollout sends no
                // more requests here), one grace period for all.
                let (_, reports) = tokio::join!(host.drain(host.grace_period()), collect);
                reports
            }
        };
        let _ = stop.send(true);
        if let Some(announcing) = announcing {
            let _ = announcing.await;
        }
        reports
    }
}

/// Counts every service of `host` in its metrics, not subscribed yet: a
/// process that also serves MCP is not ready while Pulsar connects.
fn count_services(host: &Host) {
    for service in host.services() {
        host.metrics().service(service.id());
    }
}

/// The `/metrics` and probe endpoint, when one is asked for.
async fn bind_metrics(
    host: &Host,
    options: &ServeOptions,
) -> Result<Option<MetricsEndpoint>, ServeError> {
    let Some(address) = options.metrics else {
        return Ok(None);
    };
    host.open_metrics_endpoint(address)
        .await
        .map(Some)
        .map_err(|source| ServeError::Metrics { address, source })
}

/// The client, connected (retrying until `give_up` completes), and the
/// largest message it sends: the broker's, or less if the options say so.
async fn connect(
    options: &ServeOptions,
    give_up: impl Future<Output = ()>,
) -> Result<(pulsar::Pulsar<pulsar::TokioExecutor>, usize), ServeError> {
    let (pulsar, broker) = options
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
    Ok((pulsar, max_message_size))
}

/// One worker per hosted service, subscribed to its request topic.
async fn subscribe(
    host: &Host,
    options: &ServeOptions,
    pulsar: &pulsar::Pulsar<pulsar::TokioExecutor>,
    metrics: &Metrics,
    max_message_size: usize,
) -> Result<Vec<PulsarWorker>, ServeError> {
    let mut workers = Vec::with_capacity(host.hosted_services().len());
    for service in host.services() {
        workers.push(
            PulsarWorker::start(
                pulsar,
                host,
                service,
                metrics.service(service.id()),
                WorkerOptions {
                    window: options.receive_window_of(service),
                    log_payloads: options.log_payloads,
                    max_message_size,
                    batch_responses: options.batch_responses,
                },
            )
            .await?,
        );
    }
    Ok(workers)
}

/// The task that probes the broker connection (on the first service's
/// request topic) until dropped.
fn watch_broker(
    pulsar: &pulsar::Pulsar<pulsar::TokioExecutor>,
    workers: &[PulsarWorker],
    options: &ServeOptions,
    metrics: &Arc<Metrics>,
) -> AbortOnDrop {
    let probe = broker_health::pulsar_probe(
        pulsar.clone(),
        workers[0].service.request_queue().to_owned(),
        options.broker.clone(),
    );
    let (metrics, url) = (Arc::clone(metrics), options.broker.url().to_owned());
    AbortOnDrop(tokio::spawn(async move {
        broker_health::watch(probe, &metrics, &url).await;
    }))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Compiles only while serving can be spawned on a multi-threaded
    /// runtime.
    #[allow(dead_code)]
    fn serving_is_send(registry: &Registry, options: &ServeOptions, serving: Serving) {
        fn send<T: Send>(_: T) {}
        send(serving.run_until(async {}));
        send(serve(registry, options, async {}));
    }

    #[tokio::test]
    async fn an_empty_registry_is_refused_before_connecting() {
        let registry = Registry::from_services([]).unwrap();
        let options = ServeOptions::new("pulsar://127.0.0.1:9");
        let started = Serving::start(&registry, &options, std::future::pending()).await;
        assert!(
            matches!(
                started,
                Err(ServeError::Select(
                    crate::registry::SelectError::NothingToServe
                ))
            ),
            "{:?}",
            started.err()
        );
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

    /// Says "hi".
    #[crate::tool_service(topic = "serve-tests-hi")]
    async fn hi() -> &'static str {
        "hi"
    }

    /// Says a shared number.
    #[crate::tool_service(topic = "serve-tests-stateful")]
    async fn stateful(#[state] number: &u8) -> u8 {
        *number
    }

    #[tokio::test]
    async fn a_service_without_its_state_is_refused_before_connecting() {
        let registry = Registry::collect().unwrap();
        let mut options = ServeOptions::new("pulsar://127.0.0.1:9");
        options.host.only = vec![String::from("serve-tests-stateful-service")];
        let started = Serving::start(&registry, &options, std::future::pending()).await;
        match started {
            Err(ServeError::Select(crate::registry::SelectError::MissingState(missing))) => {
                assert!(
                    missing
                        .to_string()
                        .contains("service `serve-tests-stateful-service` takes a `u8`"),
                    "{missing}"
                )
            }
            other => panic!("expected MissingState, got {other:?}"),
        }
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
        options.host.only = vec![String::from("serve-tests-hi-service")];
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
}
