//! The wire format of TrustGraph tool-service requests and responses.
//!
//! A request is UTF-8 JSON with a message property `id`:
//! `{"user": "alice", "config": "{…}", "arguments": "{…}"}` where `config` and
//! `arguments` are JSON *strings* holding JSON objects. A response frame is
//! `{"error": null | {"type", "message"}, "response": "…", "end_of_stream": bool}`
//! under the same `id`.

use serde::{Deserialize, Serialize};

use crate::error::ToolError;

/// The name of the message property that correlates requests and responses.
pub const ID_PROPERTY: &str = "id";

/// Pulsar's default `maxMessageSize` (5 MiB): what a broker accepts when it
/// does not announce a limit of its own in the connection handshake.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 5 * 1024 * 1024;

/// Bytes a Pulsar message takes beyond its payload and its `id` property:
/// the frame header, the `SEND` command and the metadata the client adds
/// (producer name, sequence id, publish time, sizes), with room to spare.
pub(crate) const MESSAGE_OVERHEAD: usize = 1024;

/// A decoded request envelope. `config` and `arguments` are still JSON text.
///
/// ```
/// use tool_service::wire::Request;
///
/// let request = Request::decode(
///     br#"{"user": "alice", "config": "{\"style\": \"pun\"}", "arguments": ""}"#,
/// ).unwrap();
/// assert_eq!(request.user.as_deref(), Some("alice"));
/// assert_eq!(request.config, r#"{"style": "pun"}"#);
/// assert_eq!(request.arguments, "{}"); // empty means `{}`
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The calling user, when the caller sent one: TrustGraph's agent
    /// (2.7.15, 2.11.1) does not, and nothing authenticates it.
    pub user: Option<String>,
    /// The tool's config values, a JSON object as text.
    pub config: String,
    /// The LLM's arguments, a JSON object as text.
    pub arguments: String,
}

/// No user, empty config and arguments (`{}`).
impl Default for Request {
    fn default() -> Self {
        Self {
            user: None,
            config: String::from("{}"),
            arguments: String::from("{}"),
        }
    }
}

#[derive(Deserialize)]
struct RawRequest {
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    config: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// Why `payload` is not a request (`error`: serde_json's, when it was
/// decoded).
#[cold]
#[inline(never)]
fn not_a_request(payload: &[u8], error: Option<serde_json::Error>) -> ToolError {
    let invalid = |what: String| ToolError::with_type(ToolError::INVALID_REQUEST, what);
    let Some(error) = error else {
        return match payload.iter().any(|byte| !byte.is_ascii_whitespace()) {
            true => invalid("the request payload is not a JSON object".into()),
            false => invalid("the request payload is empty".into()),
        };
    };
    // serde_json checks UTF-8 as it goes; the slower, more precise check
    // runs only to explain a failure.
    match std::str::from_utf8(payload) {
        Err(utf8) => invalid(format!(
            "the request payload is not valid UTF-8 (invalid byte at offset {})",
            utf8.valid_up_to()
        )),
        Ok(_) => invalid(format!(
            "the request payload is not a valid request: {error}"
        )),
    }
}

impl Request {
    /// Builds a request from JSON values, as a caller would send them.
    ///
    /// ```
    /// use serde_json::json;
    /// let request = tool_service::wire::Request::new(json!({"style": "pun"}), json!({}));
    /// assert_eq!(request.config, r#"{"style":"pun"}"#);
    /// ```
    pub fn new(config: serde_json::Value, arguments: serde_json::Value) -> Self {
        Self {
            user: None,
            config: config.to_string(),
            arguments: arguments.to_string(),
        }
    }

