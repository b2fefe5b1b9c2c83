//! The byte budget of a replica: how much request data its workers hold in
//! memory at once, queued and running, over every service.
//!
//! Each request taken from the broker, or called over MCP, is [`Held`]
//! until it is answered (and acknowledged, or given back); its payload's
//! bytes count against the budget meanwhile, over every transport. Over the
//! budget, a persistent topic's worker stops reading, and wakes when a
//! release brings the total back under it; a non-persistent topic's worker
//! and MCP answer `overloaded` at once. A request larger than the whole
//! budget is still taken when nothing else is held, and so runs alone.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// The default budget: 64 MiB. A request in a handler costs about twice its
/// payload (the payload, and the arguments decoded from it), so this keeps
/// a replica of 4 MB requests under about 200 MiB.
pub const DEFAULT_MEMORY_BUDGET: usize = 64 * 1024 * 1024;

/// A replica's budget and what is held against it.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: usize,
    held: AtomicUsize,
    /// Woken when a release takes the total from at or over the limit to
    /// under it.
    released: Notify,
}

impl Budget {
    /// A budget of `limit` bytes (at least one).
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit: limit.max(1),
            held: AtomicUsize::new(0),
            released: Notify::new(),
        })
    }

    /// The budget, in bytes.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// The bytes held now.
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Whether a request of `bytes` would go over the budget, with others
    /// held (alone, any request fits).
    pub(crate) fn refuses(&self, bytes: usize) -> bool {
        let held = self.held();
        held > 0 && held.saturating_add(bytes) > self.limit
    }

    /// Whether the budget is used up: a persistent topic's worker stops
    /// reading.
    #[cfg_attr(not(feature = "pulsar"), allow(dead_code))]
    pub(crate) fn is_spent(&self) -> bool {
        self.held() >= self.limit
    }

    /// Completes once the budget is not spent; at once if it is not now.
    /// Wakes up for a release no matter when it happens after the call.
    #[cfg_attr(not(feature = "pulsar"), allow(dead_code))]
    pub(crate) async fn room(&self) {
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            if !self.is_spent() {
                return;
            }
            released.await;
        }
    }

    /// Holds `message`, whose payload has `bytes`, until the guard drops.
    pub(crate) fn hold<M>(self: &Arc<Self>, message: M, bytes: usize) -> Held<M> {
        self.held.fetch_add(bytes, Ordering::Relaxed);
        Held {
            message,
            bytes,
            budget: Arc::clone(self),
        }
    }

    fn release(&self, bytes: usize) {
        let before = self.held.fetch_sub(bytes, Ordering::Relaxed);
        if before >= self.limit && before - bytes < self.limit {
            self.released.notify_waiters();
        }
    }
}

impl Budget {
    /// The `overloaded` refusal of a request over the budget.
    pub(crate) fn refusal(&self) -> crate::error::ToolError {
        crate::error::ToolError::with_type(
            crate::error::ToolError::OVERLOADED,
            format!(
                "the service holds as many requests as its memory budget allows ({} of {}); try again later",
                size_text(self.held()),
                size_text(self.limit())
            ),
        )
    }
}

/// A size as a refusal says it: whole MiB, else whole KiB, else bytes,
/// rounded up (a budget under a MiB reads "512 KiB", never "0 MiB").
pub(crate) fn size_text(bytes: usize) -> String {
    const KIB: usize = 1 << 10;
    const MIB: usize = 1 << 20;
    if bytes >= MIB {
        format!("{} MiB", bytes.div_ceil(MIB))
    } else if bytes >= KIB {
        format!("{} KiB", bytes.div_ceil(KIB))
    } else {
        format!("{bytes} bytes")
    }
}

/// A request held against the budget; its bytes are released when it is
/// dropped.
#[derive(Debug)]
pub(crate) struct Held<M> {
    message: M,
    bytes: usize,
    budget: Arc<Budget>,
}

impl<M> std::ops::Deref for Held<M> {
    type Target = M;

    fn deref(&self) -> &M {
        &self.message
    }
}

impl<M> Drop for Held<M> {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sizes_read_in_the_largest_whole_unit_rounded_up() {
        assert_eq!(size_text(64 * 1024 * 1024), "64 MiB");
        assert_eq!(size_text(64 * 1024 * 1024 + 1), "65 MiB");
        assert_eq!(size_text(512 * 1024), "512 KiB");
        assert_eq!(size_text(1000), "1000 bytes");
    }

    #[test]
    fn held_bytes_are_released_when_dropped() {
        let budget = Budget::new(100);
        let a = budget.hold("a", 60);
        assert!(!budget.is_spent());
        assert!(budget.refuses(50));
        assert!(!budget.refuses(40));
        let b = budget.hold("b", 40);
        assert!(budget.is_spent());
        assert_eq!(*b, "b");
        drop(a);
        assert_eq!(budget.held(), 40);
        drop(b);
        assert_eq!(budget.held(), 0);
        // Alone, a request larger than the budget is taken.
        assert!(!budget.refuses(1_000));
        let big = budget.hold("big", 1_000);
        assert!(budget.is_spent() && budget.refuses(1));
        drop(big);
        assert!(!budget.is_spent());
    }

    #[tokio::test(start_paused = true)]
    async fn room_waits_for_the_release_that_brings_it_under() {
        let budget = Budget::new(100);
        let a = budget.hold((), 70);
        let b = budget.hold((), 40);
        let waiting = {
            let budget = Arc::clone(&budget);
            tokio::spawn(async move { budget.room().await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiting.is_finished());
        // 110 → 40: under the limit.
        drop(a);
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("woken by the release")
            .unwrap();
        drop(b);
        // Not spent: at once.
        budget.room().await;
    }
}
