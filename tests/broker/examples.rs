//! The example binaries, run as a user runs them: their descriptors equal the
//! spec's golden JSON, and `call` goes through the production path.

use crate::support;

use std::process::{Command, Output};

use serde_json::Value;

fn run(name: &str, args: &[&str]) -> Output {
    Command::new(support::example(name))
        .args(args)
        .output()
        .unwrap()
}

fn golden(name: &str) -> Value {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A golden `tool-service` item (the spec's, with Pulsar topic names) as
/// descriptors write it by default: its queues in TrustGraph's
/// `class:topicspace:topic`.
fn golden_trustgraph(name: &str) -> Value {
    let mut item = golden(name);
    for (key, class) in [("request-queue", "request"), ("response-queue", "response")] {
        let pulsar = item[key].as_str().unwrap().to_owned();
        let topic = pulsar
            .strip_prefix(&format!("non-persistent://tg/{class}/"))
            .unwrap();
        item[key] = format!("{class}:tg:{topic}").into();
    }
    item
}

fn stdout_json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn frames(output: &Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn joke_descriptors_equal_the_spec() {
    let _suite = support::suite(module_path!());
    for args in [&[][..], &["descriptors"]] {
        let tree = stdout_json(&run("joke", args));
        assert_eq!(
            tree["tool-service"]["joke-service"],
            golden_trustgraph("joke-service.json")
        );
        assert_eq!(tree["tool"]["tell-joke"], golden("tell-joke.json"));
    }
    // The spec's own shape, Pulsar topic names, when asked.
    let spec = stdout_json(&run("joke", &["descriptors", "--queue-names", "pulsar"]));
    let by_variable = stdout_json(
        &Command::new(support::example("joke"))
            .env("TOOL_SERVICE_QUEUE_NAMES", "pulsar")
            .output()
            .unwrap(),
    );
    for tree in [spec, by_variable] {
        assert_eq!(
            tree["tool-service"]["joke-service"],
            golden("joke-service.json")
        );
        assert_eq!(tree["tool"]["tell-joke"], golden("tell-joke.json"));
        assert_eq!(tree["tool-service"].as_object().unwrap().len(), 1);
        assert_eq!(tree["tool"].as_object().unwrap().len(), 1);
    }
}

#[test]
fn custom_rag_has_two_tools_on_one_service() {
    let _suite = support::suite(module_path!());
    let tree = stdout_json(&run("custom_rag", &[]));
    assert_eq!(
        tree["tool-service"]["custom-rag"],
        golden_trustgraph("custom-rag.json")
    );
    assert_eq!(
        tree["tool"]["query-customers"],
        golden("query-customers.json")
    );
    assert_eq!(
        tree["tool"]["query-products"],
        golden("query-products.json")
    );
}

#[test]
fn groups_and_states_go_into_the_tool_items() {
    let _suite = support::suite(module_path!());
    let tree = stdout_json(&run("groups", &["descriptors"]));
    assert_eq!(
        tree["tool"]["search-tickets"],
        golden("search-tickets.json")
    );
    let close = &tree["tool"]["close-ticket"];
    assert_eq!(close["group"], serde_json::json!(["support"]));
    assert_eq!(close["applicable-states"], serde_json::json!(["found"]));
    assert!(close.get("state").is_none());
}

#[test]
fn descriptors_out_writes_one_file_per_item() {
    let _suite = support::suite(module_path!());
    let dir = std::env::temp_dir().join(format!("tool-service-out-{}", std::process::id()));
    let output = run(
        "custom_rag",
        &["descriptors", "--out", dir.to_str().unwrap()],
    );
    assert!(output.status.success());
    let read = |key: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{key}.json"))).unwrap())
            .unwrap()
    };
    assert_eq!(
        read("tool-service/custom-rag"),
        golden_trustgraph("custom-rag.json")
    );
    assert_eq!(read("tool/query-customers"), golden("query-customers.json"));
    assert_eq!(read("tool/query-products"), golden("query-products.json"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn call_prints_a_success_frame() {
    let _suite = support::suite(module_path!());
    let output = run(
        "joke",
        &[
            "call",
            "tell-joke",
            "--args",
            r#"{"topic":"programming"}"#,
            "--config",
            r#"{"style":"pun"}"#,
        ],
    );
    assert!(output.status.success());
    let frames = frames(&output);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0]["id"], "call");
    assert_eq!(frames[0]["error"], Value::Null);
    assert_eq!(frames[0]["end_of_stream"], true);
    assert!(frames[0]["response"]
        .as_str()
        .unwrap()
        .starts_with("Here's a pun for you:"));
}

#[test]
fn call_sends_the_tool_preset_and_the_user() {
    let _suite = support::suite(module_path!());
    let output = run(
        "joke",
        &[
            "call",
            "tell-joke",
            "--args",
            r#"{"topic":"food"}"#,
            "--user",
            "alice",
        ],
    );
    let text = frames(&output)[0]["response"].as_str().unwrap().to_owned();
    assert!(
        text.starts_with("Hey alice! Here's a pun for you:"),
        "{text}"
    );
    let output = run(
        "joke",
        &[
            "call",
            "joke-service",
            "--args",
            r#"{"topic":"food"}"#,
            "--config",
            r#"{"style":"dad-joke"}"#,
        ],
    );
    assert!(frames(&output)[0]["response"]
        .as_str()
        .unwrap()
        .starts_with("Here's a dad joke"));
}

#[test]
fn call_with_a_wrong_argument_prints_an_error_frame_naming_it() {
    let _suite = support::suite(module_path!());
    let output = run("joke", &["call", "tell-joke", "--args", r#"{"topic": 5}"#]);
    assert_eq!(output.status.code(), Some(1));
    let frames = frames(&output);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0]["error"]["type"], "invalid-arguments");
    let message = frames[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("`topic`"), "{message}");
    assert_eq!(frames[0]["response"], "");
    assert_eq!(frames[0]["end_of_stream"], true);
}

#[test]
fn call_of_an_unknown_name_lists_the_known_ones() {
    let _suite = support::suite(module_path!());
    let output = run("joke", &["call", "tell-jokes"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no tool or service named `tell-jokes`"),
        "{stderr}"
    );
    assert!(stderr.contains("tell-joke, joke-service"), "{stderr}");
}

#[test]
fn streaming_call_prints_every_frame_in_order() {
    let _suite = support::suite(module_path!());
    let output = run(
        "streaming",
        &[
            "call",
            "tell-story",
            "--args",
            r#"{"hero":"Ferris","chapters":3}"#,
        ],
    );
    let frames = frames(&output);
    assert_eq!(frames.len(), 4);
    for (index, frame) in frames[..3].iter().enumerate() {
        assert_eq!(frame["end_of_stream"], false);
        assert!(frame["response"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Chapter {}", index + 1)));
    }
    assert_eq!(frames[3]["end_of_stream"], true);
    assert_eq!(frames[3]["response"], "The end of Ferris's 3 chapters.");
}

#[test]
fn list_names_queues_and_tools() {
    let _suite = support::suite(module_path!());
    let output = run("custom_rag", &["list"]);
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("custom-rag\n"));
    assert!(text.contains("request   non-persistent://tg/request/custom-rag"));
    assert!(text.contains("subscription custom-rag-request (Shared)"));
    assert!(text.contains("policy    concurrency 64, timeout 600s, rate none\n"));
    assert!(text.contains("  blocking\n"), "a plain fn: {text}");
    assert!(text.contains("tool      query-customers"));
    let echo = String::from_utf8(run("echo", &["list"]).stdout).unwrap();
    // The `wait` service's own timeout attribute.
    assert!(
        echo.contains("policy    concurrency 64, timeout 2s, rate none\n"),
        "{echo}"
    );
    assert!(text.contains("tool      query-products"));
    // MCP's title and hints, where a tool has them.
    assert!(
        echo.contains("  tool      words \"Split into words\" (read-only, closed world)\n"),
        "{echo}"
    );
    assert!(echo.contains("  tool      echo\n"), "{echo}");
}

#[test]
fn call_holds_a_service_to_its_timeout_attribute() {
    let _suite = support::suite(module_path!());
    let output = std::process::Command::new(support::example("echo"))
        .args(["call", "wait", "--args", r#"{"ms": 60000}"#])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains(r#""type":"timeout""#) && stdout.contains("within 2s"),
        "{stdout}"
    );
}

#[test]
fn call_holds_a_result_to_the_default_maximum_message_size() {
    let _suite = support::suite(module_path!());
    let output = std::process::Command::new(support::example("echo"))
        .args(["call", "blob", "--args", r#"{"bytes": 6000000}"#])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains(r#""type":"response-too-large""#)
            && stdout.contains("maximum message size of 5242880 bytes"),
        "{}",
        &stdout[..stdout.len().min(2000)]
    );
    let fits = std::process::Command::new(support::example("echo"))
        .args(["call", "blob", "--args", r#"{"bytes": 5000000}"#])
        .output()
        .unwrap();
    assert_eq!(fits.status.code(), Some(0));
}

#[test]
fn serve_names_an_unknown_service_and_stops_before_connecting() {
    let _suite = support::suite(module_path!());
    for args in [
        &["--only", "no-such-service"][..],
        &["--timeout", "no-such-service=5s"][..],
    ] {
        let started = std::time::Instant::now();
        // Port 9 (discard) on loopback is closed: had it tried to connect,
        // it would be retrying instead of stopping.
        let output = std::process::Command::new(support::example("echo"))
            .args([
                "serve",
                "--pulsar-host",
                "pulsar://127.0.0.1:9",
                "--no-metrics",
            ])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(
            stderr.contains("no service `no-such-service` in this binary (known: ")
                && stderr.contains("echo-service")
                && stderr.contains("blob-service"),
            "{args:?}: {stderr}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }
}

#[test]
fn a_binary_with_several_services_writes_one_file_per_item() {
    let _suite = support::suite(module_path!());
    let dir = std::env::temp_dir().join(format!(
        "tool-service-echo-descriptors-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let output = run("echo", &["descriptors", "--out", dir.to_str().unwrap()]);
    assert!(output.status.success());
    let tree: serde_json::Value =
        serde_json::from_slice(&run("echo", &["descriptors"]).stdout).unwrap();
    let services = tree["tool-service"].as_object().unwrap();
    let tools = tree["tool"].as_object().unwrap();
    for id in [
        "echo-service",
        "durable-echo-service",
        "whoami-service",
        "wait-service",
        "blob-service",
        "words-service",
    ] {
        assert!(services.contains_key(id), "{id} in {tree}");
        let file: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("tool-service").join(format!("{id}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(file, services[id], "{id}");
    }
    for (name, tool) in tools {
        let file: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("tool").join(format!("{name}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(&file, tool, "{name}");
    }
    assert_eq!(tools.len(), 6, "{tree}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_token_about_to_cross_the_network_in_clear_text_is_warned_about() {
    let _suite = support::suite(module_path!());
    // 0.0.0.0 is not a loopback address to the check, yet nothing leaves the
    // machine: the connection goes to the closed local port 9.
    let mut child = std::process::Command::new(support::example("echo"))
        .args([
            "serve",
            "--pulsar-host",
            "pulsar://0.0.0.0:9",
            "--no-metrics",
        ])
        .env("PULSAR_API_KEY", "clear-text-token-0f3a")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut warned = None;
    for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
        if line.contains("in clear text") {
            warned = Some(line);
            break;
        }
        if line.contains("not reachable") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let warned = warned.expect("no clear-text warning before the first connection attempt");
    assert!(
        warned.contains("WARN") && warned.contains("0.0.0.0:9"),
        "{warned}"
    );
    assert!(!warned.contains("clear-text-token-0f3a"), "{warned}");
}

#[test]
fn serve_help_names_the_token_variables_never_their_values() {
    let _suite = support::suite(module_path!());
    // In a process of its own: setting the variable in this test process
    // would race with other tests reading the environment.
    let output = std::process::Command::new(support::example("echo"))
        .args(["serve", "--help"])
        .env("PULSAR_API_KEY", "very-secret-token")
        .output()
        .unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    assert!(
        help.contains("PULSAR_API_KEY") && help.contains("PULSAR_API_KEY_FILE"),
        "{help}"
    );
    assert!(!help.contains("very-secret-token"), "{help}");
}

/// The tickets example's handler refuses by user over Pulsar as it does
/// over MCP (interop/test_mcp_oauth.py): the owner closes a ticket,
/// another user is told who may; a scope no token grants here
/// (`tickets:admin`) lets nobody through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tickets_handler_knows_its_caller_over_pulsar() {
    let _suite = support::suite(module_path!());
    // The topic first (the other test of this suite on it waits), then
    // the service on it.
    let mut raw = support::RawTopic::open("non-persistent", "close-ticket").await;
    let replica = support::Replica::start("tickets", &["--metrics-port", "0"]);
    let arguments = r#"{\"id\": 3}"#;
    for (user, answer) in [
        ("alice", Ok("Closed ticket #3: Order more coffee")),
        (
            "bob",
            Err("ticket #3 belongs to alice: only its owner or an admin may close it"),
        ),
    ] {
        let payload =
            format!(r#"{{"user": "{user}", "config": "{{}}", "arguments": "{arguments}"}}"#);
        raw.send(payload.as_bytes(), Some(user)).await;
        let (id, frame) = raw.receive().await;
        assert_eq!(id.as_deref(), Some(user));
        match answer {
            Ok(text) => {
                assert!(frame.error.is_none(), "{frame:?}");
                assert_eq!(frame.response, text);
            }
            Err(text) => assert_eq!(frame.error.unwrap().message(), text),
        }
    }
    let (status, _) = replica.finish();
    assert!(status.success());
}

/// `call --pulsar URL` sends the request to the service running on the
/// broker, as TrustGraph's agent would, and prints its frames as the
/// in-process `call` does.
#[test]
fn call_over_pulsar_reaches_the_running_service_and_prints_its_frames() {
    let _suite = support::suite(module_path!());
    // `the_tickets_handler_knows_its_caller_over_pulsar` reads every answer
    // on this topic.
    let _topic = support::lease("close-ticket");
    let replica = support::Replica::start("tickets", &["--metrics-port", "0"]);
    let url = support::require_broker();
    let call = |user: &str| {
        run(
            "tickets",
            &[
                "call",
                "--pulsar",
                &url,
                "close-ticket",
                "--args",
                r#"{"id": 3}"#,
                "--user",
                user,
            ],
        )
    };
    let closed = call("alice");
    assert!(closed.status.success(), "{closed:?}");
    let frame: Value = serde_json::from_slice(&closed.stdout).unwrap();
    assert_eq!(frame["id"], "call");
    assert_eq!(frame["response"], "Closed ticket #3: Order more coffee");
    assert_eq!(frame["end_of_stream"], true);
    // An error frame: printed, and the exit code says so.
    let refused = call("bob");
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let frame: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(
        frame["error"]["message"],
        "ticket #3 belongs to alice: only its owner or an admin may close it"
    );
    // The same request in-process prints the same frame.
    let local = run(
        "tickets",
        &[
            "call",
            "close-ticket",
            "--args",
            r#"{"id": 3}"#,
            "--user",
            "bob",
        ],
    );
    assert_eq!(local.stdout, refused.stdout);
    let (status, lines) = replica.finish();
    assert!(status.success(), "{}", lines.join("\n"));
}
