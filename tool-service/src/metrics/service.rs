//! One service's metrics on one transport: its counters, the requests in
//! flight, and the latency histogram.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Upper bounds of the latency histogram's buckets, in seconds: finer than
/// TrustGraph's below 50 ms, where Rust handlers answer, and the same above.
const BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    120.0,
];

/// The transport a service's calls come over, as its samples are labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// Unlabelled, as TrustGraph's own processors' samples are.
    Pulsar,
    /// `transport="mcp"`.
    Mcp,
}

impl Via {
    /// Its name in `/readyz/…` and in the `transport` label.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Pulsar => "pulsar",
            Self::Mcp => "mcp",
        }
    }
}

/// The metrics of one service.
#[derive(Debug)]
pub(crate) struct ServiceMetrics {
    pub(super) processor: &'static str,
    pub(super) transport: Via,
    pub(super) ok: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) in_flight: AtomicI64,
    pub(super) running: AtomicBool,
    pub(super) oversized: AtomicU64,
    pub(super) send_failures: AtomicU64,
    /// Batches of responses sent, and the responses in them.
    pub(super) batches: AtomicU64,
    pub(super) batched: AtomicU64,
    /// Response frames of a batch the broker refused, sent again alone.
    pub(super) resent_alone: AtomicU64,
    pub(super) latency: Histogram,
    pub(super) errors: Mutex<Vec<(String, u64)>>,
}

impl ServiceMetrics {
    pub(super) fn new(processor: &'static str, transport: Via) -> Self {
        Self {
            processor,
            transport,
            ok: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            in_flight: AtomicI64::new(0),
            running: AtomicBool::new(false),
            oversized: AtomicU64::new(0),
            send_failures: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            batched: AtomicU64::new(0),
            resent_alone: AtomicU64::new(0),
            latency: Histogram::default(),
            errors: Mutex::new(Vec::new()),
        }
    }

    /// `processor="…"`, and `transport="…"` for another transport than
    /// Pulsar.
    pub(super) fn labels(&self) -> String {
        match self.transport {
            Via::Pulsar => format!("processor=\"{}\"", self.processor),
            Via::Mcp => format!(
                "processor=\"{}\",transport=\"{}\"",
                self.processor,
                self.transport.name()
            ),
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

    /// Counts a batch of `frames` response frames sent to the broker.
    #[cfg_attr(not(feature = "pulsar"), allow(dead_code))]
    pub(crate) fn batch_sent(&self, frames: usize) {
        let _ = self.batches.fetch_add(1, Ordering::Relaxed);
        let _ = self
            .batched
            .fetch_add(u64::try_from(frames).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Counts a response frame of a refused batch, sent again alone.
    #[cfg_attr(not(feature = "pulsar"), allow(dead_code))]
    pub(crate) fn resent_alone(&self) {
        let _ = self.resent_alone.fetch_add(1, Ordering::Relaxed);
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
pub(super) struct Histogram {
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

    pub(super) fn render(&self, out: &mut String, name: &str, labels: &str) {
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
    use super::super::registry::Metrics;
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
    fn calls_over_another_transport_are_labelled_with_it() {
        let metrics = Metrics::new();
        let calls = metrics.service_on("joke-service", Via::Mcp);
        calls.start().finish(None, Duration::from_millis(1));
        assert!(metrics.render().contains(
            "tg_dynamic_tool_service_invocation_total{processor=\"joke-service\",transport=\"mcp\"} 1\n"
        ));
    }
}
