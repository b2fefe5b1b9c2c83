//! A broker restart under a running `serve`: the service reconnects by
//! itself and answers again, with no process restart. This test runs its own
//! standalone broker on other ports (via `scripts/pulsar.sh`), so restarting
//! it disturbs nothing else.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{PrivateBroker, Replica};
use tool_service::broker::BrokerOptions;
use tool_service::client::ToolClient;

const URL: &str = "pulsar://127.0.0.1:16650";

async fn call_once(client: &ToolClient, text: &str) -> bool {
    matches!(client.call(&json!({}), &json!({"text": text})).await, Ok(answer) if answer == text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reconnects_after_a_broker_restart() {
    let broker = PrivateBroker::start(16650, &[]);
    let mut replica = Replica::start_at(URL, "echo", &["--only", "echo-service"]);
    let pulsar = BrokerOptions::new(URL).connect().await.unwrap();
    let client = ToolClient::connect(
        &pulsar,
        "non-persistent://tg/request/echo",
        "non-persistent://tg/response/echo",
    )
    .await
    .unwrap()
    .with_timeout(Duration::from_secs(2));
    assert!(
        call_once(&client, "before").await,
        "the service answers before the restart"
    );

    broker.run("stop");
    broker.run("start");
    let ready = Instant::now();
    let mut attempt = 0;
    loop {
        attempt += 1;
        if call_once(&client, &format!("after {attempt}")).await {
            break;
        }
        assert!(
            ready.elapsed() < Duration::from_secs(90),
            "no answer within 90 s of the broker's return"
        );
    }
    eprintln!(
        "answered again {:.1} s after the broker was ready ({attempt} attempts)",
        ready.elapsed().as_secs_f64()
    );
    assert!(replica.is_running(), "the replica stayed up");
}
