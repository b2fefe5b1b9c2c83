//! `serve` on a real Apache Pulsar broker, driven by the Rust client and by
//! raw Pulsar messages. Needs a broker: `scripts/pulsar.sh start`.

use crate::support;

use support::RawTopic;

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use tool_service::pulsar::client::{CallError, ToolClient};
use tool_service::wire::Frame;
use tool_service::{tool_service, Chunks, Context, StreamClosed};

/// Tell a joke (test double).
///
/// # Arguments
/// * `topic` - The topic.
#[tool_service(topic = "it-joke")]
async fn it_joke(
    #[config_param] style: Option<String>,
    topic: String,
    #[context] ctx: &Context,
) -> String {
    format!(
        "{}|{topic}|{}|{}",
        style.as_deref().unwrap_or("-"),
        ctx.user().unwrap_or("-"),
        ctx.request_id()
    )
}

/// Strict about its arguments.
///
/// # Arguments
/// * `count` - A number.
#[tool_service(topic = "it-strict")]
async fn it_strict(count: u32) -> String {
    format!("count={count}")
}

/// Echo.
///
/// # Arguments
/// * `text` - The text.
#[tool_service(topic = "it-echo")]
async fn it_echo(text: String) -> String {
    text
}

/// Echo, on persistent topics (nothing is dropped there under load).
///
/// # Arguments
/// * `text` - The text.
#[tool_service(
    topic = "it-durable",
    request_queue = "persistent://tg/request/it-durable",
    response_queue = "persistent://tg/response/it-durable"
)]
async fn it_durable(text: String) -> String {
    text
}

/// One slow request at a time.
///
/// # Arguments
/// * `n` - A number.
#[tool_service(topic = "it-slow", concurrency = 1)]
async fn it_slow(n: u32) -> String {
    tokio::time::sleep(Duration::from_millis(150)).await;
    n.to_string()
}

/// Panic on demand.
///
/// # Arguments
/// * `panic` - Whether to panic.
#[tool_service(topic = "it-panic")]
async fn it_panic(panic: bool) -> String {
    assert!(!panic, "asked to panic");
    String::from("still here")
}

/// Stream numbers.
///
/// # Arguments
/// * `count` - How many chunks.
#[tool_service(topic = "it-stream")]
async fn it_stream(count: u32, #[stream] out: Chunks) -> Result<String, StreamClosed> {
    for n in 0..count {
        out.send(format!("{n},")).await?;
    }
    Ok(String::from("end"))
}

/// Stream numbers, on a topic of its own for a raw subscription.
///
/// # Arguments
/// * `count` - How many chunks.
#[tool_service(topic = "it-stream-raw")]
async fn it_stream_raw(count: u32, #[stream] out: Chunks) -> Result<String, StreamClosed> {
    it_stream(count, out).await
}

/// Say who asked (for raw-message tests).
#[tool_service(topic = "it-raw")]
async fn it_raw(#[context] ctx: Context) -> String {
    format!("user={}", ctx.user().unwrap_or(""))
}

/// Say who asked, on a topic of its own (tests run side by side: one topic
/// each, or they answer each other's requests).
#[tool_service(topic = "it-raw-user")]
async fn it_raw_user(#[context] ctx: Context) -> String {
    format!("user={}", ctx.user().unwrap_or(""))
}

