//! A corpus of bad requests against a live `serve` on a real broker: each
//! gets an error frame for its id (or `unknown`) that says what was wrong,
//! without quoting the payload, and the service answers a normal request
//! right after. Needs a broker: `scripts/pulsar.sh start`.

use crate::support;

use support::RawTopic;
use tool_service::wire::Frame;
use tool_service::{tool_service, Chunks, StreamClosed};

const SECRET: &str = "sk-live-0123456789";

/// Look something up.
///
/// # Arguments
/// * `query` - What to look up.
/// * `limit` - How many results.
#[tool_service(topic = "bad-input")]
async fn lookup(#[config_param] index: Option<String>, query: String, limit: u32) -> String {
    format!("{} {query} {limit}", index.unwrap_or_default())
}

/// Stream, then fail.
///
/// # Arguments
/// * `fail_after` - How many chunks before failing.
#[tool_service(topic = "bad-input-stream")]
async fn fail_midway(fail_after: u32, #[stream] out: Chunks) -> Result<String, String> {
    for n in 0..fail_after {
        out.send(format!("chunk {n}"))
            .await
            .map_err(|error: StreamClosed| error.to_string())?;
    }
    Err(String::from("the upstream index went away"))
}

struct Pair {
    raw: RawTopic,
}

impl Pair {
    async fn open(topic: &str) -> Self {
        Self {
            raw: RawTopic::open("non-persistent", topic).await,
        }
    }

    async fn exchange(&mut self, payload: Vec<u8>, id: Option<&str>) -> (String, Vec<Frame>) {
        self.raw.exchange(&payload, id).await
    }

    async fn still_serving(&mut self) {
        let payload = br#"{"config": "{\"index\": \"main\"}", "arguments": "{\"query\": \"ok\", \"limit\": 1}"}"#;
        let (id, frames) = self.exchange(payload.to_vec(), Some("after")).await;
        assert_eq!(id, "after");
        assert_eq!(
            frames,
            [Frame::last(Ok("main ok 1".into()))],
            "the service keeps serving"
        );
    }
}

fn request(config: &str, arguments: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({"config": config, "arguments": arguments})).unwrap()
}

