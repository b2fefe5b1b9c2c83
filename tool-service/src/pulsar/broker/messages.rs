//! The messages of the request–response protocol on the client: a
//! subscription of one's own to a shared topic, producers, and the `id`
//! property that correlates a response with its request.

use pulsar::{Pulsar, TokioExecutor};

/// Subscribes to `topic` on a subscription of its own (Exclusive,
/// non-durable, from the latest message): it sees every message published
/// from now on, whoever else reads the topic. This is how a caller reads a
/// response topic that many callers share.
///
/// ```no_run
/// # async fn demo() -> Result<(), tool_service::pulsar::broker::pulsar::Error> {
/// use tool_service::pulsar::broker::{subscribe_own, BrokerOptions};
///
/// let pulsar = BrokerOptions::new("pulsar://127.0.0.1:6650").connect().await?;
/// let responses = subscribe_own(&pulsar, "non-persistent://tg/response/joke").await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// The client's error when the topic cannot be subscribed.
pub async fn subscribe_own(
    pulsar: &Pulsar<TokioExecutor>,
    topic: &str,
) -> Result<pulsar::Consumer<Vec<u8>, TokioExecutor>, pulsar::Error> {
    pulsar
        .consumer()
        .with_topic(topic)
        .with_subscription(format!("tool-client-{}", uuid::Uuid::new_v4()))
        .with_subscription_type(pulsar::SubType::Exclusive)
        .with_options(
            pulsar::consumer::ConsumerOptions::default()
                .durable(false)
                .with_initial_position(pulsar::consumer::InitialPosition::Latest),
        )
        .build()
        .await
}

/// A producer that waits for room instead of failing with `SlowDown` when
/// its queue is full.
pub(crate) async fn producer(
    pulsar: &Pulsar<TokioExecutor>,
    topic: &str,
) -> Result<pulsar::Producer<TokioExecutor>, pulsar::Error> {
    pulsar
        .producer()
        .with_topic(topic)
        .with_options(pulsar::producer::ProducerOptions {
            block_queue_if_full: true,
            ..pulsar::producer::ProducerOptions::default()
        })
        .build()
        .await
}

/// Publishes `payload` with the `id` property and the trace context
/// `trace`, and waits until the broker has it.
pub(crate) async fn publish(
    producer: &tokio::sync::Mutex<pulsar::Producer<TokioExecutor>>,
    id: &str,
    payload: Vec<u8>,
    trace: crate::trace::Headers,
) -> Result<(), pulsar::Error> {
    let receipt = producer
        .lock()
        .await
        .send_non_blocking(response(id, payload, trace))
        .await?;
    receipt.await?;
    Ok(())
}

/// A message of the protocol: `payload` with the `id` property and the
/// trace context `trace`.
pub(crate) fn response(
    id: &str,
    payload: Vec<u8>,
    trace: crate::trace::Headers,
) -> pulsar::producer::Message {
    let mut properties =
        std::collections::HashMap::from([(crate::wire::ID_PROPERTY.to_owned(), id.to_owned())]);
    trace.for_each(|key, value| {
        properties.insert(key.to_owned(), value);
    });
    pulsar::producer::Message {
        payload,
        properties,
        ..pulsar::producer::Message::default()
    }
}

/// The `id` property of a received message: how TrustGraph correlates a
/// response (or a config reply) with its request.
///
/// ```no_run
/// # async fn demo() -> Result<(), tool_service::pulsar::broker::pulsar::Error> {
/// use futures_util::StreamExt;
/// use tool_service::pulsar::broker::{message_id, subscribe_own, BrokerOptions};
///
/// let pulsar = BrokerOptions::new("pulsar://127.0.0.1:6650").connect().await?;
/// let mut responses = subscribe_own(&pulsar, "non-persistent://tg/response/joke").await?;
/// if let Some(Ok(message)) = responses.next().await {
///     println!("a response to {:?}", message_id(&message));
/// }
/// # Ok(()) }
/// ```
pub fn message_id<T>(message: &pulsar::consumer::Message<T>) -> Option<&str> {
    property(message, crate::wire::ID_PROPERTY)
}

/// The property `key` of a received message.
pub(crate) fn property<'a, T>(
    message: &'a pulsar::consumer::Message<T>,
    key: &str,
) -> Option<&'a str> {
    message
        .metadata()
        .properties
        .iter()
        .find(|property| property.key == key)
        .map(|property| property.value.as_str())
}
