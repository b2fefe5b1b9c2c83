//! A service's rate limit on one replica: a token bucket that holds up to a
//! rate's count of calls and refills at the rate.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::ToolError;
use crate::rate::Rate;

/// The calls a service may still take now, refilled over time.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    rate: Rate,
    /// Calls per second.
    refill: f64,
    bucket: Mutex<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    /// Calls that may start now (fractions accumulate).
    tokens: f64,
    /// When `tokens` was last brought up to date.
    at: Instant,
}

impl RateLimiter {
    /// A full bucket: a burst of the rate's count may start at once.
    pub(crate) fn new(rate: Rate) -> Self {
        let capacity = f64::from(rate.calls());
        Self {
            rate,
            refill: capacity / rate.period().as_secs_f64(),
            bucket: Mutex::new(Bucket {
                tokens: capacity,
                at: Instant::now(),
            }),
        }
    }

    pub(crate) fn rate(&self) -> Rate {
        self.rate
    }

    /// Takes one call, or says when one may be taken again.
    pub(crate) fn admit(&self) -> Result<(), ToolError> {
        self.take(Instant::now())
            .map_err(|wait| rate_limited(self.rate, wait))
    }

    fn take(&self, now: Instant) -> Result<(), Duration> {
        let mut bucket = self.bucket.lock().unwrap_or_else(PoisonError::into_inner);
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        let capacity = f64::from(self.rate.calls());
        bucket.tokens = (bucket.tokens + elapsed * self.refill).min(capacity);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / self.refill))
        }
    }
}

/// The refusal of a call over the limit, saying when to try again.
fn rate_limited(rate: Rate, wait: Duration) -> ToolError {
    ToolError::with_type(
        ToolError::RATE_LIMITED,
        format!(
            "the service is called more often than its limit of {}; try again in {}",
            rate.in_words(),
            retry_text(wait)
        ),
    )
}

/// A wait, rounded up, in the largest unit that keeps it readable: "40 ms",
/// "2 s", "3 min".
fn retry_text(wait: Duration) -> String {
    let ms = wait.as_nanos().div_ceil(1_000_000).max(1);
    if ms < 1_000 {
        format!("{ms} ms")
    } else if ms < 120_000 {
        format!("{} s", ms.div_ceil(1_000))
    } else {
        format!("{} min", ms.div_ceil(60_000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_the_count_passes_then_the_rate_refills() {
        let limiter = RateLimiter::new(Rate::per_second(4));
        let start = Instant::now();
        for _ in 0..4 {
            assert_eq!(limiter.take(start), Ok(()));
        }
        assert_eq!(limiter.take(start), Err(Duration::from_millis(250)));
        // A quarter of a second later, one more.
        let later = start + Duration::from_millis(250);
        assert_eq!(limiter.take(later), Ok(()));
        assert!(limiter.take(later).is_err());
        // Idle for long: a full burst again, never more.
        let idle = later + Duration::from_secs(60);
        for _ in 0..4 {
            assert_eq!(limiter.take(idle), Ok(()));
        }
        assert!(limiter.take(idle).is_err());
    }

    #[test]
    fn the_refusal_says_the_limit_and_when_to_try_again() {
        let limiter = RateLimiter::new(Rate::per_minute(1));
        limiter.admit().unwrap();
        let refused = limiter.admit().unwrap_err();
        assert_eq!(refused.kind(), ToolError::RATE_LIMITED);
        assert!(
            refused.message().starts_with(
                "the service is called more often than its limit of 1 call per minute; try again in "
            ),
            "{}",
            refused.message()
        );
        assert_eq!(retry_text(Duration::from_micros(1)), "1 ms");
        assert_eq!(retry_text(Duration::from_micros(39_001)), "40 ms");
        assert_eq!(retry_text(Duration::from_millis(1_500)), "2 s");
        assert_eq!(retry_text(Duration::from_secs(600)), "10 min");
    }
}
