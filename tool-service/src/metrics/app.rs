//! The application's own metrics: collectors of the text format that
//! `/metrics` renders after tool-service's families.

use std::fmt;
use std::sync::Arc;

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

    pub(super) fn collect(&self, out: &mut String) {
        for collector in &self.collectors {
            let start = out.len();
            collector.collect(out);
            if out.len() > start && !out.ends_with('\n') {
                out.push('\n');
            }
        }
    }
}
