//! Calling any TrustGraph tool service over Pulsar, Rust or Python alike.
//!
//! A [`ToolClient`] publishes requests with a fresh `id` and reads the
//! response topic on a subscription of its own, matching responses to
//! callers by `id`; so many clients (and TrustGraph agents) can share one
//! response topic.

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use futures_util::StreamExt;
use pulsar::producer::Producer;
use pulsar::{Consumer, Pulsar, TokioExecutor};
use serde_json::Value;
use tokio::sync::{mpsc, Mutex};

use crate::descriptor::ToolServiceDescriptor;
use crate::error::ToolError;
use crate::wire::{Frame, Request};

/// The default time a call may take, end to end.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

type Pending = Arc<StdMutex<HashMap<String, mpsc::UnboundedSender<Frame>>>>;

/// A client of one tool service.
///
/// ```no_run
/// use serde_json::json;
/// use tool_service::pulsar::broker::BrokerOptions;
/// use tool_service::pulsar::client::ToolClient;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let pulsar = BrokerOptions::new("pulsar://127.0.0.1:6650").connect().await?;
/// let client = ToolClient::connect(
///     &pulsar,
///     "non-persistent://tg/request/joke",
///     "non-persistent://tg/response/joke",
/// )
/// .await?;
/// let joke = client.call(&json!({"style": "pun"}), &json!({"topic": "programming"})).await?;
/// println!("{joke}");
/// # Ok(()) }
/// ```
pub struct ToolClient {
    producer: Mutex<Producer<TokioExecutor>>,
    /// Where requests go: the name of their `send` spans.
    request_queue: String,
    pending: Pending,
    reader: tokio::task::JoinHandle<()>,
    timeout: Duration,
    user: Option<String>,
    /// Keeps TCP_NODELAY on reconnected broker connections while the client
    /// lives.
    _nodelay: crate::pulsar::compat::nodelay::Ticker,
}

impl std::fmt::Debug for ToolClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolClient")
            .field("timeout", &self.timeout)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The service answered with an error frame.
    #[error("the tool service answered with an error: {0}")]
    Tool(ToolError),
    /// No last frame arrived in time.
    #[error("no complete response within {0:?}")]
    Timeout(Duration),
    /// The broker connection failed.
    #[error("Pulsar: {0}")]
    Pulsar(Box<pulsar::Error>),
    /// The client's response reader stopped.
    #[error("the response reader stopped")]
    Closed,
}

impl From<pulsar::Error> for CallError {
    fn from(error: pulsar::Error) -> Self {
        CallError::Pulsar(Box::new(error))
    }
}

impl ToolClient {
    /// Subscribes to `response_queue` and prepares to publish on
    /// `request_queue`. Returns once the subscription exists, so no response
    /// can be missed.
    ///
    /// # Errors
    /// The client's error when the topics cannot be opened.
    pub async fn connect(
        pulsar: &Pulsar<TokioExecutor>,
        request_queue: &str,
        response_queue: &str,
    ) -> Result<Self, pulsar::Error> {
        let consumer = crate::pulsar::broker::subscribe_own(pulsar, response_queue).await?;
        let producer = crate::pulsar::broker::producer(pulsar, request_queue).await?;
        // Topic lookups may have opened connections of their own; the
        // ticker covers reconnections for as long as the client lives.
        crate::pulsar::compat::nodelay::apply();
        let nodelay = crate::pulsar::compat::nodelay::keep_applying();
        let pending: Pending = Arc::default();
        let reader = tokio::spawn(read_responses(consumer, Arc::clone(&pending)));
        Ok(Self {
            producer: Mutex::new(producer),
            request_queue: request_queue.to_owned(),
            pending,
            reader,
            timeout: DEFAULT_TIMEOUT,
            user: None,
            _nodelay: nodelay,
        })
    }

    /// A client of the service a `tool-service` descriptor describes.
    ///
    /// # Errors
    /// As [`ToolClient::connect`].
    pub async fn for_service(
        pulsar: &Pulsar<TokioExecutor>,
        descriptor: &ToolServiceDescriptor,
    ) -> Result<Self, pulsar::Error> {
        Self::connect(
            pulsar,
            &descriptor.request_queue,
            &descriptor.response_queue,
        )
        .await
    }

