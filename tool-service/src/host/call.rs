//! One call's way through a host, the same on every transport: admitted,
//! started under its service's concurrency, finished (or refused) with the
//! same metrics and the same error type on its span.
//!
//! The order of admission, and why, is the [module's](super#admission).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{shutting_down, Host, Hosted, Inner};
use crate::error::ToolError;
use crate::log_text::Untrusted;
use crate::metrics::{InFlight, ServiceMetrics};
use crate::service::Lease;
use crate::trace::RequestSpan;

/// What step 2 of admission does when the budget is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OverBudget {
    /// Answer `overloaded` at once (MCP, a non-persistent Pulsar topic).
    Refuse,
    /// Nothing here: the transport takes no more until there is room (a
    /// persistent Pulsar topic).
    #[cfg_attr(not(feature = "pulsar"), allow(dead_code))]
    HeldBack,
}

/// A call past steps 1 to 3 of admission, waiting for its service's
/// concurrency permit. Counted for the drain while it lives.
#[must_use = "a call admitted and dropped is never answered"]
pub(crate) struct Admitted {
    counted: Counted,
    permits: Arc<Semaphore>,
    /// Whether the service's handler is a plain `fn`, whose thread may
    /// outlive the call's answer.
    blocking: bool,
}

/// A call in its handler: counted for the drain, holding one of its
/// service's concurrency permits, and timed.
#[must_use = "a call that is dropped unfinished is not counted as answered"]
pub(crate) struct Call {
    place: Placed,
    in_flight: InFlight,
    started: Instant,
}

/// Where a call keeps its place: with the call, or (a blocking handler's)
/// shared with the handler's thread, which may outlive the answer.
enum Placed {
    Own { _place: Place },
    Shared(Arc<Place>),
}

/// A call's place in its host: its count in the drain and its concurrency
/// permit, released once the call and every [`Lease`] of it are gone.
struct Place {
    _counted: Counted,
    _permit: OwnedSemaphorePermit,
}

/// A refusal on its way to its caller (over Pulsar, until the broker
/// confirms it): the drain waits for it as for a call.
pub(crate) struct Refusing {
    _counted: Counted,
}

/// A permit of a service, on its way.
#[cfg(feature = "pulsar")]
pub(crate) type Permit = std::pin::Pin<
    Box<
        dyn std::future::Future<Output = Result<OwnedSemaphorePermit, tokio::sync::AcquireError>>
            + Send,
    >,
>;

/// One call counted in the host's in-flight total while this lives.
struct Counted(Arc<Inner>);

impl Drop for Counted {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Host {
    /// Steps 1 to 3 of [admission](super#admission) for a call of `hosted`
    /// whose request has `bytes`: the drain, the byte budget (as
    /// `over_budget` says), the rate limit.
    ///
    /// # Errors
    /// The refusal to answer the call with.
    pub(crate) fn admit(
        &self,
        hosted: &Hosted,
        bytes: usize,
        over_budget: OverBudget,
    ) -> Result<Admitted, ToolError> {
        // Counted before the check, so that a drain that begins meanwhile
        // either sees this call or is seen by it.
        self.inner.in_flight.fetch_add(1, Ordering::AcqRel);
        let counted = Counted(Arc::clone(&self.inner));
        if self.is_closing() {
            return Err(shutting_down());
        }
        if over_budget == OverBudget::Refuse && self.inner.budget.refuses(bytes) {
            return Err(self.inner.budget.refusal());
        }
        if let Some(rate) = &hosted.limiter {
            rate.admit()?;
        }
        Ok(Admitted {
            counted,
            permits: Arc::clone(&hosted.permits),
            blocking: hosted.service.is_blocking(),
        })
    }
}

impl Host {
    /// Counts a refusal until it is delivered.
    #[cfg_attr(not(feature = "pulsar"), allow(dead_code))]
    pub(crate) fn refusing(&self) -> Refusing {
        self.inner.in_flight.fetch_add(1, Ordering::AcqRel);
        Refusing {
            _counted: Counted(Arc::clone(&self.inner)),
        }
    }
}

impl Admitted {
    /// Step 4 now: the call, if a permit is free (timed in `metrics`).
    pub(crate) fn try_start(self, metrics: &Arc<ServiceMetrics>) -> Result<Call, Self> {
        match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(permit) => Ok(self.started(permit, metrics)),
            Err(_) => Err(self),
        }
    }

