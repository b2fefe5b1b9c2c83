//! Answers ready together go out as one Pulsar batch, each under its own
//! `id`, on persistent and non-persistent topics; `batch_responses = false`
//! sends each alone.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::Semaphore;
use tool_service::tool_service;
use tool_service::wire::Frame;

use crate::support::{self, InProcess, RawTopic};

/// Each service holds its calls until its test opens its gate.
static GATE: Semaphore = Semaphore::const_new(0);
static DURABLE_GATE: Semaphore = Semaphore::const_new(0);
static ALONE_GATE: Semaphore = Semaphore::const_new(0);

/// Answers with its text once the gate opens.
///
/// # Arguments
/// * `text` - What to answer with.
#[tool_service(topic = "it-batch-gate")]
async fn gate(text: String) -> Result<String, tool_service::ToolError> {
    let _open = GATE.acquire().await;
    Ok(text)
}

/// The same, on persistent topics.
///
/// # Arguments
/// * `text` - What to answer with.
#[tool_service(
    topic = "it-batch-durable",
    request_queue = "persistent://tg/request/it-batch-durable",
    response_queue = "persistent://tg/response/it-batch-durable"
)]
async fn durable_gate(text: String) -> Result<String, tool_service::ToolError> {
    let _open = DURABLE_GATE.acquire().await;
    Ok(text)
}

/// The same, served with batching off.
///
/// # Arguments
/// * `text` - What to answer with.
#[tool_service(topic = "it-batch-alone")]
async fn alone_gate(text: String) -> Result<String, tool_service::ToolError> {
    let _open = ALONE_GATE.acquire().await;
    Ok(text)
}

const CALLS: usize = 40;

/// Serves `{topic}-service` (on `persistence` topics, batching its answers
/// or not), sends it `CALLS` requests, opens `gate` once they all run, and
/// checks that each was answered once, with its own text. Returns how many
/// answers each answer's message carried, and the metrics then.
async fn burst(
    persistence: &str,
    topic: &str,
    gate: &'static Semaphore,
    batch: bool,
) -> (Vec<i32>, String) {
    let service = format!("{topic}-service");
    let serving =
        InProcess::start_with(&[&service], |_, options| options.batch_responses = batch).await;
    let mut raw = RawTopic::open(persistence, topic).await;
    let calls: Vec<_> = (0..CALLS)
        .map(|n| serde_json::json!({ "text": format!("call {n}") }))
        .collect();
    send_then_open(&mut raw, &serving, &calls, gate).await;
    let mut answers = HashMap::new();
    while answers.len() < CALLS {
        let message = tokio::time::timeout(Duration::from_secs(30), raw.consumer.next())
            .await
            .expect("every answer within 30 s")
            .unwrap()
            .unwrap();
        raw.consumer.ack(&message).await.unwrap();
        let id = tool_service::pulsar::broker::message_id(&message)
            .expect("every answer carries its id")
            .to_owned();
        let frame = Frame::decode(&message.payload.data).expect("a response frame");
        let in_batch = message.metadata().num_messages_in_batch.unwrap_or(1);
        assert!(
            answers.insert(id.clone(), (frame, in_batch)).is_none(),
            "{id} was answered twice"
        );
    }
    raw.assert_quiet("the last answer").await;
    let metrics = serving.metrics.render();
    serving.stop().await;
    for n in 0..CALLS {
        let (frame, _) = &answers[&format!("call-{n}")];
        assert_eq!(frame.response, format!("call {n}"), "call-{n}'s answer");
        assert!(frame.end_of_stream && frame.error.is_none());
    }
    let batches = answers
        .into_values()
        .map(|(_, in_batch)| in_batch)
        .collect();
    (batches, metrics)
}

/// The value of the sample `name{processor="{topic}-service"}`.
fn sample(metrics: &str, name: &str, topic: &str) -> Option<f64> {
    support::sample(metrics, &format!("{name}{{processor=\"{topic}-service\"}}"))
}

