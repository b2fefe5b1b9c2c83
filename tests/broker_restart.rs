//! A broker restart under a running `serve`: the service reconnects by
//! itself and answers again, with no process restart. This test runs its own
//! standalone broker on other ports (via `scripts/pulsar.sh`), so restarting
//! it disturbs nothing else.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use support::Replica;
use tool_service::broker::BrokerOptions;
use tool_service::client::ToolClient;

const PORT: &str = "16650";
const URL: &str = "pulsar://127.0.0.1:16650";

/// The private broker; stopped when dropped.
struct Broker;

impl Broker {
    fn run(action: &str) {
        let script = format!("{}/scripts/pulsar.sh", env!("CARGO_MANIFEST_DIR"));
        let output = Command::new("bash")
            .args([&script, action])
            .env("PULSAR_PORT", PORT)
            .env("PULSAR_HTTP_PORT", "18080")
            .env("PULSAR_BOOKIE_PORT", "13181")
            .env("PULSAR_DATA", "/tmp/tool-service-pulsar-restart-test")
            .output()
            .expect("run scripts/pulsar.sh");
        assert!(
            output.status.success(),
            "scripts/pulsar.sh {action} failed (it needs Java 17 and Maven, see README):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn start() -> Self {
        Self::run("start");
        Self
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        Self::run("stop");
    }
}

async fn call_once(client: &ToolClient, text: &str) -> bool {
    matches!(client.call(&json!({}), &json!({"text": text})).await, Ok(answer) if answer == text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reconnects_after_a_broker_restart() {
    let _broker = Broker::start();
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

    Broker::run("stop");
    Broker::run("start");
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
