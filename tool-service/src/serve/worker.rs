//! One service's worker: its consumer loop, its requests in flight, and
//! the producer of its responses.
//!
//! A request of a non-streaming service is a future that ends with its one
//! frame. The loop polls it once where it stands (see [`super::gate`]): if
//! it is ready, the loop sends the frame at once, with no task. Otherwise it
//! becomes a task, and the loop sends its frame when the task ends. Either
//! way the loop owns the producer, keeps the send receipts, and acknowledges
//! each request when the broker has its answer. A streaming service's
//! requests are tasks that send their own frames through a shared producer.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;
use pulsar::consumer::{ConsumerOptions, InitialPosition};
use pulsar::producer::{Producer, SendFuture};
use pulsar::{Consumer, Pulsar, SubType, TokioExecutor};
use tokio::sync::{watch, Mutex};
use tokio::task::JoinSet;
use tracing::Instrument;

use super::gate::Gate;
use super::{stop_requested, ServeError, ServiceReport};
use crate::dispatch::{self, FrameSink};
use crate::log_text::Untrusted;
use crate::metrics::{InFlight, ServiceMetrics};
use crate::wire::{Frame, Request, UNKNOWN_ID};
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

/// Where a service's responses go out. One per service, so the size of the
/// owned producer costs nothing, and the hot path needs no indirection.
#[allow(clippy::large_enum_variant)]
enum Output {
    /// Non-streaming services: the loop sends every answer itself.
    Owned(Producer<TokioExecutor>),
    /// Streaming services: each request's task sends its frames as they come.
    Shared(Arc<Mutex<Producer<TokioExecutor>>>),
}

/// What a request's task ends with.
enum Done {
    /// A non-streaming request's answer, for the loop to send.
    Answer(Answer),
    /// A streaming request's frames were sent (true: acknowledge it) or not
    /// (return it to the broker).
    Settled(RequestMessage, bool),
}

/// A request and the one frame that answers it.
struct Answer {
    message: RequestMessage,
    id: String,
    frame: Frame,
    /// For a request that was handled (not refused): its in-flight gauge and
    /// when it started. The latency ends when the broker has the answer.
    timing: Option<(InFlight, Instant)>,
    span: tracing::Span,
}

impl Answer {
    /// What a handled request ends with: its frame, for the loop to send.
    fn handled(
        message: RequestMessage,
        id: String,
        frame: Frame,
        timing: (InFlight, Instant),
        span: tracing::Span,
    ) -> Done {
        Done::Answer(Self {
            message,
            id,
            frame,
            timing: Some(timing),
            span,
        })
    }
}

/// An answer the broker has not confirmed yet.
struct Sent {
    answer: Answer,
    /// Whether this is the `send-failed` notice that replaced the answer.
    notice: bool,
}

/// The broker's receipt for a [`Sent`] answer.
struct Receipt {
    sent: Option<Sent>,
    receipt: SendFuture,
}

impl Future for Receipt {
    type Output = (Sent, Result<(), pulsar::Error>);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        match Pin::new(&mut this.receipt).poll(cx) {
            Poll::Ready(result) => Poll::Ready((
                this.sent
                    .take()
                    .expect("a receipt is polled until it is ready, not after"),
                result.map(drop),
            )),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// How long a request whose response could not be sent at all waits before
/// it goes back to the broker, so that a response the broker keeps refusing
/// is not redelivered and refused again in a tight loop.
pub(super) const RETURN_DELAY: Duration = Duration::from_secs(1);

/// A request on its way back to the broker after [`RETURN_DELAY`].
struct Returning {
    message: Option<RequestMessage>,
    delay: Pin<Box<tokio::time::Sleep>>,
}

impl Future for Returning {
    type Output = RequestMessage;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RequestMessage> {
        let this = &mut *self;
        match this.delay.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(
                this.message
                    .take()
                    .expect("a returning request is polled until it is ready, not after"),
            ),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The requests a worker has taken on: tasks running, answers awaiting the
/// broker's receipt, and requests waiting to go back to the broker. Together
/// they stay within `concurrency`, so a broker that refuses every response
/// also slows the intake.
#[derive(Default)]
struct Busy {
    tasks: JoinSet<Done>,
    receipts: FuturesUnordered<Receipt>,
    returning: FuturesUnordered<Returning>,
}

impl Busy {
    fn len(&self) -> usize {
        self.tasks.len() + self.receipts.len() + self.returning.len()
    }

    fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.receipts.is_empty() && self.returning.is_empty()
    }

    /// Returns `message` to the broker after [`RETURN_DELAY`].
    fn give_back(&mut self, message: RequestMessage) {
        self.returning.push(Returning {
            message: Some(message),
            delay: Box::pin(tokio::time::sleep(RETURN_DELAY)),
        });
    }
}

/// What the loop waits for next.
enum Event {
    Stop,
    Received(Option<Result<RequestMessage, pulsar::Error>>),
    TaskEnded(Result<Done, tokio::task::JoinError>),
    Confirmed((Sent, Result<(), pulsar::Error>)),
    Returned(RequestMessage),
}

/// The consumer loop of one service.
pub(super) struct Worker {
    pub(super) service: Service,
    /// What the handlers share.
    state: State,
    concurrency: usize,
    window: usize,
    limits: dispatch::Limits,
    log_payloads: bool,
    metrics: Arc<ServiceMetrics>,
    gate: Arc<Gate>,
    /// The client, to subscribe again should the request stream end.
    pulsar: Pulsar<TokioExecutor>,
    /// Flow permits of the consumer.
    permits: usize,
    consumer: Consumer<Vec<u8>, TokioExecutor>,
    output: Output,
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
            limits: dispatch::Limits::default()
                .with_timeout(timeout)
                .with_max_message_size(max_message_size),
            log_payloads,
            metrics,
            gate: Arc::default(),
            pulsar: pulsar.clone(),
            permits,
            consumer,
            output: if service.is_streaming() {
                Output::Shared(Arc::new(Mutex::new(producer)))
            } else {
                Output::Owned(producer)
            },
        })
    }