/// Sends a request of each of `calls`' arguments (ids `call-0`, `call-1`, …)
/// and opens `gate` once they all run.
async fn send_then_open(
    raw: &mut RawTopic,
    serving: &InProcess,
    calls: &[serde_json::Value],
    gate: &'static Semaphore,
) {
    for (n, arguments) in calls.iter().enumerate() {
        let payload =
            serde_json::json!({ "config": "{}", "arguments": arguments.to_string() }).to_string();
        raw.send(payload.as_bytes(), Some(&format!("call-{n}")))
            .await;
    }
    let metrics = std::sync::Arc::clone(&serving.metrics);
    let running = format!("}} {}", calls.len());
    support::wait_until("every call to be running", Duration::from_secs(30), || {
        metrics
            .render()
            .lines()
            .any(|line| line.starts_with("tg_tool_service_in_flight{") && line.ends_with(&running))
    })
    .await;
    gate.add_permits(calls.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_ready_together_share_a_batch_each_under_its_own_id() {
    let _suite = support::suite(module_path!());
    let (batches, metrics) = burst("non-persistent", "it-batch-gate", &GATE, true).await;
    assert!(
        batches.iter().any(|n| *n > 1),
        "the {CALLS} answers that became ready together went out one message each"
    );
    // The metrics count what the consumer saw.
    let sent = sample(
        &metrics,
        "tg_tool_service_batched_responses_total",
        "it-batch-gate",
    );
    assert_eq!(sent, Some(CALLS as f64), "{metrics}");
    let distinct: std::collections::BTreeSet<_> = batches.iter().collect();
    let counted = sample(
        &metrics,
        "tg_tool_service_response_batches_total",
        "it-batch-gate",
    );
    assert!(
        counted.is_some_and(|n| n >= distinct.len() as f64 && n < CALLS as f64),
        "{counted:?} batches for batch sizes {distinct:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_topic_gets_its_answers_batched_too() {
    let _suite = support::suite(module_path!());
    let (batches, _) = burst("persistent", "it-batch-durable", &DURABLE_GATE, true).await;
    assert!(batches.iter().any(|n| *n > 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_batching_off_every_answer_is_its_own_message() {
    let _suite = support::suite(module_path!());
    let (batches, metrics) = burst("non-persistent", "it-batch-alone", &ALONE_GATE, false).await;
    assert!(batches.iter().all(|n| *n == 1));
    assert!(
        !metrics.contains("tg_tool_service_response_batches_total"),
        "{metrics}"
    );
}

static POLICY_GATE: Semaphore = Semaphore::const_new(0);

/// Answers `bytes` bytes once the gate opens, on persistent topics whose
/// response topic has a lower maximum message size than the broker.
///
/// # Arguments
/// * `bytes` - How long the answer is.
#[tool_service(
    topic = "it-batch-policy",
    request_queue = "persistent://tg/request/it-batch-policy",
    response_queue = "persistent://tg/response/it-batch-policy"
)]
async fn policy_gate(bytes: usize) -> Result<String, tool_service::ToolError> {
    let _open = POLICY_GATE.acquire().await;
    Ok("x".repeat(bytes))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_over_an_unannounced_topic_policy_is_sent_again_answer_by_answer() {
    let _suite = support::suite(module_path!());
    // The handshake announces the broker's limit, not the topic's: serve
    // batches up to 128 KiB, and the broker refuses a batch over 10,000
    // bytes. Sent again alone, each answer that fits is taken; the one
    // that does not gets its own notice.
    let mut raw = RawTopic::open("persistent", "it-batch-policy").await;
    crate::oversized::limit_response_size("it-batch-policy", Some(10_000)).await;
    let serving = InProcess::start(&["it-batch-policy-service"]).await;
    let sizes: Vec<usize> = (0..8)
        .map(|n| if n == 5 { 50_000 } else { 3_000 })
        .collect();
    let calls: Vec<_> = sizes
        .iter()
        .map(|bytes| serde_json::json!({ "bytes": bytes }))
        .collect();
    send_then_open(&mut raw, &serving, &calls, &POLICY_GATE).await;
    let mut answered = HashMap::new();
    while answered.len() < sizes.len() {
        let (id, frame) = raw.receive().await;
        let id = id.expect("every answer carries its id");
        assert!(
            answered.insert(id.clone(), frame).is_none(),
            "{id} was answered twice"
        );
    }
    raw.assert_quiet("the last answer").await;
    for (n, bytes) in sizes.iter().enumerate() {
        let frame = &answered[&format!("call-{n}")];
        if *bytes > 10_000 {
            let error = frame.error.as_ref().expect("the oversized answer's notice");
            assert_eq!(error.kind(), tool_service::ToolError::SEND_FAILED);
            assert!(
                error.message().contains("Exceed maximum message size"),
                "{error:?}"
            );
        } else {
            assert_eq!(frame.response.len(), *bytes, "call-{n}: {frame:?}");
        }
    }
    let metrics = serving.metrics.render();
    assert!(
        metrics.contains(
            "tg_tool_service_send_failures_total{processor=\"it-batch-policy-service\"} 1\n"
        ),
        "{metrics}"
    );
    // A batch was refused, and its answers went again one by one: the
    // oversized one at least (with batching off the family is absent,
    // without the retry it stays 0).
    let resent = sample(
        &metrics,
        "tg_tool_service_resent_alone_total",
        "it-batch-policy",
    )
    .expect("the resent-alone counter of a service that sent batches");
    assert!(resent >= 1.0, "{resent} answers resent alone\n{metrics}");
    serving.stop().await;
    crate::oversized::limit_response_size("it-batch-policy", None).await;
}
