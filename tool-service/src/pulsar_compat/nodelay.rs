//! TCP_NODELAY on the broker connections.
//!
//! Pulsar's Java and C++ clients disable Nagle's algorithm on their broker
//! connections; the `pulsar` crate leaves it on and offers no way to change
//! it. On a request–response exchange of small frames that costs up to 40 ms
//! a message (Nagle waiting for the peer's delayed ACK). Until the crate sets
//! it, this module finds the process's TCP sockets connected to a broker's
//! address (address *and* port, as the broker URL resolves) and sets
//! TCP_NODELAY on them: once after connecting, then every second, so that
//! reconnections are covered too. Sockets to any other peer are left alone,
//! even on the same port.
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
/// keeps applying it.
static WATCHED: Mutex<Watched> = Mutex::new(Watched {
    addresses: BTreeSet::new(),
    ticker: None,
});

struct Watched {
    addresses: BTreeSet<SocketAddr>,
    ticker: Option<tokio::task::JoinHandle<()>>,
}

/// Registers the addresses of a broker, applies TCP_NODELAY now, and keeps
/// applying it every second on the current Tokio runtime (started again
/// when the runtime that ran it has ended).
pub(crate) fn watch(addresses: impl IntoIterator<Item = SocketAddr>) {
    {
        let Ok(mut watched) = WATCHED.lock() else {
            return;
        };
        watched.addresses.extend(addresses);
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
    apply();
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
        watch([broker.local_addr().unwrap()]);
        assert!(to_broker.nodelay().unwrap());
        assert!(
            !to_same_port.nodelay().unwrap(),
            "a foreign socket was changed"
        );
        assert!(!to_other.nodelay().unwrap());
        assert_eq!(apply(), 0, "nothing left to change");
        // A connection made later is covered by the ticker.
        let reconnected = TcpStream::connect(broker.local_addr().unwrap()).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !reconnected.nodelay().unwrap() {
            assert!(
                std::time::Instant::now() < deadline,
                "a new connection kept Nagle on"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
