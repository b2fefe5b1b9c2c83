//! Findings of a security review, each proven on a live `serve`: untrusted
//! text in logs. Needs a broker: `scripts/pulsar.sh start`.

mod support;

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
    let mut lines = replica.wait_for_log(" ready", Duration::from_secs(60));
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

    let (status, rest) = replica.finish();
    assert!(status.success());
    lines.extend(rest);
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
        assert!(all.contains(&format!("user={shown}")), "{shown} as a user");
    }
    assert!(all.contains(&format!("request_id={}… (100000 bytes)", "i".repeat(200))));
    assert!(all.contains(r"\u{1b}[2J not json\nINFO forged"));
}