    /// Sets the time a call may take, end to end (default 60 s).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sends `user` with every request (the original spec's multi-tenancy
    /// field; TrustGraph 2.x sends none).
    #[must_use]
    pub fn with_user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }

    /// Calls the tool and returns its response text. For a streaming service
    /// this is all chunks joined, as TrustGraph's `call_streaming` returns.
    ///
    /// # Errors
    /// [`CallError::Tool`] for an error frame, else transport errors and
    /// timeouts.
    pub async fn call(&self, config: &Value, arguments: &Value) -> Result<String, CallError> {
        self.call_streaming(config, arguments, |_| {}).await
    }

    /// Calls the tool, handing each non-empty chunk to `on_chunk` as it
    /// arrives, and returns all chunks joined.
    ///
    /// # Errors
    /// As [`ToolClient::call`].
    pub async fn call_streaming(
        &self,
        config: &Value,
        arguments: &Value,
        mut on_chunk: impl FnMut(&str),
    ) -> Result<String, CallError> {
        let mut request = Request::new(config.clone(), arguments.clone());
        request.user.clone_from(&self.user);
        let mut text = String::new();
        for frame in self.send(&request).await? {
            if let Some(error) = frame.error {
                return Err(CallError::Tool(error));
            }
            if !frame.response.is_empty() {
                on_chunk(&frame.response);
                text.push_str(&frame.response);
            }
        }
        Ok(text)
    }

    /// Sends one request as given and returns every frame of its response,
    /// the last one with `end_of_stream`.
    ///
    /// # Errors
    /// Transport errors and timeouts; error frames are returned as frames.
    pub async fn send(&self, request: &Request) -> Result<Vec<Frame>, CallError> {
        self.send_payload(request.encode()).await
    }

    /// Sends a raw payload (any bytes) and returns the response frames.
    ///
    /// # Errors
    /// As [`ToolClient::send`].
    pub async fn send_payload(&self, payload: Vec<u8>) -> Result<Vec<Frame>, CallError> {
        let id = uuid::Uuid::new_v4().to_string();
        self.send_payload_as(payload, &id).await
    }

    /// [`Self::send_payload`] under the request id `id`, which must not be
    /// one of a call in progress on this client.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) async fn send_payload_as(
        &self,
        payload: Vec<u8>,
        id: &str,
    ) -> Result<Vec<Frame>, CallError> {
        let id = id.to_owned();
        let (sender, mut receiver) = mpsc::unbounded_channel();
        self.pending
            .lock()
            .map_err(|_| CallError::Closed)?
            .insert(id.clone(), sender);
        let _forget = Forget {
            pending: &self.pending,
            id: &id,
        };
        let exchange = async {
            // The request carries the context of its `send` span, a child
            // of the caller's current span: the service joins the trace.
            let publish = crate::trace::Send::request(&self.request_queue);
            let headers = publish.headers();
            let published =
                crate::pulsar::broker::publish(&self.producer, &id, payload, headers).await;
            if published.is_err() {
                publish.failed(crate::error::ToolError::SEND_FAILED);
            }
            let _sampled = publish.end();
            published?;
            let mut frames = Vec::new();
            while let Some(frame) = receiver.recv().await {
                let last = frame.end_of_stream;
                frames.push(frame);
                if last {
                    return Ok(frames);
                }
            }
            Err(CallError::Closed)
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| CallError::Timeout(self.timeout))?
    }
}

impl Drop for ToolClient {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Removes a call's entry however the call ends.
struct Forget<'a> {
    pending: &'a Pending,
    id: &'a str,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(self.id);
        }
    }
}

async fn read_responses(mut consumer: Consumer<Vec<u8>, TokioExecutor>, pending: Pending) {
    while let Some(next) = consumer.next().await {
        let message = match next {
            Ok(message) => message,
            Err(error) => {
                tracing::warn!(%error, "cannot receive a response; the client reconnects");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = consumer.ack(&message).await;
        let Some(id) = crate::pulsar::broker::message_id(&message) else {
            continue;
        };
        let Some(sender) = pending
            .lock()
            .ok()
            .and_then(|pending| pending.get(id).cloned())
        else {
            continue; // another client's response
        };
        match Frame::decode(&message.payload.data) {
            Ok(frame) => {
                let _ = sender.send(frame);
            }
            Err(error) => {
                let _ = sender.send(Frame::last(Err(ToolError::with_type(
                    "invalid-response",
                    format!("the service sent a response that is not a frame: {error}"),
                ))));
            }
        }
    }
}
