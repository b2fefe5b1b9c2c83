//! The DNS-rebinding guard of the MCP port, one step before anything else:
//! the `Host` a request names and the `Origin` a browser's request carries,
//! each answered only when allowed, and a refusal that says how to allow it.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

use crate::log_text::Untrusted;

/// The response body type of the MCP port.
type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

/// The `Host` and `Origin` values a server answers.
#[derive(Debug)]
pub(super) struct Guard {
    hosts: AllowedHosts,
    origins: AllowedOrigins,
    /// Refusals are logged at most once per 10 s: a misconfigured
    /// balancer or a page that keeps trying would otherwise log every
    /// request.
    logged: std::sync::Mutex<crate::metrics::Throttle>,
}

impl Guard {
    /// The guard of these allowed hosts and origins (the local origins
    /// always allowed).
    pub(super) fn new(hosts: &[String], origins: &[String]) -> Self {
        Self {
            hosts: AllowedHosts::new(hosts),
            origins: AllowedOrigins::new(origins),
            logged: std::sync::Mutex::new(crate::metrics::Throttle::new(Duration::from_secs(10))),
        }
    }

    /// Passes a request whose `Host` and `Origin` are allowed; else the
    /// 403 that says how to allow them, logged in the same words.
    pub(super) fn check(
        &self,
        headers: &http::HeaderMap,
    ) -> Result<(), Box<hyper::Response<Body>>> {
        let host = headers
            .get(http::header::HOST)
            .and_then(|value| value.to_str().ok());
        if !self.hosts.allows(host) {
            return Err(self.refuse(refused_host(host)));
        }
        match headers.get(http::header::ORIGIN) {
            None => Ok(()),
            Some(origin) => match origin.to_str() {
                Ok(origin) if self.origins.allows(origin) => Ok(()),
                Ok(origin) => Err(self.refuse(format!(
                    "this MCP server does not answer requests from the browser origin `{}`: to \
                     answer them, start it with --mcp-allowed-origin {} (or \
                     TOOL_SERVICE_MCP_ALLOWED_ORIGIN; HttpOptions::allowed_origins in a library)\n",
                    Untrusted::id(origin),
                    Untrusted::id(origin.trim())
                ))),
                Err(_) => Err(self.refuse(String::from(
                    "this MCP server answers only requests with a readable `Origin` header\n",
                ))),
            },
        }
    }

    /// The 403 of `text`, logged (at most once per 10 s).
    fn refuse(&self, text: String) -> Box<hyper::Response<Body>> {
        let mut logged = self
            .logged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(suppressed) = logged.admit(std::time::Instant::now()) {
            tracing::warn!(suppressed, "{}", text.trim_end());
        }
        let mut response = hyper::Response::new(Full::new(Bytes::from(text)).boxed());
        *response.status_mut() = http::StatusCode::FORBIDDEN;
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        Box::new(response)
    }
}

/// What a refused `Host` is told.
fn refused_host(host: Option<&str>) -> String {
    match host.and_then(authority) {
        Some((name, _)) => {
            let name = if name.contains(':') {
                format!("[{name}]")
            } else {
                name
            };
            format!(
                "this MCP server does not answer requests for the host `{}`: to answer them, \
                 start it with --mcp-allowed-host {} (or TOOL_SERVICE_MCP_ALLOWED_HOST; \
                 HttpOptions::allow_host in a library; `*` answers any host)\n",
                Untrusted::id(host.unwrap_or_default()),
                Untrusted::id(&name)
            )
        }
        None => String::from("this MCP server answers only requests with a valid `Host` header\n"),
    }
}

/// The `Host` values a server answers: the DNS-rebinding guard. An entry
/// without a port allows the name on any port; `*` allows every host.
#[derive(Debug)]
struct AllowedHosts {
    any: bool,
    entries: Vec<(String, Option<u16>)>,
}

impl AllowedHosts {
    fn new(allowed: &[String]) -> Self {
        Self {
            any: allowed.iter().any(|host| host.trim() == "*"),
            entries: allowed
                .iter()
                .filter(|host| !host.trim().is_empty())
                // A bare IPv6 address (`::1`) is a name, not an authority.
                .map(|host| authority(host).unwrap_or_else(|| (bare(host), None)))
                .collect(),
        }
    }

