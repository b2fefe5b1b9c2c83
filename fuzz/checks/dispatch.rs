//! Payload → `dispatch::dispatch` → frames, through four `#[tool_service]`s.
//!
//! Input layout: the first byte picks the service (bits 0–1) and the mode
//! (bit 2); the rest is the payload.
//! * raw mode (bit 2 clear): the rest is the request payload as is;
//! * wrapped mode (bit 2 set): the rest is the `arguments` text, optionally
//!   followed by a `0xFF` byte and the `config` text (else the service's usual
//!   config is sent); both are wrapped in a valid request envelope, so the
//!   fuzzer reaches the typed decoding and the handlers without having to
//!   produce JSON inside a JSON string.
//!
//! Invariants, for every input:
//! * `dispatch` returns `Ok`, and `true` exactly when the last frame is a
//!   success;
//! * there is at least one frame, the last one has `end_of_stream: true` and
//!   no other does; a non-streaming service sends exactly one frame;
//! * every frame encodes to JSON that parses back to the same frame;
//! * tolerant decoding agrees with a reference model written from the
//!   README's table: `repeat`'s arguments are answered exactly when the
//!   model takes them (`times` from an integer, an integral float or
//!   numeric text, within `u32`), with the text the model computes;
//! * what the strict twin of `search` answers, `search` answers alike
//!   (tolerance only adds), and `search` never hands its handler a `limit`
//!   outside the bounds its schema states;
//! * an error has a known `type`; an `invalid-request`, `invalid-config` or
//!   `invalid-arguments` error has a message of at most `MAX_MESSAGE`
//!   characters (values quoted by serde are withheld or shortened) and, for a
//!   payload of 200 bytes or more, does not contain the payload.
//!
//! With `TOOL_SERVICE_FUZZ_PRINT=1` every input's frames are printed (to replay one
//! input: `TOOL_SERVICE_FUZZ_PRINT=1 cargo +nightly fuzz run dispatch FILE`).

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::Deserialize;
use tool_service::wire::{Frame, Request};
use tool_service::{dispatch, tool_service, Chunks, Registry, Service, ToolError};

// ---------------------------------------------------------------- services

/// (a) Repeat a word, with an optional prefix from the config.
///
/// # Arguments
/// * `word` - The word to repeat.
/// * `times` - How many times (at most 4 are sent).
#[tool_service(topic = "fuzz-repeat")]
async fn repeat(
    #[config_param] prefix: Option<String>,
    word: String,
    times: Option<u32>,
) -> String {
    let times = times.unwrap_or(1).min(4) as usize;
    let mut text = prefix.unwrap_or_default();
    text.push_str(&word.repeat(times));
    text
}

/// How a search runs.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum Mode {
    /// Quick and shallow.
    Fast,
    /// Slow and deep.
    Deep {
        /// How deep.
        depth: u8,
    },
    /// A named strategy.
    Named(String),
}

/// One filter on a field.
#[derive(Debug, Deserialize, JsonSchema)]
struct Filter {
    /// The field filtered on.
    field: String,
    /// The values accepted.
    values: Vec<i64>,
    /// Reject instead of accept.
    #[serde(default)]
    negate: bool,
}

/// A node of a query tree (recursive, to try deep nesting).
#[derive(Debug, Deserialize, JsonSchema)]
struct Node {
    /// The node's label.
    label: String,
    /// Its children.
    #[serde(default)]
    children: Vec<Node>,
}

/// What the LLM asks for.
#[derive(Debug, Deserialize, JsonSchema)]
struct SearchArgs {
    /// The query text.
    query: String,
    /// Filters to apply.
    #[serde(default)]
    filters: Vec<Filter>,
    /// The search mode.
    mode: Mode,
    /// Optional tags.
    tags: Option<Vec<String>>,
    /// Most results.
    #[schemars(range(min = 1, max = 500))]
    limit: Option<u16>,
    /// An optional query tree.
    tree: Option<Node>,
}

