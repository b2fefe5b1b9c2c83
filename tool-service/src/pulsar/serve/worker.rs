//! One service's worker: its consumer loop, its requests in flight, and
//! the publisher of its responses.
//!
//! A request of a non-streaming service is a future that ends with its one
//! frame. The loop polls it once where it stands (see [`super::gate`]): if
//! it is ready, the loop sends the frame at once, with no task. Otherwise it
//! becomes a task, and the loop sends its frame when the task ends. A
//! streaming service's requests are tasks that send their chunks through a
//! shared publisher as they come, and leave the frame that ends the answer
//! to the loop. So the loop sends every last frame, keeps the receipts, and
//! acknowledges each request when the broker has its answer; a frame that
//! cannot be published takes one path, [`Worker::failed`].
//!
//! The worker reaches the broker through [`Requests`] and [`Responses`]
//! only: over Pulsar in production, in memory in its unit tests. Its
//! publishing half (answers out, receipts in, the send-failed path) is
//! [`publish`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use pulsar::{Pulsar, TokioExecutor};
use tokio::sync::{AcquireError, OwnedSemaphorePermit};

use super::broker_io::{PulsarRequests, PulsarResponses, Requests, Responses};
use super::busy::{Answer, Attempt, Busy, Done, Settled, Unconfirmed};
use super::gate::Gate;
use super::ServeError;
use crate::dispatch;
use crate::host::ServiceReport;
use crate::host::{Admitted, Budget, Call, Held, Host, OverBudget, Permit};
use crate::log_text::Untrusted;
use crate::metrics::ServiceMetrics;
use crate::pulsar::backoff::Backoff;
use crate::trace::{self, Topics};
use crate::wire::{Frame, Request};
use crate::{error::ToolError, service::Service, state::State};
use publish::stream;

/// The `id` answered when a request carries no `id` property, as TrustGraph does.
const UNKNOWN_ID: &str = "unknown";

/// The `id` a request is answered under.
fn id_of<R: Requests>(message: &R::Message) -> &str {
    R::id(message).unwrap_or(UNKNOWN_ID)
}

/// What one service's worker reads ahead and sends, besides the host's
/// policy (timeout, concurrency, rate, budget).
#[derive(Debug, Clone)]
pub(super) struct WorkerOptions {
    pub(super) window: usize,
    pub(super) log_payloads: bool,
    pub(super) max_message_size: usize,
    /// Answers ready together share a batch (see [`super::batch`]).
    pub(super) batch_responses: bool,
}

/// A request as the worker keeps it: held against the byte budget.
type Msg<R> = Held<<R as Requests>::Message>;

/// What the loop waits for next. Made and taken at once, never stored:
/// its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Event<M, RE, E> {
    Stop,
    /// The byte budget has room again.
    Room,
    Received(Option<Result<M, RE>>),
    Settled(Settled<Held<M>, E>),
    /// A concurrency permit for the first request waiting.
    Permit(Result<OwnedSemaphorePermit, AcquireError>),
}

/// The worker of a service served on Pulsar.
pub(super) type PulsarWorker = Worker<PulsarRequests, PulsarResponses>;

/// The consumer loop of one service.
pub(super) struct Worker<R: Requests, P: Responses> {
    pub(super) service: Service,
    /// Admission, the drain and the policy, shared with other transports.
    host: Host,
    /// The service's place among the host's.
    hosted: usize,
    /// What its spans are called.
    topics: Arc<Topics>,
    /// What the handlers share.
    state: State,
    window: usize,
    /// Whether the request topic keeps what is not taken (else it drops it).
    persistent: bool,
    limits: dispatch::Limits,
    log_payloads: bool,
    metrics: Arc<ServiceMetrics>,
    gate: Arc<Gate>,
    requests: R,
    /// Where the answers go, shared with the streaming calls.
    output: Arc<P>,
    busy: Busy<Msg<R>, P::Error, P::Receipt>,
    /// Requests admitted but not started yet, for want of a concurrency
    /// permit. Reading ahead keeps the client library from stalling, which
    /// on a non-persistent topic would make the broker drop requests
    /// silently.
    backlog: VecDeque<(Msg<R>, Admitted)>,
    /// The permit the first of the backlog waits for (kept across turns,
    /// so that it keeps its place among the service's other waiters).
    waiting: Option<Permit>,
    budget: Arc<Budget>,
    report: ServiceReport,
}

