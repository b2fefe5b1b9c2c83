//! The MCP port's connections: at most a cap of them, and room for a new
//! one made by closing the one idle longest (a connection that is not
//! answering a request: between requests, or still waiting for a whole
//! request head), so that a client holding many half-sent requests cannot
//! keep everyone else out; and the header timeout, as a sweep of the idle
//! ones now and then.
//!
//! hyper has a header read timeout of its own, but it arms a timer for
//! every request, and each new earliest deadline wakes a parked runtime
//! thread: measured over MCP at 1 call in flight, 0.64 more `write`s and
//! 0.4 more `epoll_wait`s per call and about 5% more CPU per call than
//! without it (`scripts/bench.sh mcp`). The sweep costs nothing per
//! request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;

/// The open connections of one MCP port.
pub(crate) struct Connections {
    max: usize,
    /// When the port opened: idle times are kept as nanoseconds since.
    epoch: Instant,
    next: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Connection>>>,
    metrics: Arc<Metrics>,
}

/// One open connection.
pub(crate) struct Connection {
    id: u64,
    /// Requests being answered on it (HTTP/1: 0 or 1).
    answering: AtomicUsize,
    /// Nanoseconds since the port opened at which it last became idle.
    idle_since: AtomicU64,
    /// Cancelled to close it.
    close: CancellationToken,
}

/// A connection admitted: gone from the open ones when dropped.
pub(crate) struct Admitted {
    connections: Arc<Connections>,
    connection: Arc<Connection>,
}

/// A connection, as its requests see it.
#[derive(Clone)]
pub(crate) struct Handle {
    connections: Arc<Connections>,
    connection: Arc<Connection>,
}

/// Held while a request is answered (until its response body ends).
pub(crate) struct Answering {
    connections: Arc<Connections>,
    connection: Arc<Connection>,
}

impl Connections {
    pub(crate) fn new(max: usize, metrics: Arc<Metrics>) -> Arc<Self> {
        metrics.mcp_max_connections(max.max(1));
        Arc::new(Self {
            max: max.max(1),
            epoch: Instant::now(),
            next: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
            metrics,
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// A new connection, when there is room for it or room can be made by
    /// closing the connection idle longest; `None` when every open one is
    /// answering a request.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.len() >= self.max {
            let idlest = open
                .values()
                .filter(|connection| connection.answering.load(Ordering::Acquire) == 0)
                .min_by_key(|connection| connection.idle_since.load(Ordering::Relaxed))
                .map(|connection| connection.id);
            let Some(id) = idlest else {
                drop(open);
                self.metrics
                    .mcp_connection_closed(crate::metrics::CloseReason::OverCapacity);
                return None;
            };
            if let Some(evicted) = open.remove(&id) {
                evicted.close.cancel();
                self.metrics
                    .mcp_connection_closed(crate::metrics::CloseReason::Evicted);
            }
        }
        let connection = Arc::new(Connection {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            answering: AtomicUsize::new(0),
            idle_since: AtomicU64::new(self.now()),
            close: CancellationToken::new(),
        });
        open.insert(connection.id, Arc::clone(&connection));
        drop(open);
        self.metrics.mcp_connection(true);
        Some(Admitted {
            connections: Arc::clone(self),
            connection,
        })
    }
}

impl Connections {
    /// Closes every connection idle (not answering a request) for longer
    /// than `timeout`: one that never sent a whole request head, or sent
    /// none since its last answer.
    pub(crate) fn sweep(&self, timeout: std::time::Duration) {
        let timeout = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        let now = self.now();
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let stale: Vec<u64> = open
            .values()
            .filter(|connection| {
                connection.answering.load(Ordering::Acquire) == 0
                    && now.saturating_sub(connection.idle_since.load(Ordering::Relaxed)) > timeout
            })
            .map(|connection| connection.id)
            .collect();
        for id in stale {
            if let Some(connection) = open.remove(&id) {
                connection.close.cancel();
                self.metrics
                    .mcp_connection_closed(crate::metrics::CloseReason::HeaderTimeout);
            }
        }
    }
}

impl Admitted {
    /// Completes when the connection is closed by the sweep or to make
    /// room for another.
    pub(crate) fn closed(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.connection.close.cancelled()
    }

    /// The connection, for its requests.
    pub(crate) fn handle(&self) -> Handle {
        Handle {
            connections: Arc::clone(&self.connections),
            connection: Arc::clone(&self.connection),
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let removed = self
            .connections
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.connection.id);
        drop(removed);
        self.connections.metrics.mcp_connection(false);
    }
}

impl Handle {
    /// Marks the connection as answering a request until the guard drops.
    pub(crate) fn answering(&self) -> Answering {
        self.connection.answering.fetch_add(1, Ordering::AcqRel);
        Answering {
            connections: Arc::clone(&self.connections),
            connection: Arc::clone(&self.connection),
        }
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.connection
            .idle_since
            .store(self.connections.now(), Ordering::Relaxed);
        self.connection.answering.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_connection_idle_longest_makes_room_and_an_answering_one_never_does() {
        let metrics = Arc::new(Metrics::new());
        let connections = Connections::new(2, Arc::clone(&metrics));
        let first = connections.admit().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second = connections.admit().unwrap();
        // The first has been idle longest: it is closed for the third.
        let third = connections.admit().unwrap();
        assert!(first.connection.close.is_cancelled());
        assert!(!second.connection.close.is_cancelled());
        drop(first);
        // Both open ones answering: no room is made, the new one is refused.
        let busy = [second.handle().answering(), third.handle().answering()];
        assert!(connections.admit().is_none());
        drop(busy);
        let fourth = connections.admit().unwrap();
        let text = metrics.render();
        // One of the two is closing (evicted): three until its task ends.
        assert!(
            text.contains("tg_tool_service_mcp_connections 3\n"),
            "{text}"
        );
        drop((second, third, fourth));
        assert!(metrics
            .render()
            .contains("tg_tool_service_mcp_connections 0\n"));
        for (reason, count) in [("over_capacity", 1), ("evicted", 2)] {
            assert!(
                text.contains(&format!(
                    "tg_tool_service_mcp_connections_closed_total{{reason=\"{reason}\"}} {count}\n"
                )),
                "{text}"
            );
        }
    }

    #[test]
    fn the_sweep_closes_connections_idle_too_long_and_never_one_answering() {
        let metrics = Arc::new(Metrics::new());
        let connections = Connections::new(10, Arc::clone(&metrics));
        let idle = connections.admit().unwrap();
        let busy = connections.admit().unwrap();
        let answering = busy.handle().answering();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let fresh = connections.admit().unwrap();
        connections.sweep(std::time::Duration::from_millis(10));
        assert!(idle.connection.close.is_cancelled());
        assert!(!busy.connection.close.is_cancelled());
        assert!(!fresh.connection.close.is_cancelled());
        // Its answer sent, the busy one is idle from then on.
        drop(answering);
        connections.sweep(std::time::Duration::from_millis(10));
        assert!(!busy.connection.close.is_cancelled());
        assert!(metrics.render().contains(
            "tg_tool_service_mcp_connections_closed_total{reason=\"header_timeout\"} 1\n"
        ));
    }
}