/// What a tool of the search service fixes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
struct SearchConfig {
    /// The collection searched.
    collection: String,
    /// Most results, whatever the LLM asks.
    #[serde(default)]
    max_results: Option<usize>,
}

fn tree_size(node: &Node) -> usize {
    node.label.len().min(1) + 1 + node.children.iter().map(tree_size).sum::<usize>()
}

/// (b) Search a collection.
#[tool_service(
    topic = "fuzz-search",
    tool(name = "fuzz-search", config(collection = "docs"))
)]
async fn search(
    #[config] config: &SearchConfig,
    #[args] args: SearchArgs,
) -> Result<String, ToolError> {
    search_text(config, &args)
}

/// (b') `search`, strict: the arguments only as their types say.
#[tool_service(
    topic = "fuzz-search-strict",
    strict,
    tool(name = "fuzz-search-strict", config(collection = "docs"))
)]
async fn search_strict(
    #[config] config: &SearchConfig,
    #[args] args: SearchArgs,
) -> Result<String, ToolError> {
    search_text(config, &args)
}

fn search_text(config: &SearchConfig, args: &SearchArgs) -> Result<String, ToolError> {
    if args.limit.is_some_and(|limit| !(1..=500).contains(&limit)) {
        return Err(ToolError::with_type(
            "bound-not-enforced",
            "the handler got a limit outside 1 to 500",
        ));
    }
    if config.collection.is_empty() {
        return Err(ToolError::with_type(
            "not-found",
            "the collection name is empty",
        ));
    }
    let mode = match &args.mode {
        Mode::Fast => "fast".to_owned(),
        Mode::Deep { depth } => format!("deep-{depth}"),
        Mode::Named(name) => format!("named-{}", name.len()),
    };
    let limit = args
        .limit
        .map(usize::from)
        .unwrap_or(10)
        .min(config.max_results.unwrap_or(usize::MAX));
    Ok(format!(
        "{} filters ({} values), mode {mode}, {} tags, limit {limit}, tree of {}, query of {} bytes",
        args.filters.len(),
        args.filters.iter().filter(|f| !f.negate).map(|f| f.values.len() + f.field.len()).sum::<usize>(),
        args.tags.as_ref().map_or(0, Vec::len),
        args.tree.as_ref().map_or(0, tree_size),
        args.query.len(),
    ))
}

/// (c) Stream a text in pieces.
///
/// # Arguments
/// * `text` - The text to stream.
/// * `pieces` - How many chunks (at most 40, more than the chunk buffer).
/// * `fail` - Fail after streaming.
#[tool_service(topic = "fuzz-stream")]
async fn stream_text(
    text: String,
    pieces: Option<u8>,
    fail: Option<bool>,
    #[stream] out: Chunks,
) -> Result<String, String> {
    let pieces = usize::from(pieces.unwrap_or(2).min(40));
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(pieces.max(1)).max(1);
    for (index, piece) in chars.chunks(size).take(pieces).enumerate() {
        out.send(format!("{index}:{}", piece.iter().collect::<String>()))
            .await
            .map_err(|closed| closed.to_string())?;
    }
    if fail.unwrap_or(false) || chars.len() % 7 == 3 {
        // Never echo the input in an error.
        return Err(format!(
            "failed after {pieces} pieces of {} chars",
            chars.len()
        ));
    }
    Ok(format!("{} chars in {pieces} pieces", chars.len()))
}

/// (d) Pick a key of a JSON value.
///
/// # Arguments
/// * `value` - Any JSON value.
/// * `key` - The key to pick, when `value` is an object.
#[tool_service(topic = "fuzz-json")]
async fn pick(value: serde_json::Value, key: Option<String>) -> Result<serde_json::Value, String> {
    match (key, value) {
        (None, value) => Ok(value),
        (Some(key), serde_json::Value::Object(mut map)) => map
            .shift_remove(&key)
            .ok_or_else(|| format!("no such key among {} keys", map.len())),
        (Some(_), other) => Err(format!("cannot pick a key of a {}", kind_of(&other))),
    }
}

