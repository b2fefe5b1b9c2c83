//! What must not silence a service. Responses larger than the broker
//! accepts: each is answered with a `response-too-large` error frame, the
//! request is acknowledged, and the connection every service of the process
//! shares stays up. A frame the broker refuses fails that request only; if
//! even the `send-failed` notice is refused, the request is redelivered
//! until it is answered. A
//! consumer the Pulsar client cannot re-create is replaced. Needs a broker:
//! `scripts/pulsar.sh start`.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{admin, RawTopic, Replica};
use tool_service::pulsar::client::CallError;
use tool_service::wire::{Frame, Request, DEFAULT_MAX_MESSAGE_SIZE};
use tool_service::{tool_service, ToolError};

/// The message of a `response-too-large` frame, after checking its type.
fn too_large(frame: &Frame) -> &str {
    assert!(frame.end_of_stream, "{frame:?}");
    let error = frame.error.as_ref().expect("an error frame");
    assert_eq!(error.kind(), ToolError::RESPONSE_TOO_LARGE, "{error:?}");
    error.message()
}

/// The example's `blob` topic is shared: replicas of two tests at once would
/// split each other's requests.
static BLOB_TOPIC: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_results_are_answered_and_small_calls_keep_flowing() {
    let _suite = support::suite(module_path!());
    let _blob_topic = BLOB_TOPIC.lock().await;
    let metrics_port = support::free_port();
    let replica = Replica::start(
        "echo",
        &[
            "--only",
            "echo-service",
            "--only",
            "blob-service",
            "--metrics-port",
            &metrics_port.to_string(),
        ],
    );

    // Steady small calls on the other service, all through the big ones.
    let small = support::client("non-persistent", "echo").await;
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let load = tokio::spawn({
        let (stop, answered) = (Arc::clone(&stop), Arc::clone(&answered));
        async move {
            let mut failures = Vec::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let text = format!("small {n}");
                match small.call(&json!({}), &json!({ "text": text })).await {
                    Ok(answer) if answer == text => {
                        answered.fetch_add(1, Ordering::Relaxed);
                    }
                    other => failures.push(format!("{text}: {other:?}")),
                }
            }
            failures
        }
    });

    let blob = support::client_on(
        &tool_service::pulsar::broker::BrokerOptions::new(support::require_broker()),
        "non-persistent",
        "blob",
        Duration::from_secs(20),
    )
    .await;
    for bytes in [6_000_000u64, 20_000_000] {
        let started = Instant::now();
        let before = answered.load(Ordering::Relaxed);
        match blob.call(&json!({}), &json!({ "bytes": bytes })).await {
            Err(CallError::Tool(error)) => {
                assert_eq!(error.kind(), ToolError::RESPONSE_TOO_LARGE);
                assert!(
                    error.message().contains(&format!(
                        "maximum message size of {DEFAULT_MAX_MESSAGE_SIZE} bytes"
                    )),
                    "{error:?}"
                );
            }
            other => panic!("{bytes} bytes: expected a response-too-large error, got {other:?}"),
        }
        eprintln!("{bytes} bytes: answered in {:?}", started.elapsed());
        // Small calls went on meanwhile.
        let deadline = Instant::now() + Duration::from_secs(10);
        while answered.load(Ordering::Relaxed) < before + 5 {
            assert!(
                Instant::now() < deadline,
                "small calls stopped after the {bytes}-byte result"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    // A stream whose one chunk is too large ends with the error, once.
    let mut raw = RawTopic::open("non-persistent", "blob").await;
    let request = Request::new(json!({}), json!({"bytes": 6_000_000, "chunks": 1}));
    let (id, frames) = raw.exchange(&request.encode(), Some("stream-6mb")).await;
    assert_eq!(id, "stream-6mb");
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert!(too_large(&frames[0]).starts_with("a streamed chunk of the tool's response is "));
    raw.assert_quiet("the stream's error frame").await;

    // The same service still answers what fits.
    let fits = blob
        .call(&json!({}), &json!({"bytes": 1_000_000}))
        .await
        .unwrap();
    assert_eq!(fits.len(), 1_000_000);

    stop.store(true, Ordering::Relaxed);
    let failures = load.await.unwrap();
    assert!(failures.is_empty(), "small calls failed: {failures:?}");
    assert!(answered.load(Ordering::Relaxed) >= 10);

    // Counted when the broker confirms each answer, a moment after the
    // caller may have it.
    let mut body = String::new();
    let oversized = "tg_tool_service_oversized_responses_total{processor=\"blob-service\"} 3\n";
    support::wait_until(
        "three oversized responses counted",
        Duration::from_secs(10),
        || {
            body = support::scrape(metrics_port).1;
            body.contains(oversized)
        },
    )
    .await;
    assert!(
        body.contains("tg_tool_service_send_failures_total{processor=\"blob-service\"} 0\n"),
        "{body}"
    );
    let (status, log) = replica.finish();
    assert!(status.success(), "{status:?}\n{}", log.join("\n"));
    for line in &log {
        assert!(
            !line.contains("reconnect") && !line.contains("cannot send"),
            "the connection was disturbed: {line}"
        );
    }
}

/// Handler runs of the persistent service, by size asked.
static BIG_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Return a text of the given size, on persistent topics.
///
/// # Arguments
/// * `bytes` - How many bytes.
#[tool_service(
    topic = "it-oversized-durable",
    request_queue = "persistent://tg/request/it-oversized-durable",
    response_queue = "persistent://tg/response/it-oversized-durable"
)]
async fn durable_blob(bytes: usize) -> String {
    if bytes > 1000 {
        BIG_RUNS.fetch_add(1, Ordering::SeqCst);
    }
    "x".repeat(bytes)
}

