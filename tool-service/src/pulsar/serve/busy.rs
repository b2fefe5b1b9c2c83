//! What a worker has taken on and not settled yet: request tasks, answers
//! awaiting the broker's receipt, and requests on their way back.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;
use tokio::task::JoinSet;

use crate::wire::Frame;

/// How long a request whose response could not be sent at all waits before
/// it goes back to the broker, so that a response the broker keeps refusing
/// is not redelivered and refused again in a tight loop.
pub(super) const RETURN_DELAY: Duration = Duration::from_secs(1);

/// A request and the one frame that ends its answer.
pub(super) struct Answer<M> {
    /// The request; its `id` property is the answer's (read where it is
    /// needed rather than copied).
    pub(super) message: M,
    pub(super) frame: Frame,
    /// For a request that was handled (not refused): the host's call,
    /// which ends when the broker has the answer.
    pub(super) call: Option<crate::host::Call>,
    /// For a request that was refused: counted for the host's drain until
    /// the broker has the refusal.
    pub(super) refusing: Option<crate::host::Refusing>,
    pub(super) span: crate::trace::RequestSpan,
}

/// What a request's task ends with.
pub(super) enum Done<M, E> {
    /// The frame that ends the answer, for the loop to send.
    Answer(Answer<M>),
    /// A streaming request's chunk could not be published.
    Unsent(Answer<M>, E),
}

/// Which attempt at publishing an answer a frame is: what a refusal leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Attempt {
    /// The answer, perhaps in a batch with others: if the broker refuses
    /// the batch, the answer is sent again alone.
    Answer,
    /// The answer alone: if the broker refuses it, a `send-failed` notice
    /// takes its place.
    Alone,
    /// The `send-failed` notice that replaced the answer: if the broker
    /// refuses it too, the request goes back to the broker.
    Notice,
}

/// An answer the broker has not confirmed yet.
pub(super) struct Unconfirmed<M> {
    pub(super) answer: Answer<M>,
    /// Which attempt this is.
    pub(super) attempt: Attempt,
    /// The span of its publishing, until the receipt.
    pub(super) publish: crate::trace::Send,
}

/// An [`Unconfirmed`] answer and the broker's receipt for it.
struct Confirming<M, R> {
    sent: Option<Unconfirmed<M>>,
    receipt: R,
}

// Nothing in a receipt is pinned but the receipt future, which is `Unpin`.
impl<M, R: Unpin> Unpin for Confirming<M, R> {}

impl<M, R: Future<Output = Result<(), E>> + Unpin, E> Future for Confirming<M, R> {
    type Output = (Unconfirmed<M>, Result<(), E>);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let result = std::task::ready!(Pin::new(&mut this.receipt).poll(cx));
        let sent = this
            .sent
            .take()
            .expect("a receipt is polled until it is ready, not after");
        Poll::Ready((sent, result))
    }
}

/// A request on its way back to the broker after [`RETURN_DELAY`].
struct Returning<M> {
    message: Option<M>,
    /// Its call, whose concurrency permit it keeps until it has gone back.
    _call: Option<crate::host::Call>,
    delay: Pin<Box<tokio::time::Sleep>>,
}

// The message is never pinned; the delay is boxed.
impl<M> Unpin for Returning<M> {}

impl<M> Future for Returning<M> {
    type Output = M;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<M> {
        let this = &mut *self;
        std::task::ready!(this.delay.as_mut().poll(cx));
        Poll::Ready(
            this.message
                .take()
                .expect("a returning request is polled until it is ready, not after"),
        )
    }
}

/// What settles next among a worker's busy requests.
pub(super) enum Settled<M, E> {
    /// The broker has an answer (`Ok`), or it could not be published.
    Confirmed(Unconfirmed<M>, Result<(), E>),
    /// A request's task ended.
    TaskEnded(Result<Done<M, E>, tokio::task::JoinError>),
    /// A request's return delay is over.
    Returned(M),
}

/// The requests a worker has taken on: tasks running, answers awaiting the
/// broker's receipt, and requests waiting to go back to the broker. Together
/// they stay within the concurrency bound, so a broker that refuses every
/// response also slows the intake.
pub(super) struct Busy<M, E, R> {
    tasks: JoinSet<Done<M, E>>,
    receipts: FuturesUnordered<Confirming<M, R>>,
    returning: FuturesUnordered<Returning<M>>,
}

impl<M, E, R> Default for Busy<M, E, R> {
    fn default() -> Self {
        Self {
            tasks: JoinSet::new(),
            receipts: FuturesUnordered::new(),
            returning: FuturesUnordered::new(),
        }
    }
}

impl<M, E, R> Busy<M, E, R>
where
    M: Send + 'static,
    E: Send + 'static,
    R: Future<Output = Result<(), E>> + Unpin,
{
    pub(super) fn len(&self) -> usize {
        self.tasks.len() + self.receipts.len() + self.returning.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.receipts.is_empty() && self.returning.is_empty()
    }

    /// Runs a request as a task.
    pub(super) fn spawn(&mut self, task: impl Future<Output = Done<M, E>> + Send + 'static) {
        self.tasks.spawn(task);
    }

    /// Waits for the broker's receipt for `sent`.
    pub(super) fn await_receipt(&mut self, sent: Unconfirmed<M>, receipt: R) {
        self.receipts.push(Confirming {
            sent: Some(sent),
            receipt,
        });
    }

    /// Returns `message` to the broker after [`RETURN_DELAY`], holding its
    /// `call` (and so its concurrency permit) until then.
    pub(super) fn give_back(&mut self, message: M, call: Option<crate::host::Call>) {
        self.returning.push(Returning {
            message: Some(message),
            _call: call,
            delay: Box::pin(tokio::time::sleep(RETURN_DELAY)),
        });
    }

    /// The requests waiting to go back, at once (at shutdown).
    pub(super) fn take_returning(&mut self) -> Vec<M> {
        std::mem::take(&mut self.returning)
            .into_iter()
            .filter_map(|mut returning| returning.message.take())
            .collect()
    }

    /// Cancels the tasks still running.
    pub(super) fn abort(&mut self) {
        self.tasks.abort_all();
    }

    /// What settles next: receipts first, then tasks, then returns. Pending
    /// for ever while nothing is busy. Cancel-safe.
    pub(super) async fn settled(&mut self) -> Settled<M, E> {
        tokio::select! {
            biased;
            Some((sent, result)) = self.receipts.next(), if !self.receipts.is_empty() => Settled::Confirmed(sent, result),
            Some(ended) = self.tasks.join_next(), if !self.tasks.is_empty() => Settled::TaskEnded(ended),
            Some(message) = self.returning.next(), if !self.returning.is_empty() => Settled::Returned(message),
            else => std::future::pending().await,
        }
    }
}