async fn client(topic: &str) -> ToolClient {
    support::client("non-persistent", topic).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joke_request_with_config_and_arguments() {
    let _suite = support::suite(module_path!());
    let served = support::InProcess::start(&["it-joke-service"]).await;
    let client = client("it-joke").await;
    let text = client
        .call(&json!({"style": "pun"}), &json!({"topic": "cats"}))
        .await
        .unwrap();
    let parts: Vec<&str> = text.split('|').collect();
    assert_eq!(&parts[..3], ["pun", "cats", "-"]);
    assert_eq!(
        parts[3].len(),
        36,
        "the request id is the client's uuid: {text}"
    );
    let text = client
        .call(&json!({}), &json!({"topic": "dogs"}))
        .await
        .unwrap();
    assert!(text.starts_with("-|dogs|-|"), "{text}");
    let reports = served.stop().await;
    assert_eq!(reports["it-joke-service"].answered, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_are_echoed_and_a_missing_id_is_answered_as_unknown() {
    let _suite = support::suite(module_path!());
    let _served = support::InProcess::start(&["it-raw-service"]).await;
    let mut raw = RawTopic::open("non-persistent", "it-raw").await;
    raw.send(br#"{"config": "{}", "arguments": "{}"}"#, Some("req-42"))
        .await;
    let (id, frame) = raw.receive().await;
    assert_eq!(id.as_deref(), Some("req-42"));
    assert_eq!(frame, Frame::last(Ok("user=".into())));
    raw.send(br#"{"config": "{}", "arguments": "{}"}"#, None)
        .await;
    let (id, frame) = raw.receive().await;
    assert_eq!(id.as_deref(), Some("unknown"));
    assert!(frame.error.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_reaches_the_handler_only_when_sent() {
    let _suite = support::suite(module_path!());
    let _served = support::InProcess::start(&["it-raw-user-service"]).await;
    let mut raw = RawTopic::open("non-persistent", "it-raw-user").await;
    raw.send(
        br#"{"user": "alice", "config": "{}", "arguments": "{}"}"#,
        Some("with-user"),
    )
    .await;
    let (_, frame) = raw.receive().await;
    assert_eq!(frame.response, "user=alice");
    raw.send(
        br#"{"config": "{}", "arguments": "{}"}"#,
        Some("without-user"),
    )
    .await;
    let (_, frame) = raw.receive().await;
    assert_eq!(frame.response, "user=");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_an_error_frame_and_the_service_keeps_serving() {
    let _suite = support::suite(module_path!());
    let _served = support::InProcess::start(&["it-strict-service"]).await;
    let client = client("it-strict").await;
    match client.call(&json!({}), &json!({"count": "five"})).await {
        Err(CallError::Tool(error)) => {
            assert_eq!(error.kind(), "invalid-arguments");
            assert!(error.message().contains("`count`"), "{error:?}");
        }
        other => panic!("expected an error frame, got {other:?}"),
    }
    let frames = client
        .send_payload(b"not json at all".to_vec())
        .await
        .unwrap();
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].error.as_ref().unwrap().kind(), "invalid-request");
    assert_eq!(
        client.call(&json!({}), &json!({"count": 3})).await.unwrap(),
        "count=3"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_answers_an_error_and_the_next_request_succeeds() {
    let _suite = support::suite(module_path!());
    let _served = support::InProcess::start(&["it-panic-service"]).await;
    let client = client("it-panic").await;
    match client.call(&json!({}), &json!({"panic": true})).await {
        Err(CallError::Tool(error)) => {
            assert_eq!(error.kind(), "handler-panic");
            assert!(error.message().contains("asked to panic"), "{error:?}");
        }
        other => panic!("expected an error frame, got {other:?}"),
    }
    assert_eq!(
        client
            .call(&json!({}), &json!({"panic": false}))
            .await
            .unwrap(),
        "still here"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_requests_are_each_answered_exactly_once() {
    let _suite = support::suite(module_path!());
    const REQUESTS: usize = 1000;
    let _served = support::InProcess::start(&["it-durable-service"]).await;
    let client = support::client("persistent", "it-durable").await;
    // A second subscription sees every response frame, to count them by id.
    let mut watch = RawTopic::open("persistent", "it-durable").await;
    let calls = (0..REQUESTS).map(|n| {
        let client = &client;
        async move {
            let text = format!("message {n}");
            let answer = client
                .call(&json!({}), &json!({"text": text}))
                .await
                .unwrap();
            assert_eq!(answer, text, "a response reached the wrong caller");
        }
    });
    futures_util::future::join_all(calls).await;
    let mut seen: HashMap<String, usize> = HashMap::new();
    while seen.values().sum::<usize>() < REQUESTS {
        let (id, frame) = watch.receive().await;
        assert!(frame.end_of_stream && frame.error.is_none());
        *seen.entry(id.unwrap()).or_default() += 1;
    }
    assert_eq!(seen.len(), REQUESTS, "every id answered");
    assert!(
        seen.values().all(|count| *count == 1),
        "no id answered twice"
    );
    // Nothing more arrives: no duplicate is on its way.
    let more = tokio::time::timeout(Duration::from_millis(500), watch.consumer.next()).await;
    assert!(more.is_err(), "an extra response frame arrived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_on_a_non_persistent_topic_is_answered_never_dropped() {
    let _suite = support::suite(module_path!());
    let _served = support::InProcess::start_with(&["it-slow-service"], |_, options| {
        options.receive_window = Some(3);
    })
    .await;
    let client = client("it-slow").await;
    let calls = (0..12).map(|n| {
        let client = &client;
        async move { (n, client.call(&json!({}), &json!({"n": n})).await) }
    });
    let mut served = 0;
    let mut refused = 0;
    for (n, result) in futures_util::future::join_all(calls).await {
        match result {
            Ok(text) => {
                assert_eq!(text, n.to_string());
                served += 1;
            }
            Err(CallError::Tool(error)) if error.kind() == "overloaded" => {
                assert!(
                    error.message().starts_with("the service is at capacity"),
                    "{error:?}"
                );
                refused += 1;
            }
            Err(other) => panic!("request {n} was not answered: {other}"),
        }
    }
    assert_eq!(served + refused, 12);
    assert!(
        served >= 4,
        "one running and three waiting are served: {served}"
    );
    assert!(refused >= 1, "the rest is refused at once: {refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_frames_arrive_in_order_with_end_of_stream_only_on_the_last() {
    let _suite = support::suite(module_path!());
    let _served = support::InProcess::start(&["it-stream-service"]).await;
    let client = client("it-stream").await;
    let request = tool_service::wire::Request::new(json!({}), json!({"count": 25}));
    let frames = client.send(&request).await.unwrap();
    assert_eq!(frames.len(), 26);
    for (n, frame) in frames[..25].iter().enumerate() {
        assert_eq!(frame.response, format!("{n},"));
        assert!(!frame.end_of_stream);
    }
    assert_eq!(frames[25], Frame::last(Ok("end".into())));
    let mut chunks = Vec::new();
    let text = client
        .call_streaming(&json!({}), &json!({"count": 3}), |chunk| {
            chunks.push(chunk.to_owned())
        })
        .await
        .unwrap();
    assert_eq!(chunks, ["0,", "1,", "2,", "end"]);
    assert_eq!(text, "0,1,2,end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_has_exactly_one_end_frame_on_the_wire_and_it_is_last() {
    let _suite = support::suite(module_path!());
    let _served = support::InProcess::start(&["it-stream-raw-service"]).await;
    let mut raw = RawTopic::open("non-persistent", "it-stream-raw").await;
    let request = tool_service::wire::Request::new(json!({}), json!({"count": 5}));
    let (id, frames) = raw.exchange(&request.encode(), Some("stream-1")).await;
    assert_eq!(id, "stream-1");
    assert_eq!(frames.len(), 6);
    assert_eq!(frames.iter().filter(|frame| frame.end_of_stream).count(), 1);
    raw.assert_quiet("the end frame").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_services_are_refused_before_connecting() {
    let _suite = support::suite(module_path!());
    let registry = std::sync::Arc::new(tool_service::Registry::collect().unwrap());
    let mut options = tool_service::host::HostOptions::default();
    options.only = vec![String::from("no-such-service")];
    let error = tool_service::host::Host::new(registry, &options).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("no service `no-such-service` in this binary"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serving_returns_after_its_shutdown_future_completes() {
    let _suite = support::suite(module_path!());
    let registry = std::sync::Arc::new(tool_service::Registry::collect().unwrap());
    let mut options = tool_service::host::HostOptions::default();
    options.only = vec![String::from("it-echo-service")];
    let host = tool_service::host::Host::new(registry, &options).unwrap();
    let started = std::time::Instant::now();
    let served = tokio::time::timeout(
        Duration::from_secs(20),
        tool_service::host::Transports::new(host)
            .with(tool_service::pulsar::serve::PulsarTransport::new(
                tool_service::pulsar::serve::ServeOptions::new(support::require_broker()),
            ))
            .run(tokio::time::sleep(Duration::from_secs(1))),
    )
    .await
    .expect("serving stops after its shutdown future")
    .unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(served.abandoned, 0);
    assert_eq!(served.services["it-echo-service"].abandoned, 0);
}
