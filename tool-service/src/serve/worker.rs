//! One service's worker: its consumer loop, its requests in flight, and
//! the producer of its responses.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use pulsar::consumer::{ConsumerOptions, InitialPosition};
use pulsar::producer::Producer;
use pulsar::{Consumer, Pulsar, SubType, TokioExecutor};
use tokio::sync::{watch, Mutex};
use tokio::task::JoinSet;
use tracing::Instrument;

use super::{stop_requested, ServeError, ServiceReport};
use crate::dispatch::{self, FrameSink};
use crate::log_text::Untrusted;
use crate::metrics::ServiceMetrics;
use crate::wire::{Frame, UNKNOWN_ID};
use crate::{Service, State, ToolError};

type RequestMessage = pulsar::consumer::Message<Vec<u8>>;

/// How much one service's worker takes on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) concurrency: usize,
    pub(super) window: usize,
    pub(super) timeout: Duration,
    pub(super) log_payloads: bool,
    pub(super) max_message_size: usize,
}

/// The consumer loop of one service.
pub(super) struct Worker {
    pub(super) service: Service,
    /// What the handlers share.
    state: State,
    concurrency: usize,
    window: usize,
    timeout: Duration,
    log_payloads: bool,
    max_message_size: usize,
    metrics: Arc<ServiceMetrics>,
    /// The client, to subscribe again should the request stream end.
    pulsar: Pulsar<TokioExecutor>,
    /// Flow permits of the consumer.
    permits: usize,
    consumer: Consumer<Vec<u8>, TokioExecutor>,
    producer: Arc<Mutex<Producer<TokioExecutor>>>,
}

impl Worker {
    pub(super) async fn start(
        pulsar: &Pulsar<TokioExecutor>,
        service: Service,
        state: State,
        metrics: Arc<ServiceMetrics>,
        limits: Limits,
    ) -> Result<Self, ServeError> {
        let Limits {
            concurrency,
            window,
            timeout,
            log_payloads,
            max_message_size,
        } = limits;
        let request_queue = service.request_queue();
        let response_queue = service.response_queue();
        // Flow permits: a persistent topic holds back what a replica has no
        // room for (so replicas share fairly); a non-persistent one drops it,
        // so there the client library may always read ahead.
        let permits = if request_queue.starts_with("persistent://") {
            window
        } else {
            window.max(super::RECEIVE_WINDOW)
        };
        let consumer = subscribe(pulsar, service, permits)
            .await
            .map_err(|source| topic_error(service, "subscribe", &request_queue, source))?;
        let producer = crate::broker::producer(pulsar, &response_queue)
            .await
            .map_err(|source| topic_error(service, "publish", &response_queue, source))?;
        // Topic lookups may have opened connections of their own.
        crate::pulsar_compat::nodelay::apply();
        tracing::info!(
            service = service.id(),
            %request_queue,
            %response_queue,
            subscription = %service.subscription(),
            concurrency,
            timeout = %crate::duration::format(timeout),
            "serving"
        );
        metrics.set_running(true);
        Ok(Self {
            service,
            state,
            concurrency,
            window,
            timeout,
            log_payloads,
            max_message_size,
            metrics,
            pulsar: pulsar.clone(),
            permits,
            consumer,
            producer: Arc::new(Mutex::new(producer)),
        })
    }

