//! Pulsar and MCP as two transports of one host, in-process, against the
//! real broker: one concurrency limit over both, and one drain.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tool_service::host::{Host, HostOptions, Transports};
use tool_service::mcp::{HttpOptions, HttpTransport};
use tool_service::pulsar::client::CallError;
use tool_service::pulsar::serve::{PulsarTransport, ServeOptions};
use tool_service::tool_service;

use crate::support;

/// Calls in the handler of `it-one-host-single` now, and the most at once.
static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);
static MOST_AT_ONCE: AtomicUsize = AtomicUsize::new(0);

/// Waits, one call at a time over every transport.
///
/// # Arguments
/// * `ms` - How long to wait.
#[tool_service(topic = "it-one-host-single", concurrency = 1)]
async fn it_one_host_single(ms: u64) -> String {
    let now = IN_HANDLER.fetch_add(1, Ordering::SeqCst) + 1;
    MOST_AT_ONCE.fetch_max(now, Ordering::SeqCst);
    let answer = wait(ms).await;
    IN_HANDLER.fetch_sub(1, Ordering::SeqCst);
    answer
}

/// Waits `ms`, counted in `running` meanwhile.
async fn wait_counted(running: &AtomicUsize, ms: u64) -> String {
    running.fetch_add(1, Ordering::SeqCst);
    let answer = wait(ms).await;
    running.fetch_sub(1, Ordering::SeqCst);
    answer
}

async fn wait(ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("waited {ms} ms")
}

/// Calls in the handler of `it-one-host-slow` now.
static SLOW_RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Waits as long as asked.
///
/// # Arguments
/// * `ms` - How long to wait.
#[tool_service(topic = "it-one-host-slow")]
async fn it_one_host_slow(ms: u64) -> String {
    wait_counted(&SLOW_RUNNING, ms).await
}

