//! The HTTP endpoint of the metrics and the probes: one request per
//! connection, a bounded number of connections, nothing else.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::registry::Metrics;

/// The port TrustGraph processors serve metrics on.
pub const DEFAULT_METRICS_PORT: u16 = 8000;

/// Answers `GET /metrics` (and `GET /`) on `listener` with
/// [`Metrics::render`] until the returned future is dropped; and the probes:
/// `GET /livez` (and `/healthz`) with 200 while the process answers at all,
/// `GET /readyz` with 200 when [`Metrics::readiness`] holds and 503 with
/// the failing conditions otherwise, and `GET /readyz/pulsar` and `GET
/// /readyz/mcp` the same for one transport ([`Metrics::readiness_of`]).
/// What [`Transports::metrics_on`](crate::host::Transports::metrics_on)
/// serves.
pub(crate) async fn serve_metrics(listener: TcpListener, metrics: Arc<Metrics>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut accept_errors = Throttle::new(Duration::from_secs(10));
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                // Beyond the cap a connection is closed at once: idle
                // connections cannot pile up file descriptors.
                let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                    drop(stream);
                    continue;
                };
                let metrics = Arc::clone(&metrics);
                drop(tokio::spawn(async move {
                    let exchange = answer(stream, &metrics);
                    if tokio::time::timeout(EXCHANGE_TIMEOUT, exchange)
                        .await
                        .is_err()
                    {
                        tracing::debug!("a metrics client was too slow");
                    }
                    drop(slot);
                }));
            }
            Err(error) => {
                // Out of file descriptors, typically: say so now and then,
                // not ten times a second.
                if let Some(suppressed) = accept_errors.admit(std::time::Instant::now()) {
                    tracing::warn!(%error, suppressed, "cannot accept a metrics connection");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Metrics connections served at once; Prometheus needs one.
pub const MAX_CONNECTIONS: usize = 16;

/// How long a metrics client has to send its request and read the answer.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(2);

/// The largest request head read.
const MAX_HEAD: usize = 16 * 1024;

/// Lets an event through at most once per period, counting the others.
#[derive(Debug)]
pub(crate) struct Throttle {
    period: Duration,
    last: Option<std::time::Instant>,
    suppressed: u64,
}

impl Throttle {
    pub(crate) fn new(period: Duration) -> Self {
        Self {
            period,
            last: None,
            suppressed: 0,
        }
    }

    /// `Some(events suppressed since the last one let through)`, or `None`
    /// when this one is suppressed.
    pub(crate) fn admit(&mut self, now: std::time::Instant) -> Option<u64> {
        match self.last {
            Some(last) if now.duration_since(last) < self.period => {
                self.suppressed += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.suppressed))
            }
        }
    }
}

/// Reads one HTTP request head and answers it; the connection then closes.
async fn answer(mut stream: TcpStream, metrics: &Metrics) {
    let mut head = Vec::with_capacity(512);
    let mut buffer = [0u8; 1024];
    loop {
        let n = match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        // Only the new bytes (and the three before them) can complete the
        // blank line: each byte is looked at a bounded number of times.
        let from = head.len().saturating_sub(3);
        head.extend_from_slice(&buffer[..n]);
        if head[from..].windows(4).any(|window| window == b"\r\n\r\n") {
            break;
        }
        if head.len() > MAX_HEAD {
            return respond(&mut stream, "431 Request Header Fields Too Large", "").await;
        }
    }
    let line = head.split(|byte| *byte == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|byte| *byte == b' ');
    let (method, target) = (parts.next(), parts.next());
    let path = target.map(|target| {
        target
            .split(|byte| *byte == b'?')
            .next()
            .unwrap_or_default()
    });
    match (method, path) {
        (Some(b"GET"), Some(b"/metrics" | b"/")) => {
            respond(&mut stream, "200 OK", &metrics.render()).await;
        }
        (Some(b"GET"), Some(b"/livez" | b"/healthz")) => {
            respond(&mut stream, "200 OK", "alive\n").await;
        }
        (Some(b"GET"), Some(path @ (b"/readyz" | b"/readyz/pulsar" | b"/readyz/mcp"))) => {
            let readiness = match path {
                b"/readyz/pulsar" => metrics.readiness_of("pulsar"),
                b"/readyz/mcp" => metrics.readiness_of("mcp"),
                _ => metrics.readiness(),
            };
            match readiness {
                Ok(()) => respond(&mut stream, "200 OK", "ready\n").await,
                Err(failing) => respond(&mut stream, "503 Service Unavailable", &failing).await,
            }
        }
        (Some(b"GET"), _) => {
            respond(
                &mut stream,
                "404 Not Found",
                "try /metrics, /livez or /readyz\n",
            )
            .await;
        }
        _ => respond(&mut stream, "405 Method Not Allowed", "").await,
    }
}