    /// Whether a request with this `Host` is answered.
    fn allows(&self, host: Option<&str>) -> bool {
        if self.any {
            return true;
        }
        let Some((name, port)) = host.and_then(split_authority) else {
            return false;
        };
        self.entries.iter().any(|(allowed, allowed_port)| {
            allowed.eq_ignore_ascii_case(name)
                && allowed_port.is_none_or(|allowed| port == Some(allowed))
        })
    }
}

/// The name (lower case, IPv6 without brackets) and port of a `Host` value
/// or an allowed host entry.
fn authority(text: &str) -> Option<(String, Option<u16>)> {
    let authority = http::uri::Authority::try_from(text.trim()).ok()?;
    Some((bare(authority.host()), authority.port_u16()))
}

/// The name (IPv6 without brackets) and port of a `Host` value, without
/// copying it (every request's is checked): `name`, `name:port`,
/// `[v6]` or `[v6]:port`; `None` when it is none of these.
fn split_authority(text: &str) -> Option<(&str, Option<u16>)> {
    let text = text.trim();
    let (name, port) = match text.strip_prefix('[') {
        Some(bracketed) => {
            let (name, rest) = bracketed.split_once(']')?;
            match rest {
                "" => (name, None),
                _ => (name, Some(rest.strip_prefix(':')?)),
            }
        }
        None => match text.split_once(':') {
            Some((_, port)) if port.contains(':') => return None,
            Some((name, port)) => (name, Some(port)),
            None => (text, None),
        },
    };
    if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == '@' || c == '/') {
        return None;
    }
    let port = match port {
        None => None,
        Some(port) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            Some(port.parse().ok()?)
        }
        Some(_) => return None,
    };
    Some((name, port))
}

/// A host name as compared: lower case, an IPv6 address without brackets.
fn bare(name: &str) -> String {
    name.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// The `Origin` values a browser's requests may carry: the local ones
/// (`http` and `https` on `localhost`, `127.0.0.1` and `[::1]`, any port)
/// and those allowed. An entry's port is `*` (any), a number, or none (the
/// scheme's own, as RFC 6454 compares origins); `null` is the browser's
/// `Origin: null`.
#[derive(Debug)]
struct AllowedOrigins {
    entries: Vec<Origin>,
}

/// An origin as compared: `null`, or scheme, host and port (`None` in an
/// entry: any port).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: Option<u16>,
    },
}

impl Origin {
    /// An `Origin` header's value, its port made explicit.
    fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        if value.eq_ignore_ascii_case("null") {
            return Some(Self::Null);
        }
        let uri = http::Uri::try_from(value).ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?;
        if uri
            .path_and_query()
            .is_some_and(|path| path.as_str() != "/")
        {
            return None;
        }
        let port = authority.port_u16().or_else(|| default_port(&scheme))?;
        Some(Self::Tuple {
            host: bare(authority.host()),
            scheme,
            port: Some(port),
        })
    }

    /// An allowed entry: as [`Self::parse`], or with `:*` for any port.
    fn parse_allowed(value: &str) -> Option<Self> {
        match value.trim().strip_suffix(":*") {
            Some(base) if !has_port(base) => match Self::parse(base)? {
                Self::Tuple { scheme, host, .. } => Some(Self::Tuple {
                    scheme,
                    host,
                    port: None,
                }),
                Self::Null => None,
            },
            Some(_) => None,
            None => Self::parse(value),
        }
    }
}

/// Whether an origin's text names a port.
fn has_port(origin: &str) -> bool {
    let authority = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    let authority = authority.trim_end_matches('/');
    match authority.rsplit_once(']') {
        Some((_, after)) => after.starts_with(':'),
        None => authority.contains(':'),
    }
}

/// The port a scheme implies when an origin omits it.
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

impl AllowedOrigins {
    fn new(allowed: &[String]) -> Self {
        let local = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .flat_map(|host| [format!("http://{host}:*"), format!("https://{host}:*")]);
        let entries = local
            .chain(allowed.iter().cloned())
            .filter_map(|entry| {
                let parsed = Origin::parse_allowed(&entry);
                if parsed.is_none() && !entry.trim().is_empty() {
                    tracing::warn!(
                        origin = %Untrusted::id(&entry),
                        "an allowed origin that is not scheme://host[:port] or null; it allows nothing"
                    );
                }
                parsed
            })
            .collect();
        Self { entries }
    }

