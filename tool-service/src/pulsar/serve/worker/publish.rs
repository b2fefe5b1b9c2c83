//! The worker's publishing half: answers out to the broker, receipts in,
//! and the one path of a frame that could not be published.

use std::sync::Arc;

use super::super::broker_io::{Requests, Responses};
use super::super::busy::{Answer, Attempt, Done, Unconfirmed, RETURN_DELAY};
use super::{id_of, Msg, Worker};
use crate::dispatch::{self, FrameSink};
use crate::error::ToolError;
use crate::host::Call;
use crate::log_text::Untrusted;
use crate::service::{Lease, Service};
use crate::state::State;
use crate::trace::{self, Topics};
use crate::wire::{Frame, Request};

impl<R: Requests, P: Responses> Worker<R, P> {
    /// Publishes an answer (or, as `attempt` says, the same alone, or the
    /// `send-failed` notice that replaced it) and keeps its receipt. A send
    /// that fails at once is handled as a failed receipt.
    pub(super) async fn send(&mut self, mut answer: Answer<Msg<R>>, mut attempt: Attempt) {
        loop {
            let publish = trace::Send::response(&answer.span, &self.topics);
            let frame = answer.frame.encode();
            let id = id_of::<R>(&answer.message);
            let alone = attempt != Attempt::Answer;
            match self.output.send(id, frame, publish.headers(), alone) {
                Ok(receipt) => {
                    let sent = Unconfirmed {
                        answer,
                        attempt,
                        publish,
                    };
                    return self.busy.await_receipt(sent, receipt);
                }
                Err(error) => match self.failed(
                    Unconfirmed {
                        answer,
                        attempt,
                        publish,
                    },
                    &error,
                ) {
                    Some(again) => (answer, attempt) = again,
                    None => return,
                },
            }
        }
    }

    /// The broker has an answer.
    pub(super) async fn confirmed(&mut self, sent: Unconfirmed<Msg<R>>) {
        let Unconfirmed {
            answer,
            attempt,
            publish,
        } = sent;
        let notice = attempt == Attempt::Notice;
        // The frame's span ends with its receipt; the request's after it.
        let sampled = publish.end();
        let Answer {
            message,
            frame,
            call,
            span,
            refusing: _refusing,
        } = answer;
        match (notice, call) {
            (false, Some(call)) => {
                if frame
                    .error
                    .as_ref()
                    .is_some_and(|error| error.kind() == ToolError::RESPONSE_TOO_LARGE)
                {
                    self.metrics.oversized();
                }
                call.finish(&span, frame.error.as_ref());
            }
            // The send-failed notice that replaced an answer or a refusal
            // (counted when it replaced it): its type on the span.
            (true, _) => {
                if let Some(error) = &frame.error {
                    trace::failed(&span, error.kind());
                }
            }
            // A refusal: counted and marked when it was refused.
            (false, None) => {}
        }
        if sampled {
            trace::finished(&span);
        }
        self.report.answered += 1;
        self.ack(&message).await;
    }

    /// The one path of a frame that could not be published. An answer whose
    /// batch the broker refused goes again, alone, so that one answer the
    /// broker cannot take does not fail the others. Otherwise it logs the
    /// failure and returns the `send-failed` error frame to end the
    /// response with, so that the caller is not left waiting (the request is
    /// then acknowledged: answered). When that notice is what failed, the
    /// broker is unreachable for now, and the request is returned to it
    /// after [`RETURN_DELAY`] (redelivered on a persistent topic).
    pub(super) fn failed(
        &mut self,
        sent: Unconfirmed<Msg<R>>,
        error: &P::Error,
    ) -> Option<(Answer<Msg<R>>, Attempt)> {
        let Unconfirmed {
            mut answer,
            attempt,
            publish,
        } = sent;
        if attempt == Attempt::Answer && P::refused_batch(error) {
            // This attempt failed; the retry's span says what became of
            // the frame.
            publish.failed(ToolError::SEND_FAILED);
            self.metrics.resent_alone();
            answer.span.in_scope(|| {
                tracing::debug!(
                    "the broker refused a batch of responses; sending this one again alone"
                )
            });
            return Some((answer, Attempt::Alone));
        }
        let cause = P::describe(error);
        publish.failed(ToolError::SEND_FAILED);
        if attempt == Attempt::Notice {
            answer.span.in_scope(|| tracing::warn!(cause = %Untrusted::text(&cause), delay = ?RETURN_DELAY, "cannot send the send-failed notice either; the request goes back to the broker after a pause"));
            self.busy.give_back(answer.message, answer.call);
            return None;
        }
        self.metrics.send_failed();
        let hint = operator_hint(&cause);
        answer.span.in_scope(|| {
            if hint.is_empty() {
                tracing::error!(cause = %Untrusted::text(&cause), "cannot send the response")
            } else {
                tracing::error!(cause = %Untrusted::text(&cause), hint, "cannot send the response")
            }
        });
        answer.frame = send_failed_notice(&cause);
        Some((answer, Attempt::Notice))
    }
}

