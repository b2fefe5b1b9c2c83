//! Answers that are ready together go out together: a service's responses
//! as Pulsar batches.
//!
//! The worker hands each answer to a publishing task and goes on at once.
//! The task adds what it finds queued to one batch of the producer and sends
//! the batch as soon as its queue is empty: no timer decides when an answer
//! leaves. While a batch waits for the broker's receipt, the answers that
//! become ready meanwhile queue up, and go together in the next one. So one
//! request alone goes out alone, as soon as it is answered, and under load
//! many answers share one frame, one write and one receipt.
//!
//! A batch never holds more than [`MAX_BATCH_MESSAGES`] answers nor, with
//! their properties, more than [`MAX_BATCH_BYTES`] or what the broker
//! accepts in one message; an answer larger than that goes alone, so that a
//! broker that refuses it refuses it alone. Each answer keeps its own
//! receipt: a batch the broker refuses fails every answer in it, as one
//! refused answer fails today.
//!
//! Every Pulsar client unpacks a batch into its messages, each with its own
//! properties (its `id`, its trace context): TrustGraph's Python client, the
//! Java client and this crate's own.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::sync::Arc;

use pulsar::producer::{Message, Producer, SendFuture};
use pulsar::TokioExecutor;
use tokio::sync::{mpsc, oneshot};

use crate::metrics::ServiceMetrics;

/// At most this many answers in one batch (what Pulsar's Java client
/// batches by default).
pub(super) const MAX_BATCH_MESSAGES: usize = 1000;

/// At most this many bytes of answers in one batch, besides the broker's
/// own limit (what Pulsar's Java client batches by default).
pub(super) const MAX_BATCH_BYTES: usize = 128 * 1024;

/// Bytes an answer takes in a batch beyond its payload and its properties'
/// text: its metadata's framing and size, with room to spare.
const ENTRY_OVERHEAD: usize = 32;

/// What a batching producer does, for the publishing task: the Pulsar
/// producer, or a recorder in the tests.
pub(super) trait Batching: Send + 'static {
    /// The broker's receipt for one message of a batch.
    type Receipt: Future<Output = Result<(), Self::Error>> + Send + Unpin + 'static;
    /// Why a message could not be added, or the producer not closed.
    type Error: std::fmt::Display + Send + 'static;

    /// Adds a message to the batch being built.
    fn add(
        &mut self,
        message: Message,
    ) -> impl Future<Output = Result<Self::Receipt, Self::Error>> + Send;

    /// Sends the batch being built, and waits for the broker's receipt (or
    /// its refusal, which the receipts of the batch's messages report).
    fn flush(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Stops publishing.
    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

impl Batching for Producer<TokioExecutor> {
    type Receipt = Sent;
    type Error = pulsar::Error;

    async fn add(&mut self, message: Message) -> Result<Sent, pulsar::Error> {
        self.send_non_blocking(message).await.map(Sent)
    }

    async fn flush(&mut self) -> Result<(), pulsar::Error> {
        self.send_batch().await
    }

    async fn close(&mut self) -> Result<(), pulsar::Error> {
        Producer::close(self).await
    }
}

/// The broker's receipt for one message.
pub(super) struct Sent(pub(super) SendFuture);

impl Future for Sent {
    type Output = Result<(), pulsar::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|sent| sent.map(drop))
    }
}

/// The options of a producer that batches as [`Publisher`] asks: batches
/// are sent when it says so (or at [`MAX_BATCH_MESSAGES`]), never on a timer.
pub(super) fn producer_options() -> pulsar::producer::ProducerOptions {
    pulsar::producer::ProducerOptions {
        block_queue_if_full: true,
        batch_size: Some(MAX_BATCH_MESSAGES as u32),
        batch_byte_size: None,
        batch_timeout: None,
        ..pulsar::producer::ProducerOptions::default()
    }
}

