//! One request in, one or more frames out: decode → handler → encode.
//!
//! This is the path every request takes, from the broker and from the `call`
//! command alike.

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use crate::service::{HandlerFuture, Invocation, Lease, Service};
use crate::state::State;
use crate::stream::Chunks;
use crate::wire::{Frame, Request};
use crate::{context::Context, error::ToolError};

/// Where the frames of a response go.
///
/// ```
/// use tool_service::dispatch::FrameSink;
/// use tool_service::wire::Frame;
///
/// struct Print;
/// impl FrameSink for Print {
///     type Error = std::convert::Infallible;
///     async fn send(&mut self, id: &str, frame: Frame) -> Result<(), Self::Error> {
///         println!("{id}: {}", String::from_utf8_lossy(&frame.encode()));
///         Ok(())
///     }
/// }
/// ```
pub trait FrameSink {
    /// Why a frame could not be sent.
    type Error;

    /// Sends one frame for the request `id`.
    fn send(
        &mut self,
        id: &str,
        frame: Frame,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// Collects frames in memory.
impl FrameSink for Vec<Frame> {
    type Error = std::convert::Infallible;

    async fn send(&mut self, _id: &str, frame: Frame) -> Result<(), Self::Error> {
        self.push(frame);
        Ok(())
    }
}

/// Serves one request payload: decodes it, runs the service's handler and
/// sends its frame(s) to `sink` under `id`. Every outcome, including a
/// malformed payload and a panicking handler, ends in exactly one frame with
/// `end_of_stream: true`.
///
/// Returns whether the last frame was a success. [`dispatch_with`] does the
/// same within [`Limits`] (a deadline, a maximum message size) and with the
/// handlers' shared [`State`].
///
/// ```
/// use tool_service::{dispatch, tool_service, wire::Frame, Registry};
///
/// /// Shout the text.
/// ///
/// /// # Arguments
/// /// * `text` - What to shout.
/// #[tool_service(topic = "shout")]
/// async fn shout(text: String) -> String {
///     text.to_uppercase()
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let service = Registry::collect().unwrap().service("shout-service").unwrap();
/// let mut frames: Vec<Frame> = Vec::new();
/// let payload = br#"{"config": "{}", "arguments": "{\"text\": \"hi\"}"}"#;
/// let ok = dispatch::dispatch(service, "req-1", payload, &mut frames).await.unwrap();
/// assert!(ok);
/// assert_eq!(frames, [Frame::last(Ok("HI".into()))]);
///
/// let ok = dispatch::dispatch(service, "req-2", b"not json", &mut frames).await.unwrap();
/// assert!(!ok);
/// assert_eq!(frames[1].error.as_ref().unwrap().kind(), "invalid-request");
/// # }
/// ```
///
/// # Errors
/// Only the sink's errors; the request's own failures become error frames.
pub fn dispatch<'a, S: FrameSink + Send>(
    service: Service,
    id: &'a str,
    payload: &'a [u8],
    sink: &'a mut S,
) -> impl Future<Output = Result<bool, S::Error>> + Send + 'a {
    dispatch_request(
        service,
        State::empty(),
        id,
        Request::decode(payload),
        Limits::default(),
        Lease::none(),
        sink,
    )
}

/// Bounds on serving one request.
///
/// ```
/// use std::time::Duration;
/// use tool_service::dispatch::Limits;
///
/// let limits = Limits::default()
///     .with_timeout(Duration::from_secs(30))
///     .with_max_message_size(tool_service::wire::DEFAULT_MAX_MESSAGE_SIZE);
/// assert_eq!(limits.timeout, Some(Duration::from_secs(30)));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// How long the handler may run before it is cancelled and the request
    /// is answered with a `timeout` error (none: no limit). Needs a Tokio
    /// runtime with the time driver.
    pub timeout: Option<Duration>,
    /// The largest message the broker accepts, in bytes (none: no limit).
    /// A frame whose size as a Pulsar message (its JSON, its request id and
    /// the message's own overhead) is larger is replaced by a
    /// `response-too-large` error frame, which ends the response.
    pub max_message_size: Option<usize>,
}