    pub(super) async fn run(
        mut self,
        mut stopped: watch::Receiver<bool>,
        grace: Duration,
    ) -> ServiceReport {
        let mut report = ServiceReport::default();
        let mut in_flight: JoinSet<(RequestMessage, bool)> = JoinSet::new();
        // Requests taken from the broker but not started yet. Reading ahead
        // keeps the client library from stalling, which on a non-persistent
        // topic would make the broker drop requests silently.
        let mut backlog: VecDeque<RequestMessage> = VecDeque::new();
        let window = self.window;
        let persistent = self.service.request_queue().starts_with("persistent://");
        loop {
            tokio::select! {
                biased;
                _ = stop_requested(&mut stopped) => break,
                Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                    self.settle(done, &mut report).await;
                    self.start_waiting(&mut in_flight, &mut backlog);
                }
                // A persistent topic keeps what we do not take; a
                // non-persistent one drops it, so there we always read and
                // answer what does not fit with an `overloaded` error.
                next = self.consumer.next(), if !persistent || backlog.len() < window => match next {
                    Some(Ok(message)) => {
                        if in_flight.len() < self.concurrency {
                            self.spawn(&mut in_flight, message, None);
                        } else if backlog.len() < window {
                            backlog.push_back(message);
                        } else {
                            report.refused += 1;
                            let error = ToolError::with_type(
                                ToolError::OVERLOADED,
                                format!(
                                    "the service is at capacity ({} requests running, {} waiting); try again later",
                                    in_flight.len(),
                                    backlog.len()
                                ),
                            );
                            self.spawn(&mut in_flight, message, Some(error));
                        }
                    }
                    // A message the client cannot decode (a hostile
                    // producer's batch count, an unknown compression) is
                    // skipped; the consumer goes on.
                    Some(Err(error)) if !crate::pulsar_compat::errors::consumer_lost(&error) => {
                        tracing::warn!(service = self.service.id(), error = %Untrusted::text(&error.to_string()), "a request the Pulsar client cannot decode was skipped");
                    }
                    // The client reports a consumer it could not re-create
                    // (e.g. the topic was deleted and could not be created
                    // again) as one error, after which the stream stays
                    // silent for good; or it ends the stream. Either way,
                    // subscribe again rather than fall silent.
                    Some(Err(error)) => {
                        tracing::error!(service = self.service.id(), %error, "the request consumer failed; subscribing again");
                        if !self.resubscribe(&mut stopped, &mut in_flight, &mut backlog).await {
                            break;
                        }
                    }
                    None => {
                        tracing::error!(service = self.service.id(), "the request stream ended; subscribing again");
                        if !self.resubscribe(&mut stopped, &mut in_flight, &mut backlog).await {
                            break;
                        }
                    }
                },
            }
        }
        // Requests not started are not taken: a persistent topic redelivers
        // them (to another replica); on a non-persistent one the caller hears
        // at once that it should try again.
        for message in backlog.drain(..) {
            if persistent {
                if let Err(error) = self.consumer.nack(&message).await {
                    tracing::warn!(service = self.service.id(), %error, "cannot return a request to the broker");
                }
            } else {
                report.refused += 1;
                let error = ToolError::with_type(
                    ToolError::UNAVAILABLE,
                    "the service is shutting down; try again",
                );
                self.spawn(&mut in_flight, message, Some(error));
            }
        }
        tracing::info!(
            service = self.service.id(),
            in_flight = in_flight.len(),
            "stopping: finishing in-flight requests"
        );
        let deadline = tokio::time::Instant::now() + grace;
        while !in_flight.is_empty() {
            match tokio::time::timeout_at(deadline, in_flight.join_next()).await {
                Ok(Some(done)) => self.settle(done, &mut report).await,
                Ok(None) => break,
                Err(_) => {
                    report.abandoned = in_flight.len() as u64;
                    tracing::warn!(
                        service = self.service.id(),
                        abandoned = report.abandoned,
                        "grace period over: abandoning requests still running"
                    );
                    in_flight.abort_all();
                    break;
                }
            }
        }
        self.metrics.set_running(false);
        if let Err(error) = self.consumer.close().await {
            tracing::debug!(service = self.service.id(), %error, "closing the consumer");
        }
        if let Err(error) = self.producer.lock().await.close().await {
            tracing::debug!(service = self.service.id(), %error, "closing the producer");
        }
        tracing::info!(
            service = self.service.id(),
            answered = report.answered,
            "stopped"
        );
        report
    }

    /// Replaces the consumer with a new one on the same subscription,
    /// retrying with backoff until that works (true), or until a stop is
    /// requested (false). The new consumer is subscribed before the old one
    /// is dropped, so a non-persistent topic loses nothing in between;
    /// requests the old one had already received join the backlog. On a
    /// persistent topic the broker may deliver those not acknowledged yet
    /// once more.
    async fn resubscribe(
        &mut self,
        stopped: &mut watch::Receiver<bool>,
        in_flight: &mut JoinSet<(RequestMessage, bool)>,
        backlog: &mut VecDeque<RequestMessage>,
    ) -> bool {
        let mut backoff = Duration::from_millis(100);
        let consumer = loop {
            match subscribe(&self.pulsar, self.service, self.permits).await {
                Ok(consumer) => break consumer,
                Err(error) => {
                    tracing::warn!(service = self.service.id(), %error, retry_in = ?backoff, "cannot subscribe again; retrying");
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = stop_requested(stopped) => return false,
            }
            backoff = (backoff * 2).min(Duration::from_secs(3));
        };
        let mut old = std::mem::replace(&mut self.consumer, consumer);
        let mut handed_over = 0;
        while let Some(Some(Ok(message))) = futures_util::FutureExt::now_or_never(old.next()) {
            backlog.push_back(message);
            handed_over += 1;
        }
        // Dropped, not closed: `close` goes through the consumer's engine,
        // which may be stuck delivering to a queue nobody reads any more.
        // Dropping the queue stops the engine, and the engine closes the
        // consumer on the broker as it goes.
        drop(old);
        tracing::info!(service = self.service.id(), handed_over, "subscribed again");
        self.start_waiting(in_flight, backlog);
        true
    }

    /// Starts waiting requests while there is room.
    fn start_waiting(
        &self,
        in_flight: &mut JoinSet<(RequestMessage, bool)>,
        backlog: &mut VecDeque<RequestMessage>,
    ) {
        while in_flight.len() < self.concurrency {
            let Some(message) = backlog.pop_front() else {
                break;
            };
            self.spawn(in_flight, message, None);
        }
    }

    /// Starts serving one request, or answers it with `refusal` at once.
    fn spawn(
        &self,
        in_flight: &mut JoinSet<(RequestMessage, bool)>,
        message: RequestMessage,
        refusal: Option<ToolError>,
    ) {
        let service = self.service;
        let state = self.state.clone();
        let producer = Arc::clone(&self.producer);
        let limits = dispatch::Limits::default()
            .with_timeout(self.timeout)
            .with_max_message_size(self.max_message_size);
        let metrics = Arc::clone(&self.metrics);
        let log_payloads = self.log_payloads;
        let id = crate::broker::message_id(&message)
            .unwrap_or(UNKNOWN_ID)
            .to_owned();
        let span = tracing::info_span!("request", service = service.id(), request_id = %Untrusted::id(&id));
        in_flight.spawn(
            async move {
                if log_payloads {
                    log_payload(&message.payload.data);
                }
                if !answerable(&id, limits) {
                    // Even an error frame would carry the id, and not fit:
                    // acknowledged unanswered, or it would come back.
                    metrics.oversized();
                    tracing::error!(
                        id_bytes = id.len(),
                        "the request id is too long for any answer to fit the broker's maximum message size; dropping the request"
                    );
                    return (message, true);
                }
                let mut sink = PulsarSink {
                    producer: &producer,
                    failed: None,
                };
                let result = match refusal {
                    None => {
                        let in_flight = metrics.start();
                        let started = Instant::now();
                        let result =
                            dispatch::dispatch_with(service, &state, &id, &message.payload.data, limits, &mut sink)
                                .await;
                        if result.is_ok() {
                            let elapsed = started.elapsed();
                            // The type only: messages may quote argument values.
                            tracing::debug!(error = sink.failed.as_deref().map(|kind| tracing::field::debug(Untrusted::text(kind))), ?elapsed, "answered");
                            if sink.failed.as_deref() == Some(ToolError::RESPONSE_TOO_LARGE) {
                                metrics.oversized();
                            }
                            in_flight.finish(sink.failed.as_deref(), elapsed);
                        }
                        result
                    }
                    Some(error) => {
                        metrics.refused(error.kind());
                        sink.send(&id, Frame::last(Err(error)))
                            .await
                            .map(|()| false)
                    }
                };
                let sent = match result {
                    Ok(_) => true,
                    Err(error) => {
                        metrics.send_failed();
                        tell_send_failure(&id, &error, &mut sink).await
                    }
                };
                (message, sent)
            }
            .instrument(span),
        );
    }

    async fn settle(
        &mut self,
        done: Result<(RequestMessage, bool), tokio::task::JoinError>,
        report: &mut ServiceReport,
    ) {
        match done {
            Ok((message, true)) => {
                report.answered += 1;
                if let Err(error) = self.consumer.ack(&message).await {
                    tracing::warn!(service = self.service.id(), %error, "cannot acknowledge a request");
                }
            }
            Ok((message, false)) => {
                if let Err(error) = self.consumer.nack(&message).await {
                    tracing::warn!(service = self.service.id(), %error, "cannot negatively acknowledge a request");
                }
            }
            Err(error) => {
                tracing::error!(service = self.service.id(), %error, "a request task failed")
            }
        }
    }
}

