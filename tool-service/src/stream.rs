//! Streaming responses: a handler sends chunks before its final result.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

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
    sender: Sender,
}

/// Where the chunks go.
#[derive(Debug)]
enum Sender {
    /// To the response, through the dispatcher.
    Response(mpsc::Sender<String>),
    /// Into a list, for a unit test.
    Collect(Arc<Mutex<Vec<String>>>),
    /// Nowhere: every send fails.
    Disconnected,
}

/// How many chunks may wait to be sent before [`Chunks::send`] waits.
pub(crate) const CHUNK_BUFFER: usize = 32;

impl Chunks {
    /// A connected pair: the handler's end and the dispatcher's end.
    pub(crate) fn channel() -> (Self, mpsc::Receiver<String>) {
        let (sender, receiver) = mpsc::channel(CHUNK_BUFFER);
        (
            Self {
                sender: Sender::Response(sender),
            },
            receiver,
        )
    }

    /// An end that is not connected to any response: every send fails.
    pub fn disconnected() -> Self {
        Self {
            sender: Sender::Disconnected,
        }
    }

    /// An end that keeps every chunk, for a unit test of a streaming
    /// handler called directly.
    ///
    /// ```
    /// use tool_service::{tool_service, Chunks, StreamClosed};
    ///
    /// /// Count to three.
    /// #[tool_service(topic = "collect-count")]
    /// async fn count(#[stream] out: Chunks) -> Result<(), StreamClosed> {
    ///     for n in 1..=3 {
    ///         out.send(n.to_string()).await?;
    ///     }
    ///     Ok(())
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let (out, chunks) = Chunks::collect();
    /// count(out).await.unwrap();
    /// assert_eq!(chunks.take(), ["1", "2", "3"]);
    /// # }
    /// ```
    pub fn collect() -> (Self, Collected) {
        let chunks = Arc::new(Mutex::new(Vec::new()));
        (
            Self {
                sender: Sender::Collect(Arc::clone(&chunks)),
            },
            Collected(chunks),
        )
    }

    /// Sends one chunk of the response. Waits while earlier chunks are still
    /// being delivered.
    ///
    /// # Errors
    /// [`StreamClosed`] when the response can no longer be delivered.
    pub async fn send(&self, chunk: impl Into<String>) -> Result<(), StreamClosed> {
        match &self.sender {
            Sender::Response(sender) => sender.send(chunk.into()).await.map_err(|_| StreamClosed),
            local => local.keep(chunk.into()),
        }
    }

    /// [`send`](Self::send) for a blocking handler (a plain `fn`, run on
    /// the blocking pool): sends one chunk, blocking the thread while
    /// earlier chunks are still being delivered.
    ///
    /// ```
    /// use tool_service::{tool_service, Chunks, StreamClosed};
    ///
    /// /// Read the lines of a log, one chunk each.
    /// #[tool_service(topic = "read-log")]
    /// fn read_log(#[stream] out: Chunks) -> Result<(), StreamClosed> {
    ///     for line in ["started", "ready"] {
    ///         out.send_blocking(line)?;
    ///     }
    ///     Ok(())
    /// }
    /// ```
    ///
    /// # Errors
    /// [`StreamClosed`] when the response can no longer be delivered.
    ///
    /// # Panics
    /// When called from async code (tokio's `blocking_send` panics inside
    /// a runtime's worker): an `async fn` handler uses [`send`](Self::send).
    pub fn send_blocking(&self, chunk: impl Into<String>) -> Result<(), StreamClosed> {
        match &self.sender {
            Sender::Response(sender) => {
                sender.blocking_send(chunk.into()).map_err(|_| StreamClosed)
            }
            local => local.keep(chunk.into()),
        }
    }
}

impl Sender {
    /// A chunk for an end that is not a response's: kept for a test, or
    /// refused.
    fn keep(&self, chunk: String) -> Result<(), StreamClosed> {
        match self {
            Sender::Collect(chunks) => {
                chunks
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(chunk);
                Ok(())
            }
            Sender::Response(_) | Sender::Disconnected => Err(StreamClosed),
        }
    }
}

/// The chunks a [`Chunks::collect`] end was sent.
#[derive(Debug, Clone)]
pub struct Collected(Arc<Mutex<Vec<String>>>);

impl Collected {
    /// The chunks sent so far, in order; later sends are kept for the next
    /// call.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
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
