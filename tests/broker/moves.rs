//! Topics that move: Pulsar hands a topic to another broker (load
//! balancing, a broker restart, `pulsar-admin topics unload`) by closing its
//! consumers and producers, and the clients look the topic up again. Here
//! the broker's admin API unloads the request topic and then the response
//! topic of `durable-echo` (persistent) while a replica works through a
//! backlog, and again while requests are being published.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::json;
use tool_service::pulsar::broker::pulsar::{self, producer, TokioExecutor};
use tool_service::wire::Frame;

use crate::support;

/// Unloads a topic through the admin API.
fn unload(topic: &str) {
    let (status, body) = support::admin(
        "PUT",
        &format!("/admin/v2/persistent/tg/{topic}/durable-echo/unload"),
        "",
    );
    assert!(
        status.contains(" 204") || status.contains(" 200"),
        "unloading {topic}: {status} {body}"
    );
}

/// A durable subscription of the response topic: nothing published while
/// it is being moved is lost to the test.
pub(super) async fn responses(
    pulsar: &pulsar::Pulsar<TokioExecutor>,
) -> pulsar::Consumer<Vec<u8>, TokioExecutor> {
    pulsar
        .consumer()
        .with_topic("persistent://tg/response/durable-echo")
        .with_subscription(format!(
            "moves-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ))
        .with_subscription_type(pulsar::SubType::Exclusive)
        .build()
        .await
        .expect("subscribe to the response topic")
}

/// Publishes requests `from..to`, each with its id, the handler waiting
/// `delay_ms`; one whose send fails (the producer's topic moving too) is
/// sent again, so it may be on the topic twice: the ids sent again.
pub(super) async fn publish(
    pulsar: &pulsar::Pulsar<TokioExecutor>,
    from: usize,
    to: usize,
    delay_ms: u64,
    pause: Duration,
) -> Vec<String> {
    let mut producer = pulsar
        .producer()
        .with_topic("persistent://tg/request/durable-echo")
        .build()
        .await
        .expect("publish on the request topic");
    let mut retried = Vec::new();
    for n in from..to {
        let payload = serde_json::to_vec(&json!({
            "user": "moves",
            "config": "{}",
            "arguments": json!({"text": format!("request {n}"), "delay_ms": delay_ms}).to_string(),
        }))
        .unwrap();
        loop {
            let mut message = producer::Message {
                payload: payload.clone(),
                ..Default::default()
            };
            message.properties.insert("id".into(), format!("move-{n}"));
            let sent = match producer.send_non_blocking(message).await {
                Ok(receipt) => receipt.await.is_ok(),
                Err(_) => false,
            };
            if sent {
                break;
            }
            retried.push(format!("move-{n}"));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(pause).await;
    }
    retried
}

/// Reads answers until every id of `0..count` has one, or 60 s pass; the
/// answers per id.
pub(super) async fn answers(
    consumer: &mut pulsar::Consumer<Vec<u8>, TokioExecutor>,
    count: usize,
) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.len() < count {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(Some(Ok(message))) = tokio::time::timeout(left, consumer.next()).await else {
            break;
        };
        consumer.ack(&message).await.unwrap();
        let frame = Frame::decode(&message.payload.data).expect("a response frame");
        assert_eq!(frame.error, None);
        let id = tool_service::pulsar::broker::message_id(&message)
            .expect("an id")
            .to_owned();
        *seen.entry(id).or_default() += 1;
    }
    // Whatever else arrives shortly after: answers a second time.
    while let Ok(Some(Ok(message))) =
        tokio::time::timeout(Duration::from_secs(2), consumer.next()).await
    {
        consumer.ack(&message).await.unwrap();
        let id = tool_service::pulsar::broker::message_id(&message)
            .expect("an id")
            .to_owned();
        *seen.entry(id).or_default() += 1;
    }
    seen
}

/// Every request is answered, whichever topic moves; none is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unloading_the_topics_under_traffic_loses_no_request() {
    let _suite = support::suite(module_path!());
    let metrics = support::free_port();
    let replica = support::Replica::start(
        "echo",
        &[
            "--only",
            "durable-echo-service",
            "--metrics-port",
            &metrics.to_string(),
        ],
    );
    let pulsar = support::connect().await;
    let mut consumer = responses(&pulsar).await;

    // A backlog: 100 requests of 30 ms each, 64 at a time; the request
    // topic moves while it is worked through, then the response topic.
    let sent_again = publish(&pulsar, 0, 100, 30, Duration::ZERO).await;
    assert!(sent_again.is_empty(), "nothing moved yet: {sent_again:?}");
    unload("request");
    tokio::time::sleep(Duration::from_millis(300)).await;
    unload("response");
    let first = answers(&mut consumer, 100).await;

    // Then while requests are being published: both topics move again.
    let publishing = {
        let pulsar = pulsar.clone();
        tokio::spawn(async move { publish(&pulsar, 100, 300, 0, Duration::from_millis(5)).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    unload("request");
    tokio::time::sleep(Duration::from_millis(300)).await;
    unload("response");
    let retried = publishing.await.unwrap();
    let second = answers(&mut consumer, 200).await;

    // What the service itself answered: the test's own subscription is
    // moved too, and gets again what it had not yet had acknowledged.
    let (_, scraped) = support::scrape(metrics);
    let invocations: usize = scraped
        .lines()
        .find_map(|line| {
            line.strip_prefix(
                "tg_dynamic_tool_service_invocation_total{processor=\"durable-echo-service\"} ",
            )
        })
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no invocation count:\n{scraped}"));
    let (status, lines) = replica.finish();
    assert!(status.success(), "{lines:#?}");
    for (range, seen) in [(0..100, &first), (100..300, &second)] {
        let missing: Vec<_> = range
            .clone()
            .map(|n| format!("move-{n}"))
            .filter(|id| !seen.contains_key(id))
            .collect();
        assert!(missing.is_empty(), "never answered: {missing:?}");
    }
    let received_twice = first
        .values()
        .chain(second.values())
        .filter(|count| **count > 1)
        .count();
    eprintln!(
        "300 requests, 4 unloads: every one answered; the service answered {invocations} \
         times; {} requests sent again; the test's subscription received {received_twice} \
         answers again after its topic moved",
        retried.len()
    );
    // Pulsar delivers at least once: a request answered while its topic
    // moved, whose acknowledgment the old owner never recorded, comes again
    // and is answered again. At most the requests in hand at each move of
    // the request topic (64, the service's concurrency, twice), and any
    // request sent twice.
    assert!(
        invocations >= 300 && invocations <= 300 + 2 * 64 + retried.len(),
        "the service answered {invocations} times for 300 requests ({} sent again)",
        retried.len()
    );
    // No WARN or ERROR from a move: the client's reconnections are its own
    // (logged at debug).
    let loud: Vec<_> = lines
        .iter()
        .filter(|line| line.contains(" WARN ") || line.contains(" ERROR "))
        .collect();
    assert!(loud.is_empty(), "{loud:#?}");
}