/// An answer on its way to the publishing task.
struct Outgoing<B: Batching> {
    message: Message,
    /// Its size in a batch.
    bytes: usize,
    /// Sent in a batch of its own.
    alone: bool,
    receipt: oneshot::Sender<Result<B::Receipt, B::Error>>,
}

/// The handle of a service's publishing task.
pub(super) struct Publisher<B: Batching> {
    queue: Option<mpsc::UnboundedSender<Outgoing<B>>>,
    task: Option<tokio::task::JoinHandle<Result<(), B::Error>>>,
}

impl<B: Batching> Publisher<B> {
    /// Starts the task that publishes through `producer`, in batches of at
    /// most `max_message_size` bytes with their envelope, and counts them in
    /// `metrics`.
    pub(super) fn start(
        producer: B,
        max_message_size: usize,
        metrics: Arc<ServiceMetrics>,
    ) -> Self {
        let (queue, queued) = mpsc::unbounded_channel();
        let limit = max_message_size
            .saturating_sub(crate::wire::MESSAGE_OVERHEAD)
            .min(MAX_BATCH_BYTES);
        let task = tokio::spawn(publish(producer, queued, limit, metrics));
        Self {
            queue: Some(queue),
            task: Some(task),
        }
    }

    /// Queues `message` for the next batch (`alone`: in a batch of its
    /// own); its receipt comes once the batch is sent.
    pub(super) fn send(&self, message: Message, alone: bool) -> Result<Receipt<B>, Closed> {
        let (receipt, received) = oneshot::channel();
        let bytes = entry_size(&message);
        let outgoing = Outgoing {
            message,
            bytes,
            alone,
            receipt,
        };
        let queue = self.queue.as_ref().ok_or(Closed)?;
        queue.send(outgoing).map_err(|_| Closed)?;
        Ok(Receipt::Queued(received))
    }

    /// Sends what is queued, then closes the producer.
    pub(super) async fn close(&mut self) -> Result<(), Closed> {
        drop(self.queue.take());
        let Some(task) = self.task.take() else {
            return Ok(());
        };
        match task.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => {
                tracing::debug!(%error, "closing the response producer");
                Err(Closed)
            }
            Err(_) => Err(Closed),
        }
    }
}

impl<B: Batching> Drop for Publisher<B> {
    fn drop(&mut self) {
        // Dropped without closing (the worker was aborted): the task ends
        // with its queue, after sending what it holds.
        drop(self.queue.take());
    }
}

/// The publishing task is gone: the producer was closed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Closed;

/// The receipt of one answer: first the task's word that the answer is in
/// a batch, then the broker's for the batch.
pub(super) enum Receipt<B: Batching> {
    Queued(oneshot::Receiver<Result<B::Receipt, B::Error>>),
    Batched(B::Receipt),
}

/// What a receipt completes with.
pub(super) enum Receipted<E> {
    /// The broker has the answer.
    Done,
    /// The producer refused it or the broker did.
    Refused(E),
    /// The publishing task ended first.
    Closed,
}

impl<B: Batching> Future for Receipt<B> {
    type Output = Receipted<B::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match &mut *self {
                Self::Queued(queued) => match std::task::ready!(Pin::new(queued).poll(cx)) {
                    Ok(Ok(receipt)) => *self = Self::Batched(receipt),
                    Ok(Err(error)) => return Poll::Ready(Receipted::Refused(error)),
                    Err(_) => return Poll::Ready(Receipted::Closed),
                },
                Self::Batched(receipt) => {
                    return Poll::Ready(match std::task::ready!(Pin::new(receipt).poll(cx)) {
                        Ok(()) => Receipted::Done,
                        Err(error) => Receipted::Refused(error),
                    });
                }
            }
        }
    }
}

/// The bytes `message` takes in a batch: payload, properties, framing.
fn entry_size(message: &Message) -> usize {
    let properties: usize = message
        .properties
        .iter()
        .map(|(key, value)| key.len() + value.len() + 4)
        .sum();
    message.payload.len() + properties + ENTRY_OVERHEAD
}