impl Limits {
    /// These limits with a time limit.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// These limits with a maximum message size.
    pub fn with_max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = Some(bytes);
        self
    }
}

/// [`dispatch`] within [`Limits`], with the handlers' shared [`State`]: a
/// handler still running after the timeout is cancelled (dropped at its
/// next `.await`) and answered with a `timeout` error, and a frame too large
/// for the broker is replaced by a `response-too-large` error that ends the
/// response (a streaming handler is then cancelled). A timeout needs a
/// Tokio runtime with the time driver.
///
/// ```
/// use std::time::Duration;
/// use tool_service::dispatch::{self, Limits};
/// use tool_service::{tool_service, wire::Frame, Registry, State, ToolError};
///
/// /// Repeat a letter.
/// ///
/// /// # Arguments
/// /// * `times` - How often.
/// #[tool_service(topic = "repeat")]
/// async fn repeat(times: usize) -> String {
///     "a".repeat(times)
/// }
///
/// /// Wait forever.
/// #[tool_service(topic = "stuck")]
/// async fn stuck() {
///     std::future::pending::<()>().await
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let registry = Registry::collect().unwrap();
/// let limits = Limits::default()
///     .with_timeout(Duration::from_millis(20))
///     .with_max_message_size(64 * 1024);
/// let mut frames: Vec<Frame> = Vec::new();
///
/// let repeat = registry.service("repeat-service").unwrap();
/// let payload = br#"{"arguments": "{\"times\": 100000}"}"#;
/// let ok = dispatch::dispatch_with(repeat, &State::new(), "r1", payload, limits, &mut frames).await.unwrap();
/// assert!(!ok);
/// let error = frames[0].error.as_ref().unwrap();
/// assert_eq!(error.kind(), ToolError::RESPONSE_TOO_LARGE);
/// assert!(error.message().contains("65536 bytes"), "{}", error.message());
///
/// let stuck = registry.service("stuck-service").unwrap();
/// let ok = dispatch::dispatch_with(stuck, &State::new(), "r2", b"{}", limits, &mut frames).await.unwrap();
/// assert!(!ok);
/// assert_eq!(frames[1].error.as_ref().unwrap().kind(), ToolError::TIMEOUT);
/// # }
/// ```
///
/// # Errors
/// Only the sink's errors.
// Not an `async fn`: the payload is decoded here, and the future returned
// is `dispatch_request`'s own, so that a request's future does not carry a
// wrapper's copy of the arguments.
pub fn dispatch_with<'a, S: FrameSink + Send>(
    service: Service,
    state: &'a State,
    id: &'a str,
    payload: &'a [u8],
    limits: Limits,
    sink: &'a mut S,
) -> impl Future<Output = Result<bool, S::Error>> + Send + 'a {
    dispatch_request(
        service,
        state,
        id,
        Request::decode(payload),
        limits,
        Lease::none(),
        sink,
    )
}

/// The one request path: a request (or why it did not decode) in, its
/// frames out to `sink`. Every transport and [`Registry::call`] come here,
/// a host's transports with a [`Lease`] of the call's place for a blocking
/// handler to hold.
///
/// [`Registry::call`]: crate::Registry::call
pub(crate) async fn dispatch_request<S: FrameSink + Send>(
    service: Service,
    state: &State,
    id: &str,
    request: Result<Request, ToolError>,
    limits: Limits,
    lease: Lease,
    sink: &mut S,
) -> Result<bool, S::Error> {
    if service.is_streaming() {
        // Boxed, so the common non-streaming path keeps a small future.
        return Box::pin(dispatch_stream(
            service, state, id, request, limits, lease, sink,
        ))
        .await;
    }
    let frame = dispatch_frame(service, state, id, request, limits, lease).await;
    let ok = frame.error.is_none();
    sink.send(id, frame).await?;
    Ok(ok)
}