/// The service's Shared consumer on its request topic.
async fn subscribe(
    pulsar: &Pulsar<TokioExecutor>,
    service: Service,
    permits: usize,
) -> Result<Consumer<Vec<u8>, TokioExecutor>, pulsar::Error> {
    pulsar
        .consumer()
        .with_topic(service.request_queue())
        .with_subscription(service.subscription())
        .with_subscription_type(SubType::Shared)
        .with_batch_size(u32::try_from(permits).unwrap_or(u32::MAX))
        .with_options(ConsumerOptions::default().with_initial_position(InitialPosition::Latest))
        .build::<Vec<u8>>()
        .await
}

fn topic_error(
    service: Service,
    what: &'static str,
    topic: &str,
    source: pulsar::Error,
) -> ServeError {
    ServeError::Topic {
        service: service.id().to_owned(),
        what,
        topic: topic.to_owned(),
        source: Box::new(source),
    }
}

/// Whether an answer to the request `id` can fit the broker's limit at all:
/// every frame carries the id, and an error frame of our own needs less
/// than 1 KiB besides. Arithmetic only: this runs for every request.
fn answerable(id: &str, limits: dispatch::Limits) -> bool {
    const ERROR_FRAME: usize = 1024;
    limits
        .max_message_size
        .is_none_or(|max| id.len() + crate::wire::MESSAGE_OVERHEAD + ERROR_FRAME <= max)
}

