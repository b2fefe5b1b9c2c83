//! The requests nearly every call over Streamable HTTP is made of —
//! `tools/call`, `initialize` and its notification, `ping` and
//! `tools/list` on the revisions with a handshake — answered directly, in
//! JSON: the body read once, no service, channel or task per request, no
//! SSE framing. rmcp's `StreamableHttpService` answers everything else as it
//! always has: another method, a batch, a malformed message, a progress
//! token (its notifications need a stream), the 2026-07-28 wire, and any
//! request with a header rmcp checks against the body (`Mcp-Method`,
//! `Mcp-Name`) or an `Accept` it weighs. A test holds the two paths' answers
//! equal for every kind of request answered here.

use std::borrow::Cow;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rmcp::model::{
    CallToolRequestParams, ErrorData, InitializeRequestParams, PaginatedRequestParams,
    ProtocolVersion, RequestId, RequestMetaObject, ServerJsonRpcMessage, ServerResult,
};
use rmcp::ServerHandler;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{auth, McpServer};

/// The response body type of the MCP port.
type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

/// A message this path answers, as read from its body and headers.
pub(super) enum Direct {
    /// `notifications/initialized`: accepted, with no answer.
    Initialized,
    Request(Request),
}

/// A request this path answers.
pub(super) struct Request {
    id: RequestId,
    method: Method,
    /// The protocol revision the request speaks: its `MCP-Protocol-Version`
    /// header, 2025-03-26 without one (as rmcp takes it), the requested one
    /// for `initialize`.
    version: ProtocolVersion,
}

enum Method {
    Ping,
    List,
    Initialize(Box<InitializeRequestParams>),
    Call(Box<CallToolRequestParams>),
}

/// A JSON-RPC message as first read: its parameters kept as text until the
/// method says what they are.
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    /// Present, `null` included: a notification has no `id` at all.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    /// A response's members: no request carries them.
    #[serde(default, deserialize_with = "present")]
    result: Option<serde::de::IgnoredAny>,
    #[serde(default, deserialize_with = "present")]
    error: Option<serde::de::IgnoredAny>,
}

/// A member that is there, whatever its value (`null` too).
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

impl Direct {
    /// The request of `parts` and `body`, if this path answers it.
    pub(super) fn read(parts: &http::request::Parts, body: &[u8]) -> Option<Self> {
        if parts.method != http::Method::POST || !plain_headers(&parts.headers) {
            return None;
        }
        let header_version = match parts.headers.get("mcp-protocol-version") {
            None => None,
            Some(value) => Some(handshake_revision(value.to_str().ok()?)?),
        };
        let message: Message<'_> = serde_json::from_slice(body).ok()?;
        if message.jsonrpc != "2.0" || message.result.is_some() || message.error.is_some() {
            return None;
        }
        let Some(id) = message.id else {
            // The one notification a client sends on its own.
            return (message.method == "notifications/initialized").then_some(Self::Initialized);
        };
        let id: RequestId = serde_json::from_str(id.get()).ok()?;
        let params = message.params;
        let (method, version) = match message.method.as_ref() {
            "tools/call" => {
                let call: CallToolRequestParams = serde_json::from_str(params?.get()).ok()?;
                if call.input_responses.is_some()
                    || call.request_state.is_some()
                    || call.meta.as_ref().is_some_and(needs_rmcp)
                {
                    return None;
                }
                (Method::Call(Box::new(call)), header_version)
            }
            "initialize" => {
                let initialize: InitializeRequestParams =
                    serde_json::from_str(params?.get()).ok()?;
                // A header must name the revision the body asks for.
                if header_version
                    .as_ref()
                    .is_some_and(|header| *header != initialize.protocol_version)
                    || initialize.meta.as_ref().is_some_and(needs_rmcp)
                {
                    return None;
                }
                let version = initialize.protocol_version.clone();
                (Method::Initialize(Box::new(initialize)), Some(version))
            }
            "ping" if params.is_none() => (Method::Ping, header_version),
            "tools/list" => {
                if let Some(params) = params {
                    let list: PaginatedRequestParams = serde_json::from_str(params.get()).ok()?;
                    if list.meta.as_ref().is_some_and(needs_rmcp) {
                        return None;
                    }
                }
                (Method::List, header_version)
            }
            _ => return None,
        };
        Some(Self::Request(Request {
            id,
            method,
            version: version.unwrap_or(ProtocolVersion::V_2025_03_26),
        }))
    }

    /// The tool a `tools/call` names.
    pub(super) fn tool(&self) -> Option<&str> {
        match self {
            Self::Request(Request {
                method: Method::Call(call),
                ..
            }) => Some(&call.name),
            _ => None,
        }
    }

    /// The answer to this message from `server`, for `caller`.
    pub(super) async fn answer(
        self,
        server: &McpServer,
        caller: Option<&auth::Caller>,
    ) -> hyper::Response<Body> {
        let Self::Request(request) = self else {
            return accepted();
        };
        request.answer(server, caller).await
    }
}

impl Request {
    async fn answer(
        self,
        server: &McpServer,
        caller: Option<&auth::Caller>,
    ) -> hyper::Response<Body> {
        let result = match self.method {
            Method::Ping => Ok(ServerResult::empty(())),
            Method::List => Ok(ServerResult::ListToolsResult(
                server.list(caller, Some(&self.version)),
            )),
            Method::Initialize(params) => server
                .negotiate_initialize(&params)
                .map(ServerResult::InitializeResult),
            Method::Call(params) => {
                let id = self.id.to_string();
                let meta = params.meta.clone().unwrap_or_default();
                server
                    .call_named(*params, &id, &meta, None, caller)
                    .await
                    .map(ServerResult::CallToolResult)
            }
        };
        json(&match result {
            Ok(mut result) => {
                // The shape of the revisions with a handshake, as rmcp's
                // handler leaves it for them.
                result.strip_result_type_for_legacy_peer();
                result.strip_non_object_output_for_legacy_peer();
                ServerJsonRpcMessage::response(result, self.id)
            }
            Err(error) => ServerJsonRpcMessage::error(error, Some(self.id)),
        })
    }
}