/// The one frame that answers a request of a non-streaming service: its
/// handler's outcome, or the error that replaces it (a malformed payload, a
/// panic, the timeout, a response too large for the broker).
///
/// The handler is called here; the future holds little besides the
/// handler's own (boxed) future, so it is cheap to move, to poll where it
/// was made, and to spawn.
pub(crate) fn dispatch_frame(
    service: Service,
    state: &State,
    id: &str,
    request: Result<Request, ToolError>,
    limits: Limits,
    lease: Lease,
) -> FrameFuture {
    debug_assert!(!service.is_streaming(), "{service:?} streams");
    let handler = match request {
        Ok(request) => Ok(call_in_time(
            service,
            state,
            id,
            request,
            limits.timeout,
            lease,
        )),
        Err(error) => Err(Some(error)),
    };
    FrameFuture {
        handler,
        id_len: id.len(),
        max_message_size: limits.max_message_size,
    }
}

/// The future of [`dispatch_frame`]. It borrows nothing, and is `Unpin`: it can be
/// polled where it was made and moved into a task if it is pending.
pub(crate) struct FrameFuture {
    /// The handler, or why there is none (taken once answered).
    handler: Result<Deadline, Option<ToolError>>,
    /// The length of the request's id, which the response message carries.
    id_len: usize,
    max_message_size: Option<usize>,
}

impl Future for FrameFuture {
    type Output = Frame;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Frame> {
        let this = &mut *self;
        let outcome = match &mut this.handler {
            Ok(handler) => std::task::ready!(Pin::new(handler).poll(cx)),
            Err(error) => Err(error
                .take()
                .expect("`FrameFuture` polled after it was ready")),
        };
        let limits = Limits {
            timeout: None,
            max_message_size: this.max_message_size,
        };
        Poll::Ready(last_frame(outcome, this.id_len, limits))
    }
}

/// The last frame of a response with this outcome, held to the broker's
/// maximum message size.
fn last_frame(outcome: Result<String, ToolError>, id_len: usize, limits: Limits) -> Frame {
    let frame = Frame::last(outcome);
    match limits.max_message_size {
        Some(max) => fit(frame, id_len, max),
        None => frame,
    }
}

/// What a handler receives for `request`.
fn invocation(
    service: Service,
    state: &State,
    id: &str,
    mut request: Request,
    chunks: Chunks,
    lease: Lease,
) -> Invocation {
    // The user moves to the context; the request keeps the JSON texts. A
    // handler that does not take the context gets one without the id, so
    // that the id is not copied for nothing.
    let request_id = if service.takes_context() { id } else { "" };
    let context = Context::new(request_id, request.user.take(), service.id())
        .with_granted(crate::context::granted());
    Invocation {
        request,
        context,
        chunks,
        state: state_for(service, state),
        lease,
    }
}

/// The handler of a non-streaming service called on `request`, under the
/// time limit.
fn call_in_time(
    service: Service,
    state: &State,
    id: &str,
    request: Request,
    timeout: Option<Duration>,
    lease: Lease,
) -> Deadline {
    let invocation = invocation(service, state, id, request, Chunks::disconnected(), lease);
    Deadline::new(CatchPanic(call_handler(service, invocation)), timeout)
}

/// Serves a request of a streaming service: each chunk as a frame as it
/// comes, then the last frame (only an error frame for a request that did
/// not decode).
async fn dispatch_stream<S: FrameSink + Send>(
    service: Service,
    state: &State,
    id: &str,
    request: Result<Request, ToolError>,
    limits: Limits,
    lease: Lease,
    sink: &mut S,
) -> Result<bool, S::Error> {
    let mut sink = Bounded::new(sink, limits.max_message_size);
    let outcome = match request {
        Ok(request) => {
            stream_chunks(
                service,
                state,
                id,
                request,
                limits.timeout,
                lease,
                &mut sink,
            )
            .await?
        }
        Err(error) => Err(error),
    };
    if sink.ended.is_some() {
        // A chunk too large for the broker already ended the response.
        return Ok(false);
    }
    let ok = outcome.is_ok();
    sink.send(id, Frame::last(outcome)).await?;
    Ok(ok && sink.ended == Some(Ok(())))
}

