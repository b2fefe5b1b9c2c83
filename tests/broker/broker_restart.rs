//! A broker restart under a running `serve`: the service reconnects by
//! itself and answers again, plain and streaming services alike, with no
//! process restart. This test runs its own
//! standalone broker on other ports (via `scripts/pulsar.sh`), so restarting
//! it disturbs nothing else.

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{PrivateBroker, Replica};
use tool_service::pulsar::broker::BrokerOptions;
use tool_service::pulsar::client::ToolClient;

async fn call_once(client: &ToolClient, text: &str) -> bool {
    matches!(client.call(&json!({}), &json!({"text": text})).await, Ok(answer) if answer == text)
}

/// A whole story from the `streaming` example: every chapter's frame, in
/// order, and the final frame.
async fn story_once(client: &ToolClient, hero: &str) -> bool {
    let expected: String = (1..=3)
        .map(|chapter| format!("Chapter {chapter}: {hero} sets out again.\n"))
        .chain([format!("The end of {hero}'s 3 chapters.")])
        .collect();
    let mut chunks = 0;
    let answer = client
        .call_streaming(&json!({}), &json!({"hero": hero, "chapters": 3}), |_| {
            chunks += 1;
        })
        .await;
    matches!(answer, Ok(text) if text == expected) && chunks == 4
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

/// The first correct answer that ended after `since`.
fn first_answer_after(outcomes: &Outcomes, since: Instant) -> Instant {
    outcomes
        .lock()
        .unwrap()
        .iter()
        .filter(|outcome| outcome.ok && outcome.ended > since)
        .map(|outcome| outcome.ended)
        .min()
        .expect("an answer after the return")
}

/// `callers` tasks, each making one call after another with `call(client,
/// caller, n)` until `stop`, recording every outcome.
fn traffic<F, Fut>(
    client: ToolClient,
    callers: usize,
    stop: &Arc<AtomicBool>,
    call: F,
) -> (Outcomes, Vec<tokio::task::JoinHandle<()>>)
where
    F: Fn(Arc<ToolClient>, usize, u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    let outcomes: Outcomes = Arc::default();
    let client = Arc::new(client);
    let tasks = (0..callers)
        .map(|caller| {
            let (client, outcomes, stop, call) = (
                Arc::clone(&client),
                Arc::clone(&outcomes),
                Arc::clone(stop),
                call.clone(),
            );
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let started = Instant::now();
                    let ok = call(Arc::clone(&client), caller, n).await;
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
    (outcomes, tasks)
}

/// Once recovered, it stays recovered: every call started after the first
/// answer (and a moment for the other consumers and producers of the
/// connection) is answered. A call that started during the outage may still
/// end in its 2 s timeout afterwards.
fn assert_stays_recovered(outcomes: &Outcomes, recovered: Instant, what: &str) {
    let outcomes = outcomes.lock().unwrap();
    let failed_after: Vec<_> = outcomes
        .iter()
        .filter(|outcome| outcome.started > recovered + Duration::from_millis(500) && !outcome.ok)
        .collect();
    assert!(
        failed_after.is_empty(),
        "{what} started after recovery failed: {failed_after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reconnects_after_a_broker_restart_under_traffic() {
    let _suite = support::suite(module_path!());
    let broker = PrivateBroker::start(&[]);
    let url = broker.url();
    let metrics_port = support::free_port().to_string();
    let replica = Replica::start_at(
        &url,
        "echo",
        &["--only", "echo-service", "--metrics-port", &metrics_port],
    );
    let metrics_port: u16 = metrics_port.parse().unwrap();
    let scrape = move || support::scrape(metrics_port).1;
    let readyz = move || support::get(metrics_port, "/readyz");
    let mut storyteller = Replica::start_at(&url, "streaming", &[]);
    let options = BrokerOptions::new(&url);
    let timeout = Duration::from_secs(2);
    let client = support::client_on(&options, "non-persistent", "echo", timeout).await;
    let stories = support::client_on(&options, "non-persistent", "story", timeout).await;
    assert!(
        call_once(&client, "before").await,
        "the service answers before the restart"
    );
    assert!(
        story_once(&stories, "before").await,
        "the streaming service answers before the restart"
    );

    // Traffic all along: 4 callers, one call after another, and 2 callers
    // of the streaming service, one story after another.
    let stop = Arc::new(AtomicBool::new(false));
    let (outcomes, mut callers) = traffic(client, 4, &stop, |client, caller, n| async move {
        call_once(&client, &format!("caller {caller} call {n}")).await
    });
    let (told, storytellers) = traffic(stories, 2, &stop, |client, caller, n| async move {
        story_once(&client, &format!("hero {caller}.{n}")).await
    });
    callers.extend(storytellers);
    let began = Instant::now();
    answered_after(&outcomes, began, 20, "traffic before the restart").await;
    answered_after(&told, began, 4, "stories before the restart").await;

    let stopping = Instant::now();
    assert!(scrape().contains("tg_tool_service_broker_connected 1\n"));
    broker.run("stop");
    // The outage shows within a probe or two: gauge, consumer state and
    // readiness.
    support::wait_until(
        "the gauge to say the broker is lost",
        Duration::from_secs(15),
        || scrape().contains("tg_tool_service_broker_connected 0\n"),
    )
    .await;
    let text = scrape();
    assert!(
        text.contains(r#"tg_consumer_state{processor="echo-service",consumer="request",tg_consumer_state="running"} 0"#),
        "{text}"
    );
    let (status, body) = readyz();
    assert!(
        status.contains("503") && body.contains("broker not connected"),
        "{status}: {body}"
    );
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
    answered_after(&told, ready, 1, "a story after the broker's return").await;
    let recovered = first_answer_after(&outcomes, ready);
    let stories_recovered = first_answer_after(&told, ready);
    answered_after(&outcomes, recovered, 40, "traffic after the recovery").await;
    answered_after(&told, stories_recovered, 10, "stories after the recovery").await;
    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        caller.await.unwrap();
    }
    let count = |outcomes: &Outcomes, keep: &dyn Fn(&Outcome) -> bool| {
        outcomes.lock().unwrap().iter().filter(|o| keep(o)).count()
    };
    let answered_before = count(&outcomes, &|o| o.ok && o.ended < stopping);
    let failed = count(&outcomes, &|o| !o.ok);
    let answered_after = count(&outcomes, &|o| o.ok && o.ended >= recovered);
    let stories_before = count(&told, &|o| o.ok && o.ended < stopping);
    let stories_failed = count(&told, &|o| !o.ok);
    let stories_after = count(&told, &|o| o.ok && o.ended >= stories_recovered);
    eprintln!(
        "answered again {:.1} s after the restarted broker accepted connections, {:.1} s after \
         scripts/pulsar.sh found it ready ({:.1} s after the stop began); {answered_before} calls \
         answered before, {failed} failed during the outage, {answered_after} answered after; \
         stories again {:.1} s after it was ready: {stories_before} before, {stories_failed} \
         failed, {stories_after} after",
        recovered.saturating_duration_since(listening).as_secs_f64(),
        recovered.saturating_duration_since(ready).as_secs_f64(),
        (recovered - stopping).as_secs_f64(),
        stories_recovered
            .saturating_duration_since(ready)
            .as_secs_f64(),
    );
    assert!(answered_before > 0, "traffic flowed before the restart");
    assert!(answered_after > 0, "traffic flows after the restart");
    assert!(stories_before > 0, "stories were told before the restart");
    assert!(stories_after > 0, "stories are told after the restart");
    assert_stays_recovered(&outcomes, recovered, "calls");
    assert_stays_recovered(&told, stories_recovered, "stories");
    support::wait_until(
        "the gauge to say the broker is back",
        Duration::from_secs(15),
        || scrape().contains("tg_tool_service_broker_connected 1\n"),
    )
    .await;
    let (status, body) = readyz();
    assert!(status.contains("200"), "{status}: {body}");
    assert!(storyteller.is_running(), "the streaming replica stayed up");
    // One line for the loss, one for the return; the client's own lines of
    // each reconnection attempt are at debug.
    let (status, lines) = replica.finish();
    assert!(
        status.success(),
        "the replica stayed up and stopped cleanly: {status:?}"
    );
    let count = |needle: &str| lines.iter().filter(|line| line.contains(needle)).count();
    assert_eq!(
        count("WARN tool_service::pulsar::serve::broker_health: lost the connection to the Pulsar broker"),
        1,
        "{lines:#?}"
    );
    assert_eq!(
        count("INFO tool_service::pulsar::serve::broker_health: the connection to the Pulsar broker is back"),
        1,
        "{lines:#?}"
    );
    let client: Vec<_> = lines
        .iter()
        .filter(|line| {
            line.contains("client_log") && (line.contains(" WARN ") || line.contains(" ERROR "))
        })
        .collect();
    assert!(client.is_empty(), "{client:#?}");
}