/// Calls in the handler of `it-one-host-stuck` now.
static STUCK_RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Waits as long as asked (a service of its own, for the test that
/// abandons its calls).
///
/// # Arguments
/// * `ms` - How long to wait.
#[tool_service(topic = "it-one-host-stuck")]
async fn it_one_host_stuck(ms: u64) -> String {
    wait_counted(&STUCK_RUNNING, ms).await
}

/// One HTTP/1.1 request on a connection of its own: the JSON-RPC answer.
async fn mcp_post(address: std::net::SocketAddr, body: &Value) -> Value {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = body.to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let payload = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    let json = payload
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .filter(|data| !data.is_empty())
        .unwrap_or(payload);
    serde_json::from_str(json.trim()).unwrap_or_else(|error| panic!("{error}: {response}"))
}

/// An MCP client's call of `tool`: its text, and whether it is an error.
async fn mcp_call(address: std::net::SocketAddr, tool: &str, arguments: Value) -> (String, bool) {
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": tool, "arguments": arguments}});
    let answer = mcp_post(address, &call).await;
    let result = &answer["result"];
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned();
    (text, result["isError"] == json!(true))
}

/// Both transports of one host serving `only`, until `stop` fires: the
/// MCP address, and the run's outcome.
async fn serve_both(
    only: &str,
    grace: Duration,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> (
    std::net::SocketAddr,
    tokio::task::JoinHandle<Result<tool_service::host::Served, tool_service::host::RunError>>,
) {
    let registry = Arc::new(tool_service::Registry::collect().unwrap());
    let host_options = {
        let mut options = HostOptions::default();
        options.only = vec![only.to_owned()];
        options.grace_period = grace;
        options
    };
    let host = Host::new(registry, &host_options).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let run = Transports::new(host)
        .with(PulsarTransport::new(ServeOptions::new(
            support::require_broker(),
        )))
        .with(HttpTransport::new(listener, HttpOptions::default()))
        .run(async {
            let _ = stop.await;
        });
    (address, tokio::spawn(run))
}

/// A Pulsar client of `topic`, once the service answers on it.
async fn pulsar_client(topic: &str, ms: u64) -> tool_service::pulsar::client::ToolClient {
    let options = tool_service::pulsar::broker::BrokerOptions::new(support::require_broker());
    let client =
        support::client_on(&options, "non-persistent", topic, Duration::from_secs(2)).await;
    // Until the service has subscribed (a request before that is dropped).
    let deadline = Instant::now() + Duration::from_secs(30);
    while client.call(&json!({}), &json!({"ms": ms})).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "the service did not answer on Pulsar"
        );
    }
    client.with_timeout(Duration::from_secs(30))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_concurrency_limit_holds_over_pulsar_and_mcp_called_at_once() {
    let _suite = support::suite(module_path!());
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let (address, run) = serve_both(
        "it-one-host-single-service",
        Duration::from_secs(30),
        stopped,
    )
    .await;
    let client = Arc::new(pulsar_client("it-one-host-single", 1).await);
    MOST_AT_ONCE.store(0, Ordering::SeqCst);
    // Three callers on each transport at the same moment: each waits for
    // the one permit (over Pulsar in the read-ahead, over MCP in arrival
    // order), and every one is answered.
    let started = Instant::now();
    let answers = Arc::new(Mutex::new(Vec::new()));
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..3 {
        let (client, pulsar_answers) = (Arc::clone(&client), Arc::clone(&answers));
        calls.spawn(async move {
            let answer = client.call(&json!({}), &json!({"ms": 150})).await;
            let answer = answer.map_err(|error| error.to_string());
            pulsar_answers.lock().unwrap().push(("pulsar", answer));
        });
        let answers = Arc::clone(&answers);
        calls.spawn(async move {
            let (text, failed) = mcp_call(address, "it-one-host-single", json!({"ms": 150})).await;
            let answer = if failed { Err(text) } else { Ok(text) };
            answers.lock().unwrap().push(("mcp", answer));
        });
    }
    calls.join_all().await;
    let elapsed = started.elapsed();
    let answers = answers.lock().unwrap().clone();
    assert_eq!(answers.len(), 6);
    for (transport, answer) in &answers {
        assert_eq!(answer.as_deref(), Ok("waited 150 ms"), "over {transport}");
    }
    assert_eq!(
        MOST_AT_ONCE.load(Ordering::SeqCst),
        1,
        "two calls were in the handler at once"
    );
    assert!(
        elapsed >= Duration::from_millis(6 * 150),
        "six calls of 150 ms, one at a time, took {elapsed:?}"
    );
    stop.send(()).unwrap();
    let served = run.await.unwrap().unwrap();
    assert_eq!(served.abandoned, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_drain_refuses_alike_on_both_transports_and_waits_within_one_grace_period() {
    let _suite = support::suite(module_path!());
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let (address, run) =
        serve_both("it-one-host-slow-service", Duration::from_secs(20), stopped).await;
    let client = Arc::new(pulsar_client("it-one-host-slow", 1).await);
    // One call in flight on each transport.
    let over_pulsar = {
        let client = Arc::clone(&client);
        tokio::spawn(async move { client.call(&json!({}), &json!({"ms": 1500})).await })
    };
    let over_mcp =
        tokio::spawn(
            async move { mcp_call(address, "it-one-host-slow", json!({"ms": 1500})).await },
        );
    let deadline = Instant::now() + Duration::from_secs(10);
    while SLOW_RUNNING.load(Ordering::SeqCst) < 2 {
        assert!(Instant::now() < deadline, "both calls did not start");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stopping = Instant::now();
    stop.send(()).unwrap();
    // New calls: refused on both, with the same sentence, once the drain
    // has begun (a call before it is served: 1 ms).
    let refused_mcp = loop {
        let answer = mcp_call(address, "it-one-host-slow", json!({"ms": 1})).await;
        if answer.1 {
            break answer;
        }
        assert!(
            Instant::now() < deadline,
            "the drain did not begin: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(
        refused_mcp,
        ("the service is shutting down; try again".to_owned(), true)
    );
    match client.call(&json!({}), &json!({"ms": 1})).await {
        Err(CallError::Tool(error)) => {
            assert_eq!(error.kind(), "unavailable");
            assert_eq!(error.message(), refused_mcp.0);
        }
        other => panic!("expected the drain's refusal, got {other:?}"),
    }
    // Those in flight finish, both, within the one grace period.
    assert_eq!(over_pulsar.await.unwrap().unwrap(), "waited 1500 ms");
    assert_eq!(
        over_mcp.await.unwrap(),
        ("waited 1500 ms".to_owned(), false)
    );
    let served = run.await.unwrap().unwrap();
    assert_eq!(served.abandoned, 0);
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "{:?}",
        stopping.elapsed()
    );
}

/// The messages of the events logged on this thread.
#[derive(Clone, Default)]
struct Logged(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Logged {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Message<'a>(&'a mut String);
        impl tracing::field::Visit for Message<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    *self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = String::new();
        event.record(&mut Message(&mut message));
        self.0.lock().unwrap().push(message);
    }
}

#[test]
fn calls_abandoned_on_both_transports_are_one_grace_period_and_one_warning() {
    let _suite = support::suite(module_path!());
    use tracing_subscriber::layer::SubscriberExt;
    // This thread's subscriber, on a runtime of this thread only: every
    // task of the host, its transports and the handlers logs here.
    let logged = Logged::default();
    let _default =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(logged.clone()));
    tracing::callsite::rebuild_interest_cache();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let (address, run) =
            serve_both("it-one-host-stuck-service", Duration::from_secs(1), stopped).await;
        let client = Arc::new(pulsar_client("it-one-host-stuck", 1).await);
        let running = STUCK_RUNNING.load(Ordering::SeqCst);
        let _over_pulsar = {
            let client = Arc::clone(&client);
            tokio::spawn(async move { client.call(&json!({}), &json!({"ms": 60_000})).await })
        };
        let _over_mcp = tokio::spawn(async move {
            mcp_call(address, "it-one-host-stuck", json!({"ms": 60_000})).await
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while STUCK_RUNNING.load(Ordering::SeqCst) < running + 2 {
            assert!(Instant::now() < deadline, "both calls did not start");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let stopping = Instant::now();
        stop.send(()).unwrap();
        let served = run.await.unwrap().unwrap();
        let took = stopping.elapsed();
        assert_eq!(served.abandoned, 2, "one call of each transport");
        assert!(
            took >= Duration::from_secs(1) && took < Duration::from_secs(5),
            "one grace period of 1 s for both: {took:?}"
        );
    });
    let logged = logged.0.lock().unwrap().clone();
    let warnings: Vec<_> = logged
        .iter()
        .filter(|message| message.starts_with("grace period over"))
        .collect();
    assert_eq!(warnings.len(), 1, "{logged:#?}");
    let stopping = logged
        .iter()
        .filter(|message| message.starts_with("stopping: finishing calls in flight"))
        .count();
    assert_eq!(stopping, 1, "{logged:#?}");
}
