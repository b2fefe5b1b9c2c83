//! TCP_NODELAY on the broker connections.
//!
//! Pulsar's Java and C++ clients disable Nagle's algorithm on their broker
//! connections; the `pulsar` crate leaves it on and offers no way to change
//! it. On a request–response exchange of small frames that costs up to 40 ms
//! a message (Nagle waiting for the peer's delayed ACK). Until the crate sets
//! it, this module finds the process's TCP sockets to a broker port and sets
//! TCP_NODELAY on them: once after connecting, then every second, so that
//! reconnections are covered too.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

/// Broker ports whose connections get TCP_NODELAY.
static BROKER_PORTS: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// Registers a broker port, applies TCP_NODELAY now, and keeps applying it
/// (one background task per process).
pub(crate) fn watch(port: u16) {
    let first = match BROKER_PORTS.lock() {
        Ok(mut ports) => {
            let first = ports.is_empty();
            ports.insert(port);
            first
        }
        Err(_) => return,
    };
    apply();
    if first {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async {
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                loop {
                    tick.tick().await;
                    apply();
                }
            });
        }
    }
}

/// Sets TCP_NODELAY on every TCP socket of this process whose peer port is a
/// registered broker port. Returns how many sockets it changed.
pub(crate) fn apply() -> usize {
    let ports = match BROKER_PORTS.lock() {
        Ok(ports) => ports.clone(),
        Err(_) => return 0,
    };
    if ports.is_empty() {
        return 0;
    }
    platform::apply(&ports)
}

#[cfg(target_os = "linux")]
mod platform {
    use std::collections::BTreeSet;
    use std::mem::ManuallyDrop;
    use std::net::TcpStream;
    use std::os::fd::FromRawFd;

    pub(super) fn apply(ports: &BTreeSet<u16>) -> usize {
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
            // SAFETY: the descriptor is only borrowed (never closed, thanks to
            // ManuallyDrop) for getpeername/getsockopt/setsockopt, which are
            // harmless on any socket; on a non-TCP socket they fail and the
            // descriptor is skipped.
            let stream = ManuallyDrop::new(unsafe { TcpStream::from_raw_fd(fd) });
            let Ok(peer) = stream.peer_addr() else {
                continue;
            };
            if ports.contains(&peer.port())
                && stream.nodelay().is_ok_and(|on| !on)
                && stream.set_nodelay(true).is_ok()
            {
                changed += 1;
            }
        }
        changed
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    pub(super) fn apply(_ports: &std::collections::BTreeSet<u16>) -> usize {
        0
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn sets_nodelay_on_connections_to_a_registered_port_only() {
        let broker = TcpListener::bind("127.0.0.1:0").unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let to_broker = TcpStream::connect(broker.local_addr().unwrap()).unwrap();
        let to_other = TcpStream::connect(other.local_addr().unwrap()).unwrap();
        assert!(!to_broker.nodelay().unwrap());
        BROKER_PORTS
            .lock()
            .unwrap()
            .insert(broker.local_addr().unwrap().port());
        assert!(apply() >= 1);
        assert!(to_broker.nodelay().unwrap());
        assert!(!to_other.nodelay().unwrap());
        assert_eq!(apply(), 0, "nothing left to change");
    }
}
