//! Any set of transports on one host, to one stop: the way
//! [`Transports::run`] serves Pulsar and MCP (or either) in one process,
//! with one metrics endpoint and one drain.

use std::collections::BTreeMap;
use std::error::Error;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;

use super::Host;

/// An error of a transport, as it stopped serving (a Pulsar one is a
/// [`ServeError`](crate::pulsar::serve::ServeError)).
pub type TransportError = Box<dyn Error + Send + Sync>;

/// What a transport's run ends with: what it reports per service.
pub(crate) type TransportRun = Pin<
    Box<dyn Future<Output = Result<Vec<(&'static str, ServiceReport)>, TransportError>> + Send>,
>;

/// A way of receiving calls that a [`Host`] serves them on, beside its
/// other transports: [`PulsarTransport`](crate::pulsar::serve::PulsarTransport)
/// (feature `pulsar`), [`HttpTransport`](crate::mcp::HttpTransport) and
/// [`StdioTransport`](crate::mcp::StdioTransport) (feature `mcp`).
///
/// A transport does its own protocol's work only; the host admits every
/// call, counts it for the drain and times it. Sealed: admission, the
/// drain and the metrics are the host's, and no API outside this crate
/// reaches them, so a transport of another crate could not keep the
/// host's promises.
pub trait Transport: sealed::Runs + Send + 'static {
    /// What logs and errors call it (`pulsar`, `mcp`).
    fn name(&self) -> &'static str;
}

pub(crate) mod sealed {
    /// How a [`Transport`](super::Transport) serves: in this crate only.
    pub trait Runs {
        /// Serves `host`'s calls until its drain is over (or until it
        /// cannot serve any longer, which ends the other transports too).
        fn run(self: Box<Self>, host: super::Host) -> super::TransportRun;
    }
}

/// What a service did on the transports that count each request (Pulsar).
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

impl ServiceReport {
    fn add(&mut self, other: Self) {
        self.answered += other.answered;
        self.abandoned += other.abandoned;
        self.refused += other.refused;
    }
}

/// How the host's transports ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Served {
    /// Calls still running when the grace period ended (abandoned).
    pub abandoned: usize,
    /// Per service id, what the transports that count each request did.
    pub services: BTreeMap<&'static str, ServiceReport>,
}

/// Why [`Transports::run`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The metrics and probe endpoint could not be opened.
    #[error("cannot serve metrics on {address}: {source}")]
    Metrics {
        /// The address asked for.
        address: SocketAddr,
        /// Why it could not be bound.
        source: std::io::Error,
    },
    /// A transport stopped serving with an error (the others then
    /// drained and stopped too).
    #[error("{source}")]
    Transport {
        /// Its [`Transport::name`].
        transport: &'static str,
        /// Its error.
        source: TransportError,
    },
    /// No transport was given.
    #[error("no transport to serve on")]
    Empty,
    /// The transports ended before they were ready (or before they were
    /// stopped) with no error of their own.
    #[error("the transports ended before they were ready")]
    NotReady,
}

/// The transports of one host, run together.
///
/// ```no_run
/// use std::sync::Arc;
/// use tool_service::host::{Host, HostOptions, Transports};
/// use tool_service::mcp::HttpTransport;
/// use tool_service::pulsar::serve::{PulsarTransport, ServeOptions};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Arc::new(tool_service::Registry::collect()?);
/// let host = Host::new(registry, &HostOptions::default())?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8900").await?;
/// let served = Transports::new(host)
///     .metrics_on("0.0.0.0:8000".parse()?)
///     .with(PulsarTransport::new(ServeOptions::new("pulsar://127.0.0.1:6650")))
///     .with(HttpTransport::new(listener, Default::default()))
///     .run(async { tokio::signal::ctrl_c().await.unwrap() })
///     .await?;
/// assert_eq!(served.abandoned, 0);
/// # Ok(()) }
/// ```
#[must_use = "nothing is served until `run` runs"]
pub struct Transports {
    host: Host,
    metrics: Option<SocketAddr>,
    transports: Vec<Box<dyn Transport>>,
}

impl std::fmt::Debug for Transports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transports")
            .field(
                "transports",
                &self.transports.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("metrics", &self.metrics)
            .finish_non_exhaustive()
    }
}

impl Transports {
    /// No transport yet, and no metrics endpoint, on `host`.
    pub fn new(host: Host) -> Self {
        Self {
            host,
            metrics: None,
            transports: Vec::new(),
        }
    }

    /// Serves `/metrics`, `/livez` and `/readyz` (with `/readyz/pulsar`
    /// and `/readyz/mcp`) for every transport at `address`.
    pub fn metrics_on(mut self, address: SocketAddr) -> Self {
        self.metrics = Some(address);
        self
    }

    /// Serves on `transport` too.
    pub fn with(mut self, transport: impl Transport) -> Self {
        self.transports.push(Box::new(transport));
        self
    }