/// The batch being built.
#[derive(Default)]
struct Building {
    messages: usize,
    bytes: usize,
}

impl Building {
    /// Whether an answer of `bytes` may join it (an empty batch takes any).
    fn takes(&self, bytes: usize, limit: usize) -> bool {
        self.messages == 0 || (self.messages < MAX_BATCH_MESSAGES && self.bytes + bytes <= limit)
    }
}

/// The publishing task: everything queued goes into one batch, sent when
/// the queue is empty or the batch full.
async fn publish<B: Batching>(
    mut producer: B,
    mut queued: mpsc::UnboundedReceiver<Outgoing<B>>,
    limit: usize,
    metrics: Arc<ServiceMetrics>,
) -> Result<(), B::Error> {
    let mut building = Building::default();
    let metrics = &*metrics;
    while let Some(first) = queued.recv().await {
        let mut next = Some(first);
        while let Some(outgoing) = next.take().or_else(|| queued.try_recv().ok()) {
            if outgoing.alone || !building.takes(outgoing.bytes, limit) {
                flush(&mut producer, &mut building, metrics).await;
            }
            let added = producer.add(outgoing.message).await;
            if added.is_ok() {
                building.messages += 1;
                building.bytes += outgoing.bytes;
            }
            // The worker may have stopped waiting.
            let _ = outgoing.receipt.send(added);
            let alone = outgoing.alone;
            if alone || building.bytes > limit {
                // An answer too large for any batch goes alone.
                flush(&mut producer, &mut building, metrics).await;
            }
        }
        flush(&mut producer, &mut building, metrics).await;
    }
    producer.close().await
}

