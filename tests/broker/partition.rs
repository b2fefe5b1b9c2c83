//! A partition without a reset: the broker stops answering and nothing
//! closes the connection (a dropped route, a dead node, a firewall that
//! drops). The service runs in a network namespace of its own and reaches
//! the broker over a veth link (through two small TCP forwarders, so that
//! the broker's advertised `127.0.0.1` still leads to it); taking the link
//! down drops every packet both ways, with no FIN and no RST.
//!
//! Needs root, for `ip netns` (iproute2), as CI runs; python3 runs the
//! forwarders. The partition lasts 12 s, less than the broker's keep-alive
//! (30 s); `TOOL_SERVICE_PARTITION_SECS` sets another length.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::moves;
use crate::support;

/// A network namespace joined to this one by a veth link.
struct Namespace {
    name: String,
    /// The link's end in this namespace, taken down to cut it.
    link: String,
    /// The addresses of this end and of the namespace's end.
    here: String,
    there: String,
}

fn ip(args: &[&str]) {
    let output = Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|error| {
            panic!("running `ip` failed ({error}): this test needs iproute2 (apt-get install iproute2)")
        });
    assert!(
        output.status.success(),
        "`ip {}` failed: {}\nthis test cuts the network between a service and the broker with a \
         network namespace and a veth link: run the tests as root (CI does)",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    );
}

impl Namespace {
    fn create() -> Self {
        let id = std::process::id();
        let subnet = format!("10.{}.{}", 64 + (id >> 8) % 64, id % 256);
        let namespace = Self {
            name: format!("ts-partition-{id}"),
            link: format!("tsp{id}a"),
            here: format!("{subnet}.1"),
            there: format!("{subnet}.2"),
        };
        let peer = format!("tsp{id}b");
        ip(&["netns", "add", &namespace.name]);
        ip(&[
            "link",
            "add",
            &namespace.link,
            "type",
            "veth",
            "peer",
            "name",
            &peer,
            "netns",
            &namespace.name,
        ]);
        ip(&[
            "addr",
            "add",
            &format!("{}/30", namespace.here),
            "dev",
            &namespace.link,
        ]);
        ip(&["link", "set", &namespace.link, "up"]);
        let inside = ["-n", namespace.name.as_str()];
        ip(&[
            &inside[..],
            &[
                "addr",
                "add",
                &format!("{}/30", namespace.there),
                "dev",
                &peer,
            ],
        ]
        .concat());
        ip(&[&inside[..], &["link", "set", &peer, "up"]].concat());
        ip(&[&inside[..], &["link", "set", "lo", "up"]].concat());
        namespace
    }

    /// A command run inside the namespace.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name, program]);
        command
    }

    fn cut(&self) {
        ip(&["link", "set", &self.link, "down"]);
    }

    fn heal(&self) {
        ip(&["link", "set", &self.link, "up"]);
    }

    /// `GET path` on a port inside the namespace: (status code, body).
    fn get(&self, port: u16, path: &str) -> (u16, String) {
        let script = "import sys, urllib.request, urllib.error\n\
            try:\n    r = urllib.request.urlopen(sys.argv[1], timeout=5)\n\
            except urllib.error.HTTPError as e:\n    r = e\n\
            print(r.status if hasattr(r, 'status') else r.code)\n\
            sys.stdout.write(r.read().decode())\n";
        let output = self
            .command("python3")
            .args(["-c", script, &format!("http://127.0.0.1:{port}{path}")])
            .output()
            .expect("python3, for a request inside the namespace");
        let text = String::from_utf8_lossy(&output.stdout);
        let (status, body) = text.split_once('\n').unwrap_or((&text, ""));
        (
            status.trim().parse().unwrap_or_else(|_| {
                panic!(
                    "GET {path} in the namespace: {}",
                    String::from_utf8_lossy(&output.stderr)
                )
            }),
            body.to_owned(),
        )
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        // Deleting the namespace deletes the veth pair with it.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
        let _ = Command::new("ip")
            .args(["link", "del", &self.link])
            .status();
    }
}

/// `forward.py HOST PORT TARGET_HOST TARGET_PORT`, ready once it listens.
struct Forwarder(Child);