fn deeply_nested(depth: usize) -> String {
    format!(
        "{{\"query\": \"q\", \"limit\": 1, \"extra\": {}1{}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_request_gets_an_error_frame_and_the_service_keeps_serving() {
    let _suite = support::suite(module_path!());
    let _served = support::InProcess::start(&["bad-input-service"]).await;
    let mut pair = Pair::open("bad-input").await;
    let big = format!(
        "{{\"query\": \"{}\", \"limit\": 1}}",
        "x".repeat(4 * 1024 * 1024)
    );
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        (
            "not JSON",
            format!("not json {SECRET}").into_bytes(),
            "invalid-request",
            "not a JSON object",
        ),
        ("empty payload", Vec::new(), "invalid-request", "empty"),
        (
            "a JSON array",
            format!("[\"{SECRET}\"]").into_bytes(),
            "invalid-request",
            "not a JSON object",
        ),
        (
            "a JSON string",
            format!("\"{SECRET}\"").into_bytes(),
            "invalid-request",
            "not a JSON object",
        ),
        (
            "truncated JSON",
            b"{\"config\": \"{}\", \"argu".to_vec(),
            "invalid-request",
            "not a valid request",
        ),
        (
            "invalid UTF-8",
            b"{\"arguments\": \"\xff\xfe\"}".to_vec(),
            "invalid-request",
            "not valid UTF-8",
        ),
        (
            "config not a string",
            br#"{"config": {"index": "main"}, "arguments": "{}"}"#.to_vec(),
            "invalid-request",
            "expected a string",
        ),
        (
            "arguments not a string",
            br#"{"arguments": 42}"#.to_vec(),
            "invalid-request",
            "expected a string",
        ),
        (
            "arguments not JSON",
            request("{}", &format!("query={SECRET}")),
            "invalid-arguments",
            "must hold a JSON object",
        ),
        (
            "arguments a JSON array",
            request("{}", "[1, 2]"),
            "invalid-arguments",
            "must hold a JSON object",
        ),
        (
            "config not an object",
            request("\"main\"", "{}"),
            "invalid-config",
            "must hold a JSON object",
        ),
        (
            "config of the wrong type",
            request("{\"index\": 5}", "{\"query\": \"q\", \"limit\": 1}"),
            "invalid-config",
            "field `index`",
        ),
        (
            "argument of the wrong type",
            request("{}", "{\"query\": \"q\", \"limit\": \"ten\"}"),
            "invalid-arguments",
            "`limit` must be an integer of at least 0; got the text \"ten\"",
        ),
        (
            "negative number for u32",
            request("{}", "{\"query\": \"q\", \"limit\": -1}"),
            "invalid-arguments",
            "`limit` must be an integer of at least 0; got -1",
        ),
        (
            "missing required argument",
            request("{}", "{\"query\": \"q\"}"),
            "invalid-arguments",
            "`limit` is missing; it must be an integer of at least 0",
        ),
        (
            "deeply nested envelope",
            format!("{{\"x\": {}1{}}}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
            "invalid-arguments",
            "`query` is missing; it must be a text",
        ),
        (
            "deeply nested typed argument",
            request(
                "{}",
                &format!(
                    "{{\"query\": {}1{}, \"limit\": 1}}",
                    "[".repeat(100_000),
                    "]".repeat(100_000)
                ),
            ),
            "invalid-arguments",
            "field `query`",
        ),
        (
            "trailing garbage",
            request("{}", "{\"query\": \"q\", \"limit\": 1} x"),
            "invalid-arguments",
            "trailing characters",
        ),
    ];
    for (case, payload, kind, says) in cases {
        let id = format!("case {case}");
        let (answered, frames) = pair.exchange(payload, Some(&id)).await;
        assert_eq!(answered, id, "{case}: answered under its own id");
        assert_eq!(frames.len(), 1, "{case}");
        let error = frames[0]
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("{case}: expected an error frame"));
        assert_eq!(error.kind(), kind, "{case}: {error:?}");
        assert!(error.message().contains(says), "{case}: {error:?}");
        assert!(
            !error.message().contains(SECRET),
            "{case}: the message quotes the payload: {error:?}"
        );
        assert!(
            error.message().len() < 500,
            "{case}: the message is short: {}",
            error.message().len()
        );
        pair.still_serving().await;
    }

    // Accepted, not errors: 100,000 levels of nesting in an ignored field
    // (no stack overflow), extra arguments, a 4 MB argument, odd ids.
    let (_, frames) = pair
        .exchange(request("{}", &deeply_nested(100_000)), Some("nested"))
        .await;
    assert_eq!(frames, [Frame::last(Ok(" q 1".into()))]);
    let (_, frames) = pair
        .exchange(
            request("{}", "{\"query\": \"q\", \"limit\": 2, \"extra\": true}"),
            Some("extra"),
        )
        .await;
    assert_eq!(frames, [Frame::last(Ok(" q 2".into()))]);
    let (_, frames) = pair.exchange(request("{}", &big), Some("big")).await;
    assert_eq!(frames[0].response.len(), 4 * 1024 * 1024 + 3);
    for id in [None, Some(""), Some(&*"i".repeat(10_000))] {
        let (answered, frames) = pair
            .exchange(request("{}", "{\"query\": \"q\", \"limit\": 3}"), id)
            .await;
        assert_eq!(answered, id.unwrap_or("unknown"));
        assert!(frames[0].error.is_none());
    }
    pair.still_serving().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_fails_midway_ends_with_an_error_frame() {
    let _suite = support::suite(module_path!());
    let _served = support::InProcess::start(&["bad-input-stream-service"]).await;
    let mut pair = Pair::open("bad-input-stream").await;
    let (id, frames) = pair
        .exchange(request("{}", "{\"fail_after\": 3}"), Some("midway"))
        .await;
    assert_eq!(id, "midway");
    assert_eq!(frames.len(), 4);
    for (n, frame) in frames[..3].iter().enumerate() {
        assert_eq!(frame.response, format!("chunk {n}"));
        assert!(!frame.end_of_stream && frame.error.is_none());
    }
    let error = frames[3]
        .error
        .as_ref()
        .expect("the last frame is the error");
    assert_eq!(
        (error.kind(), error.message()),
        ("tool-service-error", "the upstream index went away")
    );
    assert!(frames[3].end_of_stream);
    let (_, frames) = pair
        .exchange(request("{}", "{\"fail_after\": 0}"), Some("again"))
        .await;
    assert_eq!(frames.len(), 1, "the next request is served");
}