/// Runs a streaming handler, sending each chunk as a frame as it comes;
/// returns the handler's outcome once every chunk it sent is out. A chunk too
/// large for the broker ends the response, and the handler is dropped.
async fn stream_chunks<S: FrameSink + Send>(
    service: Service,
    state: &State,
    id: &str,
    request: Request,
    timeout: Option<Duration>,
    lease: Lease,
    sink: &mut Bounded<'_, S>,
) -> Result<Result<String, ToolError>, S::Error> {
    let (chunks, mut receiver) = Chunks::channel();
    let invocation = invocation(service, state, id, request, chunks, lease);
    let mut handler = CatchPanic(call_handler(service, invocation));
    let expired = async {
        match timeout {
            Some(limit) => {
                tokio::time::sleep(limit).await;
                limit
            }
            None => std::future::pending().await,
        }
    };
    tokio::pin!(expired);
    loop {
        tokio::select! {
            biased;
            Some(chunk) = receiver.recv() => {
                sink.send(id, Frame::chunk(chunk)).await?;
                if sink.ended.is_some() {
                    return Ok(Ok(String::new()));
                }
            }
            limit = &mut expired => {
                // Chunks already sent stay sent; the stream ends with the error.
                return Ok(Err(timeout_error(limit)));
            }
            outcome = &mut handler => {
                receiver.close();
                while let Ok(chunk) = receiver.try_recv() {
                    sink.send(id, Frame::chunk(chunk)).await?;
                    if sink.ended.is_some() {
                        return Ok(Ok(String::new()));
                    }
                }
                return Ok(outcome);
            }
        }
    }
}

/// A sink that holds every frame to the broker's maximum message size: a
/// frame that would not fit is replaced by a `response-too-large` error
/// frame, which ends the response.
struct Bounded<'a, S> {
    sink: &'a mut S,
    max_message_size: Option<usize>,
    /// Set once a last frame was sent: whether it was a success.
    ended: Option<Result<(), ()>>,
}

impl<'a, S: FrameSink + Send> Bounded<'a, S> {
    fn new(sink: &'a mut S, max_message_size: Option<usize>) -> Self {
        Self {
            sink,
            max_message_size,
            ended: None,
        }
    }

    async fn send(&mut self, id: &str, frame: Frame) -> Result<(), S::Error> {
        let frame = match self.max_message_size {
            Some(max) => fit(frame, id.len(), max),
            None => frame,
        };
        if frame.end_of_stream {
            self.ended = Some(if frame.error.is_none() {
                Ok(())
            } else {
                Err(())
            });
        }
        self.sink.send(id, frame).await
    }
}

/// `frame`, or the `response-too-large` error frame that replaces it when
/// its message, under an id of `id_len` bytes, would exceed `max` bytes.
fn fit(frame: Frame, id_len: usize, max: usize) -> Frame {
    if frame.message_size_bound("") + id_len <= max {
        return frame;
    }
    let size = frame.message_size("") + id_len;
    if size <= max {
        return frame;
    }
    let what = if frame.end_of_stream {
        "the tool's response"
    } else {
        "a streamed chunk of the tool's response"
    };
    tracing::warn!(
        size,
        max,
        "response too large for the broker; answering with an error"
    );
    Frame::last(Err(ToolError::with_type(
        ToolError::RESPONSE_TOO_LARGE,
        format!(
            "{what} is {size} bytes as a Pulsar message, more than the broker's maximum message \
             size of {max} bytes; the tool must return less (page, truncate or summarise the \
             result), or the broker's maxMessageSize must be raised"
        ),
    )))
}

/// What one request of `service` gets: the shared values when its handler
/// takes any, else an empty state (no reference count touched).
fn state_for(service: Service, state: &State) -> State {
    if service.takes_state() {
        state.clone()
    } else {
        State::new()
    }
}

/// Calls the handler, turning a panic while creating its future into an error.
fn call_handler(service: Service, invocation: Invocation) -> HandlerFuture {
    let handler = service.handler();
    match catch_unwind(AssertUnwindSafe(move || handler(invocation))) {
        Ok(future) => future,
        Err(panic) => Box::pin(std::future::ready(Err(panic_error(&*panic)))),
    }
}

