//! A broker restart under a running `serve`: the service reconnects by
//! itself and answers again, with no process restart. This test runs its own
//! standalone broker on other ports (via `scripts/pulsar.sh`), so restarting
//! it disturbs nothing else.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{PrivateBroker, Replica};
use tool_service::broker::BrokerOptions;
use tool_service::client::ToolClient;

async fn call_once(client: &ToolClient, text: &str) -> bool {
    matches!(client.call(&json!({}), &json!({"text": text})).await, Ok(answer) if answer == text)
}

/// When each call of a steady stream of calls started and ended, and
/// whether it was answered correctly.
type Outcomes = Arc<Mutex<Vec<Outcome>>>;

#[derive(Debug, Clone, Copy)]
struct Outcome {
    started: Instant,
    ended: Instant,
    ok: bool,
}

/// Waits until `count` calls that ended after `since` were answered.
async fn answered_after(outcomes: &Outcomes, since: Instant, count: usize, what: &str) {
    support::wait_until(what, Duration::from_secs(90), || {
        outcomes
            .lock()
            .unwrap()
            .iter()
            .filter(|outcome| outcome.ok && outcome.ended > since)
            .count()
            >= count
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reconnects_after_a_broker_restart_under_traffic() {
    let broker = PrivateBroker::start(&[]);
    let url = broker.url();
    let mut replica = Replica::start_at(&url, "echo", &["--only", "echo-service"]);
    let client = support::client_on(
        &BrokerOptions::new(&url),
        "non-persistent",
        "echo",
        Duration::from_secs(2),
    )
    .await;
    assert!(
        call_once(&client, "before").await,
        "the service answers before the restart"
    );

    // Traffic all along: 4 callers, one call after another.
    let outcomes: Outcomes = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let client = Arc::new(client);
    let callers: Vec<_> = (0..4)
        .map(|caller| {
            let (client, outcomes, stop) = (
                Arc::clone(&client),
                Arc::clone(&outcomes),
                Arc::clone(&stop),
            );
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let started = Instant::now();
                    let ok = call_once(&client, &format!("caller {caller} call {n}")).await;
                    outcomes.lock().unwrap().push(Outcome {
                        started,
                        ended: Instant::now(),
                        ok,
                    });
                    if !ok {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            })
        })
        .collect();
    let began = Instant::now();
    answered_after(&outcomes, began, 20, "traffic before the restart").await;

    let stopping = Instant::now();
    broker.run("stop");
    // When the restarted broker first accepts connections.
    let port = broker.port;
    let listening = std::thread::spawn(move || loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break Instant::now();
        }
        std::thread::sleep(Duration::from_millis(10));
    });
    broker.run("start");
    let ready = Instant::now();
    let listening = listening.join().unwrap();
    // Until answers come again, then a little more traffic.
    answered_after(&outcomes, ready, 1, "an answer after the broker's return").await;
    let recovered = outcomes
        .lock()
        .unwrap()
        .iter()
        .filter(|outcome| outcome.ok && outcome.ended > ready)
        .map(|outcome| outcome.ended)
        .min()
        .expect("an answer after the return");
    answered_after(&outcomes, recovered, 40, "traffic after the recovery").await;
    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        caller.await.unwrap();
    }
    let outcomes = outcomes.lock().unwrap();
    let answered_before = outcomes
        .iter()
        .filter(|outcome| outcome.ok && outcome.ended < stopping)
        .count();
    let failed = outcomes.iter().filter(|outcome| !outcome.ok).count();
    let answered_after = outcomes
        .iter()
        .filter(|outcome| outcome.ok && outcome.ended >= recovered)
        .count();
    eprintln!(
        "answered again {:.1} s after the restarted broker accepted connections, {:.1} s after \
         scripts/pulsar.sh found it ready ({:.1} s after the stop began); {answered_before} calls \
         answered before, {failed} failed during the outage, {answered_after} answered after",
        recovered.saturating_duration_since(listening).as_secs_f64(),
        recovered.saturating_duration_since(ready).as_secs_f64(),
        (recovered - stopping).as_secs_f64(),
    );
    assert!(answered_before > 0, "traffic flowed before the restart");
    assert!(answered_after > 0, "traffic flows after the restart");
    // Once recovered, it stays recovered: every call started after the
    // first answer (and a moment for the other consumers and producers of
    // the connection) is answered. A call that started during the outage
    // may still end in its 2 s timeout afterwards.
    let failed_after: Vec<_> = outcomes
        .iter()
        .filter(|outcome| outcome.started > recovered + Duration::from_millis(500) && !outcome.ok)
        .collect();
    assert!(
        failed_after.is_empty(),
        "calls started after recovery failed: {failed_after:?}"
    );
    assert!(replica.is_running(), "the replica stayed up");
}
