//! `announce`, `withdraw` and `serve --announce` against a config service
//! that is not there, and against a scripted one that records every request
//! (its own workspace per test). TrustGraph's own config service and agent
//! are driven by `interop/test_agent_e2e.py`. Needs a broker:
//! `scripts/pulsar.sh start`.

use crate::support;

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};
use support::Replica;
use tool_service::pulsar::announce::{request_queue, response_queue};

/// `example ARGS…` on the test broker, to its end.
fn run(example: &str, args: &[&str]) -> Output {
    Command::new(support::example(example))
        .args(args)
        .args(["--pulsar-host", &support::require_broker()])
        .output()
        .expect("run the example")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The standard output of a command that must have succeeded.
fn succeeded(output: &Output) -> String {
    assert!(output.status.success(), "{}", text(&output.stderr));
    text(&output.stdout)
}

/// `joke withdraw` from `workspace`, which must succeed; its output.
fn withdraw(workspace: &str) -> String {
    succeeded(&run(
        "joke",
        &["withdraw", "--workspace", workspace, "--timeout", "10s"],
    ))
}

/// A stand-in for TrustGraph's config service on one workspace's queues:
/// answers `getvalues`, `put` and `delete` from a store, or every request
/// with `refusal`; records each request.
struct ScriptedConfig {
    requests: Arc<Mutex<Vec<Value>>>,
    store: Arc<Mutex<BTreeMap<(String, String), String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedConfig {
    async fn start(workspace: &str, refusal: Option<Value>) -> Self {
        let pulsar = support::connect().await;
        let mut consumer =
            tool_service::pulsar::broker::subscribe_own(&pulsar, &request_queue(workspace))
                .await
                .expect("subscribe to the config request queue");
        let mut producer = pulsar
            .producer()
            .with_topic(response_queue(workspace))
            .build()
            .await
            .expect("publish on the config response queue");
        let requests: Arc<Mutex<Vec<Value>>> = Arc::default();
        let store: Arc<Mutex<BTreeMap<(String, String), String>>> = Arc::default();
        let task = tokio::spawn({
            let (requests, store) = (Arc::clone(&requests), Arc::clone(&store));
            async move {
                while let Some(Ok(message)) = consumer.next().await {
                    let _ = consumer.ack(&message).await;
                    let id = tool_service::pulsar::broker::message_id(&message)
                        .unwrap_or_default()
                        .to_owned();
                    let request: Value = serde_json::from_slice(&message.payload.data).unwrap();
                    requests.lock().unwrap().push(request.clone());
                    let reply = match &refusal {
                        Some(error) => json!({"error": error}),
                        None => answer(&request, &mut store.lock().unwrap()),
                    };
                    let reply = tool_service::pulsar::broker::pulsar::producer::Message {
                        payload: reply.to_string().into_bytes(),
                        properties: [("id".to_owned(), id)].into(),
                        ..Default::default()
                    };
                    producer
                        .send_non_blocking(reply)
                        .await
                        .unwrap()
                        .await
                        .unwrap();
                }
            }
        });
        Self {
            requests,
            store,
            task,
        }
    }

    fn operations(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|request| request["operation"].as_str().unwrap_or("?").to_owned())
            .collect()
    }

    fn put(&self, kind: &str, key: &str, value: &Value) {
        self.store
            .lock()
            .unwrap()
            .insert((kind.into(), key.into()), value.to_string());
    }

    fn keys(&self) -> Vec<(String, String)> {
        self.store.lock().unwrap().keys().cloned().collect()
    }

    fn item(&self, kind: &str, key: &str) -> Option<Value> {
        let store = self.store.lock().unwrap();
        let text = store.get(&(kind.to_owned(), key.to_owned()))?;
        Some(serde_json::from_str(text).unwrap())
    }
}

impl Drop for ScriptedConfig {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The config service's answer to `request`, as TrustGraph 2.11.1 shapes it.
fn answer(request: &Value, store: &mut BTreeMap<(String, String), String>) -> Value {
    let empty = json!({"version": 1, "values": [], "directory": [], "config": {}, "error": null});
    match request["operation"].as_str() {
        Some("getvalues") => {
            let kind = request["type"].as_str().unwrap();
            let values: Vec<Value> = store
                .iter()
                .filter(|((item_kind, _), _)| item_kind == kind)
                .map(|((_, key), value)| json!({"type": kind, "key": key, "value": value}))
                .collect();
            json!({"version": 1, "values": values, "directory": [], "config": {}, "error": null})
        }
        Some("put") => {
            for value in request["values"].as_array().unwrap() {
                store.insert(
                    (
                        value["type"].as_str().unwrap().into(),
                        value["key"].as_str().unwrap().into(),
                    ),
                    value["value"].as_str().unwrap().into(),
                );
            }
            empty
        }
        Some("delete") => {
            for key in request["keys"].as_array().unwrap() {
                store.remove(&(
                    key["type"].as_str().unwrap().into(),
                    key["key"].as_str().unwrap().into(),
                ));
            }
            empty
        }
        _ => json!({"error": {"type": "bad-operation", "message": "Bad operation"}}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_config_service_announce_fails_within_its_timeout() {
    let _suite = support::suite(module_path!());
    let started = Instant::now();
    let output = run(
        "joke",
        &["announce", "--workspace", "it-nobody", "--timeout", "2s"],
    );
    let elapsed = started.elapsed();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(
        !text(&output.stderr).contains("does not exist"),
        "a TrustGraph config service answers on this broker (the interop suite's, still \
         running?); this test needs a broker without one: {}",
        text(&output.stderr)
    );
    assert_eq!(
        text(&output.stderr),
        "error: no TrustGraph config service answered on \
         `non-persistent://tg/request/config:it-nobody` within 2s; is the config service \
         (config-svc) running on this broker?\n"
    );
    // The timeout bounds the whole command (connecting takes a moment more).
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
}

/// The `joke` example's topic is shared: a replica of one test stopping
/// while another test calls would lose that test's request.
static JOKE_TOPIC: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_announce_keeps_serving_and_retries_while_no_config_service_answers() {
    let _suite = support::suite(module_path!());
    let _joke_topic = JOKE_TOPIC.lock().await;
    let metrics_port = support::free_port().to_string();
    let replica = Replica::start(
        "joke",
        &[
            "--announce",
            "--workspace",
            "it-later",
            "--announce-timeout",
            "500ms",
            "--metrics-port",
            &metrics_port,
        ],
    );
    let joke = support::client("non-persistent", "joke").await;
    for _ in 0..3 {
        let answer = joke
            .call(&json!({}), &json!({"topic": "animals"}))
            .await
            .unwrap();
        assert!(answer.contains("spotted"), "{answer}");
    }
    // Two attempts, with a pause between them.
    replica.wait_for_log("cannot announce yet", Duration::from_secs(30));
    replica.wait_for_log("cannot announce yet", Duration::from_secs(30));

    // Once the config service is there, the next attempt puts both items in
    // one request.
    let config = ScriptedConfig::start("it-later", None).await;
    let lines = replica.wait_for_log("announced in workspace", Duration::from_secs(60));
    assert!(
        lines
            .last()
            .unwrap()
            .contains("announced in workspace `it-later`: services joke-service; tools tell-joke"),
        "{lines:?}"
    );
    assert_eq!(
        config.keys(),
        [
            ("tool".to_owned(), "tell-joke".to_owned()),
            ("tool-service".to_owned(), "joke-service".to_owned())
        ]
    );
    assert_eq!(config.operations(), ["getvalues", "getvalues", "put"]);
    let (status, lines) = replica.finish();
    assert!(status.success(), "{}", lines.join("\n"));
    // Not withdrawn on exit unless asked.
    assert_eq!(config.operations(), ["getvalues", "getvalues", "put"]);
    assert!(
        lines.iter().all(|line| !line.contains("withdraw")),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_reply_is_quoted_and_nothing_more_is_sent() {
    let _suite = support::suite(module_path!());
    let refusal = json!({"type": "config-error", "message": "the table store is down"});
    let config = ScriptedConfig::start("it-refusing", Some(refusal)).await;
    let output = run(
        "joke",
        &["announce", "--workspace", "it-refusing", "--timeout", "10s"],
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "error: the config service refused the request: config-error: the table store is down\n"
    );
    assert_eq!(config.operations(), ["getvalues"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clash_is_refused_unless_replace_and_withdraw_takes_only_ours() {
    let _suite = support::suite(module_path!());
    let config = ScriptedConfig::start("it-clash", None).await;
    let theirs = json!({"type": "tool-service", "name": "tell-joke", "description": "Theirs",
        "service": "their-jokes", "arguments": []});
    config.put("tool", "tell-joke", &theirs);
    let announce = |extra: &[&str]| {
        let mut args = vec!["announce", "--workspace", "it-clash", "--timeout", "10s"];
        args.extend_from_slice(extra);
        run("joke", &args)
    };

    let refused = announce(&[]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        text(&refused.stderr),
        "error: tool `tell-joke` belongs to service `their-jokes`; nothing was announced (pass \
         --replace to overwrite them)\n"
    );
    assert_eq!(config.operations(), ["getvalues", "getvalues"]);
    assert_eq!(config.item("tool", "tell-joke").unwrap(), theirs);

    let replaced = succeeded(&announce(&["--replace"]));
    assert_eq!(
        replaced,
        "announced in workspace `it-clash`: services joke-service; tools tell-joke; replaced: \
         tool `tell-joke` belongs to service `their-jokes`\n"
    );
    assert_eq!(
        config.item("tool", "tell-joke").unwrap()["service"],
        "joke-service"
    );
    let puts = config.operations().iter().filter(|op| *op == "put").count();
    assert_eq!(puts, 1);

    // The same items again: nothing is written, so no agent reloads.
    let again = succeeded(&announce(&[]));
    assert_eq!(
        again,
        "already announced in workspace `it-clash`: services joke-service; tools tell-joke\n"
    );
    let puts = config.operations().iter().filter(|op| *op == "put").count();
    assert_eq!(puts, 1);

    // The same service with its queues written the other way names the
    // same topic: an update of our own item, not a clash.
    assert_eq!(
        config.item("tool-service", "joke-service").unwrap()["request-queue"],
        "request:tg:joke"
    );
    let rewritten = succeeded(&announce(&["--queue-names", "pulsar"]));
    assert_eq!(
        rewritten,
        "announced in workspace `it-clash`: services joke-service; tools tell-joke\n"
    );
    assert_eq!(
        config.item("tool-service", "joke-service").unwrap()["request-queue"],
        "non-persistent://tg/request/joke"
    );
    succeeded(&announce(&[]));
    let puts = config.operations().iter().filter(|op| *op == "put").count();
    assert_eq!(puts, 3);

    // Someone else's tool, under another name, survives the withdrawal.
    let other = json!({"type": "tool-service", "name": "their-tool", "description": "Theirs",
        "service": "their-jokes", "arguments": []});
    config.put("tool", "their-tool", &other);
    let withdrawn = withdraw("it-clash");
    assert_eq!(
        withdrawn,
        "withdrawn from workspace `it-clash`: services joke-service; tools tell-joke\n"
    );
    assert_eq!(
        config.keys(),
        [("tool".to_owned(), "their-tool".to_owned())]
    );
    let last = config.requests.lock().unwrap().last().cloned().unwrap();
    assert_eq!(
        last,
        json!({"operation": "delete", "workspace": "it-clash", "keys": [
            {"type": "tool-service", "key": "joke-service"},
            {"type": "tool", "key": "tell-joke"},
        ]})
    );
}

#[test]
fn announcing_a_streaming_tool_over_pulsar_warns_that_the_agent_sees_its_first_chunk() {
    let _suite = support::suite(module_path!());
    let announce = |extra: &[&str]| {
        let output = Command::new(support::example("streaming"))
            .args([
                "announce",
                "--dry-run",
                "--pulsar-host",
                "pulsar://127.0.0.1:9",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        text(&output.stderr)
    };
    let stderr = announce(&[]);
    assert!(
        stderr.starts_with(
            "warning: the tool `tell-story` streams (service `story-service`), and TrustGraph's agent \
             takes the first frame of a tool-service reply as the whole answer: the LLM will \
             see only the first chunk. Announce it over MCP (--mcp-url)"
        ),
        "{stderr}"
    );
    // Over MCP the result is the whole text: nothing to warn about.
    let stderr = announce(&["--mcp-url", "http://story-tools:8900/mcp"]);
    assert!(stderr.starts_with("dry run: nothing was sent"), "{stderr}");
    // Only the tools that stream are named: of echo's, `blob`.
    let output = Command::new(support::example("echo"))
        .args([
            "announce",
            "--dry-run",
            "--pulsar-host",
            "pulsar://127.0.0.1:9",
        ])
        .output()
        .unwrap();
    let warnings: Vec<_> = text(&output.stderr)
        .lines()
        .filter(|line| line.starts_with("warning: "))
        .map(|line| line.split('(').next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        warnings,
        ["warning: the tool `blob` streams "],
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn dry_run_prints_the_one_request_and_sends_nothing() {
    let _suite = support::suite(module_path!());
    // No broker is needed: nothing is sent.
    let output = Command::new(support::example("echo"))
        .args(["announce", "--dry-run", "--workspace", "team-a"])
        .args(["--pulsar-host", "pulsar://127.0.0.1:9"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    // After the warning about echo's streaming tool (see above).
    assert_eq!(
        text(&output.stderr).lines().last(),
        Some(
            "dry run: nothing was sent; the request would go to \
             non-persistent://tg/request/config:team-a"
        )
    );
    // Standard output is the request alone, ready for a pipe.
    let request: Value = serde_json::from_slice(&output.stdout).unwrap();
    let descriptors: Value = serde_json::from_slice(
        &Command::new(support::example("echo"))
            .arg("descriptors")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    // Every item of the binary, each value the item's JSON as text.
    let mut expected = Vec::new();
    for kind in ["tool-service", "tool"] {
        for (key, item) in descriptors[kind].as_object().unwrap() {
            expected.push(json!({"type": kind, "key": key, "value": item.to_string()}));
        }
    }
    assert_eq!(
        request,
        json!({"operation": "put", "workspace": "team-a", "values": expected})
    );

    let output = Command::new(support::example("echo"))
        .args(["withdraw", "--dry-run", "--only", "echo-service"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout)
            .starts_with("{\n  \"operation\": \"delete\",\n  \"workspace\": \"default\""),
        "{}",
        text(&output.stdout)
    );

    let output = Command::new(support::example("echo"))
        .args(["announce", "--only", "nope", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).starts_with("error: no tool or service named `nope` in this binary"),
        "{}",
        text(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn withdraw_on_exit_takes_the_items_away_at_shutdown() {
    let _suite = support::suite(module_path!());
    let _joke_topic = JOKE_TOPIC.lock().await;
    let config = ScriptedConfig::start("it-exit", None).await;
    let replica = Replica::start(
        "joke",
        &["--announce", "--workspace", "it-exit", "--withdraw-on-exit"],
    );
    replica.wait_for_log("announced in workspace `it-exit`", Duration::from_secs(30));
    assert_eq!(config.keys().len(), 2);
    let (status, lines) = replica.finish();
    assert!(status.success(), "{}", lines.join("\n"));
    assert!(
        lines.iter().any(|line| line.contains(
            "withdrawn from workspace `it-exit`: services joke-service; tools tell-joke"
        )),
        "{}",
        lines.join("\n")
    );
    assert!(config.keys().is_empty(), "{:?}", config.keys());
    assert_eq!(
        config.operations(),
        [
            "getvalues",
            "getvalues",
            "put",
            "getvalues",
            "getvalues",
            "delete"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn withdraw_names_both_types_even_when_one_has_nothing_of_ours() {
    let _suite = support::suite(module_path!());
    // TrustGraph's agent reloads only the types a change names: a delete of
    // the `tool-service` alone would leave it with no tools at all.
    let config = ScriptedConfig::start("it-padding", None).await;
    succeeded(&run(
        "joke",
        &["announce", "--workspace", "it-padding", "--timeout", "10s"],
    ));
    // Our tool was deleted by hand; someone else's remains.
    config
        .store
        .lock()
        .unwrap()
        .remove(&("tool".into(), "tell-joke".into()));
    let other = json!({"type": "tool-service", "name": "their-tool", "description": "Theirs",
        "service": "their-jokes", "arguments": []});
    config.put("tool", "their-tool", &other);

    let withdrawn = withdraw("it-padding");
    assert_eq!(
        withdrawn,
        "withdrawn from workspace `it-padding`: services joke-service; tools none\n"
    );
    let last = config.requests.lock().unwrap().last().cloned().unwrap();
    assert_eq!(
        last,
        json!({"operation": "delete", "workspace": "it-padding", "keys": [
            {"type": "tool-service", "key": "joke-service"},
            {"type": "tool", "key": "tell-joke"},
        ]})
    );
    assert_eq!(
        config.keys(),
        [("tool".to_owned(), "their-tool".to_owned())]
    );

    // Nothing of ours left: nothing is sent.
    let requests = config.requests.lock().unwrap().len();
    let again = withdraw("it-padding");
    assert_eq!(again, "nothing to withdraw in workspace `it-padding`\n");
    assert_eq!(config.operations()[requests..], ["getvalues", "getvalues"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_announce_stops_retrying_on_a_clash_and_keeps_serving() {
    let _suite = support::suite(module_path!());
    let _joke_topic = JOKE_TOPIC.lock().await;
    let config = ScriptedConfig::start("it-serve-clash", None).await;
    let theirs = json!({"type": "tool-service", "name": "tell-joke", "description": "Theirs",
        "service": "their-jokes", "arguments": []});
    config.put("tool", "tell-joke", &theirs);
    let mut replica = Replica::start("joke", &["--announce", "--workspace", "it-serve-clash"]);
    let lines = replica.wait_for_log("not announced", Duration::from_secs(30));
    assert!(
        lines.last().unwrap().contains(
            "ERROR tool_service::pulsar::announce: not announced: tool `tell-joke` belongs to service \
             `their-jokes`; nothing was announced (serve --replace, or OnClash::Replace, \
             overwrites them)"
        ),
        "{lines:?}"
    );
    let joke = support::client("non-persistent", "joke").await;
    let answer = joke
        .call(&json!({}), &json!({"topic": "food"}))
        .await
        .unwrap();
    assert!(answer.contains("seafood"), "{answer}");
    assert!(replica.is_running());
    // No second attempt: the clash needs someone to act.
    assert_eq!(config.operations(), ["getvalues", "getvalues"]);
    assert_eq!(config.item("tool", "tell-joke").unwrap(), theirs);
    let (status, lines) = replica.finish();
    assert!(status.success(), "{}", lines.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_mcp_the_rules_hold_and_a_route_switch_of_our_own_tool_is_no_clash() {
    let _suite = support::suite(module_path!());
    let config = ScriptedConfig::start("it-mcp", None).await;
    let url = "http://joke-tools:8900/mcp";
    let mcp = |command: &str, extra: &[&str]| {
        let mut args = vec![command, "--workspace", "it-mcp", "--timeout", "10s"];
        args.extend_from_slice(extra);
        run("joke", &args)
    };

    // Our own tool on the tool-service route switches to MCP: no clash.
    succeeded(&run(
        "joke",
        &["announce", "--workspace", "it-mcp", "--timeout", "10s"],
    ));
    let announced = succeeded(&mcp("announce", &["--mcp-url", url]));
    assert_eq!(
        announced,
        format!("announced in workspace `it-mcp` over MCP at {url}: tools tell-joke\n")
    );
    assert_eq!(
        config.item("mcp", "tell-joke").unwrap(),
        json!({"url": url, "remote-name": "tell-joke"})
    );
    let tool = config.item("tool", "tell-joke").unwrap();
    assert_eq!(tool["type"], "mcp-tool");
    assert_eq!(tool["mcp-tool"], "tell-joke");
    assert_eq!(tool["description"], "Tell a joke on a given topic");
    assert_eq!(
        tool["arguments"],
        json!([{"name": "topic", "type": "string",
                "description": "The topic for the joke (e.g., programming, animals, food)"}])
    );
    // One put with both types.
    let requests = config.requests.lock().unwrap().clone();
    let put = requests
        .iter()
        .rev()
        .find(|r| r["operation"] == "put")
        .unwrap();
    let kinds: Vec<&str> = put["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|value| value["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["mcp", "tool"]);
    let puts = || config.operations().iter().filter(|op| *op == "put").count();
    assert_eq!(puts(), 2);

    // Unchanged: nothing written.
    let again = succeeded(&mcp("announce", &["--mcp-url", url]));
    assert!(again.starts_with("already announced"), "{again}");
    assert_eq!(puts(), 2);

    // Another server's `mcp` item of the same key, and its tool: clashes.
    config.put(
        "mcp",
        "tell-joke",
        &json!({"url": "http://theirs:9000/mcp", "remote-name": "joke"}),
    );
    let refused = mcp("announce", &["--mcp-url", url]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        text(&refused.stderr),
        "error: MCP server `tell-joke` points at `http://theirs:9000/mcp`; tool `tell-joke` is \
         served over MCP by `http://theirs:9000/mcp`; nothing was announced (pass --replace to \
         overwrite them)\n"
    );
    assert_eq!(puts(), 2);

    // Withdraw takes only the items of our URL: theirs stay.
    let withdrawn = succeeded(&mcp("withdraw", &["--mcp-url", url]));
    assert_eq!(withdrawn, "nothing to withdraw in workspace `it-mcp`\n");
    succeeded(&mcp("announce", &["--mcp-url", url, "--replace"]));
    config.put(
        "mcp",
        "their-tool",
        &json!({"url": "http://theirs:9000/mcp", "remote-name": "other"}),
    );
    config.put(
        "tool",
        "their-tool",
        &json!({"type": "mcp-tool", "name": "their-tool", "description": "Theirs",
                "mcp-tool": "their-tool", "arguments": []}),
    );
    let withdrawn = succeeded(&mcp("withdraw", &["--mcp-url", url]));
    assert_eq!(
        withdrawn,
        format!("withdrawn from workspace `it-mcp` over MCP at {url}: tools tell-joke\n")
    );
    assert_eq!(
        config.keys(),
        [
            ("mcp".to_owned(), "their-tool".to_owned()),
            ("tool".to_owned(), "their-tool".to_owned()),
            ("tool-service".to_owned(), "joke-service".to_owned()),
        ]
    );
    let requests = config.requests.lock().unwrap().clone();
    let delete = requests
        .iter()
        .rev()
        .find(|r| r["operation"] == "delete")
        .unwrap();
    assert_eq!(
        delete["keys"],
        json!([{"type": "mcp", "key": "tell-joke"}, {"type": "tool", "key": "tell-joke"}])
    );
}

#[test]
fn announce_dry_run_over_mcp_prints_the_put_with_the_token() {
    let _suite = support::suite(module_path!());
    let dir = std::env::temp_dir().join(format!("tool-service-mcp-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token = dir.join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let output = Command::new(support::example("joke"))
        .args([
            "announce",
            "--dry-run",
            "--mcp-url",
            "https://tools.example/mcp",
        ])
        .args(["--mcp-token-file", token.to_str().unwrap()])
        .output()
        .unwrap();
    let request: Value = serde_json::from_str(&succeeded(&output)).unwrap();
    let server: Value =
        serde_json::from_str(request["values"][0]["value"].as_str().unwrap()).unwrap();
    assert_eq!(
        server,
        json!({"url": "https://tools.example/mcp", "remote-name": "tell-joke", "auth-token": "s3cret"})
    );
    let refused = Command::new(support::example("joke"))
        .args(["announce", "--dry-run", "--mcp-url", "tools.example/mcp"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("is not an http:// or https:// URL"),
        "{}",
        text(&refused.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