/// After a frame of the answer to `id` could not be published: logs it, and
/// tries once to end the response with a `send-failed` error frame, so that
/// the caller is not left waiting. Returns whether that got through (the
/// request is then acknowledged: answered). When it did not, the broker is
/// unreachable for now, and the request is returned to it (redelivered on a
/// persistent topic).
async fn tell_send_failure(id: &str, error: &pulsar::Error, sink: &mut PulsarSink<'_>) -> bool {
    let cause = crate::pulsar_compat::errors::describe_send_error(error);
    tracing::error!(cause = %Untrusted::text(&cause), "cannot send the response");
    let hint = if cause.contains("maximum message size") {
        "; if a topic policy sets a lower maxMessageSize than the broker, give it to serve with --max-message-size"
    } else {
        ""
    };
    let notice = Frame::last(Err(ToolError::with_type(
        ToolError::SEND_FAILED,
        format!("the tool's response could not be published: {cause}{hint}"),
    )));
    match sink.send(id, notice).await {
        Ok(()) => true,
        Err(error) => {
            let cause = crate::pulsar_compat::errors::describe_send_error(&error);
            tracing::warn!(cause = %Untrusted::text(&cause), "cannot send the send-failed notice either; the request is returned to the broker");
            false
        }
    }
}

/// Logs what a request carries (only with `log_payloads`).
fn log_payload(payload: &[u8]) {
    match crate::wire::Request::decode(payload) {
        Ok(request) => tracing::info!(
            user = request.user.as_deref().map(|user| tracing::field::debug(Untrusted::id(user))),
            config = %Untrusted::payload(&request.config),
            arguments = %Untrusted::payload(&request.arguments),
            "request"
        ),
        Err(_) => tracing::info!(
            payload = %Untrusted::payload(&String::from_utf8_lossy(payload)),
            "request (not decodable)"
        ),
    }
}

/// Sends frames to a service's response topic, each under the request's `id`.
struct PulsarSink<'a> {
    producer: &'a Mutex<Producer<TokioExecutor>>,
    /// The error type of the last frame, if it was an error.
    failed: Option<String>,
}

impl FrameSink for PulsarSink<'_> {
    type Error = pulsar::Error;

    async fn send(&mut self, id: &str, frame: Frame) -> Result<(), Self::Error> {
        if let (true, Some(error)) = (frame.end_of_stream, &frame.error) {
            self.failed = Some(error.kind().to_owned());
        }
        crate::broker::publish(self.producer, id, frame.encode()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_frame_fits_the_room_answerable_keeps_for_it() {
        let limits = dispatch::Limits::default().with_max_message_size(64 * 1024);
        let id = "i".repeat(60 * 1024);
        assert!(answerable(&id, limits));
        // The largest error frames serve sends itself.
        let frame = Frame::last(Err(ToolError::with_type(
            ToolError::SEND_FAILED,
            format!(
                "the tool's response could not be published: {}…; if a topic policy sets a \
                 lower maxMessageSize than the broker, give it to serve with --max-message-size",
                "c".repeat(300)
            ),
        )));
        assert!(
            frame.message_size(&id) <= 64 * 1024,
            "{}",
            frame.message_size(&id)
        );
        assert!(!answerable(&"i".repeat(64 * 1024), limits));
        assert!(answerable(
            &"i".repeat(64 * 1024),
            dispatch::Limits::default()
        ));
    }
}
