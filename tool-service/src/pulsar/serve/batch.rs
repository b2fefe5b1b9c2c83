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
//!
//! With batching off, the same task sends each answer as a message of its
//! own, at once, without waiting for the receipts of those before it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::sync::Arc;

use pulsar::producer::{Message, Producer, SendFuture};
use pulsar::TokioExecutor;
use tokio::sync::{mpsc, oneshot, Notify};

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

/// What a producer does, for the publishing task: the Pulsar producer, or
/// a recorder in the tests.
pub(super) trait Batching: Send + 'static {
    /// The broker's receipt for one message.
    type Receipt: Future<Output = Result<(), Self::Error>> + Send + Unpin + 'static;
    /// Why a message could not be added, or the producer not closed.
    type Error: std::fmt::Display + Send + 'static;

    /// The error of an answer whose publishing task had ended.
    fn closed() -> Self::Error;

    /// Adds a message to the batch being built (without batching: sends
    /// it).
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
    type Receipt = ProducerReceipt;
    type Error = pulsar::Error;

    fn closed() -> pulsar::Error {
        pulsar::Error::Producer(pulsar::error::ProducerError::Closed)
    }

    async fn add(&mut self, message: Message) -> Result<ProducerReceipt, pulsar::Error> {
        self.send_non_blocking(message).await.map(ProducerReceipt)
    }

    async fn flush(&mut self) -> Result<(), pulsar::Error> {
        self.send_batch().await
    }

    async fn close(&mut self) -> Result<(), pulsar::Error> {
        Producer::close(self).await
    }
}

/// The broker's receipt for one message, as the producer hands it out.
pub(super) struct ProducerReceipt(SendFuture);

impl Future for ProducerReceipt {
    type Output = Result<(), pulsar::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|sent| sent.map(drop))
    }
}