/// Serves a streaming request: its chunks go out through the worker's
/// publisher as they come, each confirmed before the next; the frame that
/// ends the answer goes back to the loop in `answer`.
pub(super) async fn stream<R: Requests, P: Responses>(
    service: Service,
    state: State,
    limits: dispatch::Limits,
    responses: Arc<P>,
    topics: Arc<Topics>,
    mut answer: Answer<Msg<R>>,
) -> Done<Msg<R>, P::Error> {
    let mut sink = ChunkSink {
        responses: &*responses,
        request: &answer.span,
        topics: &topics,
        last: None,
    };
    let request = Request::decode(R::payload(&answer.message));
    let id = id_of::<R>(&answer.message);
    let lease = answer.call.as_ref().map_or_else(Lease::none, Call::lease);
    match dispatch::dispatch_request(service, &state, id, request, limits, lease, &mut sink).await {
        Ok(_) => {
            answer.frame = sink
                .last
                .expect("every response ends with a frame marked end_of_stream");
            Done::Answer(answer)
        }
        Err(error) => Done::Unsent(answer, error),
    }
}

/// Publishes a streaming answer's chunks and keeps its last frame.
struct ChunkSink<'a, P> {
    responses: &'a P,
    /// The request's span, and what its frames' spans are called.
    request: &'a trace::RequestSpan,
    topics: &'a Topics,
    last: Option<Frame>,
}

impl<P: Responses> FrameSink for ChunkSink<'_, P> {
    type Error = P::Error;

    async fn send(&mut self, id: &str, frame: Frame) -> Result<(), Self::Error> {
        if frame.end_of_stream {
            self.last = Some(frame);
            return Ok(());
        }
        let publish = trace::Send::response(self.request, self.topics);
        let (responses, context) = (self.responses, &publish);
        let send = |frame: Vec<u8>, alone: bool| {
            let headers = context.headers();
            async move { responses.send(id, frame, headers, alone)?.await }
        };
        let mut sent = send(frame.encode(), false).await;
        if let Err(error) = &sent {
            if P::refused_batch(error) {
                // As an answer: one chunk the broker cannot take does not
                // fail the others of its batch.
                sent = send(frame.encode(), true).await;
            }
        }
        if sent.is_err() {
            publish.failed(ToolError::SEND_FAILED);
        }
        sent
    }
}

/// The error frame that ends a response whose frame could not be
/// published, for the caller: what went wrong. What the operator may change
/// goes to the log ([`operator_hint`]).
fn send_failed_notice(cause: &str) -> Frame {
    Frame::last(Err(ToolError::with_type(
        ToolError::SEND_FAILED,
        format!("the tool's response could not be published: {cause}"),
    )))
}

/// What the operator may change when a response could not be published
/// for `cause`; empty when there is nothing to say.
fn operator_hint(cause: &str) -> &'static str {
    if cause.contains("maximum message size") {
        "if a topic policy sets a lower maxMessageSize than the broker, give serve that limit (ServeOptions::max_message_size, serve --max-message-size)"
    } else {
        ""
    }
}
