//! Whether a service's requests are first polled in its consumer loop.
//!
//! Most handlers are ready on their first poll: decoding, a lookup, an
//! encode. Answering those in the loop, without a task, saves a spawn and
//! the cross-thread wake-ups that come with it. A handler that takes long on
//! its first poll (CPU work before its first `.await`) would stall the loop,
//! so the loop keeps a moving average of first-poll times per service and
//! spawns the requests of a slow service from the start. Spawned requests
//! measure their first poll too, so the gate opens again when the handler
//! gets fast.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// First polls longer than this, on average, go to the worker pool.
pub(super) const INLINE_LIMIT: Duration = Duration::from_micros(50);

/// The variable that replaces [`INLINE_LIMIT`] (a duration: `50ms`). Not
/// an operator's setting: under callgrind, which runs code some fifty
/// times slower, `bench/served_instructions.py` raises it so that requests
/// take the path they take at full speed.
const INLINE_LIMIT_ENV: &str = "TOOL_SERVICE_INLINE_LIMIT";

/// [`INLINE_LIMIT`], or the variable's, in nanoseconds.
fn inline_limit_ns() -> u64 {
    static LIMIT: OnceLock<u64> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let limit = std::env::var(INLINE_LIMIT_ENV)
            .ok()
            .and_then(|text| crate::duration::parse(&text).ok())
            .unwrap_or(INLINE_LIMIT);
        u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX)
    })
}

/// The most one first poll counts for in the average.
pub(super) const MAX_SAMPLE: Duration = Duration::from_micros(200);

/// A service's recent first-poll time: an exponentially weighted moving
/// average (each new time weighs 1/8).
#[derive(Debug, Default)]
pub(super) struct Gate {
    average_ns: AtomicU64,
}

impl Gate {
    /// Whether the next request should be polled in the loop first.
    pub(super) fn inline(&self) -> bool {
        self.average_ns.load(Ordering::Relaxed) < inline_limit_ns()
    }

    /// Adds one first-poll time. Updates from the loop and from tasks may
    /// race; a lost update only delays the average by one sample.
    ///
    /// A time is counted as at most [`MAX_SAMPLE`]: one poll that took long
    /// because the thread was preempted (common on a busy machine) must not
    /// send the next requests of a fast service to the pool, while a handler
    /// that is slow every time still closes the gate within three requests.
    pub(super) fn record(&self, took: Duration) {
        let took = u64::try_from(took.min(MAX_SAMPLE).as_nanos()).unwrap_or(u64::MAX);
        let old = self.average_ns.load(Ordering::Relaxed);
        let new = old - old / 8 + took / 8;
        self.average_ns.store(new, Ordering::Relaxed);
    }

    /// Makes a future and polls it once, timing both for the average (the
    /// making may do work too, such as decoding): its output if it is ready,
    /// else the future.
    pub(super) fn poll_once<F: Future + Unpin>(
        &self,
        make: impl FnOnce() -> F,
    ) -> Result<F::Output, F> {
        let started = Instant::now();
        let mut future = make();
        let ready = futures_util::FutureExt::now_or_never(&mut future);
        self.record(started.elapsed());
        ready.ok_or(future)
    }

    /// `future`, timing its first poll for the average (for a request that
    /// is spawned without an inline poll).
    pub(super) fn measure<F: Future + Unpin>(self: &Arc<Self>, future: F) -> Measured<F> {
        Measured {
            future,
            gate: Some(Arc::clone(self)),
        }
    }
}

/// A future whose first poll is timed into a [`Gate`].
pub(super) struct Measured<F> {
    future: F,
    gate: Option<Arc<Gate>>,
}

impl<F: Future + Unpin> Future for Measured<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        match this.gate.take() {
            Some(gate) => {
                let started = Instant::now();
                let polled = Pin::new(&mut this.future).poll(cx);
                gate.record(started.elapsed());
                polled
            }
            None => Pin::new(&mut this.future).poll(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_closes_for_slow_first_polls_and_opens_again() {
        let gate = Gate::default();
        assert!(gate.inline(), "a new service is polled inline");
        let mut slow = 0;
        while gate.inline() {
            gate.record(Duration::from_micros(300));
            slow += 1;
        }
        // A handler spinning 300 µs closes the gate within a few requests.
        assert!(slow <= 3, "{slow}");
        let mut fast = 0;
        while !gate.inline() {
            gate.record(Duration::from_micros(2));
            fast += 1;
        }
        assert!((1..=30).contains(&fast), "{fast}");
    }

    #[test]
    fn one_preempted_poll_does_not_close_the_gate() {
        let gate = Gate::default();
        for _ in 0..20 {
            gate.record(Duration::from_micros(3));
        }
        gate.record(Duration::from_millis(20));
        assert!(gate.inline(), "one 20 ms poll closed the gate");
        gate.record(Duration::from_millis(20));
        gate.record(Duration::from_millis(20));
        assert!(!gate.inline(), "three slow polls in a row close it");
    }

    #[test]
    fn poll_once_returns_what_is_ready_and_leaves_the_rest() {
        let gate = Gate::default();
        assert_eq!(gate.poll_once(|| std::future::ready(7)).ok(), Some(7));
        assert!(gate.poll_once(std::future::pending::<()>).is_err());
        // The making is timed too.
        gate.poll_once(|| {
            std::thread::sleep(Duration::from_millis(2));
            std::future::ready(())
        })
        .unwrap();
        let average = gate.average_ns.load(Ordering::Relaxed);
        assert!(average >= MAX_SAMPLE.as_nanos() as u64 / 8, "{average} ns");
    }

    #[tokio::test]
    async fn a_measured_future_records_its_first_poll_only() {
        let gate = Arc::new(Gate::default());
        let spin = Box::pin(async {
            let started = Instant::now();
            while started.elapsed() < Duration::from_millis(2) {}
            tokio::task::yield_now().await;
            let started = Instant::now();
            while started.elapsed() < Duration::from_millis(50) {}
        });
        gate.measure(spin).await;
        let average = gate.average_ns.load(Ordering::Relaxed);
        // One eighth of the first poll (2 ms, counted as MAX_SAMPLE); the
        // second (50 ms) would have added almost as much again.
        assert_eq!(
            average,
            MAX_SAMPLE.as_nanos() as u64 / 8,
            "{average} ns recorded"
        );
    }
}
