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

/// When each call of a steady stream of calls ended, and whether it was
/// answered correctly.
type Outcomes = Arc<Mutex<Vec<(Instant, bool)>>>;

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
                    let ok = call_once(&client, &format!("caller {caller} call {n}")).await;
                    outcomes.lock().unwrap().push((Instant::now(), ok));
                    if !ok {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;

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
    let recovered = loop {
        let first = outcomes
            .lock()
            .unwrap()
            .iter()
            .find(|(at, ok)| *ok && *at > ready)
            .map(|(at, _)| *at);
        if let Some(at) = first {
            break at;
        }
        assert!(
            ready.elapsed() < Duration::from_secs(90),
            "no answer within 90 s of the broker's return"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        caller.await.unwrap();
    }
    let outcomes = outcomes.lock().unwrap();
    let answered_before = outcomes
        .iter()
        .filter(|(at, ok)| *ok && *at < stopping)
        .count();
    let failed = outcomes.iter().filter(|(_, ok)| !ok).count();
    let answered_after = outcomes
        .iter()
        .filter(|(at, ok)| *ok && *at >= recovered)
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
    // Once recovered, it stays recovered.
    assert!(
        outcomes
            .iter()
            .filter(|(at, _)| *at > recovered + Duration::from_millis(500))
            .all(|(_, ok)| *ok),
        "calls failed after recovery"
    );
    assert!(replica.is_running(), "the replica stayed up");
}
