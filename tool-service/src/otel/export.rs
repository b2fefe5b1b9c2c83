//! The export queue: a bounded channel that finished spans go into without
//! waiting, and a thread that sends them to the collector in batches.
//!
//! The SDK's batch processor does the same, but keeps its count of dropped
//! spans to itself, and runs its exporter outside any async runtime; this
//! one counts what it drops, and gives the exporter a runtime of its own.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;

use super::OtelError;

/// What the queue counts, for the whole process.
pub(super) struct Stats {
    pub(super) dropped: AtomicU64,
    pub(super) exported: AtomicU64,
}

pub(super) static STATS: Stats = Stats {
    dropped: AtomicU64::new(0),
    exported: AtomicU64::new(0),
};

/// The `OTEL_BSP_*` settings.
#[derive(Debug, Clone, Copy)]
pub(super) struct QueueConfig {
    capacity: usize,
    delay: Duration,
    batch: usize,
    timeout: Duration,
}

impl QueueConfig {
    pub(super) fn from_vars(
        set: &impl Fn(&'static str) -> Option<String>,
    ) -> Result<Self, OtelError> {
        let number = |variable: &'static str, default: u64| -> Result<u64, OtelError> {
            match set(variable) {
                None => Ok(default),
                Some(value) => match value.trim().parse::<u64>() {
                    Ok(number) if number > 0 => Ok(number),
                    _ => Err(OtelError::Variable {
                        variable,
                        value,
                        reason: "expected a positive whole number".to_owned(),
                    }),
                },
            }
        };
        let capacity = number("OTEL_BSP_MAX_QUEUE_SIZE", 2048)?;
        let batch = number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)?.min(capacity);
        Ok(Self {
            capacity: usize::try_from(capacity).unwrap_or(usize::MAX),
            delay: Duration::from_millis(number("OTEL_BSP_SCHEDULE_DELAY", 5000)?),
            batch: usize::try_from(batch).unwrap_or(usize::MAX),
            timeout: Duration::from_millis(number("OTEL_BSP_EXPORT_TIMEOUT", 30_000)?),
        })
    }
}

enum Message {
    Span(Box<SpanData>),
    Resource(Resource),
    /// Send what is queued, then answer.
    Flush(SyncSender<()>),
    /// Send what is queued, answer, and stop.
    Stop(SyncSender<()>),
}

/// The span processor: finished, sampled spans into the queue.
#[derive(Debug)]
pub(super) struct Queue {
    spans: SyncSender<Message>,
    /// Flushes and stops, which may wait; never the spans.
    control: std::sync::Mutex<SyncSender<Message>>,
}