fn kind_of(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

// ---------------------------------------------------------------- harness

/// The longest error message accepted where a bound is checked.
const MAX_MESSAGE: usize = 1_000 + 64;

/// Payloads at least this long must not appear whole in an error message.
const ECHO_THRESHOLD: usize = 200;

const KNOWN_TYPES: [&str; 7] = [
    ToolError::DEFAULT_TYPE,
    ToolError::INVALID_REQUEST,
    ToolError::INVALID_CONFIG,
    ToolError::INVALID_ARGUMENTS,
    ToolError::HANDLER_PANIC,
    ToolError::TIMEOUT,
    "not-found",
];

struct Harness {
    runtime: tokio::runtime::Runtime,
    /// (service, streaming, the config its tool usually sends)
    services: [(Service, bool, &'static str); 4],
    /// The strict twin of `search`.
    search_strict: Service,
    print: bool,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let registry = Registry::collect().expect("the fuzz services are valid");
        let service = |id: &str| registry.service(id).expect(id);
        Harness {
            runtime: tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a current-thread runtime"),
            services: [
                (service("fuzz-repeat-service"), false, r#"{"prefix": ">"}"#),
                (
                    service("fuzz-search-service"),
                    false,
                    r#"{"collection": "docs", "max-results": 5}"#,
                ),
                (service("fuzz-stream-service"), true, "{}"),
                (service("fuzz-json-service"), false, "{}"),
            ],
            search_strict: service("fuzz-search-strict-service"),
            print: flag("TOOL_SERVICE_FUZZ_PRINT"),
        }
    })
}

fn flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|value| !value.is_empty() && value != "0")
}

fn check_frames(payload: &[u8], streaming: bool, ok: bool, frames: &[Frame]) {
    let last = frames.last().expect("at least one frame");
    assert!(
        last.end_of_stream,
        "the last frame ends the stream: {frames:?}"
    );
    assert_eq!(
        frames.iter().filter(|frame| frame.end_of_stream).count(),
        1,
        "exactly one frame ends the stream: {frames:?}"
    );
    if !streaming {
        assert_eq!(frames.len(), 1, "a non-streaming service sends one frame");
    }
    assert_eq!(
        ok,
        last.error.is_none(),
        "dispatch's result matches the last frame"
    );
    for (index, frame) in frames.iter().enumerate() {
        let bytes = frame.encode();
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).expect("an encoded frame is valid JSON");
        assert!(value.is_object());
        assert_eq!(
            Frame::decode(&bytes).expect("an encoded frame decodes"),
            *frame
        );
        if index + 1 < frames.len() {
            assert!(
                frame.error.is_none(),
                "only the last frame may carry an error"
            );
        }
        let Some(error) = &frame.error else { continue };
        assert!(
            frame.response.is_empty(),
            "an error frame has no response text"
        );
        assert!(
            KNOWN_TYPES.contains(&error.kind()),
            "unknown error type: {error:?}"
        );
        let message = error.message();
        let bounded = matches!(
            error.kind(),
            ToolError::INVALID_REQUEST | ToolError::INVALID_CONFIG | ToolError::INVALID_ARGUMENTS
        );
        if bounded {
            assert!(
                message.chars().count() <= MAX_MESSAGE,
                "{} message of {} bytes: {message:.300}…",
                error.kind(),
                message.len()
            );
        }
        if payload.len() >= ECHO_THRESHOLD {
            let payload = String::from_utf8_lossy(payload);
            assert!(
                !message.contains(payload.as_ref()),
                "the error message quotes the payload: {message:.300}…"
            );
        }
    }
}

