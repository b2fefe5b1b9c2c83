//! The metrics and probes of every serving command, scraped from the
//! example binaries: `mcp --listen`, `mcp` on stdio, and `serve
//! --mcp-listen` while its broker does not answer (readiness per
//! transport). No broker is needed: the Pulsar side of the last one tries
//! to connect the whole time.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support;

/// An example binary; killed when dropped.
struct Running {
    child: Child,
    log: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    fn start(args: &[&str], stdin: Stdio) -> Self {
        let mut command = Command::new(support::example("joke"));
        command.args(args);
        Self::spawn(command, stdin)
    }

    /// `command` (the example, or a shell that execs it), logging to a pipe.
    fn spawn(mut command: Command, stdin: Stdio) -> Self {
        let mut child = command
            .env_remove("RUST_LOG")
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the example");
        let log = support::log_lines(&mut child);
        Self {
            child,
            log,
            seen: Vec::new(),
        }
    }

    /// The port of the first log line with `needle` and `http://HOST:PORT`.
    fn port_in_log(&mut self, needle: &str) -> u16 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(port) = self
                .seen
                .iter()
                .filter(|line| line.contains(needle))
                .find_map(|line| port_of(line))
            {
                return port;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!(
                    "no log line with {needle:?}; saw:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// SIGTERM, then the exit status.
    /// Sends SIGTERM and waits: the process must stop cleanly, exit 0 and
    /// log no error; a failure shows its status and every line it logged.
    fn terminate(mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let status = self.child.wait().unwrap();
        // The reader thread may still be passing on the last lines.
        std::thread::sleep(Duration::from_millis(100));
        self.seen.extend(self.log.try_iter());
        assert!(
            status.success() && !self.seen.iter().any(|line| line.contains("ERROR")),
            "a clean stop exits 0 and logs no error; it ended with {status}:\n{}",
            self.seen.join("\n")
        );
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The port of `http://HOST:PORT/…` in a log line.
fn port_of(line: &str) -> Option<u16> {
    let url = &line[line.find("http://")? + "http://".len()..];
    let authority = url.split('/').next()?;
    authority.rsplit_once(':')?.1.parse().ok()
}

/// Polls `GET path` until its status line contains `status`.
fn wait_for(port: u16, path: &str, status: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (line, body) = support::get(port, path);
        if line.contains(status) {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "GET {path}: {line}, not {status}:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One raw HTTP exchange on a connection of its own: the whole response.
fn raw_exchange(port: u16, request: &str) -> String {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// A JSON-RPC exchange over MCP's stdio: one line out, the answer back.
fn exchange(stdin: &mut impl Write, stdout: &mut BufReader<ChildStdout>, message: &str) -> String {
    writeln!(stdin, "{message}").unwrap();
    stdin.flush().unwrap();
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    answer
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ops-test","version":"1"}}}"#;
const CALL: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tell-joke","arguments":{"topic":"ops"}}}"#;
const UNKNOWN_TOOL: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tell-jokes","arguments":{}}}"#;
const MCP_CALLS: &str =
    "tg_dynamic_tool_service_invocation_total{processor=\"joke-service\",transport=\"mcp\"} 1\n";

#[test]
fn mcp_over_http_serves_metrics_and_probes() {
    let mut mcp = Running::start(
        &["mcp", "--listen", "127.0.0.1:0", "--metrics-port", "0"],
        Stdio::null(),
    );
    let metrics = mcp.port_in_log("metrics on");
    let listen = mcp.port_in_log("serving MCP");
    assert_eq!(wait_for(metrics, "/readyz", "200"), "ready\n");
    assert_eq!(wait_for(metrics, "/readyz/mcp", "200"), "ready\n");
    assert_eq!(
        wait_for(metrics, "/readyz/pulsar", "503"),
        "nothing is served over pulsar\n"
    );
    assert_eq!(support::get(metrics, "/livez").0, "HTTP/1.1 200 OK");
    let (_, body) = support::scrape(metrics);
    assert!(
        body.contains(
            "tg_consumer_state{processor=\"joke-service\",transport=\"mcp\",consumer=\"request\",tg_consumer_state=\"running\"} 1\n"
        ),
        "{body}"
    );
    // No sessions: GET and DELETE are refused as a server without them
    // refuses them.
    for method in ["GET", "DELETE"] {
        let answer = raw_exchange(
            listen,
            &format!("{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{listen}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n"),
        );
        assert!(answer.starts_with("HTTP/1.1 405"), "{method}: {answer}");
        assert!(
            answer.to_ascii_lowercase().contains("\r\nallow: post\r\n"),
            "{method}: {answer}"
        );
    }
    let initialized = raw_exchange(
        listen,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{listen}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{INITIALIZE}",
            INITIALIZE.len()
        ),
    );
    assert!(initialized.starts_with("HTTP/1.1 200"), "{initialized}");
    assert!(
        !initialized.to_ascii_lowercase().contains("mcp-session-id"),
        "{initialized}"
    );
    mcp.terminate();
}

#[test]
fn mcp_on_stdio_serves_metrics_when_asked_and_is_ready_once_initialized() {
    let mut mcp = Running::start(&["mcp", "--metrics-port", "0"], Stdio::piped());
    let metrics = mcp.port_in_log("metrics on");
    assert_eq!(
        wait_for(metrics, "/readyz", "503"),
        "not served over mcp: joke-service\n"
    );
    let mut stdin = mcp.child.stdin.take().unwrap();
    let mut stdout = BufReader::new(mcp.child.stdout.take().unwrap());
    let initialized = exchange(&mut stdin, &mut stdout, INITIALIZE);
    assert!(initialized.contains("\"serverInfo\""), "{initialized}");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    assert_eq!(wait_for(metrics, "/readyz", "200"), "ready\n");
    let answer = exchange(&mut stdin, &mut stdout, CALL);
    assert!(answer.contains("\"isError\":false"), "{answer}");
    let (_, body) = support::scrape(metrics);
    assert!(body.contains(MCP_CALLS), "{body}");
    let unknown = exchange(&mut stdin, &mut stdout, UNKNOWN_TOOL);
    assert!(unknown.contains("-32602"), "{unknown}");
    // The client leaves: the server stops by itself.
    drop(stdin);
    let status = mcp.child.wait().unwrap();
    assert!(status.success());
    mcp.seen.extend(mcp.log.iter());
    // A client's mistake is the client's to hear, not a warning in Rust
    // debug text.
    assert!(
        !mcp.seen
            .iter()
            .any(|line| line.contains("WARN") || line.contains("ErrorData")),
        "{}",
        mcp.seen.join("\n")
    );

    // Without --metrics or --metrics-port, no port is opened on stdio.
    let mut quiet = Running::start(&["mcp", "--log-level", "debug"], Stdio::piped());
    let mut stdin = quiet.child.stdin.take().unwrap();
    let mut stdout = BufReader::new(quiet.child.stdout.take().unwrap());
    exchange(&mut stdin, &mut stdout, INITIALIZE);
    drop(stdin);
    assert!(quiet.child.wait().unwrap().success());
    quiet.seen.extend(quiet.log.try_iter());
    assert!(
        !quiet.seen.iter().any(|line| line.contains("metrics on")),
        "{}",
        quiet.seen.join("\n")
    );
}

#[test]
fn with_pulsar_down_the_mcp_side_stays_ready_on_its_own_probe() {
    // Port 9 (discard) on loopback is closed on these machines: the broker
    // never answers, and Pulsar retries for as long as the process runs.
    let mut both = Running::start(
        &[
            "serve",
            "--pulsar-host",
            "pulsar://127.0.0.1:9",
            "--mcp-listen",
            "127.0.0.1:0",
            "--metrics-port",
            "0",
        ],
        Stdio::null(),
    );
    let metrics = both.port_in_log("metrics on");
    both.port_in_log("serving MCP");
    assert_eq!(wait_for(metrics, "/readyz/mcp", "200"), "ready\n");
    assert_eq!(
        wait_for(metrics, "/readyz/pulsar", "503"),
        "not subscribed: joke-service\n"
    );
    assert_eq!(
        wait_for(metrics, "/readyz", "503"),
        "not subscribed: joke-service\n"
    );
    both.terminate();
}

#[test]
fn an_unknown_service_id_is_refused_at_start_by_mcp_and_serve() {
    for args in [
        &["mcp", "--only", "joke-servic"][..],
        &[
            "mcp",
            "--listen",
            "127.0.0.1:0",
            "--rate",
            "joke-servic=1/s",
        ],
        &[
            "serve",
            "--pulsar-host",
            "pulsar://127.0.0.1:9",
            "--timeout",
            "joke-servic=1s",
        ],
    ] {
        let output = Command::new(support::example("joke"))
            .env_remove("RUST_LOG")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.ends_with(
                "error: no service `joke-servic` in this binary (known: joke-service)\n"
            ),
            "{args:?}: {stderr}"
        );
    }
}

/// The peak resident memory of a process, in KiB (`VmHWM`).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

/// `count` MCP `initialize` requests, each on a connection of its own, none
/// ever followed by anything: clients that crashed, or anyone who can reach
/// the port.
fn initialize_many(port: u16, count: usize) {
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n{INITIALIZE}",
        INITIALIZE.len()
    );
    for _ in 0..count {
        let response = raw_exchange(port, &request);
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    }
}

#[test]
fn abandoned_initializes_leave_no_state_behind() {
    let mut mcp = Running::start(
        &["mcp", "--listen", "127.0.0.1:0", "--no-metrics"],
        Stdio::null(),
    );
    let port = mcp.port_in_log("serving MCP");
    // Warmed up: the runtime's threads and buffers are allocated.
    initialize_many(port, 200);
    let before = peak_rss_kib(mcp.child.id());
    initialize_many(port, 5_000);
    let after = peak_rss_kib(mcp.child.id());
    println!(
        "peak RSS: {} KiB after 200 initializes, {} KiB after 5,200 (+{} KiB)",
        before,
        after,
        after - before
    );
    // With a session per `initialize`, 5,000 of them took 274 MiB.
    assert!(
        after - before < 8 * 1024,
        "5,000 abandoned initializes grew the peak RSS from {before} KiB to {after} KiB"
    );
    mcp.terminate();
}

/// `mcp` over HTTP on a free port, its metrics on another (both in the log).
const MCP_WITH_METRICS: &[&str] = &[
    "mcp",
    "--listen",
    "127.0.0.1:0",
    "--metrics-address",
    "127.0.0.1",
    "--metrics-port",
    "0",
];

/// The example under `ulimit -n files`, as in a container.
fn start_with_file_limit(files: u32, args: &[&str]) -> Running {
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""))
        .arg(support::example("joke"))
        .args(args);
    Running::spawn(command, Stdio::null())
}

/// An MCP `initialize` on a connection of its own, answered within `within`.
fn initialize_within(port: u16, within: Duration) -> String {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(within)).unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n{INITIALIZE}",
        INITIALIZE.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .unwrap_or_else(|error| panic!("no answer within {within:?}: {error}; {response}"));
    response
}

#[test]
fn clients_that_never_finish_a_request_cannot_keep_a_normal_client_out() {
    // 256 files; a cap of 100 connections, as the default 512 sits under
    // the 1,024 files a container often gets.
    let mut mcp = start_with_file_limit(
        256,
        &[
            MCP_WITH_METRICS,
            &[
                "--mcp-max-connections",
                "100",
                "--mcp-header-timeout",
                "20s",
                "--mcp-body-timeout",
                "1s",
            ],
        ]
        .concat(),
    );
    let metrics = mcp.port_in_log("metrics on");
    let port = mcp.port_in_log("serving MCP");
    // 400 connections that send half a request head and never the rest:
    // more than the cap, and more than the process has files for.
    // Without a cap, the process runs out of files after about 250 of
    // them and accepts nothing more (not even their connects complete)
    // until the header timeout frees some: 20 s.
    let half = format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: app");
    let began = Instant::now();
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let held: Vec<std::net::TcpStream> = (0..400)
        .map(|_| {
            let mut stream =
                std::net::TcpStream::connect_timeout(&address, Duration::from_secs(5)).unwrap();
            stream.write_all(half.as_bytes()).unwrap();
            stream
        })
        .collect();
    // While they are all held, a normal client is answered at once: the
    // connection idle longest made room.
    let started = Instant::now();
    let answer = initialize_within(port, Duration::from_secs(5));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"serverInfo\""), "{answer}");
    println!(
        "400 half-sent requests held in {:?}, then an initialize answered in {:?}",
        started - began,
        started.elapsed()
    );
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?} before the normal client was answered",
        began.elapsed()
    );
    // The probes (another port) answer too, and the counts say what happened.
    assert_eq!(wait_for(metrics, "/readyz", "200"), "ready\n");
    let (_, body) = support::scrape(metrics);
    let evicted: u64 = body
        .lines()
        .find_map(|line| {
            line.strip_prefix("tg_tool_service_mcp_connections_closed_total{reason=\"evicted\"} ")
        })
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no evicted count:\n{body}"));
    assert!(evicted >= 300, "{evicted} evicted:\n{body}");
    let open: u64 = body
        .lines()
        .find_map(|line| line.strip_prefix("tg_tool_service_mcp_connections "))
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no open count:\n{body}"));
    assert!(open <= 100, "{open} open:\n{body}");

    // A body that stops halfway is answered 408 after the body timeout,
    // and the connection closes.
    let answer = raw_exchange(
        port,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{{\"jsonrpc\""
        ),
    );
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains("the request body did not arrive within 1s"),
        "{answer}"
    );
    let (_, body) = support::scrape(metrics);
    assert!(
        body.contains("tg_tool_service_mcp_connections_closed_total{reason=\"body_timeout\"} 1\n"),
        "{body}"
    );
    drop(held);
    mcp.terminate();
}

#[test]
fn a_client_that_sends_no_whole_request_head_is_closed_after_the_header_timeout() {
    let mut mcp = Running::start(
        &[MCP_WITH_METRICS, &["--mcp-header-timeout", "1s"]].concat(),
        Stdio::null(),
    );
    let metrics = mcp.port_in_log("metrics on");
    let port = mcp.port_in_log("serving MCP");
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(5),
        "closed after {waited:?}"
    );
    let (_, body) = support::scrape(metrics);
    assert!(
        body.contains(
            "tg_tool_service_mcp_connections_closed_total{reason=\"header_timeout\"} 1\n"
        ),
        "{body}"
    );
    mcp.terminate();
}
