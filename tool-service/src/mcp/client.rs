//! One tool call to an MCP server over Streamable HTTP, as an MCP client
//! makes it (`call --mcp URL`): `initialize`, `notifications/initialized`,
//! `tools/call`, then the session closed when the server keeps one. With a
//! bearer token, a token from a file, or one asked of the authorization
//! server the server's `401` names (client credentials, RFC 6749 §4.4, with
//! `resource=`, RFC 8707).

use bytes::Bytes;
use http_body_util::Full;
use serde_json::{json, Map, Value};

use super::auth::fetch::Fetcher;

/// The protocol revision asked for; a server answers with one it has.
const REVISION: &str = "2025-06-18";
/// The most a server's answer may hold.
const MAX_ANSWER_BYTES: usize = 16 << 20;

/// How `call --mcp` signs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SignIn {
    /// No token.
    Anonymous,
    /// This bearer token.
    Token(String),
    /// Client credentials at the authorization server the server names,
    /// for these scopes (none: the server's `scope` challenge, if any).
    ClientCredentials {
        id: String,
        secret: String,
        scopes: Vec<String>,
    },
}

/// What the server answered a tool call with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// The tool's result: its text content joined, and whether it is the
    /// tool's error.
    Result { text: String, is_error: bool },
    /// The server refused the request before the tool ran: its status and
    /// `WWW-Authenticate` challenge.
    Refused {
        status: http::StatusCode,
        challenge: Option<String>,
    },
}

/// Calls the tool `name` with `arguments` on the MCP server at `url`.
///
/// # Errors
/// A sentence: the server could not be reached, answered what is not MCP,
/// or answered the call with a protocol error (an unknown tool, say).
pub(crate) async fn call_tool(
    url: &str,
    sign_in: SignIn,
    name: &str,
    arguments: Value,
) -> Result<Answer, String> {
    let fetcher = Fetcher::new(None)?.with_plain_http_anywhere();
    let mut session = Session {
        fetcher,
        url: url.to_owned(),
        token: match &sign_in {
            SignIn::Token(token) => Some(token.clone()),
            _ => None,
        },
        id: None,
        revision: None,
    };
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": REVISION,
            "capabilities": {},
            "clientInfo": {"name": "tool-service call", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let mut answer = session.post(&initialize).await?;
    if let (Posted::Refused { challenge, .. }, SignIn::ClientCredentials { id, secret, scopes }) =
        (&answer, &sign_in)
    {
        let token = session
            .client_credentials(challenge.as_deref(), id, secret, scopes)
            .await?;
        session.token = Some(token);
        answer = session.post(&initialize).await?;
    }
    let initialized = match answer {
        Posted::Refused { status, challenge } => return Ok(Answer::Refused { status, challenge }),
        Posted::Message(message) => result_of(&message, "initialize")?,
        Posted::Accepted => return Err(format!("{url} answered `initialize` with no result")),
    };
    session.revision = initialized
        .get("protocolVersion")
        .and_then(Value::as_str)
        .map(str::to_owned);
    session
        .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await?;
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}
    });
    let answer = match session.post(&call).await? {
        Posted::Refused { status, challenge } => Answer::Refused { status, challenge },
        Posted::Message(message) => {
            let result = result_of(&message, "tools/call")?;
            Answer::Result {
                text: text_of(&result),
                is_error: result.get("isError") == Some(&Value::Bool(true)),
            }
        }
        Posted::Accepted => return Err(format!("{url} answered `tools/call` with no result")),
    };
    session.close().await;
    Ok(answer)
}

/// The text items of a tool result's content, joined; its structured
/// content as JSON when it has no text.
fn text_of(result: &Map<String, Value>) -> String {
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|item| item.get("type") == Some(&Value::String("text".into())))
        .filter_map(|item| item.get("text").and_then(Value::as_str))
        .collect();
    match (texts.is_empty(), result.get("structuredContent")) {
        (true, Some(structured)) => structured.to_string(),
        _ => texts.concat(),
    }
}

/// The `result` of a JSON-RPC answer, or its error as a sentence.
fn result_of(message: &Value, method: &str) -> Result<Map<String, Value>, String> {
    if let Some(result) = message.get("result").and_then(Value::as_object) {
        return Ok(result.clone());
    }
    match message.get("error") {
        Some(error) => Err(format!(
            "the server answered `{method}` with the error {}: {}",
            error.get("code").unwrap_or(&Value::Null),
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
        )),
        None => Err(format!(
            "the server's answer to `{method}` is not JSON-RPC: {message}"
        )),
    }
}