/// Polls a handler future, turning a panic into a `handler-panic` error.
struct CatchPanic(HandlerFuture);

impl Future for CatchPanic {
    type Output = Result<String, ToolError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        match catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(poll) => poll,
            Err(panic) => Poll::Ready(Err(panic_error(&*panic))),
        }
    }
}

/// A handler under an optional time limit: once the limit has passed since
/// its first poll, it is dropped and answered with a `timeout` error.
///
/// The timer is made only when the handler is still pending after its first
/// poll: a handler that is ready at once (most are) costs no timer, and the
/// request's future does not carry one inline.
struct Deadline {
    handler: CatchPanic,
    limit: Option<Duration>,
    /// When the handler was first polled (only with a limit).
    started: Option<tokio::time::Instant>,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Deadline {
    fn new(handler: CatchPanic, limit: Option<Duration>) -> Self {
        Self {
            handler,
            limit,
            started: None,
            timer: None,
        }
    }
}

impl Future for Deadline {
    type Output = Result<String, ToolError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let Some(limit) = this.limit else {
            return Pin::new(&mut this.handler).poll(cx);
        };
        let started = *this.started.get_or_insert_with(tokio::time::Instant::now);
        if let Poll::Ready(outcome) = Pin::new(&mut this.handler).poll(cx) {
            return Poll::Ready(outcome);
        }
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(started + limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(timeout_error(limit))),
            Poll::Pending => Poll::Pending,
        }
    }
}

fn panic_error(panic: &(dyn Any + Send)) -> ToolError {
    let detail = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str));
    let message = match detail {
        Some(detail) => format!("the tool handler panicked: {detail}"),
        None => String::from("the tool handler panicked"),
    };
    tracing::error!(
        panic = %crate::log_text::Untrusted::text(&message),
        "handler panicked"
    );
    ToolError::with_type(ToolError::HANDLER_PANIC, message)
}

