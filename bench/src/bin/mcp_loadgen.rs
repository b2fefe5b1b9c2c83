//! The MCP load generator: `tools/call` of one tool, over Streamable HTTP
//! with `--in-flight` keep-alive connections (one MCP session each), or over
//! stdio to a server it starts (one call at a time). Every answer is checked
//! to be the tool's text. Prints one JSON line: calls, seconds, throughput,
//! p50 and p99 in microseconds, errors.
//!
//! ```text
//! mcp_loadgen --url http://127.0.0.1:8900/mcp --calls 20000 --warmup 2000 --in-flight 64
//! mcp_loadgen --url http://127.0.0.1:8900/mcp --session-per-call --calls 2000 --warmup 200
//! mcp_loadgen --stdio --calls 5000 --warmup 500 -- ./target/release/ours mcp
//! mcp_loadgen --url http://127.0.0.1:8900/mcp --bearer-file token.txt --in-flight 64
//! ```
//!
//! `--session-per-call` is TrustGraph's `mcp-tool` pattern: every call on a
//! new connection, with its own `initialize`, `notifications/initialized`,
//! the call, and a `DELETE` of the session when the server gave one; the
//! latency is all of it.
//!
//! `--bearer TOKEN` (or `--bearer-file FILE`, its first line) sends
//! `Authorization: Bearer TOKEN` with every HTTP request.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

type Error = Box<dyn std::error::Error + Send + Sync>;

const TEXT: &str = "hello, benchmark";

struct Args {
    url: Option<String>,
    stdio: Vec<String>,
    calls: usize,
    warmup: usize,
    in_flight: usize,
    tool: String,
    session_per_call: bool,
    /// The `Authorization` header's value, `Bearer …`.
    authorization: Option<hyper::header::HeaderValue>,
}