impl Queue {
    /// Starts the export thread.
    pub(super) fn start<E: SpanExporter + 'static>(exporter: E, config: QueueConfig) -> Self {
        let (spans, receiver) = mpsc::sync_channel(config.capacity);
        let control = spans.clone();
        let thread = std::thread::Builder::new()
            .name("otel-export".to_owned())
            .spawn(move || export(exporter, config, &receiver));
        if let Err(error) = thread {
            tracing::warn!(%error, "cannot start the span export thread; spans are dropped");
        }
        Self {
            spans,
            control: std::sync::Mutex::new(control),
        }
    }

    /// Asks the thread for `message(answer)` and waits at most `timeout`.
    fn ask(&self, message: fn(SyncSender<()>) -> Message, timeout: Duration) -> OTelSdkResult {
        let (answer, answered) = mpsc::sync_channel(1);
        let deadline = Instant::now() + timeout;
        let control = self
            .control
            .lock()
            .map_err(|_| OTelSdkError::InternalFailure("the export queue is poisoned".into()))?;
        // Blocks while the queue is full: the thread is taking from it.
        let mut request = message(answer);
        loop {
            match control.try_send(request) {
                Ok(()) => break,
                Err(TrySendError::Disconnected(_)) => return Err(OTelSdkError::AlreadyShutdown),
                Err(TrySendError::Full(back)) => {
                    if Instant::now() >= deadline {
                        return Err(OTelSdkError::Timeout(timeout));
                    }
                    request = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
        drop(control);
        match answered.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(()) => Ok(()),
            Err(RecvTimeoutError::Timeout) => Err(OTelSdkError::Timeout(timeout)),
            Err(RecvTimeoutError::Disconnected) => Err(OTelSdkError::AlreadyShutdown),
        }
    }
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &opentelemetry::Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        if self.spans.try_send(Message::Span(Box::new(span))).is_err() {
            STATS.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.ask(Message::Flush, Duration::from_secs(30))
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.ask(Message::Stop, timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        // Before any span: the queue is empty.
        let _ = self.spans.try_send(Message::Resource(resource.clone()));
    }
}

/// The export thread: batches of up to `batch` spans, sent when full or
/// `delay` after the first.
fn export<E: SpanExporter>(mut exporter: E, config: QueueConfig, queue: &Receiver<Message>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::warn!(%error, "cannot start the span exporter's runtime; spans are dropped");
            return;
        }
    };
    let mut batch: Vec<SpanData> = Vec::with_capacity(config.batch);
    let mut due: Option<Instant> = None;
    let send = |exporter: &E, batch: &mut Vec<SpanData>| {
        if batch.is_empty() {
            return;
        }
        let spans = std::mem::take(batch);
        let count = spans.len() as u64;
        let sent = runtime
            .block_on(async { tokio::time::timeout(config.timeout, exporter.export(spans)).await });
        match sent {
            Ok(Ok(())) => STATS.exported.fetch_add(count, Ordering::Relaxed),
            _ => STATS.dropped.fetch_add(count, Ordering::Relaxed),
        };
    };
    loop {
        let message = match due {
            None => queue.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(due) => queue.recv_timeout(due.saturating_duration_since(Instant::now())),
        };
        match message {
            Ok(Message::Span(span)) => {
                batch.push(*span);
                due.get_or_insert_with(|| Instant::now() + config.delay);
                if batch.len() >= config.batch {
                    send(&exporter, &mut batch);
                    due = None;
                }
            }
            Ok(Message::Resource(resource)) => exporter.set_resource(&resource),
            Ok(Message::Flush(answer)) => {
                drain(
                    queue,
                    &mut batch,
                    |batch| send(&exporter, batch),
                    config.batch,
                );
                due = None;
                let _ = answer.send(());
            }
            Ok(Message::Stop(answer)) => {
                drain(
                    queue,
                    &mut batch,
                    |batch| send(&exporter, batch),
                    config.batch,
                );
                let _ = exporter.shutdown();
                let _ = answer.send(());
                return;
            }
            Err(RecvTimeoutError::Timeout) => {
                send(&exporter, &mut batch);
                due = None;
            }
            Err(RecvTimeoutError::Disconnected) => {
                send(&exporter, &mut batch);
                return;
            }
        }
    }
}

/// Sends every span queued now, in batches.
fn drain(
    queue: &Receiver<Message>,
    batch: &mut Vec<SpanData>,
    mut send: impl FnMut(&mut Vec<SpanData>),
    size: usize,
) {
    while let Ok(message) = queue.try_recv() {
        match message {
            Message::Span(span) => {
                batch.push(*span);
                if batch.len() >= size {
                    send(batch);
                }
            }
            // A flush asked for while flushing: done with this one.
            Message::Flush(answer) | Message::Stop(answer) => {
                let _ = answer.send(());
            }
            Message::Resource(_) => {}
        }
    }
    send(batch);
}

/// The OTLP exporter's HTTP client: HTTP/1.1 over a connection per batch.
/// (The exporter's own hyper client brings HTTP/2 and a pool besides.)
#[derive(Debug)]
pub(super) struct Http;

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl opentelemetry_http::HttpClient for Http {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: http::Request<bytes::Bytes>,
    ) -> BoxFuture<'b, Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(post(request))
    }
}