impl PulsarWorker {
    /// Subscribes to the service's request topic and opens its producer.
    pub(super) async fn start(
        pulsar: &Pulsar<TokioExecutor>,
        host: &Host,
        service: Service,
        metrics: Arc<ServiceMetrics>,
        options: WorkerOptions,
    ) -> Result<Self, ServeError> {
        let request_queue = service.request_queue();
        let response_queue = service.response_queue();
        // Flow permits: a persistent topic holds back what a replica has no
        // room for (so replicas share fairly); a non-persistent one drops it,
        // so there the client library may always read ahead. The client
        // holds up to twice its permits (its queue, and what the broker may
        // still push), so a persistent topic's permits are also bounded by
        // the byte budget at the largest message size.
        let permits = if request_queue.starts_with("persistent://") {
            let fit = host.budget().limit() / (2 * options.max_message_size.max(1));
            options.window.min(fit.max(1))
        } else {
            options.window.max(super::DEFAULT_RECEIVE_WINDOW)
        };
        let requests = PulsarRequests::subscribe(pulsar, service, permits)
            .await
            .map_err(|source| topic_error(service, "subscribe", &request_queue, source))?;
        let responses = pulsar
            .producer()
            .with_topic(&response_queue)
            .with_options(super::batch::producer_options(options.batch_responses))
            .build()
            .await
            .map(|producer| {
                PulsarResponses::start(
                    producer,
                    options.max_message_size,
                    options.batch_responses,
                    Arc::clone(&metrics),
                )
            })
            .map_err(|source| topic_error(service, "publish", &response_queue, source))?;
        // Topic lookups may have opened connections of their own.
        crate::pulsar::compat::nodelay::apply();
        tracing::info!(
            service = service.id(),
            %request_queue,
            %response_queue,
            subscription = %service.subscription(),
            concurrency = host.concurrency_of(service),
            timeout = %crate::duration::format(host.timeout_of(service).unwrap_or_default()),
            rate = host.rate_of(service).map(tracing::field::display),
            batch_responses = options.batch_responses,
            "serving"
        );
        Ok(Worker::new(
            host.clone(),
            service,
            metrics,
            options,
            requests,
            responses,
        ))
    }
}

impl<R: Requests, P: Responses> Worker<R, P> {
    fn new(
        host: Host,
        service: Service,
        metrics: Arc<ServiceMetrics>,
        options: WorkerOptions,
        requests: R,
        responses: P,
    ) -> Self {
        metrics.set_running(true);
        let hosted = host
            .hosted_services()
            .iter()
            .position(|hosted| hosted.service.id() == service.id())
            .expect("a worker serves one of its host's services");
        let timeout = host.hosted_services()[hosted].timeout;
        Self {
            service,
            topics: Arc::new(Topics::new(service)),
            state: host.registry().state().clone(),
            window: options.window,
            persistent: service.request_queue().starts_with("persistent://"),
            limits: dispatch::Limits::default()
                .with_timeout(timeout)
                .with_max_message_size(options.max_message_size),
            log_payloads: options.log_payloads,
            metrics,
            budget: Arc::clone(host.budget()),
            host,
            hosted,
            waiting: None,
            gate: Arc::default(),
            requests,
            output: Arc::new(responses),
            busy: Busy::default(),
            backlog: VecDeque::new(),
            report: ServiceReport::default(),
        }
    }

