//! What operators see of a running `serve`: Prometheus metrics, and logs that
//! keep config and argument values out unless asked. Needs a broker:
//! `scripts/pulsar.sh start`.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::{free_port, scrape, Replica};
use tool_service::pulsar::client::CallError;

/// Held by the tests that serve the echo example's `echo` service: on one
/// Shared subscription, a request may go to another test's replica.
static ECHO_TOPIC: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The same for the `wait` service.
static WAIT_TOPIC: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

// Tests in this file run side by side, so each serves its own service: two
// replicas on one subscription would split the requests.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_invocations_errors_latency_and_in_flight() {
    let _suite = support::suite(module_path!());
    let _topic = WAIT_TOPIC.lock().await;
    let port = free_port();
    let port_text = port.to_string();
    // wait-service's attribute sets a 2 s timeout.
    let _replica = Replica::start(
        "echo",
        &["--only", "wait-service", "--metrics-port", &port_text],
    );
    let wait = support::client("non-persistent", "wait").await;
    for ms in 1..=3 {
        let answer = wait.call(&json!({}), &json!({"ms": ms})).await.unwrap();
        assert_eq!(answer, format!("waited {ms} ms"));
    }
    let bad = wait.call(&json!({}), &json!({"ms": "soon"})).await;
    assert!(
        matches!(bad, Err(CallError::Tool(ref e)) if e.kind() == "invalid-arguments"),
        "{bad:?}"
    );
    let late = wait.call(&json!({}), &json!({"ms": 60_000})).await;
    assert!(
        matches!(late, Err(CallError::Tool(ref e)) if e.kind() == "timeout"),
        "{late:?}"
    );

    // One slow request in flight while scraping: scraped until the gauge
    // shows it (the request takes 1.5 s; its timeout is 2 s). A request is
    // counted when the broker confirms its answer, which may be a moment
    // after the caller has it: the scrape also waits for the five before.
    let (no_config, slow_arguments) = (json!({}), json!({"ms": 1500}));
    let slow = wait.call(&no_config, &slow_arguments);
    let expected = [
        r#"tg_tool_service_in_flight{processor="wait-service"} 1"#,
        r#"tg_consumer_request_duration_seconds_count{processor="wait-service",consumer="request"} 5"#,
    ];
    let scraped = async {
        let mut scraped = (String::new(), String::new());
        support::wait_until("the slow request in flight", Duration::from_secs(1), || {
            scraped = scrape(port);
            expected
                .iter()
                .all(|series| scraped.1.lines().any(|line| line == *series))
        })
        .await;
        scraped
    };
    let (answer, (status, body)) = tokio::join!(slow, scraped);
    assert_eq!(answer.unwrap(), "waited 1500 ms");
    assert_eq!(status, "HTTP/1.1 200 OK");

    let expect = |series: &str, value: f64| {
        assert_eq!(
            support::sample(&body, series),
            Some(value),
            "{series} in\n{body}"
        );
    };
    let service = r#"processor="wait-service""#;
    let consumer = r#"processor="wait-service",consumer="request""#;
    expect(
        &format!("tg_dynamic_tool_service_invocation_total{{{service}}}"),
        3.0,
    );
    expect(
        &format!(r#"tg_consumer_processing_total{{{consumer},status="ok"}}"#),
        3.0,
    );
    expect(
        &format!(r#"tg_consumer_processing_total{{{consumer},status="error"}}"#),
        2.0,
    );
    expect(
        &format!(r#"tg_tool_service_errors_total{{{service},type="invalid-arguments"}}"#),
        1.0,
    );
    expect(
        &format!(r#"tg_tool_service_errors_total{{{service},type="timeout"}}"#),
        1.0,
    );
    expect(&format!("tg_tool_service_in_flight{{{service}}}"), 1.0);
    expect(
        &format!("tg_consumer_request_duration_seconds_count{{{consumer}}}"),
        5.0,
    );
    // The timeout took 2 s: above the 1 s bucket (the other four took
    // milliseconds); within 5 s even on a busy machine.
    expect(
        &format!(r#"tg_consumer_request_duration_seconds_bucket{{{consumer},le="1"}}"#),
        4.0,
    );
    expect(
        &format!(r#"tg_consumer_request_duration_seconds_bucket{{{consumer},le="5"}}"#),
        5.0,
    );
    expect(
        &format!(r#"tg_consumer_state{{{consumer},tg_consumer_state="running"}}"#),
        1.0,
    );
    assert!(body.contains("# TYPE tg_consumer_request_duration_seconds histogram\n"));

    // Afterwards nothing is in flight and the slow request counts too: its
    // handler ends (the gauge) before the broker confirms its answer (the
    // count), so both are waited for.
    let settled = [
        r#"tg_tool_service_in_flight{processor="wait-service"} 0"#,
        r#"tg_dynamic_tool_service_invocation_total{processor="wait-service"} 4"#,
    ];
    let mut body = String::new();
    support::wait_until("the slow request counted", Duration::from_secs(10), || {
        body = scrape(port).1;
        settled
            .iter()
            .all(|series| body.lines().any(|line| line == *series))
    })
    .await;
    assert_eq!(
        support::sample(&body, &format!("tg_tool_service_in_flight{{{service}}}")),
        Some(0.0)
    );
    assert_eq!(
        support::sample(
            &body,
            &format!("tg_dynamic_tool_service_invocation_total{{{service}}}")
        ),
        Some(4.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_metrics_opens_no_port() {
    let _suite = support::suite(module_path!());
    let port = free_port();
    let replica = Replica::start(
        "echo",
        &[
            "--only",
            "whoami-service",
            "--metrics-port",
            &port.to_string(),
            "--no-metrics",
        ],
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "something listens on the metrics port"
    );
    let (status, lines) = replica.finish();
    assert!(status.success(), "{lines:#?}");
    assert!(
        !lines.iter().any(|line| line.contains("metrics on")),
        "{lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_metrics_port_is_a_clear_startup_error() {
    let _suite = support::suite(module_path!());
    let taken = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let mut replica = Replica::spawn_at(
        &support::require_broker(),
        "echo",
        &["--metrics-port", &port.to_string()],
    );
    let status = replica.child.wait().unwrap();
    let lines: Vec<String> = replica.log.iter().collect();
    assert_eq!(status.code(), Some(1), "{lines:#?}");
    let expected = format!(
        "cannot serve metrics on 0.0.0.0:{port}: Address already in use (os error 98); pick another port with --metrics-port or turn metrics off with --no-metrics"
    );
    assert!(
        lines.iter().any(|line| line.contains(&expected)),
        "{lines:#?}"
    );
}

const SECRET_CONFIG: &str = "config-secret-4c1e";
const SECRET_ARGUMENT: &str = "argument-secret-9a7b";
const TOKEN: &str = "token-secret-77f2";

/// Serves echo at debug level, sends values that must stay private (a good
/// request, a bad one, a panic-free error), and returns every log line.
async fn logs_of_a_run(extra: &[&str]) -> Vec<String> {
    let mut args = vec!["--log-level", "debug"];
    args.extend_from_slice(extra);
    logs_with(&args, &[], " ready").await
}

/// [`logs_of_a_run`] with `extra` arguments and `env`, ready when a line
/// holds `ready`.
async fn logs_with(extra: &[&str], env: &[(&str, &str)], ready: &str) -> Vec<String> {
    let mut args = vec!["--only", "echo-service", "--pulsar-api-key", TOKEN];
    args.extend_from_slice(extra);
    let replica = Replica::spawn_with_env(&support::require_broker(), "echo", &args, env);
    replica.wait_for_log(ready, Duration::from_secs(60));
    let echo = support::client("non-persistent", "echo").await;
    let config = json!({"api_key": SECRET_CONFIG});
    assert_eq!(
        echo.call(&config, &json!({"text": SECRET_ARGUMENT}))
            .await
            .unwrap(),
        SECRET_ARGUMENT
    );
    let bad = echo
        .call(
            &config,
            &json!({"text": SECRET_ARGUMENT, "delay_ms": "soon"}),
        )
        .await;
    assert!(matches!(bad, Err(CallError::Tool(_))), "{bad:?}");
    let (status, lines) = replica.finish();
    assert!(status.success(), "{lines:#?}");
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_arguments_and_token_stay_out_of_the_logs_unless_asked() {
    let _suite = support::suite(module_path!());
    let _topic = ECHO_TOPIC.lock().await;
    let lines = logs_of_a_run(&[]).await;
    let all = lines.join("\n");
    for secret in [SECRET_CONFIG, SECRET_ARGUMENT, TOKEN] {
        assert!(!all.contains(secret), "{secret} was logged:\n{all}");
    }
    // The request span carries the service and request id.
    assert!(
        lines.iter().any(
            |line| line.contains("request{service=echo-service request_id=")
                && line.contains("answered")
        ),
        "{all}"
    );
    assert!(all.contains("error=\"invalid-arguments\""), "{all}");

    // --log-payloads opts in to config and arguments, never to the token.
    let lines = logs_of_a_run(&["--log-payloads"]).await;
    let all = lines.join("\n");
    assert!(all.contains(SECRET_CONFIG), "{all}");
    assert!(all.contains(SECRET_ARGUMENT), "{all}");
    assert!(!all.contains(TOKEN), "the token was logged:\n{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_parse_and_rust_log_takes_the_place_of_log_level() {
    let _suite = support::suite(module_path!());
    // Serialized with the test above by the echo topic: each run is one
    // replica, and the runs of one test follow each other.
    let _topic = ECHO_TOPIC.lock().await;
    let lines = logs_with(
        &["--log-level", "debug", "--log-format", "json"],
        &[],
        r#""message":"ready""#,
    )
    .await;
    let objects: Vec<serde_json::Value> = lines
        .iter()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"))
        })
        .collect();
    for object in &objects {
        for field in ["timestamp", "level", "target", "message"] {
            assert!(object.get(field).is_some(), "no {field}: {object}");
        }
    }
    let answered = objects
        .iter()
        .find(|object| object["message"] == "answered")
        .unwrap_or_else(|| panic!("no answered line: {lines:#?}"));
    let request = answered["spans"]
        .as_array()
        .and_then(|spans| spans.iter().find(|span| span["name"] == "request"))
        .unwrap_or_else(|| panic!("the request span is missing: {answered}"));
    assert_eq!(request["service"], "echo-service", "{answered}");
    assert!(request["request_id"].is_string(), "{answered}");
    let all = lines.join("\n");
    for secret in [SECRET_CONFIG, SECRET_ARGUMENT, TOKEN] {
        assert!(!all.contains(secret), "{secret} was logged:\n{all}");
    }

    // RUST_LOG, EnvFilter syntax, in place of --log-level (info here).
    let lines = logs_with(&[], &[("RUST_LOG", "info,tool_service=debug")], " ready").await;
    let debug = |line: &String| line.contains(" DEBUG ") && line.contains(": answered");
    assert!(lines.iter().any(debug), "{lines:#?}");
    let lines = logs_with(&[], &[], " ready").await;
    assert!(
        !lines.iter().any(debug),
        "debug lines at --log-level info: {lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_follows_the_start_and_the_drain_and_livez_answers_throughout() {
    let _suite = support::suite(module_path!());
    // While the broker cannot be reached: alive, not ready, and why.
    let port = free_port();
    let port_text = port.to_string();
    let mut unreachable = Replica::spawn_at(
        "pulsar://127.0.0.1:9",
        "echo",
        &["--only", "wait-service", "--metrics-port", &port_text],
    );
    let mut probes = (String::new(), String::new());
    support::wait_until("the probes answer", Duration::from_secs(30), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    })
    .await;
    for path in ["/livez", "/healthz"] {
        assert_eq!(support::get(port, path).0, "HTTP/1.1 200 OK", "{path}");
    }
    let (status, body) = support::get(port, "/readyz");
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable");
    assert_eq!(body, "not subscribed: wait-service\n");
    unreachable.signal("KILL");
    let _ = unreachable.child.wait();

    // On the broker: ready once subscribed; not ready from SIGTERM on,
    // while the request in flight is still answered.
    let _topic = WAIT_TOPIC.lock().await;
    let port = free_port();
    let port_text = port.to_string();
    let replica = Replica::start(
        "echo",
        &["--only", "wait-service", "--metrics-port", &port_text],
    );
    assert_eq!(
        support::get(port, "/readyz"),
        ("HTTP/1.1 200 OK".to_owned(), "ready\n".to_owned())
    );
    let wait = support::client("non-persistent", "wait").await;
    let (no_config, slow) = (json!({}), json!({"ms": 1500}));
    let call = wait.call(&no_config, &slow);
    let drain = async {
        support::wait_until("the request in flight", Duration::from_secs(30), || {
            scrape(port)
                .1
                .lines()
                .any(|line| line == r#"tg_tool_service_in_flight{processor="wait-service"} 1"#)
        })
        .await;
        replica.signal("TERM");
        support::wait_until("not ready", Duration::from_secs(10), || {
            probes = support::get(port, "/readyz");
            probes.0 != "HTTP/1.1 200 OK"
        })
        .await;
        assert_eq!(support::get(port, "/livez").0, "HTTP/1.1 200 OK");
    };
    let (answer, ()) = tokio::join!(call, drain);
    assert_eq!(answer.unwrap(), "waited 1500 ms");
    assert_eq!(probes.0, "HTTP/1.1 503 Service Unavailable");
    assert!(probes.1.starts_with("shutting down\n"), "{probes:?}");
    let (status, lines) = replica.wait_exit();
    assert!(status.success(), "{lines:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_start_and_a_clean_stop_log_nothing_at_warn_or_above() {
    let _suite = support::suite(module_path!());
    let replica = Replica::start("echo", &["--only", "whoami-service"]);
    let (status, lines) = replica.finish();
    assert!(status.success(), "{lines:#?}");
    let loud: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains(" WARN ") || line.contains(" ERROR "))
        .collect();
    assert!(loud.is_empty(), "{loud:#?}");
    assert!(
        lines.iter().any(|line| line.contains(" stopped")),
        "{lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_configures_serve_as_its_flags_would() {
    let _suite = support::suite(module_path!());
    let port = free_port();
    let child = std::process::Command::new(support::example("echo"))
        .env_remove("RUST_LOG")
        .arg("serve")
        .envs([
            ("PULSAR_HOST", support::require_broker()),
            ("TOOL_SERVICE_METRICS_PORT", port.to_string()),
            ("TOOL_SERVICE_ONLY", String::from("whoami-service")),
            ("TOOL_SERVICE_CONCURRENCY", String::from("3")),
            ("TOOL_SERVICE_LOG_FORMAT", String::from("JSON")),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    support::wait_until("the replica to be ready", Duration::from_secs(60), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            && support::get(port, "/readyz").0.contains("200")
    })
    .await;
    let (_, metrics) = scrape(port);
    assert!(
        metrics.contains(r#"processor="whoami-service""#),
        "{metrics}"
    );
    assert!(
        !metrics.contains(r#"processor="echo-service""#),
        "{metrics}"
    );
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let log = String::from_utf8(output.stderr).unwrap();
    let serving: Vec<serde_json::Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .filter(|line: &serde_json::Value| line["message"] == "serving")
        .collect();
    assert_eq!(serving.len(), 1, "{log}");
    assert_eq!(serving[0]["service"], "whoami-service", "{log}");
    assert_eq!(serving[0]["concurrency"], 3, "{log}");
}

/// `deploy/`'s recipe agrees with what the binary serves and accepts: no
/// container runtime or cluster runs here, so the manifest's arguments run
/// the joke example itself (with a free port for its 8000, the test's
/// broker and a token file of the test's), and its probe paths are probed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deployment_recipe_matches_what_the_binary_serves() {
    let _suite = support::suite(module_path!());
    let root = env!("CARGO_MANIFEST_DIR");
    let manifest = std::fs::read_to_string(format!("{root}/deploy/kubernetes.yaml")).unwrap();
    let dockerfile = std::fs::read_to_string(format!("{root}/deploy/Dockerfile")).unwrap();
    // Every `key: value` of the manifest, in a block or a `{…}` map.
    let field = |key: &str| -> Vec<String> {
        let needle = format!("{key}: ");
        let mut values = Vec::new();
        for line in manifest
            .lines()
            .filter(|line| !line.trim_start().starts_with('#'))
        {
            for (at, _) in line.match_indices(&needle) {
                let rest = &line[at + needle.len()..];
                let end = rest.find([',', '}']).unwrap_or(rest.len());
                values.push(rest[..end].trim().trim_matches('"').to_owned());
            }
        }
        values
    };
    let one = |key: &str| -> String {
        let values = field(key);
        assert_eq!(
            values.len(),
            1,
            "`{key}` in deploy/kubernetes.yaml: {values:?}"
        );
        values[0].clone()
    };
    let args_line = manifest
        .lines()
        .find_map(|line| line.trim_start().strip_prefix("args: "))
        .expect("the container's args");
    let args: Vec<String> = serde_json::from_str(args_line).expect("args as a flow list");
    let after = |flag: &str| -> String {
        let at = args
            .iter()
            .position(|arg| arg == flag)
            .unwrap_or_else(|| panic!("{flag} in args"));
        args[at + 1].clone()
    };
    // Ports: the flags, the container ports, the scrape annotation, the
    // Service, EXPOSE.
    let port = after("--metrics-port");
    let mcp_listen = after("--mcp-listen");
    let mcp_port = mcp_listen.rsplit_once(':').unwrap().1.to_owned();
    assert_eq!(field("containerPort"), [port.clone(), mcp_port.clone()]);
    assert_eq!(one("prometheus.io/port"), port);
    assert!(
        dockerfile.contains(&format!("\nEXPOSE {port} {mcp_port}\n")),
        "EXPOSE {port} {mcp_port}"
    );
    assert!(manifest.contains("\nkind: Service\n"));
    assert_eq!(one("targetPort"), "mcp");
    assert!(field("port").contains(&mcp_port), "the Service's port");
    // The Service's name is the host MCP clients ask for.
    let host = after("--mcp-allowed-host");
    assert!(
        manifest.contains(&format!("kind: Service\nmetadata:\n  name: {host}\n")),
        "the Service is named {host}"
    );
    // The kubelet waits longer than the drain may take.
    let grace: u64 = after("--grace-period").parse().unwrap();
    let termination: u64 = one("terminationGracePeriodSeconds").parse().unwrap();
    assert!(
        termination > grace,
        "terminationGracePeriodSeconds {termination} <= --grace-period {grace}"
    );
    // The token file is in the Secret's mount.
    let env_names = field("name");
    let env_values = field("value");
    let env_of = |name: &str| {
        let at = env_names
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("env {name}"));
        // `name:` also names the deployment, the container, the port and
        // the volume before the env list; values come only from env items.
        let first_env = env_names.iter().position(|n| n == "PULSAR_HOST").unwrap();
        env_values[at - first_env].clone()
    };
    let token_file = env_of("PULSAR_API_KEY_FILE");
    let mount = one("mountPath");
    assert!(
        token_file.starts_with(&format!("{mount}/")),
        "{token_file} not under {mount}"
    );
    // The image runs the binary as a non-root user, with the manifest's
    // command first.
    assert!(dockerfile.contains("\nUSER nonroot\n") && manifest.contains("runAsNonRoot: true"));
    assert!(dockerfile.contains("ENTRYPOINT [\"/usr/local/bin/joke\"]"));
    assert_eq!(args[0], "serve");
    let paths = field("path");
    for path in ["/readyz/mcp", "/livez", "/metrics"] {
        assert!(paths.iter().any(|p| p == path), "{path} in {paths:?}");
    }

    // Run it with those arguments.
    let dir = std::env::temp_dir().join(format!("tool-service-deploy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token = dir.join("token");
    std::fs::write(&token, "deploy-test-token\n").unwrap();
    let free = free_port();
    let mcp_free = free_port();
    let run_args: Vec<String> = args
        .iter()
        .map(|arg| {
            if *arg == port {
                free.to_string()
            } else if *arg == mcp_listen {
                format!("127.0.0.1:{mcp_free}")
            } else {
                arg.clone()
            }
        })
        .collect();
    let child = std::process::Command::new(support::example("joke"))
        .env_remove("RUST_LOG")
        .args(&run_args)
        .env("PULSAR_HOST", support::require_broker())
        .env("PULSAR_API_KEY_FILE", &token)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    support::wait_until(
        "the readiness probe to pass",
        Duration::from_secs(60),
        || {
            std::net::TcpStream::connect(("127.0.0.1", free)).is_ok()
                && support::get(free, "/readyz").0.contains("200")
        },
    )
    .await;
    assert!(support::get(free, "/readyz/mcp").0.contains("200"));
    assert!(support::get(free, "/livez").0.contains("200"));
    // MCP answers a client that asks for the Service's name.
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"deploy-test","version":"0"}}}"#;
    let answered = {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", mcp_free)).unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {host}:{mcp_port}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{initialize}",
            initialize.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    };
    assert!(
        answered.starts_with("HTTP/1.1 200") && answered.contains("\"serverInfo\""),
        "{answered}"
    );
    let (status, metrics) = support::get(free, "/metrics");
    assert!(
        status.contains("200") && metrics.contains("tg_tool_service_broker_connected 1"),
        "{metrics}"
    );
    let stopping = std::time::Instant::now();
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(stopping.elapsed() < Duration::from_secs(grace));
    let log = String::from_utf8(output.stderr).unwrap();
    for line in log.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|_| panic!("not JSON: {line}"));
    }
    assert!(!log.contains("deploy-test-token"), "{log}");
}