fn timeout_error(limit: Duration) -> ToolError {
    ToolError::with_type(
        ToolError::TIMEOUT,
        format!(
            "the tool handler did not finish within {} and was cancelled",
            crate::duration::format(limit)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    /// Say which request this is, and for whom.
    #[crate::tool_service(topic = "dispatch-tests-whoami")]
    async fn whoami(#[context] ctx: &Context) -> String {
        format!(
            "{} for {}",
            ctx.request_id(),
            ctx.user().unwrap_or("nobody")
        )
    }

    #[tokio::test]
    async fn a_handler_that_takes_the_context_gets_the_request_id_and_user() {
        let registry = Registry::collect().unwrap();
        let service = registry.service("dispatch-tests-whoami-service").unwrap();
        assert!(service.takes_context());
        let payload = br#"{"user": "alice", "config": "{}", "arguments": "{}"}"#;
        let limits = Limits::default().with_timeout(Duration::from_secs(5));
        let mut frames: Vec<Frame> = Vec::new();
        for id in ["req-7", "8b6f1c1e-4a8e-4c4b-9a57-3f0e2f6a9d10"] {
            frames.clear();
            dispatch_with(service, State::empty(), id, payload, limits, &mut frames)
                .await
                .unwrap();
            assert_eq!(frames, [Frame::last(Ok(format!("{id} for alice")))]);
        }
        let frame = dispatch_frame(
            service,
            State::empty(),
            "req-9",
            Request::decode(payload),
            limits,
            Lease::none(),
        )
        .await;
        assert_eq!(frame, Frame::last(Ok("req-9 for alice".into())));
    }

    #[test]
    fn panic_messages_are_reported() {
        let error = panic_error(&"boom");
        assert_eq!(error.kind(), ToolError::HANDLER_PANIC);
        assert_eq!(error.message(), "the tool handler panicked: boom");
        let error = panic_error(&String::from("owned"));
        assert!(error.message().ends_with("owned"));
        let error = panic_error(&42u8);
        assert_eq!(error.message(), "the tool handler panicked");
    }
}

#[cfg(test)]
mod timeout_tests {
    use super::*;
    use crate::registry::Registry;

    /// Send one chunk, then hang.
    #[crate::tool_service(topic = "hang-after-a-chunk")]
    async fn hang_after_a_chunk(#[stream] out: Chunks) {
        out.send("first").await.unwrap();
        std::future::pending::<()>().await
    }

    /// Wait, then answer.
    ///
    /// # Arguments
    /// * `ms` - How long to wait, in milliseconds.
    #[crate::tool_service(topic = "timeout-tests-wait")]
    async fn wait(ms: u64) -> String {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        format!("waited {ms} ms")
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_handler_is_answered_within_its_timeout_and_cancelled_at_it() {
        let registry = Registry::collect().unwrap();
        let service = registry.service("timeout-tests-wait-service").unwrap();
        let limit = Limits::default().with_timeout(Duration::from_secs(2));
        let mut frames: Vec<Frame> = Vec::new();
        let started = tokio::time::Instant::now();
        let payload = br#"{"arguments": "{\"ms\": 1500}"}"#;
        assert!(
            dispatch_with(service, State::empty(), "r", payload, limit, &mut frames)
                .await
                .unwrap()
        );
        assert_eq!(frames, [Frame::last(Ok("waited 1500 ms".into()))]);
        assert_eq!(started.elapsed(), Duration::from_millis(1500));

        frames.clear();
        let started = tokio::time::Instant::now();
        let payload = br#"{"arguments": "{\"ms\": 60000}"}"#;
        assert!(
            !dispatch_with(service, State::empty(), "r", payload, limit, &mut frames)
                .await
                .unwrap()
        );
        assert_eq!(frames[0].error.as_ref().unwrap().kind(), ToolError::TIMEOUT);
        assert_eq!(started.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_past_its_timeout_ends_with_a_timeout_error() {
        let registry = Registry::collect().unwrap();
        let service = registry.service("hang-after-a-chunk-service").unwrap();
        let mut frames: Vec<Frame> = Vec::new();
        let payload = br#"{"config": "{}", "arguments": "{}"}"#;
        let limit = Limits::default().with_timeout(Duration::from_secs(2));
        let ok = dispatch_with(service, State::empty(), "r", payload, limit, &mut frames)
            .await
            .unwrap();
        assert!(!ok);
        assert_eq!(frames.len(), 2, "{frames:?}");
        assert_eq!(frames[0], Frame::chunk("first".into()));
        let error = frames[1].error.as_ref().unwrap();
        assert_eq!(error.kind(), ToolError::TIMEOUT);
        assert_eq!(
            error.message(),
            "the tool handler did not finish within 2s and was cancelled"
        );
        assert!(frames[1].end_of_stream);
    }
}

#[cfg(test)]
mod size_tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::registry::Registry;

    const MAX: usize = 16 * 1024;

    /// Return `size` bytes of text.
    ///
    /// # Arguments
    /// * `size` - How many bytes.
    #[crate::tool_service(topic = "size-tests-blob")]
    async fn blob(size: usize) -> String {
        "x".repeat(size)
    }

    static AFTER_BIG_CHUNK: AtomicBool = AtomicBool::new(false);

    /// Send a small chunk, a chunk of `size` bytes, then another small one.
    ///
    /// # Arguments
    /// * `size` - How many bytes the middle chunk has.
    #[crate::tool_service(topic = "size-tests-stream")]
    async fn stream_blob(size: usize, #[stream] out: Chunks) -> &'static str {
        out.send("first").await.unwrap();
        out.send("x".repeat(size)).await.unwrap();
        // Sending more may fail once the response has ended; the handler is
        // dropped before it gets here when it waits for room.
        let _ = out.send("third").await;
        AFTER_BIG_CHUNK.store(true, Ordering::SeqCst);
        "end"
    }

    async fn serve(service: &str, size: usize, max: Option<usize>) -> (bool, Vec<Frame>) {
        let registry = Registry::collect().unwrap();
        let service = registry.service(service).unwrap();
        let mut frames: Vec<Frame> = Vec::new();
        let payload = Request::new(serde_json::json!({}), serde_json::json!({ "size": size }));
        let limits = Limits {
            max_message_size: max,
            ..Limits::default()
        };
        let ok = dispatch_with(
            service,
            State::empty(),
            "req-1",
            &payload.encode(),
            limits,
            &mut frames,
        )
        .await
        .unwrap();
        (ok, frames)
    }

    fn assert_too_large(frame: &Frame, what: &str) {
        assert!(frame.end_of_stream);
        let error = frame.error.as_ref().expect("an error frame");
        assert_eq!(error.kind(), ToolError::RESPONSE_TOO_LARGE);
        assert!(error.message().starts_with(what), "{}", error.message());
        assert!(
            error
                .message()
                .contains(&format!("maximum message size of {MAX} bytes")),
            "{}",
            error.message()
        );
    }

    #[tokio::test]
    async fn a_response_that_fits_is_sent() {
        let (ok, frames) = serve("size-tests-blob-service", MAX - 2048, Some(MAX)).await;
        assert!(ok);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].response.len(), MAX - 2048);
        assert!(frames[0].message_size("req-1") <= MAX);
    }

    #[tokio::test]
    async fn a_response_too_large_is_replaced_by_one_error_frame() {
        let (ok, frames) = serve("size-tests-blob-service", MAX, Some(MAX)).await;
        assert!(!ok);
        assert_eq!(frames.len(), 1, "{frames:?}");
        assert_too_large(&frames[0], "the tool's response is ");
        let size = Frame::last(Ok("x".repeat(MAX))).message_size("req-1");
        assert!(frames[0]
            .error
            .as_ref()
            .unwrap()
            .message()
            .contains(&format!("is {size} bytes")));
    }

    #[tokio::test]
    async fn without_a_limit_any_size_is_sent() {
        let (ok, frames) = serve("size-tests-blob-service", 4 * MAX, None).await;
        assert!(ok);
        assert_eq!(frames[0].response.len(), 4 * MAX);
    }

    #[tokio::test]
    async fn escaping_counts_towards_the_size() {
        // Fits as raw text, not once each quote is escaped.
        let quotes = Frame::last(Ok("\"".repeat(MAX * 3 / 4)));
        assert!(quotes.response.len() < MAX && quotes.message_size("r") > MAX);
        let mut frames = Vec::new();
        let mut sink = Bounded::new(&mut frames, Some(MAX));
        sink.send("r", quotes).await.unwrap();
        assert_too_large(&frames[0], "the tool's response");
    }

    #[tokio::test]
    async fn a_chunk_too_large_ends_the_stream_with_the_error() {
        let (ok, frames) = serve("size-tests-stream-service", MAX, Some(MAX)).await;
        assert!(!ok);
        assert_eq!(frames.len(), 2, "{frames:?}");
        assert_eq!(frames[0], Frame::chunk("first".into()));
        assert_too_large(&frames[1], "a streamed chunk of the tool's response");
    }

    #[tokio::test]
    async fn a_stream_that_fits_is_sent_whole() {
        let (ok, frames) = serve("size-tests-stream-service", 100, Some(MAX)).await;
        assert!(ok);
        let texts: Vec<&str> = frames.iter().map(|frame| frame.response.as_str()).collect();
        assert_eq!(texts, ["first", &"x".repeat(100), "third", "end"]);
        assert!(AFTER_BIG_CHUNK.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn malformed_requests_are_answered_within_the_limit() {
        let registry = Registry::collect().unwrap();
        let service = registry.service("size-tests-blob-service").unwrap();
        let mut frames: Vec<Frame> = Vec::new();
        let limits = Limits::default().with_max_message_size(MAX);
        let ok = dispatch_with(
            service,
            State::empty(),
            "r",
            b"not json",
            limits,
            &mut frames,
        )
        .await
        .unwrap();
        assert!(!ok);
        assert_eq!(frames[0].error.as_ref().unwrap().kind(), "invalid-request");
    }
}

#[cfg(test)]
mod blocking_tests {
    use std::time::Instant;

    use super::*;
    use crate::registry::Registry;
    use crate::stream::StreamClosed;

    /// Sleep on the thread, then say so.
    ///
    /// # Arguments
    /// * `ms` - How long to sleep, in milliseconds.
    #[crate::tool_service(topic = "blocking-tests-sleep")]
    fn sleep(ms: u64, #[context] ctx: &Context) -> String {
        std::thread::sleep(Duration::from_millis(ms));
        format!("slept {ms} ms for {}", ctx.request_id())
    }

    /// Fail as asked.
    ///
    /// # Arguments
    /// * `how` - `panic`, `typed` or `plain`.
    #[crate::tool_service(topic = "blocking-tests-fail")]
    fn fail(how: String) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        match how.as_str() {
            "panic" => panic!("blocking boom"),
            "typed" => Err(ToolError::with_type("not-found", "no such note").into()),
            _ => Ok(u8::try_from(300_u32).map(|n| n.to_string())?),
        }
    }

    /// Stream lines from the thread.
    #[crate::tool_service(topic = "blocking-tests-lines")]
    fn lines(#[stream] out: Chunks) -> Result<&'static str, StreamClosed> {
        for line in ["one", "two"] {
            out.send_blocking(line)?;
        }
        Ok("end")
    }

    async fn call(topic: &str, arguments: &str) -> Vec<Frame> {
        let registry = Registry::collect().unwrap();
        let service = registry.service(&format!("{topic}-service")).unwrap();
        let payload = serde_json::json!({"config": "{}", "arguments": arguments}).to_string();
        let mut frames: Vec<Frame> = Vec::new();
        dispatch(service, "r-1", payload.as_bytes(), &mut frames)
            .await
            .unwrap();
        frames
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_plain_fn_runs_off_the_runtime_and_the_runtime_goes_on() {
        assert!(Registry::collect()
            .unwrap()
            .service("blocking-tests-sleep-service")
            .unwrap()
            .is_blocking());
        let started = Instant::now();
        let (frames, ticked) =
            tokio::join!(call("blocking-tests-sleep", r#"{"ms": 300}"#), async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                started.elapsed()
            });
        assert_eq!(frames, [Frame::last(Ok("slept 300 ms for r-1".into()))]);
        // On the one thread of this runtime, the timer fired while the
        // handler slept on its own.
        assert!(ticked < Duration::from_millis(250), "{ticked:?}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_plain_fn_fails_as_an_async_one_does() {
        let frames = call("blocking-tests-fail", r#"{"how": "panic"}"#).await;
        let error = frames[0].error.as_ref().unwrap();
        assert_eq!(error.kind(), ToolError::HANDLER_PANIC);
        assert_eq!(error.message(), "the tool handler panicked: blocking boom");

        let frames = call("blocking-tests-fail", r#"{"how": "typed"}"#).await;
        let error = frames[0].error.as_ref().unwrap();
        assert_eq!(
            (error.kind(), error.message()),
            ("not-found", "no such note")
        );

        let frames = call("blocking-tests-fail", r#"{"how": "plain"}"#).await;
        let error = frames[0].error.as_ref().unwrap();
        assert_eq!(error.kind(), ToolError::DEFAULT_TYPE);
        assert_eq!(
            error.message(),
            "out of range integral type conversion attempted"
        );

        let frames = call("blocking-tests-fail", r#"{"how": 3}"#).await;
        let error = frames[0].error.as_ref().unwrap();
        assert_eq!(
            error.kind(),
            ToolError::INVALID_ARGUMENTS,
            "decoded before the thread"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_plain_fn_streams_with_send_blocking() {
        let frames = call("blocking-tests-lines", "{}").await;
        let texts: Vec<(&str, bool)> = frames
            .iter()
            .map(|frame| (frame.response.as_str(), frame.end_of_stream))
            .collect();
        assert_eq!(texts, [("one", false), ("two", false), ("end", true)]);
    }
}