impl Forwarder {
    fn start(mut command: Command, args: [&str; 4]) -> Self {
        let script = format!("{}/tests/support/forward.py", env!("CARGO_MANIFEST_DIR"));
        let mut child = command
            .arg(script)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the forwarder (python3)");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(
            line.trim(),
            "forwarding",
            "the forwarder {args:?} did not start"
        );
        Self(child)
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `check` every 100 ms until it holds; the time it took, or a panic
/// naming `what` after `timeout`.
fn time_until(
    what: &str,
    since: Instant,
    timeout: Duration,
    mut check: impl FnMut() -> bool,
) -> Duration {
    while !check() {
        assert!(since.elapsed() < timeout, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    since.elapsed()
}

/// The service notices a silent partition within the probe's time (one
/// WARN line, readiness 503, the gauge 0), keeps running, and once the link
/// is back answers every request published meanwhile on the persistent
/// topic, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_without_a_reset_is_noticed_survived_and_loses_no_request() {
    let _suite = support::suite(module_path!());
    let broker = support::require_broker();
    let broker_port = broker.rsplit(':').next().unwrap().to_owned();
    let namespace = Namespace::create();
    let relay_port = support::free_port().to_string();
    let _outside = Forwarder::start(
        Command::new("python3"),
        [&namespace.here, &relay_port, "127.0.0.1", &broker_port],
    );
    let _inside = Forwarder::start(
        namespace.command("python3"),
        ["127.0.0.1", &broker_port, &namespace.here, &relay_port],
    );
    let metrics = support::free_port();
    let mut service = namespace.command(support::example("echo").to_str().unwrap());
    service
        .env_remove("RUST_LOG")
        .args([
            "serve",
            "--pulsar-host",
            &broker,
            "--only",
            "durable-echo-service",
        ])
        .args(["--metrics-port", &metrics.to_string()]);
    let replica = support::Replica::spawn_command(service);
    replica.wait_for_log(" ready", Duration::from_secs(60));

    let pulsar = support::connect().await;
    let mut consumer = moves::responses(&pulsar).await;
    moves::publish(&pulsar, 0, 20, 0, Duration::ZERO).await;
    let before = moves::answers(&mut consumer, 20).await;
    assert_eq!(
        before.len(),
        20,
        "answered before the partition: {before:?}"
    );
    assert_eq!(namespace.get(metrics, "/readyz").0, 200);

    // Requests go on being published (20 a second) while the link is down.
    let publishing = {
        let pulsar = pulsar.clone();
        tokio::spawn(
            async move { moves::publish(&pulsar, 20, 320, 0, Duration::from_millis(50)).await },
        )
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cut = Instant::now();
    namespace.cut();
    let limit = Duration::from_secs(15);
    let not_ready = time_until("readiness 503 after the cut", cut, limit, || {
        namespace.get(metrics, "/readyz").0 == 503
    });
    let gauge = time_until("the connected gauge 0 after the cut", cut, limit, || {
        namespace
            .get(metrics, "/metrics")
            .1
            .contains("tg_tool_service_broker_connected 0\n")
    });
    let lines = replica.wait_for_log("lost the connection to the Pulsar broker", limit);
    let warned = cut.elapsed();
    assert!(
        lines.iter().all(|line| !line.contains("ERROR")),
        "{lines:#?}"
    );

    // Held for 12 s in all, then healed.
    let length = std::env::var("TOOL_SERVICE_PARTITION_SECS")
        .map(|secs| {
            Duration::from_secs(secs.parse().expect("TOOL_SERVICE_PARTITION_SECS: seconds"))
        })
        .unwrap_or(Duration::from_secs(12));
    tokio::time::sleep(length.saturating_sub(cut.elapsed())).await;
    let healed = Instant::now();
    namespace.heal();
    let ready = time_until(
        "readiness 200 after healing",
        healed,
        Duration::from_secs(60),
        || namespace.get(metrics, "/readyz").0 == 200,
    );
    replica.wait_for_log(
        "the connection to the Pulsar broker is back",
        Duration::from_secs(60),
    );
    let retried = publishing.await.unwrap();
    let during = moves::answers(&mut consumer, 300).await;

    let (_, body) = namespace.get(metrics, "/metrics");
    let (status, lines) = replica.finish();
    assert!(
        status.success(),
        "the service did not exit cleanly: {lines:#?}"
    );
    let warnings: Vec<_> = lines
        .iter()
        .filter(|line| line.contains(" WARN "))
        .collect();
    assert_eq!(
        warnings.len(),
        1,
        "one WARN line for the partition: {warnings:#?}"
    );
    let missing: Vec<_> = (20..320)
        .map(|n| format!("move-{n}"))
        .filter(|id| !during.contains_key(id))
        .collect();
    assert!(missing.is_empty(), "never answered: {missing:?}");
    let twice: Vec<_> = during.iter().filter(|(_, count)| **count > 1).collect();
    eprintln!(
        "partition of {length:?}: readiness 503 after {not_ready:.1?}, gauge 0 after {gauge:.1?}, \
         WARN after {warned:.1?}; healed: ready after {ready:.1?}; 300 requests, every one \
         answered, {} answered twice, {} sent again by the publisher\n{}",
        twice.len(),
        retried.len(),
        body.lines()
            .filter(|line| line.starts_with("tg_dynamic_tool_service_invocation_total"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        twice.is_empty() && retried.is_empty(),
        "answered twice: {twice:?}; sent again: {retried:?}"
    );
}
