//! The limit: the same tools as a hand-written `pulsar` crate loop, no
//! framework. Consume a request, decode it with serde_json, produce the
//! response with the `id` property, ack once the broker has it. Sends are
//! pipelined (up to 1,000 awaiting the broker), as a careful hand-written
//! service would do. It connects with `BrokerOptions::connect` and holds
//! `broker::keep_nodelay()` so that, like every variant, its broker
//! connections have TCP_NODELAY.
//!
//!     raw --url pulsar://127.0.0.1:6650 --topic bench-echo --kind echo

use std::collections::HashMap;

use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;
use tool_service::pulsar::broker::pulsar::consumer::{ConsumerOptions, InitialPosition};
use tool_service::pulsar::broker::pulsar::{producer, Consumer, Pulsar, SubType, TokioExecutor};
use tool_service_bench::{arg, hand_written};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = arg("--url", "pulsar://127.0.0.1:6650");
    let topic = arg("--topic", "bench-echo");
    let kind = arg("--kind", "echo");
    // Connected like every variant (TCP_NODELAY on the broker connection);
    // everything after this line is hand-written.
    let pulsar: Pulsar<TokioExecutor> = tool_service::pulsar::broker::BrokerOptions::new(url)
        .connect()
        .await?;
    let mut consumer: Consumer<Vec<u8>, TokioExecutor> = pulsar
        .consumer()
        .with_topic(format!("non-persistent://tg/request/{topic}"))
        .with_subscription(format!("{topic}-service-request"))
        .with_subscription_type(SubType::Shared)
        .with_options(ConsumerOptions::default().with_initial_position(InitialPosition::Latest))
        .build()
        .await?;
    let mut producer = pulsar
        .producer()
        .with_topic(format!("non-persistent://tg/response/{topic}"))
        .with_options(producer::ProducerOptions {
            block_queue_if_full: true,
            ..Default::default()
        })
        .build()
        .await?;
    // The client may have opened connections of its own for the topic
    // lookups: TCP_NODELAY on those too, as every variant has.
    let _nodelay = tool_service::pulsar::broker::keep_nodelay();
    eprintln!("raw {kind} loop ready");
    let mut pending = FuturesUnordered::new();
    loop {
        tokio::select! {
            Some(done) = pending.next(), if !pending.is_empty() => {
                let (message, receipt): (tool_service::pulsar::broker::pulsar::consumer::Message<Vec<u8>>, _) = done;
                let _: Result<_, _> = receipt;
                consumer.ack(&message).await?;
            }
            next = consumer.next(), if pending.len() < 1000 => {
                let Some(message) = next else { break };
                let message = message?;
                let id = message
                    .metadata()
                    .properties
                    .iter()
                    .find(|p| p.key == "id")
                    .map_or_else(|| "unknown".to_owned(), |p| p.value.clone());
                let payload = hand_written(&kind, &message.payload.data);
                let receipt = producer
                    .send_non_blocking(producer::Message {
                        payload,
                        properties: HashMap::from([("id".to_owned(), id)]),
                        ..Default::default()
                    })
                    .await?;
                pending.push(async move { (message, receipt.await) });
            }
        }
    }
    Ok(())
}
