//! How many requests `serve` takes on, and what happens to them at shutdown:
//! `concurrency` is a bound, a persistent topic keeps what a replica has no
//! room for, queued requests are refused `unavailable` at shutdown, and the
//! grace period abandons what still runs. Every wait is on an event or on
//! state the broker or the service reports, never a fixed sleep. Needs a
//! broker: `scripts/pulsar.sh start`.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::{Notify, Semaphore};
use tool_service::pulsar::client::CallError;
use tool_service::tool_service;

/// Held by the tests that serve the echo example's `wait` service: on one
/// Shared subscription, a request may go to another test's replica.
static WAIT_TOPIC: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

static GAUGE_RUNNING: AtomicUsize = AtomicUsize::new(0);
static GAUGE_MOST: AtomicUsize = AtomicUsize::new(0);

/// Takes a while, counting how many requests run at once.
///
/// # Arguments
/// * `n` - A number.
#[tool_service(topic = "it-flow-gauge", concurrency = 3)]
async fn it_flow_gauge(n: u32) -> String {
    let now = GAUGE_RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
    GAUGE_MOST.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(100)).await;
    GAUGE_RUNNING.fetch_sub(1, Ordering::SeqCst);
    n.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_bounds_the_requests_running_at_once() {
    let _suite = support::suite(module_path!());
    let _served = support::InProcess::start(&["it-flow-gauge-service"]).await;
    let client = support::client("non-persistent", "it-flow-gauge").await;
    let calls = (0..12).map(|n| {
        let client = &client;
        async move { (n, client.call(&json!({}), &json!({"n": n})).await) }
    });
    for (n, answer) in futures_util::future::join_all(calls).await {
        assert_eq!(answer.unwrap(), n.to_string());
    }
    assert_eq!(
        GAUGE_MOST.load(Ordering::SeqCst),
        3,
        "12 requests at once on a service of concurrency 3"
    );
}

