//! Findings of a security review, each proven on a live `serve`: untrusted
//! text in logs, idle connections to the metrics endpoint, TCP_NODELAY set
//! on broker connections only. Needs a broker: `scripts/pulsar.sh start`.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::{RawTopic, Replica};
use tool_service::wire::Request;

/// Ids (and users) a hostile publisher might send, and what each would do
/// to a raw log.
const HOSTILE: [&str; 4] = [
    "forge\nINFO forged: admin logged in",
    "title\x1b]0;pwned\x07",
    "overwrite\rINFO all good",
    "clear\x1b[2J\x1b[H\u{202e}",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_text_is_logged_escaped_on_one_bounded_line() {
    let _suite = support::suite(module_path!());
    let replica = Replica::spawn_at(
        &support::require_broker(),
        "echo",
        &[
            "--only",
            "echo-service",
            "--log-level",
            "debug",
            "--log-payloads",
        ],
    );
    replica.wait_for_log(" ready", Duration::from_secs(60));
    let mut raw = RawTopic::open("non-persistent", "echo").await;
    let long_id = "i".repeat(100_000);
    let ids: Vec<&str> = HOSTILE.iter().copied().chain([long_id.as_str()]).collect();
    for (n, id) in ids.iter().enumerate() {
        let hostile = HOSTILE[n % HOSTILE.len()];
        let request = Request {
            user: Some(hostile.to_owned()),
            config: json!({ "note": hostile }).to_string(),
            arguments: json!({ "text": hostile }).to_string(),
        };
        let (answered, frames) = raw.exchange(&request.encode(), Some(id)).await;
        // The wire is untouched: the id comes back as sent.
        assert_eq!(answered, *id);
        assert_eq!(frames[0].response, hostile);
    }
    // A request that is not JSON is logged too (with --log-payloads).
    let (_, frames) = raw
        .exchange(b"\x1b[2J not json\nINFO forged", Some("bad"))
        .await;
    assert_eq!(frames[0].error.as_ref().unwrap().kind(), "invalid-request");

    let (status, lines) = replica.finish();
    assert!(status.success());
    for line in &lines {
        assert!(
            line.starts_with("20"),
            "a log line that is not a record of its own (forged?): {line:?}"
        );
        assert!(
            !line.chars().any(char::is_control),
            "a control character reached the log: {line:?}"
        );
        assert!(line.len() <= 8_000, "a log line of {} bytes", line.len());
    }
    let all = lines.join("\n");
    // Each hostile text was logged, escaped, as the id, user, config and
    // arguments of its request; the long id cut with its length.
    for shown in [
        r"forge\nINFO forged: admin logged in",
        r"title\u{1b}]0;pwned\u{7}",
        r"overwrite\rINFO all good",
        r"clear\u{1b}[2J\u{1b}[H\u{202e}",
    ] {
        assert!(
            all.contains(&format!("request_id={shown}")),
            "{shown} as an id in\n{all}"
        );
        assert!(
            all.contains(&format!("user=\"{shown}\"")),
            "{shown} as a user"
        );
    }
    assert!(all.contains(&format!("request_id={}… (100000 bytes)", "i".repeat(200))));
    assert!(all.contains(r"\u{1b}[2J not json\nINFO forged"));
}

/// Open file descriptors of a process.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("read /proc/PID/fd")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_metrics_connections_cannot_pile_up() {
    let _suite = support::suite(module_path!());
    let port = support::free_port();
    let replica = Replica::spawn_at(
        &support::require_broker(),
        "echo",
        &[
            "--only",
            "whoami-service",
            "--metrics-address",
            "127.0.0.1",
            "--metrics-port",
            &port.to_string(),
        ],
    );
    let started = replica.wait_for_log(" ready", Duration::from_secs(60));
    assert!(
        started
            .iter()
            .any(|line| line.contains(&format!("metrics on http://127.0.0.1:{port}/metrics"))),
        "{}",
        started.join("\n")
    );
    let whoami = support::client("non-persistent", "whoami").await;
    whoami.call(&json!({}), &json!({})).await.unwrap();
    let pid = replica.child.id();
    let before = open_fds(pid);

    // Far more idle connections than the endpoint serves at once, held open.
    let idle: Vec<std::net::TcpStream> = (0..300)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect"))
        .collect();
    // The most descriptors serve holds while it takes them in: sampled for
    // a second.
    let mut during = 0;
    for _ in 0..20 {
        during = during.max(open_fds(pid));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("descriptors of serve: {before} before, {during} with 300 idle metrics connections");
    assert!(
        during <= before + tool_service::metrics::MAX_CONNECTIONS + 4,
        "{during} descriptors open with 300 idle metrics connections, {before} before"
    );
    // Tool calls go on meanwhile.
    let answer = whoami.call(&json!({}), &json!({})).await.unwrap();
    assert!(answer.contains("whoami-service"));
    // The idle ones time out, and a scrape gets through while the 300
    // sockets are still held open on this side.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let scraped = std::panic::catch_unwind(|| support::scrape(port));
        match scraped {
            Ok((status, body)) if status.contains("200") => {
                assert!(body.contains("whoami-service"));
                break;
            }
            other => assert!(
                std::time::Instant::now() < deadline,
                "the metrics endpoint stayed unusable: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(idle);
    let (status, _) = replica.finish();
    assert!(status.success());
}

/// Says hi.
#[tool_service::tool_service(topic = "it-security-hi")]
async fn hi() -> &'static str {
    "hi"
}

/// TCP_NODELAY of this process's TCP sockets connected to `peer`.
fn nodelay_of_sockets_to(peer: std::net::SocketAddr) -> Vec<bool> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let is_socket = std::fs::read_link(entry.path())
            .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"));
        if !is_socket {
            continue;
        }
        // SAFETY: borrowed for two system calls while this test's own
        // sockets stay open.
        #[allow(unsafe_code)]
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let socket = socket2::SockRef::from(&fd);
        let to_peer = socket
            .peer_addr()
            .ok()
            .and_then(|address| address.as_socket())
            .is_some_and(|address| address == peer);
        if to_peer {
            found.push(socket.tcp_nodelay().unwrap());
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodelay_is_set_on_broker_connections_and_no_other_socket() {
    let _suite = support::suite(module_path!());
    let url = support::require_broker();
    let broker: std::net::SocketAddr = url
        .trim_start_matches("pulsar://")
        .trim_end_matches('/')
        .parse()
        .expect("PULSAR_URL as pulsar://IP:PORT");
    // A local service of the process's own on the broker's port, at
    // another loopback address.
    let neighbour = std::net::TcpListener::bind(("127.0.0.2", broker.port()))
        .expect("bind 127.0.0.2 on the broker's port");
    let to_neighbour = std::net::TcpStream::connect(neighbour.local_addr().unwrap()).unwrap();
    let serving = support::InProcess::start(&["it-security-hi-service"]).await;
    let mut raw = RawTopic::open("non-persistent", "it-security-hi").await;
    let (_, frames) = raw.exchange(b"{}", Some("hi-1")).await;
    assert_eq!(frames[0].response, "hi");
    // The ticker runs every second.
    support::wait_until(
        "TCP_NODELAY on every broker connection",
        Duration::from_secs(10),
        || {
            let to_broker = nodelay_of_sockets_to(broker);
            !to_broker.is_empty() && to_broker.iter().all(|on| *on)
        },
    )
    .await;
    assert!(
        !to_neighbour.nodelay().unwrap(),
        "TCP_NODELAY was set on a socket to another address on the broker's port"
    );
    serving.stop().await;
}

/// Echo, on a topic a hostile producer writes to.
///
/// # Arguments
/// * `text` - The text.
#[tool_service::tool_service(topic = "it-hostile-batch")]
async fn hostile_echo(text: String) -> String {
    text
}

/// A producer that speaks the Pulsar protocol itself, to set what a
/// well-behaved client never would: here `num_messages_in_batch`.
struct HostileProducer {
    framed: tokio_util::codec::Framed<
        tokio::net::TcpStream,
        tool_service::pulsar::broker::pulsar::message::Codec,
    >,
    sequence: u64,
}

impl HostileProducer {
    async fn open(topic: &str) -> Self {
        use futures_util::{SinkExt, StreamExt};
        use tool_service::pulsar::broker::pulsar::message::Message;
        use tool_service::pulsar::broker::pulsar::proto::{self, base_command::Type};
        let url = support::require_broker();
        let address = url.trim_start_matches("pulsar://").trim_end_matches('/');
        let stream = tokio::net::TcpStream::connect(address).await.unwrap();
        let mut framed = tokio_util::codec::Framed::new(
            stream,
            tool_service::pulsar::broker::pulsar::message::Codec,
        );
        let command = |command: proto::BaseCommand| Message {
            command,
            payload: None,
        };
        framed
            .send(command(proto::BaseCommand {
                r#type: Type::Connect as i32,
                connect: Some(proto::CommandConnect {
                    client_version: "hostile".into(),
                    protocol_version: Some(12),
                    ..Default::default()
                }),
                ..Default::default()
            }))
            .await
            .unwrap();
        let connected = framed.next().await.unwrap().unwrap();
        assert!(
            connected.command.connected.is_some(),
            "{:?}",
            connected.command
        );
        framed
            .send(command(proto::BaseCommand {
                r#type: Type::Producer as i32,
                producer: Some(proto::CommandProducer {
                    topic: topic.to_owned(),
                    producer_id: 1,
                    request_id: 1,
                    ..Default::default()
                }),
                ..Default::default()
            }))
            .await
            .unwrap();
        loop {
            let answer = framed.next().await.unwrap().unwrap();
            if let Some(success) = answer.command.producer_success {
                assert!(success.producer_ready.unwrap_or(true));
                break;
            }
            assert!(answer.command.error.is_none(), "{:?}", answer.command);
        }
        Self {
            framed,
            sequence: 0,
        }
    }

    /// Publishes `payload` with the `id` property and the given batch count;
    /// returns the broker's answer (a receipt or an error).
    async fn send(&mut self, payload: &[u8], id: &str, batch: i32) -> String {
        use futures_util::{SinkExt, StreamExt};
        use tool_service::pulsar::broker::pulsar::message::Message;
        use tool_service::pulsar::broker::pulsar::proto::{self, base_command::Type};
        self.sequence += 1;
        let metadata = proto::MessageMetadata {
            producer_name: "hostile".into(),
            sequence_id: self.sequence,
            publish_time: 1,
            properties: vec![proto::KeyValue {
                key: "id".into(),
                value: id.into(),
            }],
            uncompressed_size: Some(payload.len() as u32),
            num_messages_in_batch: Some(batch),
            ..Default::default()
        };
        self.framed
            .send(Message {
                command: proto::BaseCommand {
                    r#type: Type::Send as i32,
                    send: Some(proto::CommandSend {
                        producer_id: 1,
                        sequence_id: self.sequence,
                        num_messages: Some(batch),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                payload: Some(tool_service::pulsar::broker::pulsar::Payload {
                    metadata,
                    data: payload.to_vec(),
                }),
            })
            .await
            .unwrap();
        match tokio::time::timeout(Duration::from_secs(5), self.framed.next()).await {
            Ok(Some(Ok(answer))) => format!(
                "receipt {:?} error {:?}",
                answer.command.send_receipt.map(|r| r.sequence_id),
                answer.command.send_error.map(|e| e.message)
            ),
            other => format!("no answer: {other:?}"),
        }
    }
}

/// Small batch counts a well-behaved producer never sets on a single
/// message. (Large ones stall the subscription inside the broker, for every
/// consumer, and on a persistent topic so can small ones with Pulsar 3.0;
/// see `docs/upstream-reports.md`.)
const HOSTILE_COUNTS: [i32; 4] = [-1, 2, 0, 3];

/// Each small hostile batch count costs only its own message: the client
/// cannot decode it and skips it, and the service goes on answering without
/// re-subscribing.
async fn survives_hostile_batch_counts(persistence: &str, topic: &str, service: &str) {
    let serving = support::InProcess::start(&[service]).await;
    let mut raw = RawTopic::open(persistence, topic).await;
    let mut hostile = HostileProducer::open(&format!("{persistence}://tg/request/{topic}")).await;
    for (n, count) in HOSTILE_COUNTS.into_iter().enumerate() {
        let request = Request::new(json!({}), json!({ "text": format!("hostile {count}") }));
        let receipt = hostile
            .send(&request.encode(), &format!("hostile-{n}"), count)
            .await;
        if !receipt.starts_with("receipt Some") {
            // Refused by the broker (3.0 closes the connection on a
            // negative count): nothing reached the service.
            hostile = HostileProducer::open(&format!("{persistence}://tg/request/{topic}")).await;
        }
        for m in 0..20 {
            let id = format!("after-{n}-{m}");
            let ok = Request::new(json!({}), json!({ "text": id }));
            let (answered, frames) = raw.exchange(&ok.encode(), Some(&id)).await;
            assert_eq!(answered, id, "after a batch count of {count}");
            assert_eq!(frames[0].response, id);
        }
    }
    let reports = serving.stop().await;
    assert_eq!(reports[service].answered, 20 * HOSTILE_COUNTS.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_batch_counts_on_a_non_persistent_topic() {
    let _suite = support::suite(module_path!());
    survives_hostile_batch_counts(
        "non-persistent",
        "it-hostile-batch",
        "it-hostile-batch-service",
    )
    .await;
}