async fn respond(stream: &mut TcpStream, status: &str, body: &str) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if stream.write_all(head.as_bytes()).await.is_ok() {
        let _ = stream.write_all(body.as_bytes()).await;
    }
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_lets_one_event_through_per_period_and_counts_the_rest() {
        let start = std::time::Instant::now();
        let mut throttle = Throttle::new(Duration::from_secs(10));
        assert_eq!(throttle.admit(start), Some(0));
        for n in 1..=50 {
            assert_eq!(throttle.admit(start + Duration::from_millis(100 * n)), None);
        }
        assert_eq!(throttle.admit(start + Duration::from_secs(10)), Some(50));
        assert_eq!(throttle.admit(start + Duration::from_secs(11)), None);
    }

    #[tokio::test]
    async fn answers_get_metrics_over_http() {
        let metrics = Arc::new(Metrics::new());
        metrics
            .service("echo-service")
            .start()
            .finish(None, Duration::ZERO);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(serve_metrics(listener, Arc::clone(&metrics)));
        let get = |request: &'static str| async move {
            let mut stream = TcpStream::connect(address).await.unwrap();
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut response = String::new();
            let _ = stream.read_to_string(&mut response).await.unwrap();
            response
        };
        let response = get("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(response.contains("text/plain; version=0.0.4"));
        assert!(response.ends_with("tg_tool_service_in_flight{processor=\"echo-service\"} 0\n"));
        let response = get("GET /other HTTP/1.0\r\n\r\n").await;
        assert!(response.starts_with("HTTP/1.1 404"), "{response}");
        let response = get("POST /metrics HTTP/1.1\r\n\r\n").await;
        assert!(response.starts_with("HTTP/1.1 405"), "{response}");
        server.abort();
    }

    async fn server() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        (
            address,
            tokio::spawn(serve_metrics(listener, Arc::new(Metrics::new()))),
        )
    }

    #[tokio::test]
    async fn a_head_sent_byte_by_byte_is_read() {
        let (address, server) = server().await;
        let mut stream = TcpStream::connect(address).await.unwrap();
        let request = format!(
            "GET /metrics HTTP/1.1\r\nX-Pad: {}\r\n\r\n",
            "p".repeat(2000)
        );
        for byte in request.bytes() {
            stream.write_all(&[byte]).await.unwrap();
        }
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        let mut stream = TcpStream::connect(address).await.unwrap();
        // One byte over the limit, all of it read by the server before it
        // answers (so the close is clean).
        let start = "GET / HTTP/1.1\r\nX-Pad: ";
        let huge = format!("{start}{}", "p".repeat(MAX_HEAD + 1 - start.len()));
        stream.write_all(huge.as_bytes()).await.unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response).await;
        assert!(response.starts_with("HTTP/1.1 431"), "{response}");
        server.abort();
    }

    #[tokio::test]
    async fn connections_beyond_the_cap_are_closed_at_once_and_idle_ones_time_out() {
        let (address, server) = server().await;
        let mut idle = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
            idle.push(TcpStream::connect(address).await.unwrap());
        }
        // Let the server take them all before the next one.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut extra = TcpStream::connect(address).await.unwrap();
        let mut byte = [0u8; 1];
        let closed = tokio::time::timeout(Duration::from_secs(1), extra.read(&mut byte)).await;
        assert!(matches!(closed, Ok(Ok(0) | Err(_))), "{closed:?}");
        // The idle ones are closed after the exchange timeout; then a scrape
        // gets through again.
        let closed = tokio::time::timeout(EXCHANGE_TIMEOUT * 2, idle[0].read(&mut byte)).await;
        assert!(matches!(closed, Ok(Ok(0) | Err(_))), "{closed:?}");
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
        server.abort();
    }
}
