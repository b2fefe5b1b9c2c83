//! Our Rust client against TrustGraph's own Python `DynamicToolService`
//! (trustgraph-base 2.11.1) running the spec's joke logic, over a real Apache
//! Pulsar broker. Needs the broker and the Python peer: `scripts/test.sh`
//! provides both (`scripts/pulsar.sh start`, `scripts/install/python-peer.sh`).

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tool_service::pulsar::client::CallError;

/// The Python service, killed when dropped.
struct PythonJokeService {
    child: Child,
}

impl PythonJokeService {
    fn start() -> Self {
        let python = support::peer_python();
        let script = format!("{}/interop/py_joke_service.py", env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new(python)
            .args([
                &script,
                "--id",
                "py-joke-service",
                "-t",
                "py-joke",
                "--no-metrics",
                "--no-loki-enabled",
                "--log-level",
                "INFO",
            ])
            .args(["-p", &support::require_broker()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the Python joke service");
        let (lines, log) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let lines = lines.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = lines.send(line);
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(90);
        let mut seen = Vec::new();
        loop {
            match log.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => {
                    let started = line.contains("Tool service py-joke-service started");
                    seen.push(line);
                    if started {
                        break;
                    }
                }
                Err(_) => panic!(
                    "the Python joke service did not start:\n{}",
                    seen.join("\n")
                ),
            }
        }
        Self { child }
    }
}

impl Drop for PythonJokeService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_client_calls_trustgraphs_python_service() {
    let _suite = support::suite(module_path!());
    let _service = PythonJokeService::start();
    let client = support::client("non-persistent", "py-joke").await;

    let text = client
        .call(&json!({"style": "pun"}), &json!({"topic": "programming"}))
        .await
        .unwrap();
    assert_eq!(
        text,
        "Here's a pun for you:\n\nI'd tell you a UDP joke, but you might not get it."
    );

    let text = client
        .call(
            &json!({"style": "dad-joke"}),
            &json!({"topic": "programming"}),
        )
        .await
        .unwrap();
    assert!(text.starts_with("Here's a dad-joke for you:"), "{text}");

    let text = client
        .call(&json!({}), &json!({"topic": "food", "structured": true}))
        .await
        .unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["style"], "pun");
    assert_eq!(value["topic"], "food");

    match client.call(&json!({}), &json!({"topic": ""})).await {
        Err(CallError::Tool(error)) => {
            assert_eq!(error.kind(), "tool-service-error");
            assert_eq!(
                error.message(),
                "give a topic for the joke, e.g. programming, animals or food"
            );
        }
        other => panic!("expected the Python service's error frame, got {other:?}"),
    }

    let calls = (0..50).map(|n| {
        let client = &client;
        async move {
            let topic = format!("programming {n}");
            let text = client
                .call(&json!({"style": "one-liner"}), &json!({"topic": topic}))
                .await
                .unwrap();
            assert!(text.starts_with("Here's a one-liner for you:"), "{text}");
        }
    });
    futures_util::future::join_all(calls).await;
}