/// What one POST got.
enum Posted {
    /// The JSON-RPC answer (from a JSON body or the SSE event that has it).
    Message(Value),
    /// `202 Accepted`: a notification taken.
    Accepted,
    /// `401` or `403`, with the challenge.
    Refused {
        status: http::StatusCode,
        challenge: Option<String>,
    },
}

struct Session {
    fetcher: Fetcher,
    url: String,
    token: Option<String>,
    /// `Mcp-Session-Id`, when the server keeps sessions.
    id: Option<String>,
    /// The revision `initialize` agreed on.
    revision: Option<String>,
}

impl Session {
    async fn post(&mut self, message: &Value) -> Result<Posted, String> {
        let mut request = http::Request::post(&self.url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, text/event-stream");
        if let Some(token) = &self.token {
            request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        if let Some(id) = &self.id {
            request = request.header("mcp-session-id", id);
        }
        if let Some(revision) = &self.revision {
            request = request.header("mcp-protocol-version", revision);
        }
        let request = request
            .body(Full::new(Bytes::from(message.to_string())))
            .map_err(|error| format!("{} is not a usable URL: {error}", self.url))?;
        let answer = self
            .fetcher
            .exchange_any(request, MAX_ANSWER_BYTES)
            .await
            .map_err(|failure| failure.text)?;
        let status = answer.status();
        let header = |name: http::header::HeaderName| {
            answer
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        if status == http::StatusCode::UNAUTHORIZED || status == http::StatusCode::FORBIDDEN {
            return Ok(Posted::Refused {
                status,
                challenge: header(http::header::WWW_AUTHENTICATE),
            });
        }
        if status == http::StatusCode::ACCEPTED {
            return Ok(Posted::Accepted);
        }
        if !status.is_success() {
            return Err(format!(
                "{} answered HTTP {status}: {}",
                self.url,
                String::from_utf8_lossy(answer.body()).trim()
            ));
        }
        if let Some(id) = header(http::header::HeaderName::from_static("mcp-session-id")) {
            self.id = Some(id);
        }
        let event_stream = header(http::header::CONTENT_TYPE)
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        let text = String::from_utf8_lossy(answer.body());
        let wanted = message.get("id");
        let found = if event_stream {
            // The event that answers this request; progress and other
            // notifications come before it.
            events(&text)
                .into_iter()
                .find(|event| event.get("id") == wanted)
        } else {
            serde_json::from_str(&text).ok()
        };
        found.map(Posted::Message).ok_or_else(|| {
            format!(
                "{} answered what is not an MCP message: {}",
                self.url,
                text.trim()
            )
        })
    }

    /// A token for this server from the authorization server its `401`
    /// names, by client credentials.
    async fn client_credentials(
        &self,
        challenge: Option<&str>,
        id: &str,
        secret: &str,
        scopes: &[String],
    ) -> Result<String, String> {
        let challenge = challenge.ok_or_else(|| {
            format!(
                "{} refused the call and names no authorization server (no WWW-Authenticate)",
                self.url
            )
        })?;
        let metadata_url = parameter(challenge, "resource_metadata").ok_or_else(|| {
            format!(
                "{}'s challenge names no resource_metadata: {challenge}",
                self.url
            )
        })?;
        let resource = self.json(&metadata_url).await?;
        let server = resource
            .get("authorization_servers")
            .and_then(Value::as_array)
            .and_then(|servers| servers.first())
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{metadata_url} names no authorization server"))?
            .trim_end_matches('/')
            .to_owned();
        let resource_id = resource
            .get("resource")
            .and_then(Value::as_str)
            .unwrap_or(&self.url)
            .to_owned();
        let uri: http::Uri = server
            .parse()
            .map_err(|_| format!("the authorization server {server} is not a URL"))?;
        let origin = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("https"),
            uri.authority().map_or("", http::uri::Authority::as_str)
        );
        let path = uri.path().trim_end_matches('/');
        let mut token_endpoint = None;
        for candidate in [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{server}/.well-known/openid-configuration"),
        ] {
            if let Ok(metadata) = self.json(&candidate).await {
                token_endpoint = metadata
                    .get("token_endpoint")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                break;
            }
        }
        let token_endpoint = token_endpoint.ok_or_else(|| {
            format!("the authorization server {server} serves no metadata with a token_endpoint")
        })?;
        let scope = match scopes.is_empty() {
            true => parameter(challenge, "scope").unwrap_or_default(),
            false => scopes.join(" "),
        };
        let mut form = vec![
            ("grant_type", "client_credentials"),
            ("resource", resource_id.as_str()),
        ];
        if !scope.is_empty() {
            form.push(("scope", scope.as_str()));
        }
        let body = self
            .fetcher
            .post_form(&token_endpoint, Some((id, secret)), &form, MAX_ANSWER_BYTES)
            .await
            .map_err(|error| {
                format!("the authorization server refused the client credentials: {error}")
            })?;
        let answer: Value = serde_json::from_slice(&body)
            .map_err(|error| format!("{token_endpoint} answered what is not JSON: {error}"))?;
        answer
            .get("access_token")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("{token_endpoint} answered with no access_token: {answer}"))
    }

    /// `GET url` as JSON.
    async fn json(&self, url: &str) -> Result<Value, String> {
        let body = self
            .fetcher
            .get(url, MAX_ANSWER_BYTES)
            .await
            .map_err(|failure| failure.text)?;
        serde_json::from_slice(&body).map_err(|error| format!("{url} is not JSON: {error}"))
    }

    /// Ends the server's session, when it keeps one (best effort).
    async fn close(&self) {
        let Some(id) = &self.id else {
            return;
        };
        let mut request = http::Request::delete(&self.url).header("mcp-session-id", id);
        if let Some(token) = &self.token {
            request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        if let Ok(request) = request.body(Full::new(Bytes::new())) {
            let _ = self.fetcher.exchange_any(request, 1 << 16).await;
        }
    }
}

/// The JSON messages of a `text/event-stream` body, one per event.
fn events(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|data| data.strip_prefix(' ').unwrap_or(data))
                .collect();
            (!data.is_empty())
                .then(|| serde_json::from_str(&data.join("\n")).ok())
                .flatten()
        })
        .collect()
}