/// A subscription's stats from the broker's admin API.
fn subscription_stats(topic: &str, subscription: &str) -> Value {
    let (status, body) = admin("GET", &format!("/admin/v2/persistent/{topic}/stats"), "");
    assert!(status.contains(" 200"), "{status}");
    let stats: Value = serde_json::from_str(&body).expect("topic stats as JSON");
    stats["subscriptions"][subscription].clone()
}

/// Waits until the broker holds nothing unacknowledged for the service of
/// `persistent://tg/request/{topic}`.
async fn all_acknowledged(topic: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let stats = subscription_stats(
            &format!("tg/request/{topic}"),
            &format!("{topic}-service-request"),
        );
        if stats["msgBacklog"] == 0 && stats["unackedMessages"] == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "requests are still unacknowledged: {stats}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_persistent_topic_an_oversized_result_is_acknowledged_not_redelivered() {
    let _suite = support::suite(module_path!());
    let serving = support::InProcess::start(&["it-oversized-durable-service"]).await;
    let mut raw = RawTopic::open("persistent", "it-oversized-durable").await;

    let big = Request::new(json!({}), json!({"bytes": 6_000_000}));
    let (id, frames) = raw.exchange(&big.encode(), Some("durable-6mb")).await;
    assert_eq!(id, "durable-6mb");
    assert_eq!(frames.len(), 1);
    too_large(&frames[0]);

    let small = Request::new(json!({}), json!({"bytes": 3}));
    let (id, frames) = raw.exchange(&small.encode(), Some("durable-small")).await;
    assert_eq!(id, "durable-small");
    assert_eq!(frames, [Frame::last(Ok("xxx".into()))]);

    // Not redelivered: the handler ran once, nothing more is answered, and
    // the broker holds nothing unacknowledged for the subscription.
    raw.assert_quiet("the answers").await;
    assert_eq!(BIG_RUNS.load(Ordering::SeqCst), 1);
    let metrics = serving.metrics.render();
    assert!(
        metrics.contains(
            "tg_tool_service_oversized_responses_total{processor=\"it-oversized-durable-service\"} 1\n"
        ),
        "{metrics}"
    );
    all_acknowledged("it-oversized-durable").await;
    let reports = serving.stop().await;
    assert_eq!(reports["it-oversized-durable-service"].answered, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_near_the_limit_whose_answer_is_larger_gets_the_error() {
    let _suite = support::suite(module_path!());
    let _serving = support::InProcess::start(&["it-oversized-echo-service"]).await;
    let mut raw = RawTopic::open("non-persistent", "it-oversized-echo").await;
    // A 4.5 MB request fits; its structured answer holds it twice.
    let request = Request::new(json!({}), json!({ "value": "a".repeat(4_500_000) }));
    let payload = request.encode();
    assert!(payload.len() < DEFAULT_MAX_MESSAGE_SIZE);
    let (id, frames) = raw.exchange(&payload, Some("near-limit")).await;
    assert_eq!(id, "near-limit");
    assert_eq!(frames.len(), 1);
    let message = too_large(&frames[0]);
    assert!(message.starts_with("the tool's response is "), "{message}");
}

/// Give the value back twice, as JSON.
///
/// # Arguments
/// * `value` - Any JSON value.
#[tool_service(topic = "it-oversized-echo")]
async fn echo_twice(value: Value) -> Value {
    json!({"value": value, "copy": value})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_message_size_lowers_the_limit_and_the_log_says_which_applies() {
    let _suite = support::suite(module_path!());
    let _blob_topic = BLOB_TOPIC.lock().await;
    let replica = Replica::spawn_at(
        &support::require_broker(),
        "echo",
        &["--only", "blob-service", "--max-message-size", "100000"],
    );
    let started = replica.wait_for_log(" ready", Duration::from_secs(60));
    assert!(
        started
            .iter()
            .any(|line| line.contains("connected to Pulsar")
                && line.contains("max_message_size=100000")),
        "{}",
        started.join("\n")
    );
    let blob = support::client("non-persistent", "blob").await;
    let fits = blob
        .call(&json!({}), &json!({"bytes": 90_000}))
        .await
        .unwrap();
    assert_eq!(fits.len(), 90_000);
    match blob.call(&json!({}), &json!({"bytes": 100_000})).await {
        Err(CallError::Tool(error)) => {
            assert_eq!(error.kind(), ToolError::RESPONSE_TOO_LARGE);
            assert!(
                error
                    .message()
                    .contains("maximum message size of 100000 bytes"),
                "{error:?}"
            );
        }
        other => panic!("expected a response-too-large error, got {other:?}"),
    }
    let (status, _) = replica.finish();
    assert!(status.success());
}

/// Sets (or with `None` removes) the maximum message size policy of
/// `persistent://tg/response/{topic}`, and waits until the broker reports it:
/// topic policies are applied asynchronously.
pub(crate) async fn limit_response_size(topic: &str, bytes: Option<usize>) {
    let policy = format!("/admin/v2/persistent/tg/response/{topic}/maxMessageSize");
    let expected = match bytes {
        Some(bytes) => {
            support::assert_admin("POST", &policy, &bytes.to_string());
            bytes.to_string()
        }
        None => {
            support::assert_admin("DELETE", &policy, "");
            String::new()
        }
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = admin("GET", &policy, "");
        let body = body.trim();
        let now = if body == "null" { "" } else { body };
        if now == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the topic policy is {body:?}, not {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Return a text of the given size, on persistent topics whose response
/// topic has a smaller maximum message size than the broker.
///
/// # Arguments
/// * `bytes` - How many bytes.
#[tool_service(
    topic = "it-send-failure",
    request_queue = "persistent://tg/request/it-send-failure",
    response_queue = "persistent://tg/response/it-send-failure"
)]
async fn refused_blob(bytes: usize) -> String {
    "x".repeat(bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_the_broker_refuses_fails_that_request_only() {
    let _suite = support::suite(module_path!());
    let mut raw = RawTopic::open("persistent", "it-send-failure").await;
    // A topic policy below the broker's limit: the handshake cannot see it,
    // so the broker refuses the frame itself.
    limit_response_size("it-send-failure", Some(10_000)).await;
    let serving = support::InProcess::start(&["it-send-failure-service"]).await;

    let big = Request::new(json!({}), json!({"bytes": 50_000}));
    let (id, frames) = raw.exchange(&big.encode(), Some("refused-50kb")).await;
    assert_eq!(id, "refused-50kb");
    assert_eq!(frames.len(), 1, "{frames:?}");
    let error = frames[0].error.as_ref().expect("an error frame");
    assert_eq!(error.kind(), ToolError::SEND_FAILED);
    assert_eq!(
        error.message(),
        "the tool's response could not be published: the broker refused it \
         (NotAllowedError: Exceed maximum message size)"
    );

    // The service goes on, and the refused request is not redelivered.
    for n in 0..3 {
        let small = Request::new(json!({}), json!({"bytes": 3}));
        let id = format!("after-refusal-{n}");
        let (answered, frames) = raw.exchange(&small.encode(), Some(&id)).await;
        assert_eq!(answered, id);
        assert_eq!(frames, [Frame::last(Ok("xxx".into()))]);
    }
    raw.assert_quiet("the answers").await;
    let metrics = serving.metrics.render();
    for counted in [
        "tg_tool_service_send_failures_total{processor=\"it-send-failure-service\"} 1\n",
        "tg_tool_service_oversized_responses_total{processor=\"it-send-failure-service\"} 0\n",
    ] {
        assert!(metrics.contains(counted), "{metrics}");
    }
    let reports = serving.stop().await;
    assert_eq!(reports["it-send-failure-service"].answered, 4);
}

/// Echo on a namespace of this test's own.
///
/// # Arguments
/// * `text` - The text.
#[tool_service(
    topic = "it-resubscribe",
    request_queue = "non-persistent://tg/it-resubscribe/request",
    response_queue = "non-persistent://tg/it-resubscribe/response"
)]
async fn resubscribed_echo(text: String) -> String {
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_the_client_cannot_recreate_is_replaced() {
    let _suite = support::suite(module_path!());
    const NAMESPACE: &str = "/admin/v2/namespaces/tg/it-resubscribe";
    const CREATE: &str = r#"{"allowAutoTopicCreation": true, "topicType": "non-partitioned"}"#;
    support::assert_admin("PUT", NAMESPACE, "");
    support::assert_admin("POST", &format!("{NAMESPACE}/autoTopicCreation"), CREATE);
    let serving = support::InProcess::start(&["it-resubscribe-service"]).await;
    let pulsar = support::connect().await;
    let client = tool_service::pulsar::client::ToolClient::connect(
        &pulsar,
        "non-persistent://tg/it-resubscribe/request",
        "non-persistent://tg/it-resubscribe/response",
    )
    .await
    .unwrap()
    .with_timeout(Duration::from_secs(3));
    assert_eq!(
        client
            .call(&json!({}), &json!({"text": "a"}))
            .await
            .unwrap(),
        "a"
    );

    // The request topic disappears and cannot come back for a while: the
    // client's own attempt to re-create the consumer fails.
    let no_create = r#"{"allowAutoTopicCreation": false}"#;
    support::assert_admin("POST", &format!("{NAMESPACE}/autoTopicCreation"), no_create);
    support::assert_admin(
        "DELETE",
        "/admin/v2/non-persistent/tg/it-resubscribe/request?force=true",
        "",
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    support::assert_admin("POST", &format!("{NAMESPACE}/autoTopicCreation"), CREATE);

    // The service subscribes again and answers.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match client.call(&json!({}), &json!({"text": "b"})).await {
            Ok(answer) => {
                assert_eq!(answer, "b");
                break;
            }
            Err(error) => assert!(
                Instant::now() < deadline,
                "the service stayed silent after its topic came back: {error}"
            ),
        }
    }
    let reports = serving.stop().await;
    assert!(reports["it-resubscribe-service"].answered >= 2);
}

static REFUSED_RUNS: AtomicUsize = AtomicUsize::new(0);
/// Set by the test: the next run waits in the handler for [`RELEASE`], so
/// the limit is lifted between two attempts, never between an attempt's
/// answer and its notice.
static HOLD: AtomicBool = AtomicBool::new(false);
static HELD: AtomicBool = AtomicBool::new(false);
static RELEASE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Echo on persistent topics whose response topic takes, for a while, no
/// frame at all: not the answer, nor the `send-failed` notice.
///
/// # Arguments
/// * `text` - The text.
#[tool_service(
    topic = "it-notice-refused",
    request_queue = "persistent://tg/request/it-notice-refused",
    response_queue = "persistent://tg/response/it-notice-refused"
)]
async fn refused_echo(text: String) -> String {
    REFUSED_RUNS.fetch_add(1, Ordering::SeqCst);
    if HOLD.swap(false, Ordering::SeqCst) {
        HELD.store(true, Ordering::SeqCst);
        RELEASE.notified().await;
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_notice_is_refused_too_is_redelivered_until_answered() {
    let _suite = support::suite(module_path!());
    let mut raw = RawTopic::open("persistent", "it-notice-refused").await;
    // Smaller than any frame, the notice included.
    limit_response_size("it-notice-refused", Some(10)).await;
    let serving = support::InProcess::start(&["it-notice-refused-service"]).await;

    let request = Request::new(json!({}), json!({"text": "kept"}));
    raw.send(&request.encode(), Some("kept")).await;
    support::wait_until("the request is handled", Duration::from_secs(30), || {
        REFUSED_RUNS.load(Ordering::SeqCst) >= 1
    })
    .await;
    // Returned after a pause each time (a second), not in a tight loop,
    // which would run it hundreds of times in this window.
    let window = Duration::from_secs(3);
    tokio::time::sleep(window).await;
    let runs = REFUSED_RUNS.load(Ordering::SeqCst);
    assert!(
        (2..=8).contains(&runs),
        "{runs} runs in the {window:?} after the first: it should be redelivered about once a second"
    );
    // Nothing got out meanwhile.
    raw.assert_quiet("the refused attempts").await;
    let metrics = serving.metrics.render();
    let failures = metrics
        .lines()
        .find_map(|line| {
            line.strip_prefix(
                "tg_tool_service_send_failures_total{processor=\"it-notice-refused-service\"} ",
            )
        })
        .and_then(|count| count.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("no send failure count: {metrics}"));
    assert!(failures >= 3, "{metrics}");

    // Once the broker takes frames again, the redelivered request is
    // answered, once, and acknowledged. The limit is lifted while a run
    // waits in the handler: the attempt before it has been refused whole
    // (answer and notice), and the one after it is published in full.
    HOLD.store(true, Ordering::SeqCst);
    support::wait_until(
        "a run waits in the handler",
        Duration::from_secs(30),
        || HELD.load(Ordering::SeqCst),
    )
    .await;
    limit_response_size("it-notice-refused", None).await;
    // The broker applies a policy a moment after it reports it.
    tokio::time::sleep(Duration::from_secs(1)).await;
    RELEASE.notify_one();
    let (id, frame) = raw.receive().await;
    assert_eq!(id.as_deref(), Some("kept"));
    assert_eq!(frame, Frame::last(Ok("kept".into())));
    raw.assert_quiet("the answer").await;
    all_acknowledged("it-notice-refused").await;
    let reports = serving.stop().await;
    assert_eq!(reports["it-notice-refused-service"].answered, 1);
}