    /// Serves until its host drains, then finishes what it took on until
    /// the drain is over.
    pub(super) async fn run(mut self) -> ServiceReport {
        // One wait for the drain, registered once and polled at every turn:
        // a wait made anew at each turn registered and unregistered itself
        // with the channel every time (about 800 instructions a request).
        let stop = self.host.draining();
        tokio::pin!(stop);
        loop {
            // A persistent topic keeps what we do not take; a non-persistent
            // one drops it, so there we always read and answer what does not
            // fit with an `overloaded` error.
            let spent = self.persistent && self.budget.is_spent();
            let read = !spent && (!self.persistent || self.backlog.len() < self.window);
            let event = tokio::select! {
                biased;
                () = &mut stop => Event::Stop,
                settled = self.busy.settled() => Event::Settled(settled),
                permit = wait_for(&mut self.waiting) => Event::Permit(permit),
                // Another service's requests may be what spends it.
                () = self.budget.room(), if spent => Event::Room,
                next = self.requests.next(), if read => Event::Received(next),
            };
            match event {
                Event::Stop => break,
                Event::Room => {}
                Event::Settled(settled) => self.settle(settled).await,
                Event::Permit(permit) => self.start_waiting(permit).await,
                Event::Received(next) => {
                    if !self.received(next).await {
                        break;
                    }
                }
            }
        }
        self.drain().await;
        self.metrics.set_running(false);
        if let Err(error) = self.requests.close().await {
            tracing::debug!(service = self.service.id(), %error, "closing the consumer");
        }
        if let Err(error) = self.output.close().await {
            let error = P::describe(&error);
            tracing::debug!(service = self.service.id(), %error, "closing the producer");
        }
        tracing::info!(
            service = self.service.id(),
            answered = self.report.answered,
            "stopped"
        );
        self.report
    }

    /// At the host's drain: gives back what was not started, then lets
    /// what was finish until the drain is over, and abandons the rest.
    async fn drain(&mut self) {
        self.waiting = None;
        // Requests not started are not taken: a persistent topic redelivers
        // them (to another replica); on a non-persistent one the caller hears
        // at once that it should try again.
        for (message, admitted) in std::mem::take(&mut self.backlog) {
            drop(admitted);
            if self.persistent {
                self.nack(&message).await;
            } else {
                self.take(message, Err(crate::host::shutting_down())).await;
            }
        }
        // Requests waiting to go back to the broker go now.
        for message in self.busy.take_returning() {
            self.nack(&message).await;
        }
        tracing::debug!(
            service = self.service.id(),
            in_flight = self.busy.len(),
            "stopping: finishing in-flight requests"
        );
        // Until the host's drain is over: what was taken on finishes, and a
        // non-persistent topic's new requests are answered at once with the
        // drain's refusal (a persistent topic keeps them for another
        // replica).
        let over = self.host.drained();
        tokio::pin!(over);
        let mut reading = !self.persistent;
        loop {
            tokio::select! {
                biased;
                () = &mut over => break,
                settled = self.busy.settled() => self.settle(settled).await,
                next = self.requests.next(), if reading => match next {
                    Some(Ok(message)) => self.arrived(message, false).await,
                    Some(Err(error)) if !R::is_lost(&error) => {}
                    // Not subscribed again while draining.
                    _ => reading = false,
                },
            }
        }
        // What went back meanwhile goes now; the rest is abandoned (the
        // host has said so, once for every transport).
        for message in self.busy.take_returning() {
            self.nack(&message).await;
        }
        if !self.busy.is_empty() {
            self.report.abandoned = self.busy.len() as u64;
            self.busy.abort();
        }
        drop(std::mem::take(&mut self.busy));
    }

    /// A request arrived, or the subscription failed: false if the drain
    /// began while subscribing again.
    async fn received(&mut self, next: Option<Result<R::Message, R::Error>>) -> bool {
        match next {
            Some(Ok(message)) => self.arrived(message, false).await,
            // A message the client cannot decode (a hostile producer's batch
            // count, an unknown compression) is skipped; the consumer goes on.
            Some(Err(error)) if !R::is_lost(&error) => {
                tracing::warn!(service = self.service.id(), error = %Untrusted::text(&error.to_string()), "a request the Pulsar client cannot decode was skipped");
            }
            // The client reports a consumer it could not re-create (e.g. the
            // topic was deleted and could not be created again) as one error,
            // after which the stream stays silent for good; or it ends the
            // stream. Either way, subscribe again rather than fall silent.
            lost => {
                match lost {
                    Some(Err(error)) => {
                        tracing::error!(service = self.service.id(), %error, "the request consumer failed; subscribing again")
                    }
                    _ => tracing::error!(
                        service = self.service.id(),
                        "the request stream ended; subscribing again"
                    ),
                }
                // Not subscribed, so not ready, until subscribed again.
                self.metrics.set_running(false);
                let Some(handed_over) = self.resubscribe().await else {
                    return false;
                };
                self.metrics.set_running(true);
                for message in handed_over {
                    self.arrived(message, true).await;
                }
            }
        }
        true
    }

