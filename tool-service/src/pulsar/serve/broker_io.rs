//! What a worker needs from the broker: where its requests come from
//! ([`Requests`]) and where its responses go ([`Responses`]); and the two
//! over Apache Pulsar. The worker is generic over both, so its rules are
//! tested with an in-memory pair (`worker/tests.rs`), and the Pulsar pair
//! costs no indirection on the hot path.

use std::future::Future;

use futures_util::StreamExt;
use pulsar::consumer::{ConsumerOptions, InitialPosition};
use pulsar::producer::Producer;
use pulsar::{Consumer, Pulsar, SubType, TokioExecutor};

use super::batch::{Publisher, Receipt};
use crate::service::Service;
use crate::trace::Headers;

/// A service's request subscription.
pub(super) trait Requests: Send + 'static {
    /// One request as received: acknowledged once answered.
    type Message: Send + 'static;
    /// Why receiving or acknowledging failed.
    type Error: std::fmt::Display + Send + 'static;

    /// What the request carries.
    fn payload(message: &Self::Message) -> &[u8];

    /// A property of the request: its `id`, its trace context.
    fn property<'a>(message: &'a Self::Message, key: &str) -> Option<&'a str>;

    /// The request's `id` property, if it has one.
    fn id(message: &Self::Message) -> Option<&str> {
        Self::property(message, crate::wire::ID_PROPERTY)
    }

    /// The next request; `None` when the stream ended. Cancel-safe.
    fn next(&mut self) -> impl Future<Output = Option<Result<Self::Message, Self::Error>>> + Send;

    /// Whether an error of [`Self::next`] means the subscription is gone
    /// (and must be made again), rather than that one message was skipped.
    fn is_lost(error: &Self::Error) -> bool;

    /// The request was answered: the broker may forget it.
    fn ack(
        &mut self,
        message: &Self::Message,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// The request was not answered: the broker may deliver it again.
    fn nack(
        &mut self,
        message: &Self::Message,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Subscribes again in place of a lost subscription: the requests the
    /// old one had received but not handed out yet.
    fn resubscribe(
        &mut self,
    ) -> impl Future<Output = Result<Vec<Self::Message>, Self::Error>> + Send;

    /// Leaves the subscription.
    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// A service's response publisher, shared by the worker and its streaming
/// calls.
pub(super) trait Responses: Send + Sync + 'static {
    /// Why a response could not be published.
    type Error: Send + 'static;
    /// Completes when the broker has the response (or refused it).
    type Receipt: Future<Output = Result<(), Self::Error>> + Send + Unpin + 'static;

    /// Queues one encoded frame for publishing under the request's `id`,
    /// with the trace context `trace`, in a batch with others unless
    /// `alone`; the receipt comes later.
    fn send(
        &self,
        id: &str,
        frame: Vec<u8>,
        trace: Headers,
        alone: bool,
    ) -> Result<Self::Receipt, Self::Error>;

    /// What went wrong, in words for the caller's error frame and the log.
    fn describe(error: &Self::Error) -> String;

    /// Whether the broker refused the batch the frame was in (rather than
    /// this frame alone): sent again alone, it may be taken.
    fn refused_batch(error: &Self::Error) -> bool;

    /// Sends what is queued and stops publishing.
    fn close(&self) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// A Shared consumer on a service's request topic, and what it takes to
/// subscribe again.
pub(super) struct PulsarRequests {
    pulsar: Pulsar<TokioExecutor>,
    service: Service,
    /// Flow permits of the consumer.
    permits: usize,
    consumer: Consumer<Vec<u8>, TokioExecutor>,
}

impl PulsarRequests {
    /// Subscribes to `service`'s request topic (subscription `{id}-request`,
    /// initial position Latest) with `permits` flow permits.
    pub(super) async fn subscribe(
        pulsar: &Pulsar<TokioExecutor>,
        service: Service,
        permits: usize,
    ) -> Result<Self, pulsar::Error> {
        Ok(Self {
            pulsar: pulsar.clone(),
            service,
            permits,
            consumer: consumer(pulsar, service, permits).await?,
        })
    }
}

impl Requests for PulsarRequests {
    /// Boxed: a request moves through the loop's select, the budget and
    /// the request's future, and the client's message is large; moving a
    /// pointer instead saved about 4,000 instructions a request (2.6%,
    /// `scripts/bench.sh served-instructions`).
    type Message = Box<pulsar::consumer::Message<Vec<u8>>>;
    type Error = pulsar::Error;

    fn payload(message: &Self::Message) -> &[u8] {
        &message.payload.data
    }

    fn property<'a>(message: &'a Self::Message, key: &str) -> Option<&'a str> {
        crate::pulsar::broker::property(message, key)
    }

    fn next(&mut self) -> impl Future<Output = Option<Result<Self::Message, Self::Error>>> + Send {
        futures_util::FutureExt::map(self.consumer.next(), |next| {
            next.map(|received| received.map(Box::new))
        })
    }

    fn is_lost(error: &Self::Error) -> bool {
        crate::pulsar::compat::errors::consumer_lost(error)
    }

    /// Sent on a non-persistent topic too, although the broker's
    /// subscription ignores it there (`NonPersistentSubscription::
    /// acknowledgeMessage` is empty in 4.2.4): on a Shared subscription the
    /// broker's consumer still records every delivered message as pending
    /// until it is acknowledged (`Consumer::sendMessages` adds it to its
    /// `PendingAcksMap`), so a consumer that never acknowledged would grow
    /// the broker's memory for as long as it stayed subscribed.
    async fn ack(&mut self, message: &Self::Message) -> Result<(), Self::Error> {
        self.consumer.ack(message).await.map_err(Into::into)
    }

    async fn nack(&mut self, message: &Self::Message) -> Result<(), Self::Error> {
        self.consumer.nack(message).await.map_err(Into::into)
    }

    /// The new consumer is subscribed before the old one is dropped, so a
    /// non-persistent topic loses nothing in between. On a persistent topic
    /// the broker may deliver once more what was not acknowledged yet.
    async fn resubscribe(&mut self) -> Result<Vec<Self::Message>, Self::Error> {
        let consumer = consumer(&self.pulsar, self.service, self.permits).await?;
        let mut old = std::mem::replace(&mut self.consumer, consumer);
        let mut handed_over = Vec::new();
        while let Some(Some(Ok(message))) = futures_util::FutureExt::now_or_never(old.next()) {
            handed_over.push(Box::new(message));
        }
        // Dropped, not closed: `close` goes through the consumer's engine,
        // which may be stuck delivering to a queue nobody reads any more.
        // Dropping the queue stops the engine, and the engine closes the
        // consumer on the broker as it goes.
        drop(old);
        Ok(handed_over)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.consumer.close().await
    }
}

