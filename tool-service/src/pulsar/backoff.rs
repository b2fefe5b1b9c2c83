//! The one retry schedule of the crate: exponential, doubling from a first
//! delay up to a ceiling.

use std::time::Duration;

/// Delays between attempts: `first`, then twice as long each time, never
/// more than `max`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    /// Starts at `first` (at most `max`).
    pub(crate) fn new(first: Duration, max: Duration) -> Self {
        Self {
            next: first.min(max),
            max,
        }
    }

    /// How long to wait before the coming attempt, as the log reports it.
    pub(crate) fn delay(&self) -> Duration {
        self.next
    }

    /// Waits [`Self::delay`], then doubles it for the attempt after.
    pub(crate) async fn wait(&mut self) {
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(self.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn delays_double_up_to_the_ceiling() {
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(350));
        let mut delays = Vec::new();
        for _ in 0..4 {
            delays.push(backoff.delay());
            let before = tokio::time::Instant::now();
            backoff.wait().await;
            assert_eq!(before.elapsed(), delays[delays.len() - 1]);
        }
        assert_eq!(
            delays,
            [100, 200, 350, 350].map(Duration::from_millis).to_vec()
        );
        assert_eq!(
            Backoff::new(Duration::from_secs(9), Duration::from_secs(1)).delay(),
            Duration::from_secs(1)
        );
    }
}