    /// Step 4, waiting: the call once a permit is free, or the drain's
    /// refusal if `host` begins to drain first.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) async fn start(
        self,
        host: &Host,
        metrics: &Arc<ServiceMetrics>,
    ) -> Result<Call, ToolError> {
        let admitted = match self.try_start(metrics) {
            Ok(call) => return Ok(call),
            Err(admitted) => admitted,
        };
        tokio::select! {
            biased;
            () = host.draining() => Err(shutting_down()),
            permit = Arc::clone(&admitted.permits).acquire_owned() => match permit {
                Ok(permit) => Ok(admitted.started(permit, metrics)),
                Err(_) => Err(shutting_down()),
            },
        }
    }

    /// A wait for a permit of this call's service, to poll where a
    /// transport waits for several things at once.
    #[cfg(feature = "pulsar")]
    pub(crate) fn permit(&self) -> Permit {
        Box::pin(Arc::clone(&self.permits).acquire_owned())
    }

    /// The call, with the permit [`Self::permit`] gave.
    pub(crate) fn started(
        self,
        permit: OwnedSemaphorePermit,
        metrics: &Arc<ServiceMetrics>,
    ) -> Call {
        Call {
            place: {
                let place = Place {
                    _counted: self.counted,
                    _permit: permit,
                };
                // Shared only where a thread may need a share: an async
                // handler's call pays for no allocation.
                if self.blocking {
                    Placed::Shared(Arc::new(place))
                } else {
                    Placed::Own { _place: place }
                }
            },
            in_flight: metrics.start(),
            started: Instant::now(),
        }
    }
}

impl Call {
    /// A share of this call's place (permit and drain count) for a
    /// blocking handler's thread, which may run on after the call is
    /// answered (at its timeout): the place is free once both are done.
    /// An async handler's call has none to give: its future is dropped at
    /// the answer.
    pub(crate) fn lease(&self) -> Lease {
        match &self.place {
            Placed::Shared(place) => {
                Lease::of(Arc::clone(place) as Arc<dyn std::any::Any + Send + Sync>)
            }
            Placed::Own { .. } => Lease::none(),
        }
    }

    /// The call was answered: with a result (`error` is `None`) or with
    /// `error`. Counted and timed in the metrics it started in, with the
    /// error's type on its span; the permit and the drain's count go with
    /// it.
    pub(crate) fn finish(self, span: &RequestSpan, error: Option<&ToolError>) {
        let elapsed = self.started.elapsed();
        let kind = error.map(ToolError::kind);
        finished(span, kind, elapsed);
        self.in_flight.finish(kind, elapsed);
    }
}

/// A call refused at admission: counted under its error type, with the
/// type on its span.
pub(crate) fn refused(metrics: &ServiceMetrics, span: &RequestSpan, error: &ToolError) {
    metrics.refused(error.kind());
    crate::trace::failed(span, error.kind());
}

/// The span of a call that ended: its error type, and a debug line.
fn finished(span: &RequestSpan, kind: Option<&str>, elapsed: Duration) {
    if let Some(kind) = kind {
        crate::trace::failed(span, kind);
    }
    if tracing::enabled!(tracing::Level::DEBUG) {
        // The type only: messages may quote argument values.
        span.in_scope(|| {
            tracing::debug!(
                error = kind.map(|kind| tracing::field::debug(Untrusted::text(kind))),
                ?elapsed,
                "answered"
            )
        });
    }
}