/// The service's Shared consumer on its request topic.
async fn consumer(
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
        .with_options(
            ConsumerOptions::default()
                .with_initial_position(InitialPosition::Latest)
                // The client's queue holds as many as the broker may push.
                .with_receiver_queue_size(u32::try_from(permits).unwrap_or(u32::MAX)),
        )
        .build::<Vec<u8>>()
        .await
}

/// The publisher of a service's responses over Pulsar: its producer, in
/// batches (the default; see [`super::batch`]) or each answer alone.
pub(super) type PulsarResponses = Publisher<Producer<TokioExecutor>>;

impl Responses for PulsarResponses {
    type Error = pulsar::Error;
    type Receipt = Receipt<Producer<TokioExecutor>>;

    fn send(
        &self,
        id: &str,
        frame: Vec<u8>,
        trace: Headers,
        alone: bool,
    ) -> Result<Self::Receipt, Self::Error> {
        self.queue(crate::pulsar::broker::response(id, frame, trace), alone)
    }

    fn describe(error: &Self::Error) -> String {
        crate::pulsar::compat::errors::describe_send_error(error)
    }

    /// A batch's messages fail with the batch's error, wrapped: when that
    /// is the broker's refusal (not a lost connection), each may be sent
    /// again alone.
    fn refused_batch(error: &Self::Error) -> bool {
        match error {
            pulsar::Error::Producer(pulsar::error::ProducerError::Batch(cause)) => {
                crate::pulsar::compat::errors::is_refusal(cause)
            }
            _ => false,
        }
    }

    async fn close(&self) -> Result<(), Self::Error> {
        Publisher::close(self).await
    }
}