/// The value of `name` in a `Bearer k="v", …` challenge.
fn parameter(challenge: &str, name: &str) -> Option<String> {
    let at = challenge.find(&format!("{name}="))? + name.len() + 1;
    let rest = &challenge[at..];
    match rest.strip_prefix('"') {
        Some(quoted) => {
            let mut value = String::new();
            let mut chars = quoted.chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => return Some(value),
                    '\\' => value.extend(chars.next()),
                    _ => value.push(c),
                }
            }
            None
        }
        None => Some(rest.split(',').next().unwrap_or(rest).trim().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_stream_gives_each_event_s_message_and_a_challenge_its_parameters() {
        let stream = concat!(
            "event: message\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n",
            "id: 7\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":2,\n",
            "data: \"result\":{}}\n\n",
        );
        let messages = events(stream);
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert_eq!(messages[1]["id"], 2);
        let challenge = r#"Bearer resource_metadata="http://a/.well-known/oauth-protected-resource/mcp", scope="tickets:read tickets:write", error=invalid_token"#;
        assert_eq!(
            parameter(challenge, "resource_metadata").as_deref(),
            Some("http://a/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            parameter(challenge, "scope").as_deref(),
            Some("tickets:read tickets:write")
        );
        assert_eq!(
            parameter(challenge, "error").as_deref(),
            Some("invalid_token")
        );
        assert_eq!(parameter(challenge, "realm"), None);
    }

    #[test]
    fn a_result_is_its_text_or_its_structured_content_and_an_error_a_sentence() {
        let result = json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "isError": false});
        assert_eq!(text_of(result.as_object().unwrap()), "ab");
        let structured = json!({"content": [], "structuredContent": {"n": 1}});
        assert_eq!(text_of(structured.as_object().unwrap()), r#"{"n":1}"#);
        let refused =
            json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "no tool `x`"}});
        assert_eq!(
            result_of(&refused, "tools/call").unwrap_err(),
            "the server answered `tools/call` with the error -32602: no tool `x`"
        );
    }
}
