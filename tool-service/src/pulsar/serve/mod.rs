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
use std::sync::Arc;

use tokio::sync::watch;

pub use options::{AnnounceOptions, ServeOptions, DEFAULT_RECEIVE_WINDOW};

use crate::host::{AbortOnDrop, Host, ServiceReport};
use crate::metrics::Metrics;
use crate::registry::Registry;
use worker::{PulsarWorker, WorkerOptions};

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The broker could not be reached before shutdown, or refused this
    /// process.
    #[error("cannot connect to the Pulsar broker at {url}: {source}")]
    Connect {
        /// The broker URL.
        url: String,
        /// Why.
        source: Box<crate::pulsar::broker::ConnectError>,
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

/// Serves `host`'s services on Pulsar until the host's drain begins, then
/// lets in-flight requests finish until it is over. While the broker is
/// unreachable at start, retries with backoff (and logs each attempt), and
/// gives up without an error if the drain begins first.
async fn serve_on_host(
    host: &Host,
    options: &ServeOptions,
) -> Result<HashMap<&'static str, ServiceReport>, ServeError> {
    let serving = match Serving::start(host, options, host.draining()).await {
        Ok(serving) => serving,
        Err(ServeError::Connect { .. }) if host.is_closing() => return Ok(HashMap::new()),
        Err(error) => return Err(error),
    };
    Ok(serving.run_until(host.draining()).await)
}

/// Serving on Apache Pulsar, as one of a host's transports (alone, or
/// beside MCP): see [`Transports`](crate::host::Transports). The host's
/// options (selection, timeouts, concurrency, rates, grace period) apply,
/// and the host's metrics endpoint serves its metrics.
///
/// ```no_run
/// use std::sync::Arc;
/// use tool_service::host::{Host, HostOptions, Transports};
/// use tool_service::pulsar::serve::{PulsarTransport, ServeOptions};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Arc::new(tool_service::Registry::collect()?);
/// let host = Host::new(registry, &HostOptions::default())?;
/// let served = Transports::new(host)
///     .with(PulsarTransport::new(ServeOptions::new("pulsar://127.0.0.1:6650")))
///     .run(async { tokio::signal::ctrl_c().await.unwrap() })
///     .await?;
/// println!("{:?}", served.services);
/// # Ok(()) }
/// ```
///
/// If it cannot start (the broker refuses this process, a topic cannot be
/// subscribed), the host's other transports stop too, and
/// [`RunError::Transport`](crate::host::RunError::Transport) holds its
/// [`ServeError`].
#[derive(Debug)]
pub struct PulsarTransport {
    options: ServeOptions,
}

impl PulsarTransport {
    /// Pulsar, as `options` says.
    pub fn new(options: ServeOptions) -> Self {
        Self { options }
    }
}

impl crate::host::Transport for PulsarTransport {
    fn name(&self) -> &'static str {
        "pulsar"
    }
}

impl crate::host::sealed::Runs for PulsarTransport {
    fn run(self: Box<Self>, host: Host) -> crate::host::TransportRun {
        let options = self.options;
        // Counted at once: the host's `/readyz` names them from its first
        // answer.
        count_services(&host);
        Box::pin(async move {
            let reports = serve_on_host(&host, &options).await?;
            Ok(reports.into_iter().collect())
        })
    }
}

/// Services that are subscribed and about to serve: requests published from
/// now on are answered.
#[must_use = "nothing is served until `run_until` runs"]
pub(crate) struct Serving {
    workers: Vec<PulsarWorker>,
    /// Admission and the drain, shared with other transports.
    host: Host,
    metrics: Arc<Metrics>,
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
            .finish()
    }
}

impl Serving {
    /// Connects (retrying until `give_up` completes) and subscribes every
    /// service of `host` (its selection, policies, metrics and rate
    /// limits, shared with its other transports).
    ///
    /// # Errors
    /// See [`ServeError`].
    pub(crate) async fn start(
        host: &Host,
        options: &ServeOptions,
        give_up: impl Future<Output = ()>,
    ) -> Result<Self, ServeError> {
        if let Some(warning) = options.broker.cleartext_token_warning() {
            tracing::warn!("{warning}");
        }
        let metrics = Arc::clone(host.metrics());
        count_services(host);
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
            nodelay,
            announcing,
            watcher,
        })
    }

    /// Serves until the host's drain begins (`shutdown`), lets in-flight
    /// requests finish until it is over, closes consumers and producers,
    /// and reports per service.
    ///
    /// Every service's consumer loop runs inside this future rather than as
    /// a task of its own: requests that are ready on their first poll are
    /// answered by the loop, and the others run as tasks on the runtime.
    /// Awaited from `block_on` (as `run!()` awaits `Transports::run`), the
    /// loops stay off the worker threads; spawned
    /// (`Transports::start`), all of them share that one task, which is
    /// fine for a few services and light traffic.
    pub(crate) async fn run_until(
        self,
        shutdown: impl Future<Output = ()>,
    ) -> HashMap<&'static str, ServiceReport> {
        // Metrics stay served until the last report is in.
        let Self {
            workers,
            host: _host,
            metrics: _metrics,
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
                // The loops end with the host's drain, which the host runs
                // for all its transports: one grace period for all.
                collect.await
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
                    window: options
                        .receive_window_of(host.concurrency_of(service).unwrap_or_default()),
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

    /// Compiles only while serving can be spawned on a multi-threaded
    /// runtime.
    #[allow(dead_code)]
    fn serving_is_send(host: &Host, options: &ServeOptions, serving: Serving) {
        fn send<T: Send>(_: T) {}
        send(serving.run_until(async {}));
        send(serve_on_host(host, options));
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
    async fn a_service_without_its_state_is_refused_before_anything_is_served() {
        let registry = Arc::new(Registry::collect().unwrap());
        let options = crate::host::HostOptions {
            only: vec![String::from("serve-tests-stateful-service")],
            ..Default::default()
        };
        match Host::new(registry, &options) {
            Err(crate::registry::SelectError::MissingState(missing)) => assert!(
                missing
                    .to_string()
                    .contains("service `serve-tests-stateful-service` takes a `u8`"),
                "{missing}"
            ),
            other => panic!("expected MissingState, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn the_metrics_port_closes_when_serving_ends_without_a_broker() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .unwrap()
            .port();
        let registry = Arc::new(Registry::collect().unwrap());
        let host_options = crate::host::HostOptions {
            only: vec![String::from("serve-tests-hi-service")],
            ..Default::default()
        };
        let host = Host::new(registry, &host_options).unwrap();
        // Port 9 (discard) on loopback is closed on these machines: the
        // transport retries until the shutdown.
        let running = crate::host::Transports::new(host)
            .metrics_on(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
            .with(PulsarTransport::new(ServeOptions::new(
                "pulsar://127.0.0.1:9",
            )))
            .start()
            .await
            .unwrap();
        assert_eq!(
            running.metrics_address().map(|address| address.port()),
            Some(port)
        );
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        let served = running.stop().await.unwrap();
        assert!(served.services.is_empty(), "{served:?}");
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "the metrics port is still open"
        );
    }
}