/// The options of a producer that batches as [`Publisher`] asks (batches
/// sent when it says so, or at [`MAX_BATCH_MESSAGES`], never on a timer),
/// or that sends each message at once.
pub(super) fn producer_options(batching: bool) -> pulsar::producer::ProducerOptions {
    pulsar::producer::ProducerOptions {
        block_queue_if_full: true,
        batch_size: batching.then_some(MAX_BATCH_MESSAGES as u32),
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

/// The handle of a service's publishing task: shared by the worker and its
/// streaming calls, each queueing answers through `&self`.
pub(super) struct Publisher<B: Batching> {
    queue: mpsc::UnboundedSender<Outgoing<B>>,
    /// Tells the task to send what is queued and close the producer, even
    /// while a streaming call abandoned at the drain still holds this.
    closing: Arc<Notify>,
    task: std::sync::Mutex<Option<PublishingTask<B>>>,
}

/// The publishing task, until it is awaited at the close.
type PublishingTask<B> = tokio::task::JoinHandle<Result<(), <B as Batching>::Error>>;

impl<B: Batching> Publisher<B> {
    /// Starts the task that publishes through `producer`: in batches of at
    /// most `max_message_size` bytes with their envelope, counted in
    /// `metrics`, or (not `batching`) each answer alone and at once.
    pub(super) fn start(
        producer: B,
        max_message_size: usize,
        batching: bool,
        metrics: Arc<ServiceMetrics>,
    ) -> Self {
        let (queue, queued) = mpsc::unbounded_channel();
        let limit = max_message_size
            .saturating_sub(crate::wire::MESSAGE_OVERHEAD)
            .min(MAX_BATCH_BYTES);
        let closing = Arc::new(Notify::new());
        let task = tokio::spawn(publish(
            producer,
            queued,
            Arc::clone(&closing),
            batching.then_some(limit),
            metrics,
        ));
        Self {
            queue,
            closing,
            task: std::sync::Mutex::new(Some(task)),
        }
    }

    /// Queues `message` for the next batch (`alone`: in a batch of its
    /// own); its receipt comes once the batch is sent.
    pub(super) fn queue(&self, message: Message, alone: bool) -> Result<Receipt<B>, B::Error> {
        let (receipt, received) = oneshot::channel();
        let bytes = entry_size(&message);
        let outgoing = Outgoing {
            message,
            bytes,
            alone,
            receipt,
        };
        self.queue.send(outgoing).map_err(|_| B::closed())?;
        Ok(Receipt::Queued(received))
    }

    /// Sends what is queued, then closes the producer; answers queued after
    /// this are refused with [`Batching::closed`].
    pub(super) async fn close(&self) -> Result<(), B::Error> {
        self.closing.notify_one();
        let task = self
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match task {
            None => Ok(()),
            Some(task) => task.await.unwrap_or_else(|_| Err(B::closed())),
        }
    }
}

impl<B: Batching> Drop for Publisher<B> {
    fn drop(&mut self) {
        // Dropped without closing (the worker was aborted): the task sends
        // what it holds and ends.
        self.closing.notify_one();
    }
}

/// The receipt of one answer: first the task's word that the answer is in
/// a batch (or sent), then the broker's.
pub(super) enum Receipt<B: Batching> {
    Queued(oneshot::Receiver<Result<B::Receipt, B::Error>>),
    Sent(B::Receipt),
}

impl<B: Batching> Future for Receipt<B> {
    type Output = Result<(), B::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match &mut *self {
                Self::Queued(queued) => match std::task::ready!(Pin::new(queued).poll(cx)) {
                    Ok(Ok(receipt)) => *self = Self::Sent(receipt),
                    Ok(Err(error)) => return Poll::Ready(Err(error)),
                    // The task ended before it took the answer.
                    Err(_) => return Poll::Ready(Err(B::closed())),
                },
                Self::Sent(receipt) => return Pin::new(receipt).poll(cx),
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
/// the queue is empty or the batch full, each batch at most `limit` bytes;
/// with no `limit`, each answer is sent alone as it comes. At `closing`,
/// what is queued still goes, then the producer closes.
async fn publish<B: Batching>(
    mut producer: B,
    mut queued: mpsc::UnboundedReceiver<Outgoing<B>>,
    closing: Arc<Notify>,
    limit: Option<usize>,
    metrics: Arc<ServiceMetrics>,
) -> Result<(), B::Error> {
    let mut building = Building::default();
    let metrics = &*metrics;
    let closing = closing.notified();
    tokio::pin!(closing);
    let mut open = true;
    loop {
        let first = tokio::select! {
            biased;
            first = queued.recv() => first,
            () = &mut closing, if open => {
                // What is queued still goes; nothing more is taken.
                open = false;
                queued.close();
                continue;
            }
        };
        let Some(first) = first else { break };
        let Some(limit) = limit else {
            let added = producer.add(first.message).await;
            let _ = first.receipt.send(added);
            continue;
        };
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

        fn closed() -> String {
            String::from("closed")
        }

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
        let publisher = Publisher::start(recorder.clone(), 1 << 20, true, all.service("b-service"));
        let receipts: Vec<_> = ["a", "b", "c"]
            .iter()
            .map(|id| publisher.queue(message(id, 10), false).unwrap())
            .collect();
        for receipt in receipts {
            receipt.await.unwrap();
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
        let publisher = Publisher::start(recorder.clone(), 1 << 20, true, metrics());
        let first = publisher.queue(message("a", 10), false).unwrap();
        settle().await;
        // Sent at once, with no other answer to wait for; its receipt is
        // still on its way.
        assert_eq!(*recorder.calls.lock().unwrap(), [add("a"), Call::Flush]);
        let later: Vec<_> = ["b", "c"]
            .iter()
            .map(|id| publisher.queue(message(id, 10), false).unwrap())
            .collect();
        settle().await;
        assert_eq!(recorder.calls.lock().unwrap().len(), 2);
        recorder.hold.add_permits(1000);
        first.await.unwrap();
        for receipt in later {
            receipt.await.unwrap();
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
        let publisher = Publisher::start(recorder.clone(), limit, true, metrics());
        for (id, bytes) in [
            ("a", 1000),
            ("b", 1000),
            ("c", 1000),
            ("big", 5000),
            ("d", 10),
            ("alone", 10),
            ("e", 10),
        ] {
            drop(publisher.queue(message(id, bytes), id == "alone").unwrap());
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
        let publisher = Publisher::start(recorder.clone(), usize::MAX, true, metrics());
        for n in 0..=MAX_BATCH_MESSAGES {
            drop(publisher.queue(message(&n.to_string(), 1), false).unwrap());
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
    async fn without_batching_each_answer_goes_alone_at_once() {
        let recorder = Recorder::default();
        let publisher = Publisher::start(recorder.clone(), 1 << 20, false, metrics());
        let receipts: Vec<_> = ["a", "b", "c"]
            .iter()
            .map(|id| publisher.queue(message(id, 10), false).unwrap())
            .collect();
        for receipt in receipts {
            receipt.await.unwrap();
        }
        // No batch was ever sent (its flush would wait on `hold`).
        publisher.close().await.unwrap();
        assert_eq!(
            *recorder.calls.lock().unwrap(),
            [add("a"), add("b"), add("c"), Call::Close]
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn close_sends_what_is_queued_while_another_holder_remains() {
        let recorder = Recorder::default();
        recorder.hold.add_permits(1000);
        let publisher = Arc::new(Publisher::start(recorder.clone(), 1 << 20, true, metrics()));
        // A streaming call that was abandoned still holds the publisher.
        let abandoned = Arc::clone(&publisher);
        let queued = publisher.queue(message("a", 10), false).unwrap();
        publisher.close().await.unwrap();
        queued.await.unwrap();
        assert_eq!(
            *recorder.calls.lock().unwrap(),
            [add("a"), Call::Flush, Call::Close]
        );
        assert_eq!(
            abandoned.queue(message("late", 1), false).err().as_deref(),
            Some("closed")
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn after_close_an_answer_is_refused_with_closed() {
        let recorder = Recorder::default();
        let publisher = Publisher::start(recorder, 1 << 20, true, metrics());
        publisher.close().await.unwrap();
        assert!(publisher.queue(message("a", 1), false).is_err());
    }
}