fn parse() -> Result<Args, Error> {
    let mut args = Args {
        url: None,
        stdio: Vec::new(),
        calls: 10_000,
        warmup: 1_000,
        in_flight: 1,
        tool: String::from("echo"),
        session_per_call: false,
        authorization: None,
    };
    let mut all = std::env::args().skip(1);
    while let Some(arg) = all.next() {
        let mut value = || all.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--url" => args.url = Some(value()?),
            "--calls" => args.calls = value()?.parse()?,
            "--warmup" => args.warmup = value()?.parse()?,
            "--in-flight" => args.in_flight = value()?.parse()?,
            "--tool" => args.tool = value()?,
            "--session-per-call" => args.session_per_call = true,
            "--bearer" => args.authorization = Some(bearer(&value()?)?),
            "--bearer-file" => {
                let path = value()?;
                let text = std::fs::read_to_string(&path)
                    .map_err(|error| format!("cannot read {path}: {error}"))?;
                args.authorization = Some(bearer(text.lines().next().unwrap_or_default())?);
            }
            "--stdio" => {}
            "--" => {
                args.stdio = all.by_ref().collect();
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if args.url.is_none() && args.stdio.is_empty() {
        return Err("give --url URL or --stdio -- COMMAND…".into());
    }
    Ok(args)
}

/// `Bearer TOKEN`, as a header value.
fn bearer(token: &str) -> Result<hyper::header::HeaderValue, Error> {
    let token = token.trim();
    if token.is_empty() {
        return Err("the bearer token is empty".into());
    }
    let mut value = hyper::header::HeaderValue::from_str(&format!("Bearer {token}"))?;
    value.set_sensitive(true);
    Ok(value)
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcp-loadgen", "version": "1"}}})
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn call(id: u64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": {"text": TEXT}}})
}

/// Whether `message` is the answer to call `id` with the tool's text.
fn answered(message: &Value, id: u64) -> bool {
    message["id"] == id
        && message["result"]["isError"] != true
        && message["result"]["content"][0]["text"] == TEXT
}

/// The JSON-RPC message of a response body: plain JSON, or the last
/// `data:` line of an SSE stream.
fn message(body: &[u8]) -> Value {
    let text = String::from_utf8_lossy(body);
    if let Ok(value) = serde_json::from_str(&text) {
        return value;
    }
    text.lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .find_map(|data| serde_json::from_str(data.trim()).ok())
        .unwrap_or(Value::Null)
}

/// One keep-alive connection with one MCP session.
struct Session {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    host: String,
    path: String,
    session: Option<String>,
    authorization: Option<hyper::header::HeaderValue>,
}

impl Session {
    async fn open(
        url: &str,
        authorization: Option<hyper::header::HeaderValue>,
    ) -> Result<Self, Error> {
        let rest = url
            .strip_prefix("http://")
            .ok_or("the URL must be http://")?;
        let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let stream = tokio::net::TcpStream::connect(host).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        let mut session = Self {
            sender,
            host: host.to_owned(),
            path: if path.is_empty() {
                "/".into()
            } else {
                path.into()
            },
            session: None,
            authorization,
        };
        let (headers, _) = session.post(&initialize()).await?;
        session.session = headers
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        session.post(&initialized()).await?;
        Ok(session)
    }

    async fn post(&mut self, body: &Value) -> Result<(hyper::HeaderMap, Value), Error> {
        let mut request = hyper::Request::post(&self.path)
            .header(hyper::header::HOST, &self.host)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        if let Some(authorization) = &self.authorization {
            request = request.header(hyper::header::AUTHORIZATION, authorization);
        }
        let request = request.body(Full::new(Bytes::from(body.to_string())))?;
        self.send(request).await
    }

    /// Ends the session, as TrustGraph's client does after its call (when
    /// the server gave one).
    async fn close(mut self) -> Result<(), Error> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        let mut request = hyper::Request::delete(&self.path)
            .header(hyper::header::HOST, &self.host)
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", session);
        if let Some(authorization) = &self.authorization {
            request = request.header(hyper::header::AUTHORIZATION, authorization);
        }
        let request = request.body(Full::new(Bytes::new()))?;
        self.send(request).await.map(drop)
    }

    async fn send(
        &mut self,
        request: hyper::Request<Full<Bytes>>,
    ) -> Result<(hyper::HeaderMap, Value), Error> {
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let headers = response.headers().clone();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((headers, message(&body)))
    }
}

/// One call in a session of its own, closed after it (TrustGraph's
/// pattern): whether it was answered.
async fn call_in_own_session(
    url: &str,
    authorization: Option<&hyper::header::HeaderValue>,
    tool: &str,
    id: u64,
) -> Result<bool, Error> {
    let mut session = Session::open(url, authorization.cloned()).await?;
    let (_, answer) = session.post(&call(id, tool)).await?;
    session.close().await?;
    Ok(answered(&answer, id))
}

/// Runs `calls` calls, each in a session of its own.
async fn run_sessions_per_call(
    url: String,
    authorization: Option<hyper::header::HeaderValue>,
    tool: String,
    warmup: usize,
    calls: usize,
    start: std::sync::Arc<tokio::sync::Barrier>,
) -> Result<(Vec<Duration>, usize), Error> {
    let mut errors = 0;
    for id in 0..warmup as u64 {
        errors +=
            usize::from(!call_in_own_session(&url, authorization.as_ref(), &tool, id + 1).await?);
    }
    start.wait().await;
    let mut latencies = Vec::with_capacity(calls);
    for n in 0..calls as u64 {
        let started = Instant::now();
        let ok = call_in_own_session(&url, authorization.as_ref(), &tool, 1_000_000 + n).await?;
        latencies.push(started.elapsed());
        errors += usize::from(!ok);
    }
    Ok((latencies, errors))
}

/// Runs `calls` calls on one session; their latencies, and the errors.
async fn run_session(
    url: String,
    authorization: Option<hyper::header::HeaderValue>,
    tool: String,
    warmup: usize,
    calls: usize,
    start: std::sync::Arc<tokio::sync::Barrier>,
) -> Result<(Vec<Duration>, usize), Error> {
    let mut session = Session::open(&url, authorization).await?;
    let mut errors = 0;
    for id in 0..warmup as u64 {
        let (_, answer) = session.post(&call(id + 1, &tool)).await?;
        errors += usize::from(!answered(&answer, id + 1));
    }
    start.wait().await;
    let mut latencies = Vec::with_capacity(calls);
    for n in 0..calls as u64 {
        let id = 1_000_000 + n;
        let started = Instant::now();
        let (_, answer) = session.post(&call(id, &tool)).await?;
        latencies.push(started.elapsed());
        errors += usize::from(!answered(&answer, id));
    }
    Ok((latencies, errors))
}

async fn over_http(args: &Args) -> Result<(Vec<Duration>, usize, Duration), Error> {
    let url = args.url.clone().expect("an URL");
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(args.in_flight + 1));
    let per = args.calls / args.in_flight;
    let warm = args.warmup / args.in_flight;
    let sessions: Vec<_> = (0..args.in_flight)
        .map(|_| {
            if args.session_per_call {
                tokio::spawn(run_sessions_per_call(
                    url.clone(),
                    args.authorization.clone(),
                    args.tool.clone(),
                    warm,
                    per,
                    std::sync::Arc::clone(&start),
                ))
            } else {
                tokio::spawn(run_session(
                    url.clone(),
                    args.authorization.clone(),
                    args.tool.clone(),
                    warm,
                    per,
                    std::sync::Arc::clone(&start),
                ))
            }
        })
        .collect();
    start.wait().await;
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(args.calls);
    let mut errors = 0;
    for session in sessions {
        let (mut more, failed) = session.await??;
        latencies.append(&mut more);
        errors += failed;
    }
    Ok((latencies, errors, started.elapsed()))
}

async fn over_stdio(args: &Args) -> Result<(Vec<Duration>, usize, Duration), Error> {
    let mut child = tokio::process::Command::new(&args.stdio[0])
        .args(&args.stdio[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut input = child.stdin.take().expect("piped");
    let mut output = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut send = async |message: &Value| -> Result<(), Error> {
        let mut line = message.to_string();
        line.push('\n');
        input.write_all(line.as_bytes()).await?;
        input.flush().await?;
        Ok(())
    };
    send(&initialize()).await?;
    output
        .next_line()
        .await?
        .ok_or("the server closed stdout")?;
    send(&initialized()).await?;
    let mut errors = 0;
    let mut latencies = Vec::with_capacity(args.calls);
    let mut started = Instant::now();
    for n in 0..(args.warmup + args.calls) as u64 {
        if n == args.warmup as u64 {
            started = Instant::now();
        }
        let before = Instant::now();
        send(&call(n + 1, &args.tool)).await?;
        let line = output
            .next_line()
            .await?
            .ok_or("the server closed stdout")?;
        let answer: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        if n >= args.warmup as u64 {
            latencies.push(before.elapsed());
            errors += usize::from(!answered(&answer, n + 1));
        }
    }
    let elapsed = started.elapsed();
    let _ = child.kill().await;
    Ok((latencies, errors, elapsed))
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at].as_secs_f64() * 1e6
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = parse()?;
    let (mut latencies, errors, elapsed) = if args.url.is_some() {
        over_http(&args).await?
    } else {
        over_stdio(&args).await?
    };
    latencies.sort_unstable();
    let calls = latencies.len();
    println!(
        "{}",
        json!({
            "calls": calls,
            "seconds": elapsed.as_secs_f64(),
            "throughput": calls as f64 / elapsed.as_secs_f64(),
            "p50_us": percentile(&latencies, 0.50),
            "p99_us": percentile(&latencies, 0.99),
            "errors": errors,
        })
    );
    Ok(())
}