    /// Serves on every transport until `shutdown` completes, or until one
    /// of them stops on its own; then drains them all at once: new calls
    /// are refused on each, and those admitted on any of them have the
    /// host's one grace period to finish.
    ///
    /// Runs in this future: awaited from `block_on` (as `run!()` does), the
    /// Pulsar consumer loops run on the thread that drives the runtime and
    /// leave the worker threads to the broker client and the handlers.
    ///
    /// # Errors
    /// The metrics endpoint could not be bound (before anything is
    /// served), or a transport stopped with an error.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<Served, RunError> {
        self.serve(shutdown, |_| {}).await
    }

    /// Starts serving in a task of its own, and hands back the [`Running`]
    /// transports: to wait until they are ready, read where the metrics
    /// are, and stop them. What a test or an application that serves
    /// beside other work holds.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use tool_service::host::{Host, HostOptions, Transports};
    /// use tool_service::mcp::HttpTransport;
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let registry = Arc::new(tool_service::Registry::collect()?);
    /// let host = Host::new(registry, &HostOptions::default())?;
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let url = format!("http://{}/mcp", listener.local_addr()?);
    /// let mut running = Transports::new(host)
    ///     .metrics_on("127.0.0.1:0".parse()?)
    ///     .with(HttpTransport::new(listener, Default::default()))
    ///     .start()
    ///     .await?;
    /// running.ready().await?;
    /// // … call the tools at `url`, read `running.metrics_address()` …
    /// let served = running.stop().await?;
    /// assert_eq!(served.abandoned, 0);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// No transport was given, or the metrics endpoint could not be bound.
    pub async fn start(self) -> Result<Running, RunError> {
        let host = self.host.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (opened, bound) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(self.serve(
            async move {
                let _ = stopped.await;
            },
            move |address| {
                let _ = opened.send(address);
            },
        ));
        let metrics_address = match bound.await {
            Ok(address) => address,
            // It ended before it served: the error says why.
            Err(_) => {
                return Err(joined(task.await).err().unwrap_or(RunError::NotReady));
            }
        };
        Ok(Running {
            host,
            metrics_address,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// [`Self::run`], telling `opened` where the metrics are served once
    /// everything is started.
    async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send,
        opened: impl FnOnce(Option<SocketAddr>) + Send,
    ) -> Result<Served, RunError> {
        let Self {
            host,
            metrics,
            transports,
        } = self;
        if transports.is_empty() {
            return Err(RunError::Empty);
        }
        // Run in this future, not spawned: Pulsar's consumer loops answer
        // ready requests where they are polled (see `pulsar::serve`).
        // Nothing runs until polled; a taken metrics port still fails
        // before anything is served.
        let mut running: FuturesUnordered<_> = transports
            .into_iter()
            .map(|transport| {
                let name = transport.name();
                let run = sealed::Runs::run(transport, host.clone());
                async move { (name, run.await) }
            })
            .collect();
        // Opened once the transports have counted their services, so that
        // `/readyz` names what is not ready yet from its first answer.
        let endpoint = match metrics {
            Some(address) => Some(
                host.open_metrics_endpoint(address)
                    .await
                    .map_err(|source| RunError::Metrics { address, source })?,
            ),
            None => None,
        };
        opened(endpoint.as_ref().map(|endpoint| endpoint.address));
        let mut ended = Ended::default();
        tokio::pin!(shutdown);
        tokio::select! {
            () = &mut shutdown => {}
            Some((name, result)) = running.next() => ended.add(name, result),
        }
        let rest = async {
            while let Some((name, result)) = running.next().await {
                ended.add(name, result);
            }
        };
        let (_, ()) = tokio::join!(host.drain(host.grace_period()), rest);
        drop(endpoint);
        match ended.failed {
            Some(error) => Err(error),
            None => Ok(Served {
                abandoned: host.abandoned(),
                services: ended.services,
            }),
        }
    }
}

/// Transports serving in a task of their own, from [`Transports::start`]:
/// stopped (and drained) by [`Self::stop`], or when dropped.
#[derive(Debug)]
#[must_use = "dropping it stops serving"]
pub struct Running {
    host: Host,
    metrics_address: Option<SocketAddr>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<Served, RunError>>>,
}

impl Running {
    /// The host the transports serve: its metrics, its calls in flight.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Where `/metrics` and the probes are served (with the port chosen
    /// when 0 was asked for), if [`Transports::metrics_on`] asked.
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics_address
    }

    /// Waits until the host is ready, as `/readyz` says: every service
    /// subscribed and served on each transport, the broker connected, the
    /// authorization server's keys loaded, the application's own check
    /// passing.
    ///
    /// # Errors
    /// A transport stopped before that, with its error (the broker refused
    /// this process, a topic could not be subscribed), or they all ended.
    pub async fn ready(&mut self) -> Result<(), RunError> {
        const EVERY: Duration = Duration::from_millis(5);
        loop {
            if self.host.metrics().readiness().is_ok() {
                return Ok(());
            }
            if self.task.as_ref().is_none_or(|task| task.is_finished()) {
                return match self.task.take() {
                    Some(task) => joined(task.await).and(Err(RunError::NotReady)),
                    None => Err(RunError::NotReady),
                };
            }
            tokio::time::sleep(EVERY).await;
        }
    }

    /// Drains every transport (new calls refused, those in flight given
    /// the grace period) and stops them; how they ended.
    ///
    /// # Errors
    /// A transport stopped with an error.
    pub async fn stop(mut self) -> Result<Served, RunError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => joined(task.await),
            None => Err(RunError::NotReady),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// How the serving task ended: a panic in it goes on in the caller.
fn joined(
    result: Result<Result<Served, RunError>, tokio::task::JoinError>,
) -> Result<Served, RunError> {
    match result {
        Ok(served) => served,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => Err(RunError::NotReady),
    }
}

/// What the transports ended with, as they end.
#[derive(Default)]
struct Ended {
    /// The first transport's error.
    failed: Option<RunError>,
    services: BTreeMap<&'static str, ServiceReport>,
}

impl Ended {
    fn add(
        &mut self,
        transport: &'static str,
        result: Result<Vec<(&'static str, ServiceReport)>, TransportError>,
    ) {
        match result {
            Ok(reports) => {
                for (service, report) in reports {
                    self.services.entry(service).or_default().add(report);
                }
            }
            Err(source) => {
                if self.failed.is_none() {
                    self.failed = Some(RunError::Transport { transport, source });
                }
            }
        }
    }
}