/// Answers, at most four times a minute.
///
/// # Arguments
/// * `n` - A number.
#[tool_service(topic = "it-flow-limited", rate = "4/m")]
async fn it_flow_limited(n: u32) -> String {
    n.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_over_the_rate_limit_is_partly_refused_with_when_to_retry() {
    let _suite = support::suite(module_path!());
    let served = support::InProcess::start(&["it-flow-limited-service"]).await;
    let client = support::client("non-persistent", "it-flow-limited").await;
    let calls = (0..7).map(|n| {
        let client = &client;
        async move { client.call(&json!({}), &json!({"n": n})).await }
    });
    let (mut answered, mut refused) = (0, 0);
    for answer in futures_util::future::join_all(calls).await {
        match answer {
            Ok(_) => answered += 1,
            Err(CallError::Tool(error)) => {
                refused += 1;
                assert_eq!(error.kind(), "rate-limited", "{error:?}");
                assert!(
                    error.message().starts_with(
                        "the service is called more often than its limit of 4 calls per minute; try again in "
                    ),
                    "{error:?}"
                );
            }
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!((answered, refused), (4, 3));
    let metrics = served.metrics.render();
    assert!(
        metrics.contains(
            "tg_tool_service_errors_total{processor=\"it-flow-limited-service\",type=\"rate-limited\"} 3\n"
        ),
        "{metrics}"
    );
    let report = served.stop().await["it-flow-limited-service"];
    assert_eq!((report.answered, report.refused), (7, 3));
}

/// Slow, on persistent topics.
///
/// # Arguments
/// * `n` - A number.
#[tool_service(
    topic = "it-flow-durable",
    request_queue = "persistent://tg/request/it-flow-durable",
    response_queue = "persistent://tg/response/it-flow-durable",
    concurrency = 1
)]
async fn it_flow_durable(n: u32) -> String {
    tokio::time::sleep(Duration::from_millis(30)).await;
    n.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_topic_keeps_what_the_replica_has_no_room_for() {
    let _suite = support::suite(module_path!());
    // One running, one waiting: on a non-persistent topic the rest of a burst
    // is refused `overloaded` (transport.rs); here the broker keeps it.
    let _served = support::InProcess::start_with(&["it-flow-durable-service"], |_, options| {
        options.receive_window = Some(1);
    })
    .await;
    let client = support::client("persistent", "it-flow-durable").await;
    let calls = (0..10).map(|n| {
        let client = &client;
        async move { (n, client.call(&json!({}), &json!({"n": n})).await) }
    });
    for (n, answer) in futures_util::future::join_all(calls).await {
        assert_eq!(
            answer.expect("every request of the burst is served"),
            n.to_string()
        );
    }
}

/// Holds a handler until the test lets it finish.
struct Hold {
    started: Notify,
    release: Semaphore,
}

impl Hold {
    const fn new() -> Self {
        Self {
            started: Notify::const_new(),
            release: Semaphore::const_new(0),
        }
    }

    /// Says it started, then waits for a release; answers `n`.
    async fn run(&self, n: u32) -> String {
        self.started.notify_one();
        self.release
            .acquire()
            .await
            .expect("the semaphore stays open")
            .forget();
        n.to_string()
    }

    /// Waits until a handler has started.
    async fn started(&self) {
        tokio::time::timeout(Duration::from_secs(30), self.started.notified())
            .await
            .expect("the first request starts");
    }

    /// Lets `n` handlers finish.
    fn release(&self, n: usize) {
        self.release.add_permits(n);
    }
}

static HOLD: Hold = Hold::new();

/// Runs until the test lets it finish.
///
/// # Arguments
/// * `n` - A number.
#[tool_service(topic = "it-flow-hold", concurrency = 1)]
async fn it_flow_hold(n: u32) -> String {
    HOLD.run(n).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_shutdown_queued_requests_are_refused_and_the_running_one_finishes() {
    let _suite = support::suite(module_path!());
    let served = support::InProcess::start(&["it-flow-hold-service"]).await;
    let client = Arc::new(support::client("non-persistent", "it-flow-hold").await);
    let call = |n: u32| {
        let client = Arc::clone(&client);
        tokio::spawn(async move { client.call(&json!({}), &json!({"n": n})).await })
    };
    let running = call(0);
    HOLD.started().await;
    let queued: Vec<_> = (1..=3).map(call).collect();
    // All four are with the service: one running, three waiting for its slot.
    support::wait_until(
        "the broker delivers the three queued requests",
        Duration::from_secs(30),
        || {
            support::delivered(
                "non-persistent://tg/request/it-flow-hold",
                "it-flow-hold-service-request",
            ) >= 4
        },
    )
    .await;
    let stopping = tokio::spawn(served.stop());
    for answer in queued {
        match answer.await.unwrap() {
            Err(CallError::Tool(error)) => {
                assert_eq!(error.kind(), "unavailable", "{error:?}");
                assert_eq!(error.message(), "the service is shutting down; try again");
            }
            other => panic!("a queued request at shutdown: {other:?}"),
        }
    }
    // The running request still finishes and is answered, within the grace
    // period.
    HOLD.release(1);
    assert_eq!(running.await.unwrap().unwrap(), "0");
    let report = stopping.await.unwrap()["it-flow-hold-service"];
    assert_eq!(
        (report.answered, report.refused, report.abandoned),
        (4, 3, 0)
    );
}

static STUCK_STARTED: Notify = Notify::const_new();

/// Never finishes.
#[tool_service(topic = "it-flow-stuck")]
async fn it_flow_stuck() -> String {
    STUCK_STARTED.notify_one();
    std::future::pending().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grace_period_abandons_what_still_runs() {
    let _suite = support::suite(module_path!());
    let served = support::InProcess::start_with(&["it-flow-stuck-service"], |host, _| {
        host.grace_period = Duration::from_millis(300);
    })
    .await;
    let client = support::client_on(
        &tool_service::pulsar::broker::BrokerOptions::new(support::require_broker()),
        "non-persistent",
        "it-flow-stuck",
        Duration::from_secs(3),
    )
    .await;
    let nothing = json!({});
    let call = client.call(&nothing, &nothing);
    let stop = async {
        tokio::time::timeout(Duration::from_secs(30), STUCK_STARTED.notified())
            .await
            .expect("the request starts");
        tokio::time::timeout(Duration::from_secs(10), served.stop())
            .await
            .expect("the grace period bounds the stop")
    };
    let (answer, reports) = tokio::join!(call, stop);
    let report = reports["it-flow-stuck-service"];
    assert_eq!((report.answered, report.abandoned), (0, 1));
    // Abandoned: not answered (and, on a persistent topic, not acknowledged).
    assert!(matches!(answer, Err(CallError::Timeout(_))), "{answer:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exits_1_when_the_grace_period_abandons_a_request() {
    let _suite = support::suite(module_path!());
    let _topic = WAIT_TOPIC.lock().await;
    let port = support::free_port();
    let port_text = port.to_string();
    let replica = support::Replica::start(
        "echo",
        &[
            "--only",
            "wait-service",
            "--timeout",
            "wait-service=10m",
            "--grace-period",
            "1",
            "--metrics-port",
            &port_text,
        ],
    );
    let client = support::client("non-persistent", "wait").await;
    let call = tokio::spawn(async move { client.call(&json!({}), &json!({"ms": 600_000})).await });
    let in_flight = r#"tg_tool_service_in_flight{processor="wait-service"} 1"#;
    support::wait_until("the request runs", Duration::from_secs(30), || {
        support::scrape(port)
            .1
            .lines()
            .any(|line| line == in_flight)
    })
    .await;
    replica.signal("TERM");
    let (status, lines) = tokio::task::spawn_blocking(move || replica.wait_exit())
        .await
        .unwrap();
    call.abort();
    assert_eq!(status.code(), Some(1), "{}", lines.join("\n"));
    for expected in [
        "grace period over: abandoning calls still running",
        "1 requests were still running when the grace period ended",
    ] {
        assert!(
            lines.iter().any(|line| line.contains(expected)),
            "no line with {expected:?} in\n{}",
            lines.join("\n")
        );
    }
}

static DURABLE_HOLD: Hold = Hold::new();

/// Runs until the test lets it finish, on persistent topics.
///
/// # Arguments
/// * `n` - A number.
#[tool_service(
    topic = "it-flow-durable-hold",
    request_queue = "persistent://tg/request/it-flow-durable-hold",
    response_queue = "persistent://tg/response/it-flow-durable-hold",
    concurrency = 1
)]
async fn it_flow_durable_hold(n: u32) -> String {
    DURABLE_HOLD.run(n).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_shutdown_queued_requests_on_a_persistent_topic_go_back_to_the_broker() {
    let _suite = support::suite(module_path!());
    const ID: &str = "it-flow-durable-hold-service";
    // Requests an earlier run left queued (it failed) would be served first.
    let (status, body) = support::admin(
        "POST",
        &format!("/admin/v2/persistent/tg/request/it-flow-durable-hold/subscription/{ID}-request/skip_all"),
        "",
    );
    assert!(
        [" 204", " 404"].iter().any(|code| status.contains(code)),
        "clearing the backlog: {status} {body}"
    );
    let served = support::InProcess::start(&[ID]).await;
    let client = Arc::new(support::client("persistent", "it-flow-durable-hold").await);
    let call = |n: u32| {
        let client = Arc::clone(&client);
        tokio::spawn(async move { client.call(&json!({}), &json!({"n": n})).await })
    };
    let running = call(0);
    DURABLE_HOLD.started().await;
    let queued: Vec<_> = (1..=3).map(call).collect();
    let before = support::delivered(
        "persistent://tg/request/it-flow-durable-hold",
        &format!("{ID}-request"),
    );
    support::wait_until(
        "the broker delivers the three queued requests",
        Duration::from_secs(30),
        || {
            support::delivered(
                "persistent://tg/request/it-flow-durable-hold",
                &format!("{ID}-request"),
            ) >= before.max(4)
        },
    )
    .await;
    // The running request finishes within the grace period; the queued ones
    // are returned to the broker, not answered.
    let stopping = tokio::spawn(served.stop());
    DURABLE_HOLD.release(1);
    assert_eq!(running.await.unwrap().unwrap(), "0");
    let report = stopping.await.unwrap()[ID];
    assert_eq!(
        (report.answered, report.refused, report.abandoned),
        (1, 0, 0)
    );
    assert!(queued.iter().all(|call| !call.is_finished()));
    // The next replica (here: the same service started again) gets them.
    let _again = support::InProcess::start(&[ID]).await;
    DURABLE_HOLD.release(3);
    for (n, answer) in (1..=3).zip(queued) {
        assert_eq!(answer.await.unwrap().unwrap(), n.to_string());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receive_window_and_worker_threads_from_the_command_line() {
    let _suite = support::suite(module_path!());
    let _topic = WAIT_TOPIC.lock().await;
    // One running and two waiting: of a burst of eight slow requests, the
    // rest is refused at once. One worker thread serves them all.
    let replica = support::Replica::start(
        "echo",
        &[
            "--only",
            "wait-service",
            "--concurrency",
            "1",
            "--receive-window",
            "2",
            "--worker-threads",
            "1",
        ],
    );
    let started = replica.lines_so_far();
    assert!(
        started.iter().any(|line| line.contains("worker_threads=1")),
        "--worker-threads 1: {started:?}"
    );
    let client = support::client("non-persistent", "wait").await;
    let calls = (0..8).map(|_| {
        let client = &client;
        async move { client.call(&json!({}), &json!({"ms": 300})).await }
    });
    let (mut served, mut refused) = (0, 0);
    for answer in futures_util::future::join_all(calls).await {
        match answer {
            Ok(text) => {
                assert_eq!(text, "waited 300 ms");
                served += 1;
            }
            Err(CallError::Tool(error)) if error.kind() == "overloaded" => refused += 1,
            Err(other) => panic!("not answered: {other}"),
        }
    }
    assert!(
        served >= 3,
        "one running and two waiting are served: {served}"
    );
    assert!(refused >= 1, "the rest is refused at once: {refused}");
    assert_eq!(served + refused, 8);
    let (status, _) = replica.finish();
    assert!(status.success());
}

/// The name of the thread that ran the handler.
#[tool_service(topic = "it-flow-where")]
async fn it_flow_where() -> String {
    thread_name()
}

/// Keeps the CPU busy, then names the thread that ran the handler.
///
/// # Arguments
/// * `micros` - How long to keep the CPU busy.
#[tool_service(topic = "it-flow-where-slow")]
async fn it_flow_where_slow(micros: u64) -> String {
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_micros(micros) {
        std::hint::spin_loop();
    }
    thread_name()
}

fn thread_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_owned()
}

#[test]
fn ready_requests_are_answered_by_the_loop_and_slow_ones_on_the_workers() {
    let _suite = support::suite(module_path!());
    // `serve` driven by a thread of the test's own, as `run()` drives it
    // from `main`; the runtime's worker threads have a name of their own.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("it-worker")
        .enable_all()
        .build()
        .unwrap();
    let handle = runtime.handle().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::Builder::new()
        .name(String::from("it-loop"))
        .spawn(move || {
            runtime.block_on(async {
                let registry = std::sync::Arc::new(tool_service::Registry::collect().unwrap());
                let mut options = tool_service::host::HostOptions::default();
                options.only = vec![
                    String::from("it-flow-where-service"),
                    String::from("it-flow-where-slow-service"),
                ];
                let host = tool_service::host::Host::new(registry, &options).unwrap();
                tool_service::host::Transports::new(host)
                    .with(tool_service::pulsar::serve::PulsarTransport::new(
                        tool_service::pulsar::serve::ServeOptions::new(support::require_broker()),
                    ))
                    .run(async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap()
            })
        })
        .unwrap();
    handle.block_on(async {
        let options = tool_service::pulsar::broker::BrokerOptions::new(support::require_broker());
        let fast = support::client_on(
            &options,
            "non-persistent",
            "it-flow-where",
            Duration::from_secs(2),
        )
        .await;
        // Until it has subscribed (a request before that is dropped).
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while fast.call(&json!({}), &json!({})).await.is_err() {
            assert!(std::time::Instant::now() < deadline, "serve did not answer");
        }
        let mut on_the_loop = 0;
        for _ in 0..20 {
            if fast.call(&json!({}), &json!({})).await.unwrap() == "it-loop" {
                on_the_loop += 1;
            }
        }
        // Those whose first polls stay short, which on a loaded 2-core
        // machine in a debug build is not all of them: each preempted poll
        // sends the next requests to the workers until fast ones bring the
        // average down again (`serve/gate.rs` tests the arithmetic).
        assert!(on_the_loop >= 1, "{on_the_loop} of 20 answered by the loop");
        let slow = support::client_on(
            &options,
            "non-persistent",
            "it-flow-where-slow",
            Duration::from_secs(10),
        )
        .await;
        let mut threads = Vec::new();
        for _ in 0..12 {
            threads.push(
                slow.call(&json!({}), &json!({"micros": 300}))
                    .await
                    .unwrap(),
            );
        }
        // Polled in the loop first; after a few 300 µs first polls the
        // service's requests are spawned, and stay so.
        assert_eq!(threads[0], "it-loop", "{threads:?}");
        assert!(
            threads[5..].iter().all(|name| name == "it-worker"),
            "{threads:?}"
        );
    });
    stop.send(()).unwrap();
    let served = server.join().unwrap();
    assert_eq!(served.services["it-flow-where-slow-service"].answered, 12);
}

/// The peak resident set of process `pid` so far, in MiB.
fn peak_rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().strip_suffix("kB"))
        .map(|value| value.trim().parse().unwrap())
        .expect("VmHWM in /proc/PID/status");
    kib / 1024
}

/// The issue's flood: 100 requests of 4 MB on a persistent topic, queued
/// behind a handler that sleeps 2 s. The byte budget keeps what the replica
/// holds, in its own queues and in the Pulsar client's, bounded; every
/// request is still answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_large_requests_stays_within_the_byte_budget() {
    let _suite = support::suite(module_path!());
    const REQUESTS: usize = 100;
    let replica = support::Replica::start("echo", &["--only", "durable-echo-service"]);
    let pid = replica.child.id();
    let baseline = peak_rss_mib(pid);
    let mut raw = support::RawTopic::open("persistent", "durable-echo").await;
    let text = "x".repeat(4 * 1024 * 1024);
    let payload = serde_json::to_vec(&json!({
        "user": "flood",
        "config": "{}",
        "arguments": json!({"text": text, "delay_ms": 2000}).to_string(),
    }))
    .unwrap();
    let mut receipts = Vec::with_capacity(REQUESTS);
    for n in 0..REQUESTS {
        let mut message = tool_service::pulsar::broker::pulsar::producer::Message {
            payload: payload.clone(),
            ..Default::default()
        };
        message.properties.insert("id".into(), format!("flood-{n}"));
        receipts.push(raw.producer.send_non_blocking(message).await.unwrap());
    }
    for receipt in receipts {
        receipt.await.unwrap();
    }
    let mut answered = std::collections::BTreeSet::new();
    while answered.len() < REQUESTS {
        let (id, frame) = raw.receive().await;
        let id = id.expect("an id");
        assert_eq!(frame.error, None, "{id}");
        assert_eq!(frame.response.len(), text.len(), "{id}");
        answered.insert(id);
    }
    let peak = peak_rss_mib(pid);
    let (status, lines) = replica.finish();
    assert!(status.success(), "{lines:#?}");
    eprintln!("peak RSS {peak} MiB under the flood ({baseline} MiB before it)");
    assert!(
        peak < 400,
        "the replica's peak RSS was {peak} MiB under a flood of {REQUESTS} requests of 4 MB (target: under 400 MiB)"
    );
}
