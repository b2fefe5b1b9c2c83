//! Streaming responses: a handler sends chunks before its final result.

use std::fmt;

use tokio::sync::mpsc;

/// The sending end of a streaming response, given to a handler that asks for
/// it with `#[stream]`.
///
/// Every [`send`](Chunks::send) becomes a frame with `end_of_stream: false`;
/// the handler's return value becomes the last frame, with `end_of_stream:
/// true` (return `()` or an empty string to end without more text).
///
/// ```
/// use tool_service::{tool_service, Chunks, StreamClosed};
///
/// /// Count to three, one number per chunk.
/// #[tool_service(topic = "count")]
/// async fn count(#[stream] out: Chunks) -> Result<(), StreamClosed> {
///     for n in 1..=3 {
///         out.send(format!("{n} ")).await?;
///     }
///     Ok(())
/// }
/// ```
#[derive(Debug)]
pub struct Chunks {
    sender: Option<mpsc::Sender<String>>,
}

/// How many chunks may wait to be sent before [`Chunks::send`] waits.
pub(crate) const CHUNK_BUFFER: usize = 32;

impl Chunks {
    /// A connected pair: the handler's end and the dispatcher's end.
    pub(crate) fn channel() -> (Self, mpsc::Receiver<String>) {
        let (sender, receiver) = mpsc::channel(CHUNK_BUFFER);
        (
            Self {
                sender: Some(sender),
            },
            receiver,
        )
    }

    /// An end that is not connected to any response: every send fails. This is
    /// what a handler gets when called outside a service, e.g. in a unit test.
    pub fn disconnected() -> Self {
        Self { sender: None }
    }

    /// Sends one chunk of the response. Waits while earlier chunks are still
    /// being delivered.
    ///
    /// # Errors
    /// [`StreamClosed`] when the response can no longer be delivered.
    pub async fn send(&self, chunk: impl Into<String>) -> Result<(), StreamClosed> {
        match &self.sender {
            Some(sender) => sender.send(chunk.into()).await.map_err(|_| StreamClosed),
            None => Err(StreamClosed),
        }
    }
}

/// The response stream a handler writes to is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamClosed;

impl fmt::Display for StreamClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the response stream is closed")
    }
}

impl std::error::Error for StreamClosed {}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn chunks_arrive_in_order() {
        let (chunks, mut receiver) = Chunks::channel();
        chunks.send("a").await.unwrap();
        chunks.send(String::from("b")).await.unwrap();
        drop(chunks);
        assert_eq!(receiver.recv().await.as_deref(), Some("a"));
        assert_eq!(receiver.recv().await.as_deref(), Some("b"));
        assert_eq!(receiver.recv().await, None);
    }

    #[tokio::test]
    async fn sending_to_a_closed_stream_fails() {
        let (chunks, receiver) = Chunks::channel();
        drop(receiver);
        assert_eq!(chunks.send("x").await, Err(StreamClosed));
        assert_eq!(Chunks::disconnected().send("x").await, Err(StreamClosed));
    }
}