/// Checks the invariants above for one input.
pub(super) fn check(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let harness = harness();
    let (service, streaming, usual_config) = harness.services[usize::from(selector & 0b11)];
    let wrapped;
    // The arguments sent with the usual config, in wrapped mode.
    let mut usual_arguments = None;
    let payload: &[u8] = if selector & 0b100 == 0 {
        rest
    } else {
        let (arguments, config) = match rest.iter().position(|&byte| byte == 0xFF) {
            Some(at) => (
                String::from_utf8_lossy(&rest[..at]).into_owned(),
                String::from_utf8_lossy(&rest[at + 1..]).into_owned(),
            ),
            None => {
                let arguments = String::from_utf8_lossy(rest).into_owned();
                usual_arguments = Some(arguments.clone());
                (arguments, usual_config.to_owned())
            }
        };
        let request = Request {
            user: (selector & 0b1000 != 0).then(|| String::from("fuzzer")),
            config,
            arguments,
        };
        wrapped = request.encode();
        &wrapped
    };
    let (ok, frames) = run(harness, service, payload);
    check_frames(payload, streaming, ok, &frames);
    if service.id() == "fuzz-search-service" {
        let (strict_ok, strict_frames) = run(harness, harness.search_strict, payload);
        check_frames(payload, streaming, strict_ok, &strict_frames);
        if strict_ok {
            assert_eq!(
                frames, strict_frames,
                "tolerance changed what the strict decoding answered"
            );
        }
    }
    if let (Some(arguments), "fuzz-repeat-service") = (usual_arguments, service.id()) {
        let expected = reference_repeat(&arguments);
        let answered = frames.last().and_then(|frame| match &frame.error {
            None => Some(frame.response.clone()),
            Some(_) => None,
        });
        assert_eq!(
            answered, expected,
            "the decoding and the reference model disagree on {arguments:.300}"
        );
    }
}

/// Dispatches `payload` to `service`: whether it succeeded, and its frames.
fn run(harness: &Harness, service: Service, payload: &[u8]) -> (bool, Vec<Frame>) {
    let mut frames: Vec<Frame> = Vec::new();
    let ok = harness.runtime.block_on(async {
        match dispatch::dispatch(service, "fuzz-request", payload, &mut frames).await {
            Ok(ok) => ok,
            Err(never) => match never {},
        }
    });
    if harness.print {
        eprintln!("{} ok={ok} payload={} bytes", service.id(), payload.len());
        for frame in &frames {
            eprintln!("  {:.500}", String::from_utf8_lossy(&frame.encode()));
        }
    }
    (ok, frames)
}

/// What `repeat` (config `{"prefix": ">"}`) answers to `arguments`, by the
/// README's table: `word` a JSON string; `times` missing, `null`, or a
/// whole number within `u32` written as an integer, a float or (trimmed)
/// text; other arguments ignored. `None`: refused.
fn reference_repeat(arguments: &str) -> Option<String> {
    use serde_json::Value;
    if !arguments.trim_start().starts_with('{') {
        return None;
    }
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(arguments) else {
        return None;
    };
    let Some(Value::String(word)) = object.get("word") else {
        return None;
    };
    let whole = |float: f64| {
        (float.is_finite() && float.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&float))
            .then_some(float as u32)
    };
    let times = match object.get("times") {
        None | Some(Value::Null) => 1,
        Some(Value::Number(number)) => match number.as_u64() {
            Some(integer) => u32::try_from(integer).ok()?,
            None if number.is_i64() => return None,
            None => whole(number.as_f64()?)?,
        },
        Some(Value::String(text)) => {
            let text = text.trim();
            match text.parse::<i128>() {
                Ok(integer) => u32::try_from(integer).ok()?,
                Err(_) => whole(text.parse::<f64>().ok()?)?,
            }
        }
        Some(_) => return None,
    };
    Some(format!(">{}", word.repeat(times.min(4) as usize)))
}