    /// Decodes a request payload. Unknown fields are ignored; a missing, `null`
    /// or empty `config`/`arguments` means `{}`; an empty `user` means none.
    ///
    /// # Errors
    /// An `invalid-request` [`ToolError`] saying what is wrong when the payload
    /// is not UTF-8 JSON, not an object, or has a field of the wrong type. The
    /// message never quotes the payload.
    pub fn decode(payload: &[u8]) -> Result<Self, ToolError> {
        let object = payload.first() == Some(&b'{')
            || payload.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'{');
        if !object {
            return Err(not_a_request(payload, None));
        }
        let raw: RawRequest =
            serde_json::from_slice(payload).map_err(|error| not_a_request(payload, Some(error)))?;
        let object_text = |value: Option<String>| match value {
            Some(text) if text.starts_with('{') || !text.trim_start().is_empty() => text,
            _ => String::from("{}"),
        };
        Ok(Self {
            user: raw.user.filter(|user| !user.is_empty()),
            config: object_text(raw.config),
            arguments: object_text(raw.arguments),
        })
    }

    /// Encodes the request as a caller sends it.
    ///
    /// ```
    /// use tool_service::wire::Request;
    /// let request = Request { user: None, config: "{}".into(), arguments: r#"{"a":1}"#.into() };
    /// assert_eq!(Request::decode(&request.encode()).unwrap(), request);
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        #[derive(Serialize)]
        struct Out<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            user: Option<&'a str>,
            config: &'a str,
            arguments: &'a str,
        }
        let out = Out {
            user: self.user.as_deref(),
            config: &self.config,
            arguments: &self.arguments,
        };
        serde_json::to_vec(&out).expect("a request of strings always encodes")
    }
}

/// One response message's payload.
///
/// ```
/// use tool_service::wire::Frame;
///
/// let frame = Frame::last(Ok("a pun".into()));
/// assert_eq!(
///     String::from_utf8(frame.encode()).unwrap(),
///     r#"{"error":null,"response":"a pun","end_of_stream":true}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The error, or `null` on success.
    pub error: Option<ToolError>,
    /// The response text (empty on error).
    #[serde(default)]
    pub response: String,
    /// `true` on the last frame of a response.
    #[serde(default)]
    pub end_of_stream: bool,
}

impl Frame {
    /// A streamed chunk: `end_of_stream` is `false`.
    pub fn chunk(text: String) -> Self {
        Self {
            error: None,
            response: text,
            end_of_stream: false,
        }
    }

    /// The last frame of a response, carrying the handler's outcome.
    pub fn last(outcome: Result<String, ToolError>) -> Self {
        match outcome {
            Ok(response) => Self {
                error: None,
                response,
                end_of_stream: true,
            },
            Err(error) => Self {
                error: Some(error),
                response: String::new(),
                end_of_stream: true,
            },
        }
    }