async fn post(
    request: http::Request<bytes::Bytes>,
) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
    use http_body_util::BodyExt;

    let authority = request
        .uri()
        .authority()
        .ok_or("the endpoint has no host")?
        .clone();
    let port = authority.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((authority.host(), port)).await?;
    stream.set_nodelay(true)?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    let connection = tokio::spawn(connection);
    let (mut parts, body) = request.into_parts();
    if !parts.headers.contains_key(http::header::HOST) {
        parts
            .headers
            .insert(http::header::HOST, authority.as_str().parse()?);
    }
    // Origin form on the wire: the path and query only.
    parts.uri = parts
        .uri
        .path_and_query()
        .map_or("/", http::uri::PathAndQuery::as_str)
        .parse()?;
    let response = sender
        .send_request(http::Request::from_parts(
            parts,
            http_body_util::Full::new(body),
        ))
        .await?;
    let (parts, body) = response.into_parts();
    // At most 4 MiB of the collector's answer.
    let body = http_body_util::Limited::new(body, 4 << 20)
        .collect()
        .await?
        .to_bytes();
    drop(sender);
    connection.abort();
    Ok(http::Response::from_parts(parts, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{Span as _, Tracer as _, TracerProvider as _};
    use opentelemetry_sdk::trace::SdkTracerProvider;

    /// An exporter whose collector never answers, or answers at once.
    #[derive(Debug)]
    struct Collector {
        answers: bool,
    }

    impl SpanExporter for Collector {
        async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
            if !self.answers {
                std::future::pending::<()>().await;
            }
            Ok(())
        }
    }

    fn config(capacity: usize) -> QueueConfig {
        QueueConfig {
            capacity,
            delay: Duration::from_millis(1),
            batch: 1,
            timeout: Duration::from_secs(60),
        }
    }

    fn provider(answers: bool, capacity: usize) -> SdkTracerProvider {
        SdkTracerProvider::builder()
            .with_span_processor(Queue::start(Collector { answers }, config(capacity)))
            .build()
    }

    #[test]
    fn a_full_queue_drops_and_counts_and_never_waits() {
        let provider = provider(false, 2);
        let tracer = provider.tracer("test");
        let before = STATS.dropped.load(Ordering::Relaxed);
        let started = Instant::now();
        for _ in 0..20 {
            tracer.start("request").end();
        }
        // The thread holds one span in its stuck export, the queue two:
        // the rest are dropped, and ending a span never waited for room.
        let dropped = STATS.dropped.load(Ordering::Relaxed) - before;
        assert!(dropped >= 17, "{dropped} dropped");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        // Shutting down gives up after its timeout.
        let stopping = Instant::now();
        assert!(provider
            .shutdown_with_timeout(Duration::from_millis(100))
            .is_err());
        assert!(
            stopping.elapsed() < Duration::from_secs(5),
            "{:?}",
            stopping.elapsed()
        );
    }

    #[test]
    fn what_the_collector_takes_is_counted_and_a_shutdown_flushes_it() {
        let provider = provider(true, 64);
        let tracer = provider.tracer("test");
        let before = STATS.exported.load(Ordering::Relaxed);
        for _ in 0..10 {
            tracer.start("request").end();
        }
        provider
            .shutdown_with_timeout(Duration::from_secs(10))
            .unwrap();
        assert!(STATS.exported.load(Ordering::Relaxed) - before >= 10);
    }

    #[test]
    fn the_queue_settings_come_from_the_bsp_variables() {
        let config = QueueConfig::from_vars(&|name| match name {
            "OTEL_BSP_MAX_QUEUE_SIZE" => Some("100".to_owned()),
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE" => Some("500".to_owned()),
            "OTEL_BSP_SCHEDULE_DELAY" => Some("250".to_owned()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.capacity, 100);
        // A batch is never larger than the queue.
        assert_eq!(config.batch, 100);
        assert_eq!(config.delay, Duration::from_millis(250));
        assert_eq!(config.timeout, Duration::from_secs(30));
        let error = QueueConfig::from_vars(&|name| {
            (name == "OTEL_BSP_SCHEDULE_DELAY").then(|| "0".to_owned())
        })
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "OTEL_BSP_SCHEDULE_DELAY=0: expected a positive whole number"
        );
    }
}