/// Sends the batch being built, if it holds anything.
async fn flush<B: Batching>(producer: &mut B, building: &mut Building, metrics: &ServiceMetrics) {
    if building.messages == 0 {
        return;
    }
    metrics.batch_sent(building.messages);
    *building = Building::default();
    if let Err(error) = producer.flush().await {
        // The receipts of its messages say what became of them.
        tracing::debug!(%error, "cannot send a batch of responses");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// What the producer was asked, in order.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Call {
        Add(String),
        Flush,
        Close,
    }

    /// A producer that records its calls; each receipt is ready at once.
    #[derive(Clone)]
    struct Recorder {
        calls: Arc<Mutex<Vec<Call>>>,
        /// Flushes wait until this is released.
        hold: Arc<tokio::sync::Semaphore>,
    }

    impl Default for Recorder {
        fn default() -> Self {
            Self {
                calls: Arc::default(),
                hold: Arc::new(tokio::sync::Semaphore::new(0)),
            }
        }
    }

    impl Batching for Recorder {
        type Receipt = std::future::Ready<Result<(), String>>;
        type Error = String;

        async fn add(&mut self, message: Message) -> Result<Self::Receipt, String> {
            let id = message.properties["id"].clone();
            self.calls.lock().unwrap().push(Call::Add(id));
            Ok(std::future::ready(Ok(())))
        }

        async fn flush(&mut self) -> Result<(), String> {
            self.calls.lock().unwrap().push(Call::Flush);
            let _permit = self.hold.acquire().await.unwrap();
            Ok(())
        }

        async fn close(&mut self) -> Result<(), String> {
            self.calls.lock().unwrap().push(Call::Close);
            Ok(())
        }
    }

    fn message(id: &str, bytes: usize) -> Message {
        Message {
            payload: vec![b'x'; bytes],
            properties: [("id".to_owned(), id.to_owned())].into(),
            ..Message::default()
        }
    }

    fn metrics() -> Arc<ServiceMetrics> {
        crate::metrics::Metrics::new().service("batch-tests-service")
    }

    fn add(id: &str) -> Call {
        Call::Add(id.to_owned())
    }

    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn what_is_queued_together_goes_in_one_batch() {
        let recorder = Recorder::default();
        recorder.hold.add_permits(1000);
        let all = crate::metrics::Metrics::new();
        let mut publisher = Publisher::start(recorder.clone(), 1 << 20, all.service("b-service"));
        let receipts: Vec<_> = ["a", "b", "c"]
            .iter()
            .map(|id| publisher.send(message(id, 10), false).unwrap())
            .collect();
        for receipt in receipts {
            assert!(matches!(receipt.await, Receipted::Done));
        }
        publisher.close().await.unwrap();
        assert_eq!(
            *recorder.calls.lock().unwrap(),
            [add("a"), add("b"), add("c"), Call::Flush, Call::Close]
        );
        let text = all.render();
        assert!(
            text.contains("tg_tool_service_response_batches_total{processor=\"b-service\"} 1\n")
        );
        assert!(
            text.contains("tg_tool_service_batched_responses_total{processor=\"b-service\"} 3\n")
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_answer_alone_goes_at_once_and_those_ready_meanwhile_go_next() {
        let recorder = Recorder::default();
        let mut publisher = Publisher::start(recorder.clone(), 1 << 20, metrics());
        let first = publisher.send(message("a", 10), false).unwrap();
        settle().await;
        // Sent at once, with no other answer to wait for; its receipt is
        // still on its way.
        assert_eq!(*recorder.calls.lock().unwrap(), [add("a"), Call::Flush]);
        let later: Vec<_> = ["b", "c"]
            .iter()
            .map(|id| publisher.send(message(id, 10), false).unwrap())
            .collect();
        settle().await;
        assert_eq!(recorder.calls.lock().unwrap().len(), 2);
        recorder.hold.add_permits(1000);
        assert!(matches!(first.await, Receipted::Done));
        for receipt in later {
            assert!(matches!(receipt.await, Receipted::Done));
        }
        publisher.close().await.unwrap();
        assert_eq!(
            *recorder.calls.lock().unwrap(),
            [
                add("a"),
                Call::Flush,
                add("b"),
                add("c"),
                Call::Flush,
                Call::Close
            ]
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_batch_stays_within_the_broker_limit_and_a_large_answer_or_a_retry_goes_alone() {
        let recorder = Recorder::default();
        recorder.hold.add_permits(1000);
        let limit = 3000 + crate::wire::MESSAGE_OVERHEAD;
        let mut publisher = Publisher::start(recorder.clone(), limit, metrics());
        for (id, bytes) in [
            ("a", 1000),
            ("b", 1000),
            ("c", 1000),
            ("big", 5000),
            ("d", 10),
            ("alone", 10),
            ("e", 10),
        ] {
            drop(publisher.send(message(id, bytes), id == "alone").unwrap());
        }
        publisher.close().await.unwrap();
        assert_eq!(
            *recorder.calls.lock().unwrap(),
            [
                add("a"),
                add("b"),
                Call::Flush,
                add("c"),
                Call::Flush,
                add("big"),
                Call::Flush,
                add("d"),
                Call::Flush,
                add("alone"),
                Call::Flush,
                add("e"),
                Call::Flush,
                Call::Close
            ]
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_batch_holds_at_most_its_count() {
        let recorder = Recorder::default();
        recorder.hold.add_permits(1000);
        let mut publisher = Publisher::start(recorder.clone(), usize::MAX, metrics());
        for n in 0..=MAX_BATCH_MESSAGES {
            drop(publisher.send(message(&n.to_string(), 1), false).unwrap());
        }
        publisher.close().await.unwrap();
        let calls = recorder.calls.lock().unwrap();
        let flushes: Vec<usize> = calls
            .iter()
            .enumerate()
            .filter(|(_, call)| **call == Call::Flush)
            .map(|(at, _)| at)
            .collect();
        assert_eq!(flushes, [MAX_BATCH_MESSAGES, MAX_BATCH_MESSAGES + 2]);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn after_close_an_answer_is_refused_with_closed() {
        let recorder = Recorder::default();
        let mut publisher = Publisher::start(recorder, 1 << 20, metrics());
        publisher.close().await.unwrap();
        assert!(publisher.send(message("a", 1), false).is_err());
    }
}