    /// The JSON payload of this frame, as `serde_json` writes it, into a
    /// buffer sized for it.
    ///
    /// ```
    /// use tool_service::wire::Frame;
    ///
    /// let frame = Frame::chunk("{\"rows\": [1, 2]}\n".into());
    /// assert_eq!(frame.encode(), serde_json::to_vec(&frame).unwrap());
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        // The texts without escapes, the syntax around them, and room for
        // some escapes: most texts need none or few.
        let texts = self.response.len()
            + self
                .error
                .as_ref()
                .map_or(0, |error| error.kind().len() + error.message().len());
        let size = texts + FRAME_SYNTAX;
        let mut out = Vec::with_capacity(size + size / 8);
        self.write_to(&mut out);
        out
    }

    /// The length of [`Frame::encode`]'s output, counted without building it.
    ///
    /// ```
    /// use tool_service::wire::Frame;
    ///
    /// let frame = Frame::last(Ok("a \"quoted\" pun".into()));
    /// assert_eq!(frame.encoded_len(), frame.encode().len());
    /// ```
    pub fn encoded_len(&self) -> usize {
        let mut count = Count(0);
        self.write_to(&mut count);
        count.0
    }

    /// Writes the frame's JSON: strings and a bool, which always serialize.
    fn write_to(&self, out: impl std::io::Write) {
        if let Err(error) = serde_json::to_writer(out, self) {
            unreachable!("a frame is strings and a bool, and its writers cannot fail: {error}");
        }
    }

    /// How many bytes this frame takes as a Pulsar message under the request
    /// `id`: an upper bound, to compare with the broker's maximum message
    /// size.
    pub(crate) fn message_size(&self, id: &str) -> usize {
        self.encoded_len() + id.len() + MESSAGE_OVERHEAD
    }

    /// An upper bound of [`Self::message_size`] that does not read the
    /// text: JSON escaping makes a byte at most six bytes long.
    pub(crate) fn message_size_bound(&self, id: &str) -> usize {
        let error = self
            .error
            .as_ref()
            .map_or(0, |error| error.kind().len() + error.message().len());
        (self.response.len() + error).saturating_mul(6) + 128 + id.len() + MESSAGE_OVERHEAD
    }

    /// Decodes a frame payload, as a caller receives it.
    ///
    /// # Errors
    /// The JSON error when the payload is not a frame.
    pub fn decode(payload: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(payload)
    }

    /// The frame's result, read back as the value the handler returned: a
    /// handler's `Serialize` value travels as its JSON text.
    ///
    /// ```
    /// use tool_service::{tool_service, wire::Request, Registry};
    ///
    /// /// Add two numbers.
    /// ///
    /// /// # Arguments
    /// /// * `a` - The first.
    /// /// * `b` - The second.
    /// #[tool_service(topic = "frame-json-add")]
    /// async fn add(a: i64, b: i64) -> Vec<i64> {
    ///     vec![a, b, a + b]
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let request = Request::new(serde_json::json!({}), serde_json::json!({"a": 2, "b": 3}));
    /// let frames = Registry::collect().unwrap().call("add", "id", request).await.unwrap();
    /// assert_eq!(frames[0].json::<Vec<i64>>().unwrap(), [2, 3, 5]);
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`ResultError::Tool`] with the frame's error, or [`ResultError::Json`]
    /// when the response is not the JSON of a `T`.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, ResultError> {
        match &self.error {
            Some(error) => Err(ResultError::Tool(error.clone())),
            None => serde_json::from_str(&self.response).map_err(ResultError::Json),
        }
    }
}

/// Why [`Frame::json`] has no value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultError {
    /// The frame carries an error.
    #[error("the frame is an error: {0}")]
    Tool(ToolError),
    /// The response is not the JSON of the type asked for.
    #[error("the response is not the JSON asked for: {0}")]
    Json(serde_json::Error),
}

/// The JSON of a frame besides its texts: keys, quotes, braces, and the
/// longer of `true`/`false`.
const FRAME_SYNTAX: usize =
    r#"{"error":{"type":"","message":""},"response":"","end_of_stream":false}"#.len();