    /// Subscribes again, retrying with backoff until that works (with the
    /// requests the old subscription had already received), or until the
    /// drain begins (none).
    async fn resubscribe(&mut self) -> Option<Vec<R::Message>> {
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(3));
        let stop = self.host.draining();
        tokio::pin!(stop);
        loop {
            match self.requests.resubscribe().await {
                Ok(handed_over) => {
                    tracing::info!(
                        service = self.service.id(),
                        handed_over = handed_over.len(),
                        "subscribed again"
                    );
                    return Some(handed_over);
                }
                Err(error) => {
                    tracing::warn!(service = self.service.id(), %error, retry_in = ?backoff.delay(), "cannot subscribe again; retrying");
                }
            }
            tokio::select! {
                () = backoff.wait() => {}
                () = &mut stop => return None,
            }
        }
    }

    /// Handles what settled, then starts waiting requests while there is
    /// room. The one handler of the loop and of the drain.
    async fn settle(&mut self, settled: Settled<Msg<R>, P::Error>) {
        match settled {
            Settled::Confirmed(sent, Ok(())) => self.confirmed(sent).await,
            Settled::Confirmed(sent, Err(error)) => {
                if let Some((again, attempt)) = self.failed(sent, &error) {
                    self.send(again, attempt).await;
                }
            }
            Settled::TaskEnded(Ok(Done::Answer(answer))) => {
                self.send(answer, Attempt::Answer).await;
            }
            Settled::TaskEnded(Ok(Done::Unsent(answer, error))) => {
                // The chunk's own span has its failure; the chunk is lost,
                // so the notice ends the answer.
                let sent = Unconfirmed {
                    answer,
                    attempt: Attempt::Alone,
                    publish: trace::Send::default(),
                };
                if let Some((notice, attempt)) = self.failed(sent, &error) {
                    self.send(notice, attempt).await;
                }
            }
            Settled::TaskEnded(Err(error)) => {
                tracing::error!(service = self.service.id(), %error, "a request task failed");
            }
            Settled::Returned(message) => self.nack(&message).await,
        }
    }

    /// A request from the broker: the host's admission, then started at
    /// once, or kept until a concurrency permit is free (`handed_over`
    /// requests always are: an earlier subscription had them), or refused.
    async fn arrived(&mut self, message: R::Message, handed_over: bool) {
        let bytes = R::payload(&message).len();
        let id = id_of::<R>(&message);
        if !answerable(id, self.limits) {
            // Even an error frame would carry the id, and not fit:
            // acknowledged unanswered, or it would come back.
            self.metrics.oversized();
            tracing::error!(
                service = self.service.id(),
                id_bytes = id.len(),
                "the request id is too long for any answer to fit the broker's maximum message size; dropping the request"
            );
            self.report.answered += 1;
            self.ack(&message).await;
            return;
        }
        let over_budget = if self.persistent {
            OverBudget::HeldBack
        } else {
            OverBudget::Refuse
        };
        let admitted = self.host.admit(
            &self.host.hosted_services()[self.hosted],
            bytes,
            over_budget,
        );
        let message = self.budget.hold(message, bytes);
        let mut admitted = match admitted {
            Ok(admitted) => admitted,
            Err(refusal) => return self.take(message, Err(refusal)).await,
        };
        if self.backlog.is_empty() {
            match admitted.try_start(&self.metrics) {
                Ok(call) => return self.take(message, Ok(call)).await,
                Err(waiting) => admitted = waiting,
            }
        }
        if handed_over || self.backlog.len() < self.window {
            if self.waiting.is_none() {
                self.waiting = Some(admitted.permit());
            }
            self.backlog.push_back((message, admitted));
            return;
        }
        drop(admitted);
        let hosted = &self.host.hosted_services()[self.hosted];
        let running = hosted.concurrency - hosted.permits.available_permits();
        let error = ToolError::with_type(
            ToolError::OVERLOADED,
            format!(
                "the service is at capacity ({running} requests running, {} waiting); try again later",
                self.backlog.len()
            ),
        );
        self.take(message, Err(error)).await;
    }

    /// The first waiting request has its permit: it starts, and the next
    /// one waits for its own.
    async fn start_waiting(&mut self, permit: Result<OwnedSemaphorePermit, AcquireError>) {
        self.waiting = None;
        let Some((message, admitted)) = self.backlog.pop_front() else {
            return;
        };
        if let Some((_, next)) = self.backlog.front() {
            self.waiting = Some(next.permit());
        }
        let call = match permit {
            Ok(permit) => Ok(admitted.started(permit, &self.metrics)),
            // The semaphore is never closed.
            Err(_) => Err(crate::host::shutting_down()),
        };
        self.take(message, call).await;
    }

    /// Takes on one admitted request (`Ok`, started), or answers it with
    /// its refusal at once.
    async fn take(&mut self, message: Msg<R>, call: Result<Call, ToolError>) {
        if self.log_payloads {
            log_payload(R::payload(&message));
        }
        let id = id_of::<R>(&message);
        let span = trace::pulsar_request(self.service, &self.topics, id, |key| {
            R::property(&message, key)
        });
        let call = match call {
            Ok(call) => call,
            Err(error) => {
                self.report.refused += 1;
                crate::host::refused(&self.metrics, &span, &error);
                let answer = Answer {
                    message,
                    frame: Frame::last(Err(error)),
                    call: None,
                    refusing: Some(self.host.refusing()),
                    span,
                };
                return self.send(answer, Attempt::Answer).await;
            }
        };
        match self.service.is_streaming() {
            true => {
                let responses = Arc::clone(&self.output);
                let task = stream::<R, P>(
                    self.service,
                    self.state.clone(),
                    self.limits,
                    responses,
                    Arc::clone(&self.topics),
                    Answer {
                        message,
                        frame: Frame::last(Ok(String::new())),
                        call: Some(call),
                        refusing: None,
                        span: span.clone(),
                    },
                );
                self.busy.spawn(span.instrument(task));
            }
            false => self.answer(message, call, span).await,
        }
    }

    /// Serves a request of a non-streaming service: polled here first while
    /// the service's first polls are short, and sent at once if it is ready;
    /// otherwise run as a task.
    async fn answer(&mut self, message: Msg<R>, call: Call, span: trace::RequestSpan) {
        let service = self.service;
        let limits = self.limits;
        if !self.gate.inline() {
            // Decoded and handled on the worker pool, the first poll timed
            // so that the gate opens again when the handler gets fast.
            let state = self.state.clone();
            let request_span = span.clone();
            let request = Box::pin(span.instrument(async move {
                let request = Request::decode(R::payload(&message));
                let reply = dispatch::dispatch_frame(
                    service,
                    &state,
                    id_of::<R>(&message),
                    request,
                    limits,
                    call.lease(),
                );
                let frame = reply.await;
                Done::Answer(Answer {
                    message,
                    frame,
                    call: Some(call),
                    refusing: None,
                    span: request_span,
                })
            }));
            self.busy.spawn(self.gate.measure(request));
            return;
        }
        // Decoded and first polled here, in the request's span; the future
        // is neither boxed nor spawned unless it is pending.
        let polled = {
            let _entered = span.enter();
            let state = &self.state;
            let (payload, id) = (R::payload(&message), id_of::<R>(&message));
            self.gate.poll_once(|| {
                let lease = call.lease();
                dispatch::dispatch_frame(
                    service,
                    state,
                    id,
                    Request::decode(payload),
                    limits,
                    lease,
                )
            })
        };
        let answer = |frame, span| Answer {
            message,
            frame,
            call: Some(call),
            refusing: None,
            span,
        };
        match polled {
            Ok(frame) => self.send(answer(frame, span), Attempt::Answer).await,
            Err(pending) => {
                let request_span = span.clone();
                self.busy.spawn(
                    span.instrument(
                        async move { Done::Answer(answer(pending.await, request_span)) },
                    ),
                );
            }
        }
    }

    async fn ack(&mut self, message: &R::Message) {
        if let Err(error) = self.requests.ack(message).await {
            tracing::warn!(service = self.service.id(), %error, "cannot acknowledge a request");
        }
    }

    async fn nack(&mut self, message: &R::Message) {
        if let Err(error) = self.requests.nack(message).await {
            tracing::warn!(service = self.service.id(), %error, "cannot negatively acknowledge a request");
        }
    }
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

/// The permit `waiting` waits for; pending while there is none.
async fn wait_for(waiting: &mut Option<Permit>) -> Result<OwnedSemaphorePermit, AcquireError> {
    match waiting {
        Some(permit) => permit.await,
        None => std::future::pending().await,
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

mod publish;
#[cfg(test)]
mod tests;
