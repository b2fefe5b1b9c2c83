//! TCP_NODELAY on the broker connections.
//!
//! Pulsar's Java and C++ clients disable Nagle's algorithm on their broker
//! connections; the `pulsar` crate leaves it on and offers no way to change
//! it. On a request–response exchange of small frames that costs up to 40 ms
//! a message (Nagle waiting for the peer's delayed ACK). Until the crate sets
//! it, this module finds the process's TCP sockets connected to a broker's
//! address (address *and* port, as the broker URL resolves) and sets
//! TCP_NODELAY on them: once after connecting, then every second while a
//! [`Ticker`] lives, so that reconnections are covered too. Sockets to any
//! other peer are left alone, even on the same port.
//!
//! The periodic work belongs to its users: a serving instance and each
//! `ToolClient` hold a [`Ticker`]; the task runs on their runtime while one
//! is held, and stops with the last. A ticker taken on a new runtime after
//! the old one ended starts the task again.
//!
//! The descriptors are only borrowed, through [`socket2::SockRef`], for
//! `getpeername` and `getsockopt`/`setsockopt`; none is closed or owned.
//! Connections the client opens to other brokers of a cluster (after a topic
//! lookup redirects it) are not covered; through a Pulsar proxy, or with one
//! broker, every connection is.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

/// Broker addresses whose connections get TCP_NODELAY, and the task that
/// keeps applying it while tickers are held.
static WATCHED: Mutex<Watched> = Mutex::new(Watched {
    addresses: BTreeSet::new(),
    ticker: None,
    holders: 0,
});

struct Watched {
    addresses: BTreeSet<SocketAddr>,
    ticker: Option<tokio::task::JoinHandle<()>>,
    holders: usize,
}

/// Registers the addresses of a broker and applies TCP_NODELAY to the
/// connections to them now.
pub(crate) fn register(addresses: impl IntoIterator<Item = SocketAddr>) {
    if let Ok(mut watched) = WATCHED.lock() {
        watched.addresses.extend(addresses);
    }
    apply();
}

/// Keeps TCP_NODELAY applied every second, on the current Tokio runtime,
/// until the returned ticker (and every other one) is dropped.
pub(crate) fn keep_applying() -> Ticker {
    if let Ok(mut watched) = WATCHED.lock() {
        watched.holders += 1;
        let running = watched
            .ticker
            .as_ref()
            .is_some_and(|ticker| !ticker.is_finished());
        if !running {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                watched.ticker = Some(runtime.spawn(async {
                    let mut tick = tokio::time::interval(Duration::from_secs(1));
                    loop {
                        tick.tick().await;
                        apply();
                    }
                }));
            }
        }
    }
    Ticker { _private: () }
}

/// A share in the periodic task; the task stops when the last is dropped.
#[derive(Debug)]
pub(crate) struct Ticker {
    _private: (),
}

impl Drop for Ticker {
    fn drop(&mut self) {
        if let Ok(mut watched) = WATCHED.lock() {
            watched.holders -= 1;
            if watched.holders == 0 {
                if let Some(ticker) = watched.ticker.take() {
                    ticker.abort();
                }
            }
        }
    }
}

/// Whether the periodic task is running.
#[cfg(test)]
fn ticking() -> bool {
    WATCHED.lock().is_ok_and(|watched| {
        watched
            .ticker
            .as_ref()
            .is_some_and(|ticker| !ticker.is_finished())
    })
}

/// Sets TCP_NODELAY on every TCP socket of this process whose peer is a
/// registered broker address. Returns how many sockets it changed.
pub(crate) fn apply() -> usize {
    let addresses = match WATCHED.lock() {
        Ok(watched) => watched.addresses.clone(),
        Err(_) => return 0,
    };
    if addresses.is_empty() {
        return 0;
    }
    platform::apply(&addresses)
}

#[cfg(target_os = "linux")]
mod platform {
    use std::collections::BTreeSet;
    use std::net::SocketAddr;
    use std::os::fd::BorrowedFd;

    pub(super) fn apply(addresses: &BTreeSet<SocketAddr>) -> usize {
        let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
            return 0;
        };
        let mut changed = 0;
        for entry in entries.flatten() {
            let Some(fd) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<i32>().ok())
            else {
                continue;
            };
            let is_socket = std::fs::read_link(entry.path())
                .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"));
            if !is_socket {
                continue;
            }
            // SAFETY: the descriptor is borrowed for three system calls
            // (getpeername, getsockopt, setsockopt) and never closed. Should
            // it be closed and reused meanwhile, those calls act on the new
            // descriptor: they fail on anything but a socket, and a socket
            // gets TCP_NODELAY only if its peer is a broker.
            #[allow(unsafe_code)]
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            let socket = socket2::SockRef::from(&fd);
            let is_broker = socket
                .peer_addr()
                .ok()
                .and_then(|peer| peer.as_socket())
                .is_some_and(|peer| addresses.contains(&peer));
            if is_broker
                && socket.tcp_nodelay().is_ok_and(|on| !on)
                && socket.set_tcp_nodelay(true).is_ok()
            {
                changed += 1;
            }
        }
        changed
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    pub(super) fn apply(_addresses: &std::collections::BTreeSet<std::net::SocketAddr>) -> usize {
        0
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[tokio::test]
    async fn sets_nodelay_on_connections_to_a_broker_address_only() {
        let broker = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = broker.local_addr().unwrap().port();
        // Another local service on the same port, at another address.
        let same_port = TcpListener::bind(("127.0.0.2", port)).unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let to_broker = TcpStream::connect(broker.local_addr().unwrap()).unwrap();
        let to_same_port = TcpStream::connect(same_port.local_addr().unwrap()).unwrap();
        let to_other = TcpStream::connect(other.local_addr().unwrap()).unwrap();
        assert!(!to_broker.nodelay().unwrap());
        register([broker.local_addr().unwrap()]);
        assert!(to_broker.nodelay().unwrap());
        assert!(
            !to_same_port.nodelay().unwrap(),
            "a foreign socket was changed"
        );
        assert!(!to_other.nodelay().unwrap());
        assert_eq!(apply(), 0, "nothing left to change");
        // A connection made later is covered while a ticker is held.
        let ticker = keep_applying();
        assert!(ticking());
        let reconnected = TcpStream::connect(broker.local_addr().unwrap()).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !reconnected.nodelay().unwrap() {
            assert!(
                std::time::Instant::now() < deadline,
                "a new connection kept Nagle on"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Without tickers the task stops, and later connections keep their
        // options until a user asks again.
        drop(ticker);
        assert!(!ticking());
        let unwatched = TcpStream::connect(broker.local_addr().unwrap()).unwrap();
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        assert!(
            !unwatched.nodelay().unwrap(),
            "the task outlived its tickers"
        );
        let _again = keep_applying();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !unwatched.nodelay().unwrap() {
            assert!(
                std::time::Instant::now() < deadline,
                "a ticker taken again did not restart the task"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