/// Whether a request's `_meta` asks for what only rmcp's path does: a
/// progress token (notifications on a stream), or the per-request
/// protocol keys of the 2026-07-28 wire.
fn needs_rmcp(meta: &RequestMetaObject) -> bool {
    meta.0
         .0
        .keys()
        .any(|key| key == "progressToken" || key.starts_with("io.modelcontextprotocol/"))
}

/// The known revision with a handshake that a `MCP-Protocol-Version`
/// header names.
fn handshake_revision(header: &str) -> Option<ProtocolVersion> {
    ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|known| known.as_str() == header && known.has_initialize())
        .cloned()
}

/// Whether the headers are those of a plain JSON-RPC POST: JSON sent, and
/// both JSON and an event stream accepted without weights; no `Mcp-Method`
/// or `Mcp-Name` header (rmcp checks them against the body).
fn plain_headers(headers: &http::HeaderMap) -> bool {
    let json_sent = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .split(';')
                .next()
                .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(JSON))
        });
    if !json_sent || headers.contains_key("mcp-method") || headers.contains_key("mcp-name") {
        return false;
    }
    let (mut json, mut stream) = (false, false);
    for value in headers.get_all(http::header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        for entry in value.split(',') {
            let entry = entry.trim();
            if entry.contains(['"', ';']) {
                return false;
            }
            json |= entry.eq_ignore_ascii_case(JSON);
            stream |= entry.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && stream
}

const JSON: &str = "application/json";

/// `202 Accepted` with no body: a notification taken.
fn accepted() -> hyper::Response<Body> {
    let mut response = hyper::Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = http::StatusCode::ACCEPTED;
    response
}

/// `200 OK` with `message` as JSON.
fn json(message: &ServerJsonRpcMessage) -> hyper::Response<Body> {
    let body = match serde_json::to_vec(message) {
        Ok(body) => body,
        Err(error) => {
            tracing::warn!(%error, "an MCP answer could not be written as JSON");
            let failed = ServerJsonRpcMessage::error(
                ErrorData::internal_error("the answer could not be written as JSON", None),
                None,
            );
            serde_json::to_vec(&failed).unwrap_or_default()
        }
    };
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)).boxed());
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(JSON),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(headers: &[(&str, &str)]) -> http::request::Parts {
        let mut request = http::Request::post("/mcp");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    const PLAIN: &[(&str, &str)] = &[
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];

    fn read(headers: &[(&str, &str)], body: &str) -> Option<Direct> {
        Direct::read(&parts(headers), body.as_bytes())
    }

    fn request(headers: &[(&str, &str)], body: &str) -> Request {
        match read(headers, body) {
            Some(Direct::Request(request)) => request,
            _ => panic!("not a request answered here: {body}"),
        }
    }

    #[test]
    fn the_common_requests_are_answered_here() {
        let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}"#;
        assert!(matches!(request(PLAIN, call).method, Method::Call(_)));
        let initialize = r#"{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
        let read_initialize = request(PLAIN, initialize);
        assert_eq!(read_initialize.version, ProtocolVersion::V_2025_06_18);
        assert_eq!(read_initialize.id, RequestId::String("a".into()));
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(matches!(
            read(PLAIN, initialized),
            Some(Direct::Initialized)
        ));
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert!(matches!(request(PLAIN, ping).method, Method::Ping));
        let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
        let mut versioned = PLAIN.to_vec();
        versioned.push(("mcp-protocol-version", "2025-11-25"));
        let read_list = request(&versioned, list);
        assert!(matches!(read_list.method, Method::List));
        assert_eq!(read_list.version, ProtocolVersion::V_2025_11_25);
        assert_eq!(request(PLAIN, list).version, ProtocolVersion::V_2025_03_26);
    }

    #[test]
    fn everything_else_is_rmcps() {
        let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#;
        let with = |extra: (&'static str, &'static str)| {
            let mut headers = PLAIN.to_vec();
            headers.push(extra);
            headers
        };
        // Headers rmcp weighs or checks against the body.
        for headers in [
            with(("mcp-method", "tools/call")),
            with(("mcp-name", "echo")),
            with(("mcp-protocol-version", "2026-07-28")),
            with(("mcp-protocol-version", "1999-01-01")),
            vec![
                ("content-type", "application/json"),
                ("accept", "application/json"),
            ],
            vec![
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream;q=0"),
            ],
            vec![("content-type", "text/plain"), PLAIN[1]],
            vec![PLAIN[1]],
        ] {
            assert!(read(&headers, call).is_none(), "{headers:?}");
        }
        for body in [
            // Progress needs a stream; the 2026-07-28 wire has its own keys.
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","requestState":"x"}}"#,
            // Malformed, or not a request this path knows.
            r#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#,
            r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"ping","method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"ping","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"server/discover"}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"resources/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"} trailing",
            "",
        ] {
            assert!(read(PLAIN, body).is_none(), "{body}");
        }
        // An initialize whose header names another revision than its body.
        let initialize = r#"{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
        assert!(read(&with(("mcp-protocol-version", "2025-11-25")), initialize).is_none());
        assert!(read(&with(("mcp-protocol-version", "2025-06-18")), initialize).is_some());
        // A GET is never a call.
        let mut get = parts(PLAIN);
        get.method = http::Method::GET;
        assert!(Direct::read(&get, call.as_bytes()).is_none());
    }
}
