//! Any set of transports on one host, to one stop: the way
//! [`Transports::run`] serves Pulsar and MCP (or either) in one process,
//! with one metrics endpoint and one drain.

use std::error::Error;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;

use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;

use super::Host;

/// An error of a transport, as it stopped serving.
pub type TransportError = Box<dyn Error + Send + Sync>;

/// What a transport's run ends with.
pub type TransportRun = Pin<Box<dyn Future<Output = Result<(), TransportError>> + Send>>;

/// A way of receiving calls that a [`Host`] serves them on, beside its
/// other transports: [`PulsarTransport`](crate::pulsar::serve::PulsarTransport)
/// (feature `pulsar`), [`HttpTransport`](crate::mcp::HttpTransport) and
/// [`StdioTransport`](crate::mcp::StdioTransport) (feature `mcp`).
///
/// A transport does its own protocol's work only; the host admits every
/// call, counts it for the drain and times it. Sealed: a transport needs
/// the host's admission, which is this crate's.
pub trait Transport: Send + 'static {
    /// What logs and errors call it (`pulsar`, `mcp`).
    fn name(&self) -> &'static str;

    /// Serves `host`'s calls until its drain is over (or until it cannot
    /// serve any longer, which ends the other transports too).
    #[doc(hidden)]
    fn run(self: Box<Self>, host: Host, sealed: Sealed) -> TransportRun;
}

/// What only this crate can make: what keeps [`Transport`] sealed.
#[derive(Debug)]
pub struct Sealed(());

/// How the host's transports ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Served {
    /// Calls still running when the grace period ended (abandoned).
    pub abandoned: usize,
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
    /// # Errors
    /// The metrics endpoint could not be bound (before anything is
    /// served), or a transport stopped with an error.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<Served, RunError> {
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
                let run = transport.run(host.clone(), Sealed(()));
                async move { (name, run.await) }
            })
            .collect();
        // Opened once the transports have counted their services, so that
        // `/readyz` names what is not ready yet from its first answer.
        let _endpoint = match metrics {
            Some(address) => Some(
                host.open_metrics_endpoint(address)
                    .await
                    .map_err(|source| RunError::Metrics { address, source })?,
            ),
            None => None,
        };
        let mut failed = None;
        tokio::pin!(shutdown);
        tokio::select! {
            () = &mut shutdown => {}
            Some((name, ended)) = running.next() => keep_first(&mut failed, name, ended),
        }
        let rest = async {
            while let Some((name, ended)) = running.next().await {
                keep_first(&mut failed, name, ended);
            }
        };
        let (_, ()) = tokio::join!(host.drain(host.grace_period()), rest);
        match failed {
            Some(error) => Err(error),
            None => Ok(Served {
                abandoned: host.abandoned(),
            }),
        }
    }
}

/// Keeps the first transport's error.
fn keep_first(
    failed: &mut Option<RunError>,
    transport: &'static str,
    ended: Result<(), TransportError>,
) {
    if let (Err(source), None) = (ended, &failed) {
        *failed = Some(RunError::Transport { transport, source });
    }
}