    pub(super) async fn run(
        mut self,
        mut stopped: watch::Receiver<bool>,
        grace: Duration,
    ) -> ServiceReport {
        let mut report = ServiceReport::default();
        let mut busy = Busy::default();
        // Requests taken from the broker but not started yet. Reading ahead
        // keeps the client library from stalling, which on a non-persistent
        // topic would make the broker drop requests silently.
        let mut backlog: VecDeque<RequestMessage> = VecDeque::new();
        let window = self.window;
        let persistent = self.service.request_queue().starts_with("persistent://");
        loop {
            // A persistent topic keeps what we do not take; a non-persistent
            // one drops it, so there we always read and answer what does not
            // fit with an `overloaded` error.
            let read = !persistent || backlog.len() < window;
            let event = tokio::select! {
                biased;
                _ = stop_requested(&mut stopped) => Event::Stop,
                Some(confirmed) = busy.receipts.next(), if !busy.receipts.is_empty() => Event::Confirmed(confirmed),
                Some(ended) = busy.tasks.join_next(), if !busy.tasks.is_empty() => Event::TaskEnded(ended),
                Some(message) = busy.returning.next(), if !busy.returning.is_empty() => Event::Returned(message),
                next = self.consumer.next(), if read => Event::Received(next),
            };
            match event {
                Event::Stop => break,
                Event::Confirmed(confirmed) => {
                    self.confirmed(confirmed, &mut busy, &mut report).await;
                    self.start_waiting(&mut busy, &mut backlog, &mut report)
                        .await;
                }
                Event::TaskEnded(ended) => {
                    self.task_ended(ended, &mut busy, &mut report).await;
                    self.start_waiting(&mut busy, &mut backlog, &mut report)
                        .await;
                }
                Event::Returned(message) => {
                    self.nack(&message).await;
                    self.start_waiting(&mut busy, &mut backlog, &mut report)
                        .await;
                }
                Event::Received(Some(Ok(message))) => {
                    if busy.len() < self.concurrency {
                        self.take(message, None, &mut busy, &mut report).await;
                    } else if backlog.len() < window {
                        backlog.push_back(message);
                    } else {
                        let error = ToolError::with_type(
                            ToolError::OVERLOADED,
                            format!(
                                "the service is at capacity ({} requests running, {} waiting); try again later",
                                busy.len(),
                                backlog.len()
                            ),
                        );
                        self.take(message, Some(error), &mut busy, &mut report)
                            .await;
                    }
                }
                // A message the client cannot decode (a hostile producer's
                // batch count, an unknown compression) is skipped; the
                // consumer goes on.
                Event::Received(Some(Err(error)))
                    if !crate::pulsar_compat::errors::consumer_lost(&error) =>
                {
                    tracing::warn!(service = self.service.id(), error = %Untrusted::text(&error.to_string()), "a request the Pulsar client cannot decode was skipped");
                }
                // The client reports a consumer it could not re-create (e.g.
                // the topic was deleted and could not be created again) as
                // one error, after which the stream stays silent for good; or
                // it ends the stream. Either way, subscribe again rather than
                // fall silent.
                Event::Received(lost) => {
                    match lost {
                        Some(Err(error)) => {
                            tracing::error!(service = self.service.id(), %error, "the request consumer failed; subscribing again")
                        }
                        _ => tracing::error!(
                            service = self.service.id(),
                            "the request stream ended; subscribing again"
                        ),
                    }
                    if !self.resubscribe(&mut stopped, &mut backlog).await {
                        break;
                    }
                    self.start_waiting(&mut busy, &mut backlog, &mut report)
                        .await;
                }
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
                let error = ToolError::with_type(
                    ToolError::UNAVAILABLE,
                    "the service is shutting down; try again",
                );
                self.take(message, Some(error), &mut busy, &mut report)
                    .await;
            }
        }
        // Requests waiting to go back to the broker go now.
        for mut returning in std::mem::take(&mut busy.returning) {
            if let Some(message) = returning.message.take() {
                self.nack(&message).await;
            }
        }
        tracing::info!(
            service = self.service.id(),
            in_flight = busy.len(),
            "stopping: finishing in-flight requests"
        );
        let deadline = tokio::time::Instant::now() + grace;
        let drained = tokio::time::timeout_at(deadline, async {
            while !busy.is_empty() {
                tokio::select! {
                    Some(confirmed) = busy.receipts.next(), if !busy.receipts.is_empty() => {
                        self.confirmed(confirmed, &mut busy, &mut report).await;
                    }
                    Some(ended) = busy.tasks.join_next(), if !busy.tasks.is_empty() => {
                        self.task_ended(ended, &mut busy, &mut report).await;
                    }
                    Some(message) = busy.returning.next(), if !busy.returning.is_empty() => {
                        self.nack(&message).await;
                    }
                }
            }
        })
        .await;
        if drained.is_err() {
            report.abandoned = busy.len() as u64;
            tracing::warn!(
                service = self.service.id(),
                abandoned = report.abandoned,
                "grace period over: abandoning requests still running"
            );
            busy.tasks.abort_all();
        }
        drop(busy);
        self.metrics.set_running(false);
        if let Err(error) = self.consumer.close().await {
            tracing::debug!(service = self.service.id(), %error, "closing the consumer");
        }
        let closed = match &mut self.output {
            Output::Owned(producer) => producer.close().await,
            Output::Shared(producer) => producer.lock().await.close().await,
        };
        if let Err(error) = closed {
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
        true
    }

    /// Starts waiting requests while there is room.
    async fn start_waiting(
        &mut self,
        busy: &mut Busy,
        backlog: &mut VecDeque<RequestMessage>,
        report: &mut ServiceReport,
    ) {
        while busy.len() < self.concurrency {
            let Some(message) = backlog.pop_front() else {
                break;
            };
            self.take(message, None, busy, report).await;
        }
    }

    /// Takes on one request: serves it, or answers it with `refusal` at once.
    async fn take(
        &mut self,
        message: RequestMessage,
        refusal: Option<ToolError>,
        busy: &mut Busy,
        report: &mut ServiceReport,
    ) {
        if self.log_payloads {
            log_payload(&message.payload.data);
        }
        let id = crate::broker::message_id(&message)
            .unwrap_or(UNKNOWN_ID)
            .to_owned();
        if !answerable(&id, self.limits) {
            // Even an error frame would carry the id, and not fit:
            // acknowledged unanswered, or it would come back.
            self.metrics.oversized();
            tracing::error!(
                service = self.service.id(),
                id_bytes = id.len(),
                "the request id is too long for any answer to fit the broker's maximum message size; dropping the request"
            );
            report.answered += 1;
            self.ack(&message).await;
            return;
        }
        let span = tracing::info_span!("request", service = self.service.id(), request_id = %Untrusted::id(&id));
        if let Some(error) = &refusal {
            report.refused += 1;
            self.metrics.refused(error.kind());
        }
        let producer = match &self.output {
            Output::Owned(_) => None,
            Output::Shared(producer) => Some(Arc::clone(producer)),
        };
        let Some(producer) = producer else {
            match refusal {
                Some(error) => {
                    let answer = Answer {
                        message,
                        id,
                        frame: Frame::last(Err(error)),
                        timing: None,
                        span,
                    };
                    self.send(answer, busy, report).await;
                }
                None => self.answer(message, id, span, busy, report).await,
            }
            return;
        };
        let stream = StreamTask {
            service: self.service,
            state: self.state.clone(),
            limits: self.limits,
            metrics: Arc::clone(&self.metrics),
            producer,
        };
        busy.tasks
            .spawn(stream.run(message, id, refusal).instrument(span));
    }

    /// Serves a request of a non-streaming service: polled here first while
    /// the service's first polls are short, and sent at once if it is ready;
    /// otherwise run as a task.
    async fn answer(
        &mut self,
        message: RequestMessage,
        id: String,
        span: tracing::Span,
        busy: &mut Busy,
        report: &mut ServiceReport,
    ) {
        let service = self.service;
        let limits = self.limits;
        let timing = (self.metrics.start(), Instant::now());
        if !self.gate.inline() {
            // Decoded and handled on the worker pool, the first poll timed
            // so that the gate opens again when the handler gets fast.
            let state = self.state.clone();
            let request_span = span.clone();
            let request = Box::pin(
                async move {
                    let frame = dispatch::reply(
                        service,
                        &state,
                        &id,
                        Request::decode(&message.payload.data),
                        limits,
                    )
                    .await;
                    Answer::handled(message, id, frame, timing, request_span)
                }
                .instrument(span),
            );
            busy.tasks.spawn(self.gate.measure(request));
            return;
        }
        // Decoded and first polled here, in the request's span; the future
        // is neither boxed nor spawned unless it is pending.
        let polled = {
            let _entered = span.enter();
            let state = &self.state;
            let payload = &message.payload.data;
            self.gate.poll_once(|| {
                dispatch::reply(service, state, &id, Request::decode(payload), limits)
            })
        };
        match polled {
            Ok(frame) => {
                let done = Answer::handled(message, id, frame, timing, span);
                self.done(done, busy, report).await;
            }
            Err(pending) => {
                let request_span = span.clone();
                busy.tasks.spawn(
                    async move { Answer::handled(message, id, pending.await, timing, request_span) }
                        .instrument(span),
                );
            }
        }
    }

    /// Sends an answer, keeping its receipt; a send that fails at once is
    /// handled as a failed receipt.
    async fn send(&mut self, answer: Answer, busy: &mut Busy, report: &mut ServiceReport) {
        self.send_as(answer, false, busy, report).await;
    }

    async fn send_as(
        &mut self,
        answer: Answer,
        notice: bool,
        busy: &mut Busy,
        report: &mut ServiceReport,
    ) {
        let message = crate::broker::response(&answer.id, answer.frame.encode());
        let sent = match &mut self.output {
            Output::Owned(producer) => producer.send_non_blocking(message).await,
            Output::Shared(producer) => producer.lock().await.send_non_blocking(message).await,
        };
        match sent {
            Ok(receipt) => busy.receipts.push(Receipt {
                sent: Some(Sent { answer, notice }),
                receipt,
            }),
            Err(error) => {
                Box::pin(self.send_failed(Sent { answer, notice }, &error, busy, report)).await;
            }
        }
    }

    /// The broker has an answer (`Ok`), or it could not be published.
    async fn confirmed(
        &mut self,
        (sent, result): (Sent, Result<(), pulsar::Error>),
        busy: &mut Busy,
        report: &mut ServiceReport,
    ) {
        if let Err(error) = result {
            return self.send_failed(sent, &error, busy, report).await;
        }
        let Sent { answer, notice } = sent;
        if let (false, Some((in_flight, started))) = (notice, answer.timing) {
            let elapsed = started.elapsed();
            let failed = answer.frame.error.as_ref().map(ToolError::kind);
            if tracing::enabled!(tracing::Level::DEBUG) {
                // The type only: messages may quote argument values.
                answer.span.in_scope(|| {
                    tracing::debug!(
                        error = failed.map(|kind| tracing::field::debug(Untrusted::text(kind))),
                        ?elapsed,
                        "answered"
                    )
                });
            }
            if failed == Some(ToolError::RESPONSE_TOO_LARGE) {
                self.metrics.oversized();
            }
            in_flight.finish(failed, elapsed);
        }
        report.answered += 1;
        self.ack(&answer.message).await;
    }

    /// After an answer could not be published: logs it, and tries once to
    /// end the response with a `send-failed` error frame, so that the caller
    /// is not left waiting (the request is then acknowledged: answered). When
    /// that fails too, the broker is unreachable for now, and the request is
    /// returned to it after [`RETURN_DELAY`] (redelivered on a persistent
    /// topic).
    async fn send_failed(
        &mut self,
        sent: Sent,
        error: &pulsar::Error,
        busy: &mut Busy,
        report: &mut ServiceReport,
    ) {
        let cause = crate::pulsar_compat::errors::describe_send_error(error);
        let Sent { mut answer, notice } = sent;
        if notice {
            answer.span.in_scope(|| tracing::warn!(cause = %Untrusted::text(&cause), delay = ?RETURN_DELAY, "cannot send the send-failed notice either; the request goes back to the broker after a pause"));
            busy.give_back(answer.message);
            return;
        }
        self.metrics.send_failed();
        answer.span.in_scope(
            || tracing::error!(cause = %Untrusted::text(&cause), "cannot send the response"),
        );
        answer.timing = None;
        answer.frame = send_failed_notice(&cause);
        self.send_as(answer, true, busy, report).await;
    }

    async fn task_ended(
        &mut self,
        ended: Result<Done, tokio::task::JoinError>,
        busy: &mut Busy,
        report: &mut ServiceReport,
    ) {
        match ended {
            Ok(done) => self.done(done, busy, report).await,
            Err(error) => {
                tracing::error!(service = self.service.id(), %error, "a request task failed")
            }
        }
    }

    async fn done(&mut self, done: Done, busy: &mut Busy, report: &mut ServiceReport) {
        match done {
            Done::Answer(answer) => self.send(answer, busy, report).await,
            Done::Settled(message, true) => {
                report.answered += 1;
                self.ack(&message).await;
            }
            Done::Settled(message, false) => busy.give_back(message),
        }
    }

    async fn ack(&mut self, message: &RequestMessage) {
        if let Err(error) = self.consumer.ack(message).await {
            tracing::warn!(service = self.service.id(), %error, "cannot acknowledge a request");
        }
    }

    async fn nack(&mut self, message: &RequestMessage) {
        if let Err(error) = self.consumer.nack(message).await {
            tracing::warn!(service = self.service.id(), %error, "cannot negatively acknowledge a request");
        }
    }
}

/// What a streaming request's task needs.
struct StreamTask {
    service: Service,
    state: State,
    limits: dispatch::Limits,
    metrics: Arc<ServiceMetrics>,
    producer: Arc<Mutex<Producer<TokioExecutor>>>,
}

impl StreamTask {
    /// Serves the request (or answers it with `refusal`), sending each frame
    /// as it comes; whether its last frame got out.
    async fn run(self, message: RequestMessage, id: String, refusal: Option<ToolError>) -> Done {
        let Self {
            service,
            state,
            limits,
            metrics,
            producer,
        } = self;
        let mut sink = PulsarSink {
            producer: &producer,
            failed: None,
        };
        let result = match refusal {
            None => {
                let in_flight = metrics.start();
                let started = Instant::now();
                let result = dispatch::dispatch_with(
                    service,
                    &state,
                    &id,
                    &message.payload.data,
                    limits,
                    &mut sink,
                )
                .await;
                if result.is_ok() {
                    let elapsed = started.elapsed();
                    // The type only: messages may quote argument values.
                    tracing::debug!(
                        error = sink
                            .failed
                            .as_deref()
                            .map(|kind| tracing::field::debug(Untrusted::text(kind))),
                        ?elapsed,
                        "answered"
                    );
                    if sink.failed.as_deref() == Some(ToolError::RESPONSE_TOO_LARGE) {
                        metrics.oversized();
                    }
                    in_flight.finish(sink.failed.as_deref(), elapsed);
                }
                result.map(drop)
            }
            Some(error) => sink.send(&id, Frame::last(Err(error))).await,
        };
        let sent = match result {
            Ok(()) => true,
            Err(error) => {
                metrics.send_failed();
                let cause = crate::pulsar_compat::errors::describe_send_error(&error);
                tracing::error!(cause = %Untrusted::text(&cause), "cannot send the response");
                match sink.send(&id, send_failed_notice(&cause)).await {
                    Ok(()) => true,
                    Err(error) => {
                        let cause = crate::pulsar_compat::errors::describe_send_error(&error);
                        tracing::warn!(cause = %Untrusted::text(&cause), delay = ?RETURN_DELAY, "cannot send the send-failed notice either; the request goes back to the broker after a pause");
                        false
                    }
                }
            }
        };
        Done::Settled(message, sent)
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

/// The error frame that ends a response whose frame could not be
/// published: what went wrong, and what to change.
fn send_failed_notice(cause: &str) -> Frame {
    let hint = if cause.contains("maximum message size") {
        "; if a topic policy sets a lower maxMessageSize than the broker, give it to serve with --max-message-size"
    } else {
        ""
    };
    Frame::last(Err(ToolError::with_type(
        ToolError::SEND_FAILED,
        format!("the tool's response could not be published: {cause}{hint}"),
    )))
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
