//! Shared by the broker tests: find the broker (or fail saying how to start
//! one), run services in-process or as processes, and talk raw Pulsar.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use futures_util::StreamExt;
use tool_service::host::{Host, HostOptions, Running, ServiceReport, Transports};
use tool_service::pulsar::broker::pulsar::{producer, Consumer, Producer, Pulsar, TokioExecutor};
use tool_service::pulsar::serve::{PulsarTransport, ServeOptions};
use tool_service::wire::Frame;
use tool_service::Registry;

/// The broker URL: `PULSAR_URL`, else the local standalone broker.
pub(crate) fn broker_url() -> String {
    std::env::var("PULSAR_URL").unwrap_or_else(|_| String::from("pulsar://127.0.0.1:6650"))
}

fn answers(url: &str) -> bool {
    let address = url
        .split_once("://")
        .map(|(_, rest)| rest.trim_end_matches('/').to_owned())
        .unwrap_or_default();
    address
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .is_some_and(|address| TcpStream::connect_timeout(&address, Duration::from_secs(3)).is_ok())
}

/// The broker URL, after checking that something answers there. With no
/// `PULSAR_URL` and nothing on the local broker's port, starts the local
/// standalone broker (`scripts/pulsar.sh start`, which fetches it from Maven
/// Central the first time) and leaves it running for the next test binary,
/// as a test database is left for the next run.
pub(crate) fn require_broker() -> String {
    static STARTED: std::sync::Mutex<Option<Result<String, String>>> = std::sync::Mutex::new(None);
    let url = broker_url();
    if answers(&url) {
        return url;
    }
    assert!(
        std::env::var_os("PULSAR_URL").is_none(),
        "no Pulsar broker answers at PULSAR_URL={url}: start that broker, or unset PULSAR_URL \
         and the tests start the local one (`scripts/pulsar.sh start`)"
    );
    let mut started = STARTED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let outcome = started.get_or_insert_with(|| {
        let script = format!("{}/scripts/pulsar.sh", env!("CARGO_MANIFEST_DIR"));
        // Past the test harness's capture: the start can take minutes the
        // first time.
        let _ = writeln!(
            std::io::stderr(),
            "no Pulsar broker answers at {url}: starting the local one with `scripts/pulsar.sh \
             start` (it keeps running; `scripts/pulsar.sh stop` stops it)"
        );
        let output = Command::new(&script)
            .arg("start")
            .stdin(Stdio::null())
            .output()
            .map_err(|error| format!("{script} did not run: {error}"))?;
        if output.status.success() {
            Ok(url.clone())
        } else {
            Err(format!(
                "`scripts/pulsar.sh start` failed (it needs Java 17 and Maven, or root to install \
                 them):\n{}",
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    });
    match outcome {
        Ok(url) => url.clone(),
        Err(message) => panic!("{message}"),
    }
}

pub(crate) async fn connect() -> Pulsar<TokioExecutor> {
    tool_service::pulsar::broker::BrokerOptions::new(require_broker())
        .connect()
        .await
        .expect("connect to the broker")
}

/// A `ToolClient` of `{persistence}://tg/{request,response}/{topic}` on the
/// test broker, with a 30 s timeout.
pub(crate) async fn client(
    persistence: &str,
    topic: &str,
) -> tool_service::pulsar::client::ToolClient {
    let options = tool_service::pulsar::broker::BrokerOptions::new(require_broker());
    client_on(&options, persistence, topic, Duration::from_secs(30)).await
}

/// A `ToolClient` of `{persistence}://tg/{request,response}/{topic}` on the
/// broker `options` describe, with the given timeout.
pub(crate) async fn client_on(
    options: &tool_service::pulsar::broker::BrokerOptions,
    persistence: &str,
    topic: &str,
    timeout: Duration,
) -> tool_service::pulsar::client::ToolClient {
    let pulsar = options.connect().await.expect("connect to the broker");
    tool_service::pulsar::client::ToolClient::connect(
        &pulsar,
        &format!("{persistence}://tg/request/{topic}"),
        &format!("{persistence}://tg/response/{topic}"),
    )
    .await
    .expect("open the service's topics")
    .with_timeout(timeout)
}

/// Services of this test binary served in-process; stops when dropped.
pub(crate) struct InProcess {
    /// The metrics of the services served.
    pub metrics: std::sync::Arc<tool_service::metrics::Metrics>,
    running: Running,
}

impl InProcess {
    pub(crate) async fn start(only: &[&str]) -> Self {
        Self::start_with(only, |_, _| {}).await
    }

    /// Serves `only` on Pulsar, with the host's and the transport's options
    /// as `configure` sets them, once every service is subscribed.
    pub(crate) async fn start_with(
        only: &[&str],
        configure: impl FnOnce(&mut HostOptions, &mut ServeOptions),
    ) -> Self {
        let registry = std::sync::Arc::new(Registry::collect().expect("a valid registry"));
        let mut host = HostOptions::default();
        host.only = only.iter().map(|id| (*id).to_owned()).collect();
        let mut options = ServeOptions::new(require_broker());
        configure(&mut host, &mut options);
        let host = Host::new(registry, &host).expect("the services to serve");
        let metrics = std::sync::Arc::clone(host.metrics());
        let mut running = Transports::new(host)
            .with(PulsarTransport::new(options))
            .start()
            .await
            .expect("start serving");
        tokio::time::timeout(Duration::from_secs(60), running.ready())
            .await
            .expect("the services subscribed within a minute")
            .expect("subscribe the services");
        Self { metrics, running }
    }

    /// Drains and stops; what each service did.
    pub(crate) async fn stop(self) -> std::collections::BTreeMap<&'static str, ServiceReport> {
        self.running.stop().await.expect("serving ends").services
    }
}

/// The Python peer's interpreter (TrustGraph's packages installed):
/// `TOOL_SERVICE_PEER_PYTHON`, else the one `scripts/install/python-peer.sh`
/// prints, which creates its virtual environment the first time.
pub(crate) fn peer_python() -> String {
    static PYTHON: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    if let Ok(python) = std::env::var("TOOL_SERVICE_PEER_PYTHON") {
        return python;
    }
    let outcome = PYTHON.get_or_init(|| {
        let script = format!("{}/scripts/install/python-peer.sh", env!("CARGO_MANIFEST_DIR"));
        let output = Command::new(&script)
            .stdin(Stdio::null())
            .output()
            .map_err(|error| format!("{script} did not run: {error}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        match stdout.lines().last() {
            Some(python) if output.status.success() => Ok(python.to_owned()),
            _ => Err(format!(
                "`scripts/install/python-peer.sh` failed (it needs Python 3 with venv and PyPI), or set \
                 TOOL_SERVICE_PEER_PYTHON to a Python with trustgraph-base:\n{}",
                String::from_utf8_lossy(&output.stderr)
            )),
        }
    });
    match outcome {
        Ok(python) => python.clone(),
        Err(message) => panic!("{message}"),
    }
}

/// An example binary, built by `cargo test` next to this test's binary
/// (with no target filter: `cargo test --test broker` alone builds none and
/// runs the ones an earlier build left).
pub(crate) fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo test` without a target filter, which builds the examples, or `cargo build --examples` first",
        path.display()
    );
    path
}

/// The lines a child writes to its standard error (piped), as they come.
pub(crate) fn log_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().expect("standard error piped");
    let (lines, log) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    log
}

/// An example binary running `serve`; killed when dropped.
pub(crate) struct Replica {
    pub child: Child,
    pub log: mpsc::Receiver<String>,
    /// Every line read so far (by `wait_for_log`), so that `finish` can
    /// return the whole life of the replica, start-up included.
    read: std::sync::Mutex<Vec<String>>,
}

impl Replica {
    /// Starts `example serve ARGS…` on the test broker and waits until it
    /// says it is ready.
    pub(crate) fn start(name: &str, args: &[&str]) -> Self {
        Self::start_at(&require_broker(), name, args)
    }

    /// Starts `example serve ARGS…` on the broker at `url` and waits until
    /// it says it is ready.
    pub(crate) fn start_at(url: &str, name: &str, args: &[&str]) -> Self {
        let replica = Self::spawn_at(url, name, args);
        replica.wait_for_log(" ready", Duration::from_secs(60));
        replica
    }

    /// Starts `example serve ARGS…` on the broker at `url`, without waiting.
    pub(crate) fn spawn_at(url: &str, name: &str, args: &[&str]) -> Self {
        Self::spawn_with_env(url, name, args, &[])
    }

    /// [`Self::spawn_at`] with extra environment variables.
    pub(crate) fn spawn_with_env(
        url: &str,
        name: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let mut command = Command::new(example(name));
        command
            // The test's own RUST_LOG would take the place of --log-level.
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .arg("serve")
            .args(["--pulsar-host", url])
            // Any free port, so replicas can run side by side; a test's own
            // `--metrics-port` comes later and wins.
            .args(["--metrics-port", "0"])
            .args(args);
        Self::spawn_command(command)
    }

    /// Starts a prepared command (an example's `serve` run some other way,
    /// e.g. in a network namespace), without waiting.
    pub(crate) fn spawn_command(mut command: Command) -> Self {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the example");
        let log = log_lines(&mut child);
        Self {
            child,
            log,
            read: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Waits for a log line containing `needle`; returns the lines seen.
    pub(crate) fn wait_for_log(&self, needle: &str, timeout: Duration) -> Vec<String> {
        let deadline = std::time::Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(needle);
                    self.read.lock().unwrap().push(line.clone());
                    seen.push(line);
                    if found {
                        return seen;
                    }
                }
                Err(_) => panic!(
                    "no log line with {needle:?} within {timeout:?}; saw:\n{}",
                    seen.join("\n")
                ),
            }
        }
    }

    /// The log lines read so far (by `start` and `wait_for_log`).
    pub(crate) fn lines_so_far(&self) -> Vec<String> {
        self.read.lock().unwrap().clone()
    }

    /// Sends SIGTERM, waits for the exit and returns every log line of the
    /// replica's life, start-up included.
    pub(crate) fn finish(mut self) -> (std::process::ExitStatus, Vec<String>) {
        self.signal("TERM");
        let status = self.child.wait().expect("wait for the replica");
        let mut lines = std::mem::take(&mut *self.read.lock().unwrap());
        lines.extend(self.log.iter());
        (status, lines)
    }

    /// Waits for a replica that exits by itself; returns every log line of
    /// its life.
    pub(crate) fn wait_exit(mut self) -> (std::process::ExitStatus, Vec<String>) {
        let status = self.child.wait().expect("wait for the replica");
        let mut lines = std::mem::take(&mut *self.read.lock().unwrap());
        lines.extend(self.log.iter());
        (status, lines)
    }

    pub(crate) fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A standalone broker of a test's own, on free ports (service, HTTP and
/// bookie) and with data in a directory of this process's own, so that
/// concurrent runs do not collide (via `scripts/pulsar.sh`); stopped when
/// dropped.
pub(crate) struct PrivateBroker {
    env: Vec<(String, String)>,
    /// The broker's service port.
    pub port: u16,
}

impl PrivateBroker {
    /// Starts a fresh broker, with extra `scripts/pulsar.sh` environment
    /// such as `PULSAR_EXTRA_CONF`.
    pub(crate) fn start(extra: &[(&str, &str)]) -> Self {
        let port = free_port();
        let mut env: Vec<(String, String)> = vec![
            ("PULSAR_PORT".into(), port.to_string()),
            ("PULSAR_HTTP_PORT".into(), free_port().to_string()),
            ("PULSAR_BOOKIE_PORT".into(), free_port().to_string()),
            (
                "PULSAR_DATA".into(),
                std::env::temp_dir()
                    .join(format!(
                        "tool-service-pulsar-test-{}-{port}",
                        std::process::id()
                    ))
                    .display()
                    .to_string(),
            ),
        ];
        env.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        let broker = Self { env, port };
        // Fresh data the first time; a later `run("start")` is a restart.
        broker.run_with("start", &[("PULSAR_FRESH", "1")]);
        broker
    }

    /// The broker's `pulsar://` URL.
    pub(crate) fn url(&self) -> String {
        format!("pulsar://127.0.0.1:{}", self.port)
    }

    /// Runs `scripts/pulsar.sh ACTION` for this broker.
    pub(crate) fn run(&self, action: &str) {
        self.run_with(action, &[]);
    }

    fn run_with(&self, action: &str, extra: &[(&str, &str)]) {
        let script = format!("{}/scripts/pulsar.sh", env!("CARGO_MANIFEST_DIR"));
        let output = Command::new("bash")
            .args([&script, action])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(extra.iter().copied())
            .output()
            .expect("run scripts/pulsar.sh");
        assert!(
            output.status.success(),
            "scripts/pulsar.sh {action} failed (it needs Java 17 and Maven, see README):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

impl Drop for PrivateBroker {
    fn drop(&mut self) {
        self.run("stop");
        if let Some((_, data)) = self.env.iter().find(|(key, _)| key == "PULSAR_DATA") {
            let _ = std::fs::remove_dir_all(data);
        }
    }
}

/// A TCP port nobody listens on right now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0")
        .and_then(|listener| listener.local_addr())
        .expect("pick a free port")
        .port()
}

/// A request to the broker's admin API: the status line and the body.
pub(crate) fn admin(method: &str, path: &str, body: &str) -> (String, String) {
    use std::io::{Read, Write};
    let port = std::env::var("PULSAR_HTTP_PORT").unwrap_or_else(|_| String::from("8080"));
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap()))
        .expect("connect to the broker's admin port (PULSAR_HTTP_PORT, default 8080)");
    // HTTP/1.0: the body comes whole, not in chunks.
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (
        head.lines().next().unwrap_or_default().to_owned(),
        body.to_owned(),
    )
}

/// An admin request that must succeed (or find its object there already).
/// A server error is retried for a while: a broker that has just started,
/// or is still closing what a forced delete fenced, answers 500 at times.
pub(crate) fn assert_admin(method: &str, path: &str, body: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let (status, answer) = admin(method, path, body);
        if [" 200", " 204", " 409"]
            .iter()
            .any(|ok| status.contains(ok))
        {
            return;
        }
        assert!(
            status.contains(" 5") && std::time::Instant::now() < deadline,
            "{method} {path}: {status}: {answer}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// How many messages the broker has delivered to `subscription` of `topic`
/// (`non-persistent://…` or `persistent://…`): 0 while the topic or the
/// subscription does not exist yet.
pub(crate) fn delivered(topic: &str, subscription: &str) -> u64 {
    let path = format!("/admin/v2/{}/stats", topic.replacen("://", "/", 1));
    let (status, body) = admin("GET", &path, "");
    if !status.contains(" 200") {
        return 0;
    }
    let stats: serde_json::Value = serde_json::from_str(&body).expect("topic stats are JSON");
    stats["subscriptions"][subscription]["msgOutCounter"]
        .as_u64()
        .unwrap_or(0)
}

/// Polls `ready` every 20 ms until it holds; panics with `what` after
/// `timeout`.
pub(crate) async fn wait_until(what: &str, timeout: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + timeout;
    while !ready() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `GET /metrics` on the local `port`: the status line and the body.
pub(crate) fn scrape(port: u16) -> (String, String) {
    get(port, "/metrics")
}

/// `GET path` on the local `port`: the status line and the body.
pub(crate) fn get(port: u16, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to the metrics port");
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    (
        head.lines().next().unwrap_or_default().to_owned(),
        body.to_owned(),
    )
}

/// Raw access to a service's topic pair: publish any payload, with or without
/// an `id`, and read every response frame.
pub(crate) struct RawTopic {
    pub producer: Producer<TokioExecutor>,
    pub consumer: Consumer<Vec<u8>, TokioExecutor>,
    _lease: TopicLease,
}

impl RawTopic {
    /// `persistence` is `non-persistent` or `persistent`; topics are
    /// `{persistence}://tg/request/{topic}` and `…/response/{topic}`.
    pub(crate) async fn open(persistence: &str, topic: &str) -> Self {
        let lease = lease(topic);
        let pulsar = connect().await;
        let consumer = tool_service::pulsar::broker::subscribe_own(
            &pulsar,
            &format!("{persistence}://tg/response/{topic}"),
        )
        .await
        .expect("subscribe to the response topic");
        let producer = pulsar
            .producer()
            .with_topic(format!("{persistence}://tg/request/{topic}"))
            .build()
            .await
            .expect("publish on the request topic");
        Self {
            producer,
            consumer,
            _lease: lease,
        }
    }

    pub(crate) async fn send(&mut self, payload: &[u8], id: Option<&str>) {
        let mut message = producer::Message {
            payload: payload.to_vec(),
            ..producer::Message::default()
        };
        if let Some(id) = id {
            message.properties.insert("id".into(), id.into());
        }
        self.producer
            .send_non_blocking(message)
            .await
            .unwrap()
            .await
            .unwrap();
    }

    /// The next response frame and its `id` property.
    pub(crate) async fn receive(&mut self) -> (Option<String>, Frame) {
        let message = tokio::time::timeout(Duration::from_secs(30), self.consumer.next())
            .await
            .expect("a response within 30 s")
            .unwrap()
            .unwrap();
        self.consumer.ack(&message).await.unwrap();
        let id = tool_service::pulsar::broker::message_id(&message).map(str::to_owned);
        (
            id,
            Frame::decode(&message.payload.data).expect("a response frame"),
        )
    }

    /// Reads for a while: no frame may arrive (after a response's last
    /// frame, none may follow).
    pub(crate) async fn assert_quiet(&mut self, after: &str) {
        let next = tokio::time::timeout(Duration::from_secs(1), self.consumer.next()).await;
        if let Ok(Some(Ok(message))) = next {
            let data = &message.payload.data;
            panic!(
                "a frame arrived after {after}: {}",
                String::from_utf8_lossy(&data[..data.len().min(200)])
            );
        }
    }

    /// Sends `payload` and returns the id answered and every frame up to
    /// the last one.
    pub(crate) async fn exchange(
        &mut self,
        payload: &[u8],
        id: Option<&str>,
    ) -> (String, Vec<Frame>) {
        self.send(payload, id).await;
        let mut frames = Vec::new();
        loop {
            let (answered, frame) = self.receive().await;
            let last = frame.end_of_stream;
            frames.push(frame);
            if last {
                return (answered.unwrap_or_default(), frames);
            }
        }
    }
}

/// Who holds the broker suites' gate: a suite's name and how many of its
/// tests run.
/// The topics tests hold now ([`lease`]).
static LEASED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
static LEASE_FREED: std::sync::Condvar = std::sync::Condvar::new();

/// A topic (`close-ticket`: its request and response topics, either
/// persistence) held by one test until dropped.
pub(crate) struct TopicLease(String);

/// Holds `topic` for the calling test: the tests of one suite run side by
/// side, and a test that reads a topic's responses must not see another
/// test's. Waits while another test holds it; [`RawTopic::open`] takes one,
/// and so must a test that sends on a topic another test reads (an
/// example's fixed topic, say). Two minutes of waiting is a test that
/// holds it twice, or never lets go: it panics, naming the topic.
pub(crate) fn lease(topic: &str) -> TopicLease {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let mut leased = LEASED.lock().unwrap_or_else(|poison| poison.into_inner());
    while leased.iter().any(|held| held == topic) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(
            !left.is_zero(),
            "the topic `{topic}` stayed held by another test for 2 minutes (or this test holds it twice)"
        );
        leased = LEASE_FREED
            .wait_timeout(leased, left)
            .unwrap_or_else(|poison| poison.into_inner())
            .0;
    }
    leased.push(topic.to_owned());
    TopicLease(topic.to_owned())
}

impl Drop for TopicLease {
    fn drop(&mut self) {
        let mut leased = LEASED.lock().unwrap_or_else(|poison| poison.into_inner());
        leased.retain(|held| held != &self.0);
        LEASE_FREED.notify_all();
    }
}

static SUITE: std::sync::Mutex<(&str, usize)> = std::sync::Mutex::new(("", 0));
static SUITE_FREED: std::sync::Condvar = std::sync::Condvar::new();

/// A test's turn in its suite: held while the test runs, released when
/// dropped (a panic included).
pub(crate) struct SuiteTurn {
    suite: &'static str,
}

/// Waits until no test of another suite runs, then returns this test's turn.
/// The suites of one test binary share its broker topics and example
/// binaries, so they take turns, as separate test binaries would; the tests
/// of one suite still run side by side.
///
/// Every test of `tests/broker/` starts with
/// `let _suite = support::suite(module_path!());`
/// (`tests/offline/architecture.rs` checks it).
pub(crate) fn suite(suite: &'static str) -> SuiteTurn {
    let mut holder = SUITE.lock().unwrap_or_else(|poison| poison.into_inner());
    while holder.1 > 0 && holder.0 != suite {
        holder = SUITE_FREED
            .wait(holder)
            .unwrap_or_else(|poison| poison.into_inner());
    }
    *holder = (suite, holder.1 + 1);
    SuiteTurn { suite }
}

impl Drop for SuiteTurn {
    fn drop(&mut self) {
        let mut holder = SUITE.lock().unwrap_or_else(|poison| poison.into_inner());
        debug_assert_eq!(holder.0, self.suite);
        holder.1 -= 1;
        if holder.1 == 0 {
            SUITE_FREED.notify_all();
        }
    }
}

/// The value of the sample `series` (a name and its labels, as rendered) in
/// a metrics exposition.
pub(crate) fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.parse().expect("a number"))
}