    /// Whether a request with this `Origin` is answered.
    fn allows(&self, origin: &str) -> bool {
        let Some(origin) = Origin::parse(origin) else {
            return false;
        };
        self.entries.iter().any(|allowed| match (allowed, &origin) {
            (Origin::Null, Origin::Null) => true,
            (
                Origin::Tuple { scheme, host, port },
                Origin::Tuple {
                    scheme: from_scheme,
                    host: from_host,
                    port: from_port,
                },
            ) => {
                scheme == from_scheme
                    && host == from_host
                    && port.is_none_or(|port| Some(port) == *from_port)
            }
            _ => false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_allowed_by_name_or_by_name_and_port() {
        let hosts =
            AllowedHosts::new(&["localhost".into(), "::1".into(), "joke-tools:8900".into()]);
        for (host, allowed) in [
            (Some("localhost"), true),
            (Some("LocalHost:8900"), true),
            (Some("[::1]:8900"), true),
            (Some("joke-tools:8900"), true),
            (Some("joke-tools:8901"), false),
            (Some("joke-tools"), false),
            (Some("evil.example"), false),
            (Some("local host"), false),
            (Some("::1"), false),
            (Some("[::1"), false),
            (Some("[::1]8900"), false),
            (Some("localhost:"), false),
            (Some("localhost:99999"), false),
            (Some("localhost:+1"), false),
            (Some("user@localhost"), false),
            (Some(""), false),
            (None, false),
        ] {
            assert_eq!(hosts.allows(host), allowed, "{host:?}");
        }
        assert!(AllowedHosts::new(&["*".into()]).allows(Some("anything:1")));
        assert!(!AllowedHosts::new(&[]).allows(Some("localhost")));
    }

    #[tokio::test]
    async fn a_refused_host_is_told_how_to_allow_it() {
        let hosts = Guard::new(&["localhost".into()], &[]);
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::HOST, "joke-tools:8900".parse().unwrap());
        let response = hosts.check(&headers).unwrap_err();
        assert_eq!(response.status(), http::StatusCode::FORBIDDEN);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            "this MCP server does not answer requests for the host `joke-tools:8900`: to \
             answer them, start it with --mcp-allowed-host joke-tools (or \
             TOOL_SERVICE_MCP_ALLOWED_HOST; HttpOptions::allow_host in a library; `*` answers \
             any host)\n"
        );
    }

    #[test]
    fn browser_origins_are_allowed_by_scheme_host_and_port() {
        let origins = AllowedOrigins::new(&[
            "https://app.example.com".into(),
            "http://tools.example:8080".into(),
            "https://any.example:*".into(),
            "null".into(),
        ]);
        for (origin, allowed) in [
            ("http://localhost:5173", true),
            ("https://127.0.0.1", true),
            ("http://[::1]:3000", true),
            ("https://app.example.com", true),
            ("https://app.example.com:443", true),
            ("https://APP.example.com", true),
            ("https://app.example.com:8443", false),
            ("http://app.example.com", false),
            ("http://tools.example:8080", true),
            ("http://tools.example", false),
            ("https://any.example:9", true),
            ("null", true),
            ("http://evil.example", false),
            ("http://localhost.evil.example", false),
            ("http://localhost:5173/path", false),
            ("localhost", false),
            ("", false),
        ] {
            assert_eq!(origins.allows(origin), allowed, "{origin}");
        }
        assert!(!AllowedOrigins::new(&[]).allows("null"));
    }

    #[test]
    fn a_refused_origin_is_told_how_to_allow_it_and_no_origin_passes() {
        let guard = Guard::new(&["localhost".into()], &[]);
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::HOST, "localhost:8900".parse().unwrap());
        assert!(guard.check(&headers).is_ok());
        headers.insert(http::header::ORIGIN, "http://evil.example".parse().unwrap());
        let refused = guard.check(&headers).unwrap_err();
        assert_eq!(refused.status(), http::StatusCode::FORBIDDEN);
        headers.insert(
            http::header::ORIGIN,
            "http://localhost:3000".parse().unwrap(),
        );
        assert!(guard.check(&headers).is_ok());
    }
}