/// An `io::Write` that counts the bytes written to it.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn message_size_counts_the_frame_the_id_and_the_overhead() {
        use super::{Frame, DEFAULT_MAX_MESSAGE_SIZE};
        let big = Frame::last(Ok("x".repeat(DEFAULT_MAX_MESSAGE_SIZE)));
        assert!(big.message_size("req-1") > DEFAULT_MAX_MESSAGE_SIZE);
        assert!(Frame::last(Ok("a pun".into())).message_size("req-1") < 2048);
    }

    use super::*;

    #[test]
    fn encoded_lengths_match_the_encoding() {
        let frames = [
            Frame::last(Ok(String::new())),
            Frame::chunk("plain".into()),
            Frame::last(Ok("\"\\\n\u{1}\u{7f}é😀".repeat(100))),
            Frame::last(Err(ToolError::with_type("t", "a \"message\"\n"))),
            Frame::chunk(String::new()),
            Frame::last(Err(ToolError::with_type("", ""))),
        ];
        for frame in frames {
            assert_eq!(
                frame.encode(),
                serde_json::to_vec(&frame).unwrap(),
                "written as serde_json writes it: {frame:?}"
            );
            let exact = frame.encode().len();
            assert_eq!(frame.encoded_len(), exact, "{frame:?}");
            assert_eq!(frame.message_size("id-1"), exact + 4 + MESSAGE_OVERHEAD);
            assert!(frame.message_size_bound("id-1") >= frame.message_size("id-1"));
        }
        // The worst case: every byte escaped as \u00XX.
        let controls = Frame::chunk("\u{1}".repeat(1000));
        assert!(controls.message_size_bound("") >= controls.message_size(""));
    }

    #[test]
    fn decodes_the_original_spec_shape() {
        let request = Request::decode(
            br#"{"user": "alice", "config": "{\"style\": \"pun\"}", "arguments": "{\"topic\": \"programming\"}"}"#,
        )
        .unwrap();
        assert_eq!(request.user.as_deref(), Some("alice"));
        assert_eq!(request.config, r#"{"style": "pun"}"#);
        assert_eq!(request.arguments, r#"{"topic": "programming"}"#);
    }

    #[test]
    fn decodes_the_trustgraph_2_shape_without_user() {
        let request = Request::decode(br#"{"config": "{}", "arguments": "{\"a\": 1}"}"#).unwrap();
        assert_eq!(request.user, None);
        assert_eq!(request.arguments, r#"{"a": 1}"#);
    }

    #[test]
    fn missing_null_and_empty_fields_mean_empty_objects() {
        for payload in [
            &br#"{}"#[..],
            br#"{"config": null, "arguments": null, "user": null}"#,
            br#"{"config": "", "arguments": "  ", "user": ""}"#,
        ] {
            let request = Request::decode(payload).unwrap();
            assert_eq!(request.config, "{}");
            assert_eq!(request.arguments, "{}");
            assert_eq!(request.user, None);
        }
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let request = Request::decode(br#"{"arguments": "{}", "trace": [1, 2], "x": {"y": 1}}"#);
        assert!(request.is_ok());
    }

    fn error_of(payload: &[u8]) -> ToolError {
        let error = Request::decode(payload).unwrap_err();
        assert_eq!(error.kind(), ToolError::INVALID_REQUEST);
        error
    }

    #[test]
    fn rejects_what_is_not_a_request() {
        assert!(error_of(b"").message().contains("empty"));
        assert!(error_of(b"not json")
            .message()
            .contains("not a JSON object"));
        assert!(error_of(b"[\"u\", \"c\", \"a\"]")
            .message()
            .contains("not a JSON object"));
        assert!(error_of(b"{\"arguments\": ")
            .message()
            .contains("not a valid request"));
        assert!(error_of(b"\xff\xfe")
            .message()
            .contains("not a JSON object"));
        let utf8 = error_of(b"{\"user\": \"al\xffce\"}");
        assert!(
            utf8.message()
                .contains("not valid UTF-8 (invalid byte at offset 12)"),
            "{utf8:?}"
        );
        let wrong = error_of(br#"{"arguments": {"topic": "x"}}"#);
        assert!(wrong.message().contains("expected a string"), "{wrong:?}");
    }

    #[test]
    fn errors_never_quote_the_payload() {
        let secret = br#"{"config": 5, "arguments": "sk-secret-token"}"#;
        let error = error_of(secret);
        assert!(!error.message().contains("sk-secret"), "{error:?}");
    }

    #[test]
    fn frames_encode_in_trustgraph_shape() {
        let ok = Frame::last(Ok("joke".into()));
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            serde_json::json!({"error": null, "response": "joke", "end_of_stream": true})
        );
        let failed = Frame::last(Err(ToolError::new("nope")));
        assert_eq!(
            serde_json::to_value(&failed).unwrap(),
            serde_json::json!({"error": {"type": "tool-service-error", "message": "nope"},
                               "response": "", "end_of_stream": true})
        );
        let chunk = Frame::chunk("part".into());
        assert!(!chunk.end_of_stream);
        assert_eq!(Frame::decode(&chunk.encode()).unwrap(), chunk);
    }

    #[test]
    fn requests_round_trip() {
        let request = Request {
            user: Some("bob".into()),
            config: r#"{"k":"v"}"#.into(),
            arguments: "{}".into(),
        };
        assert_eq!(Request::decode(&request.encode()).unwrap(), request);
    }
}
