//! `serve` as users run it: example binaries as separate processes on a real
//! Apache Pulsar broker. Needs a broker: `scripts/pulsar.sh start`.

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};
use support::Replica;
use tool_service::pulsar::client::ToolClient;

async fn client(topic: &str) -> ToolClient {
    support::client("non-persistent", topic).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_one_subscription_split_the_load() {
    let _suite = support::suite(module_path!());
    const REQUESTS: usize = 200;
    let first = Replica::start("echo", &["--only", "whoami-service", "--concurrency", "4"]);
    let second = Replica::start("echo", &["--only", "whoami-service", "--concurrency", "4"]);
    let client = client("whoami").await;
    let calls = (0..REQUESTS).map(|_| async {
        let text = client.call(&json!({}), &json!({})).await.unwrap();
        serde_json::from_str::<Value>(&text).unwrap()
    });
    let answers = futures_util::future::join_all(calls).await;
    let mut by_pid: HashMap<u64, usize> = HashMap::new();
    let mut ids = std::collections::HashSet::new();
    for answer in &answers {
        *by_pid.entry(answer["pid"].as_u64().unwrap()).or_default() += 1;
        assert!(
            ids.insert(answer["request_id"].as_str().unwrap().to_owned()),
            "an id answered twice"
        );
    }
    assert_eq!(ids.len(), REQUESTS);
    let pids = [u64::from(first.child.id()), u64::from(second.child.id())];
    assert_eq!(
        by_pid.keys().filter(|pid| pids.contains(pid)).count(),
        2,
        "both replicas served: {by_pid:?}"
    );
    assert_eq!(by_pid.values().sum::<usize>(), REQUESTS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_in_flight_requests_finish_and_answer() {
    let _suite = support::suite(module_path!());
    const REQUESTS: usize = 20;
    let port = support::free_port();
    let port_text = port.to_string();
    let mut replica = Replica::start(
        "echo",
        &[
            "--only",
            "echo-service",
            "--grace-period",
            "20",
            "--metrics-port",
            &port_text,
        ],
    );
    let client = client("echo").await;
    let calls = (0..REQUESTS).map(|n| {
        let client = &client;
        async move {
            let text = format!("slow {n}");
            client
                .call(&json!({}), &json!({"text": text, "delay_ms": 1500}))
                .await
                .map(|answer| (answer, text))
        }
    });
    let all = futures_util::future::join_all(calls);
    tokio::pin!(all);
    // Once every request is in its handler (1.5 s each), ask the replica to
    // stop.
    let in_flight = format!(r#"tg_tool_service_in_flight{{processor="echo-service"}} {REQUESTS}"#);
    let all_running = support::wait_until("every request running", Duration::from_secs(30), || {
        support::scrape(port)
            .1
            .lines()
            .any(|line| line == in_flight)
    });
    let answers = tokio::select! {
        answers = &mut all => panic!("answered before the stop: {answers:?}"),
        () = all_running => {
            replica.signal("TERM");
            all.await
        }
    };
    for answer in answers {
        let (answer, text) = answer.expect("an in-flight request was answered");
        assert_eq!(answer, text);
    }
    let lines = replica.wait_for_log("stopped", Duration::from_secs(30));
    assert!(
        lines.iter().any(|line| line.contains("shutdown requested")),
        "{lines:#?}"
    );
    let status = replica.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn an_unreachable_broker_is_retried_with_backoff_until_shutdown() {
    let _suite = support::suite(module_path!());
    // Nothing listens on port 9; `serve` must keep retrying (and say so
    // once at WARN, then at debug), and still stop cleanly when asked.
    let mut replica = Replica::spawn_at(
        "pulsar://127.0.0.1:9",
        "echo",
        &["--only", "echo-service", "--log-level", "debug"],
    );
    let lines = replica.wait_for_log(
        "Pulsar broker not reachable; retrying",
        Duration::from_secs(30),
    );
    assert!(
        lines.iter().any(|line| line.contains("127.0.0.1:9")),
        "{lines:#?}"
    );
    replica.wait_for_log(
        "Pulsar broker still not reachable; retrying",
        Duration::from_secs(30),
    );
    let lines = replica.lines_so_far();
    let warnings: Vec<_> = lines
        .iter()
        .filter(|line| line.contains(" WARN "))
        .collect();
    assert_eq!(warnings.len(), 1, "{lines:#?}");
    assert!(replica.is_running());
    replica.signal("TERM");
    let status = replica.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_handler_is_answered_timeout_and_frees_its_slot() {
    let _suite = support::suite(module_path!());
    // One slot, so the next request is only served once the hung one is gone;
    // the command line's timeout wins over the attribute's 2 s.
    let _replica = Replica::start(
        "echo",
        &[
            "--only",
            "wait-service",
            "--concurrency",
            "1",
            "--timeout",
            "wait-service=300ms",
        ],
    );
    let client = client("wait").await;
    let started = std::time::Instant::now();
    let hung = client.call(&json!({}), &json!({"ms": 600_000})).await;
    let elapsed = started.elapsed();
    match hung {
        Err(tool_service::pulsar::client::CallError::Tool(error)) => {
            assert_eq!(error.kind(), "timeout", "{error:?}");
            assert_eq!(
                error.message(),
                "the tool handler did not finish within 300ms and was cancelled"
            );
        }
        other => panic!("expected a timeout error frame, got {other:?}"),
    }
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(20),
        "answered after {elapsed:?}"
    );
    // The slot is free again: a quick request is answered.
    let answer = client
        .call(&json!({}), &json!({"ms": 1}))
        .await
        .expect("the next request is served");
    assert_eq!(answer, "waited 1 ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_a_killed_replica_held_are_redelivered_and_answered_once() {
    let _suite = support::suite(module_path!());
    const REQUESTS: usize = 40;
    let port = support::free_port();
    let port_text = port.to_string();
    let doomed = Replica::start(
        "echo",
        &[
            "--only",
            "durable-echo-service",
            "--metrics-port",
            &port_text,
        ],
    );
    let survivor = Replica::start("echo", &["--only", "durable-echo-service"]);
    // A second subscription sees every response frame, to count them by id.
    let mut watch = support::RawTopic::open("persistent", "durable-echo").await;
    let client = support::client("persistent", "durable-echo").await;
    let calls = (0..REQUESTS).map(|n| {
        let client = &client;
        async move {
            let text = format!("durable {n}");
            let answer = client
                .call(&json!({}), &json!({"text": text, "delay_ms": 4000}))
                .await;
            (text, answer)
        }
    });
    // Killed while it holds requests it has not answered (each takes 4 s:
    // room for a loaded machine's scrapes, since a request the replica
    // answered before its kill but whose acknowledgement died with it is
    // redelivered and answered twice, as at-least-once delivery allows).
    let kill = async {
        let in_flight = r#"tg_tool_service_in_flight{processor="durable-echo-service"}"#;
        support::wait_until(
            "the doomed replica holds requests",
            Duration::from_secs(30),
            || {
                support::scrape(port).1.lines().any(|line| {
                    line.strip_prefix(in_flight)
                        .and_then(|value| value.trim().parse::<f64>().ok())
                        .is_some_and(|value| value >= 1.0)
                })
            },
        )
        .await;
        doomed.signal("KILL");
    };
    let (answers, ()) = tokio::join!(futures_util::future::join_all(calls), kill);
    for (text, answer) in answers {
        assert_eq!(answer.expect("every request is answered"), text);
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    while seen.values().sum::<usize>() < REQUESTS {
        let (id, frame) = watch.receive().await;
        assert!(frame.end_of_stream && frame.error.is_none(), "{frame:?}");
        *seen.entry(id.unwrap()).or_default() += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, count)| **count > 1).collect();
    assert_eq!(
        seen.len(),
        REQUESTS,
        "every id answered once; answered more than once: {twice:?}"
    );
    watch.assert_quiet("the last answer").await;
    drop(survivor);
}
