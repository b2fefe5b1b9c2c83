//! The few HTTP requests a resource server makes to its authorization
//! server: its metadata, its keys, and token introspection. HTTPS with the
//! web's roots (and an operator's CA, if given); plain HTTP only to this
//! machine (a test issuer, a sidecar), since keys fetched in the clear could
//! be swapped on the way. Bounded in size and time; no redirects followed.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;

/// How long one exchange with the authorization server may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Why a request to the authorization server failed, and whether it
/// answered: an answer that is wrong (a 4xx, a document over its limit)
/// is a configuration error, which waiting does not mend; no answer (no
/// connection, TLS, a timeout, a 5xx) may mend itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) text: String,
    pub(crate) misconfigured: bool,
}

impl Failure {
    /// No answer, or one that says "later".
    pub(crate) fn unreachable(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            misconfigured: false,
        }
    }

    /// An answer that is wrong for this server.
    pub(crate) fn misconfigured(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            misconfigured: true,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Makes requests to the authorization server.
#[derive(Clone)]
pub(crate) struct Fetcher {
    tls: Arc<rustls::ClientConfig>,
    /// Plain http to any host, not only this machine: for `call --mcp`,
    /// whose user names the URL (a server in a container network, say).
    plain_http_anywhere: bool,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fetcher")
    }
}

impl Fetcher {
    /// A fetcher trusting the web's roots, and the certificates of
    /// `ca_file` (PEM) when given.
    pub(crate) fn new(ca_file: Option<&Path>) -> Result<Self, String> {
        let roots = crate::roots::trusted(ca_file)?;
        let tls = rustls::ClientConfig::builder_with_provider(crate::mcp::tls::crypto_provider())
            .with_safe_default_protocol_versions()
            .map_err(|error| error.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self {
            tls: Arc::new(tls),
            plain_http_anywhere: false,
        })
    }

    /// This fetcher, allowed plain http to any host.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn with_plain_http_anywhere(mut self) -> Self {
        self.plain_http_anywhere = true;
        self
    }

    /// Sends `request` and reads the answer whatever its status: at most
    /// `limit` bytes of body.
    pub(crate) async fn exchange_any(
        &self,
        request: http::Request<Full<Bytes>>,
        limit: usize,
    ) -> Result<http::Response<Bytes>, Failure> {
        let url = request.uri().to_string();
        tokio::time::timeout(TIMEOUT, self.answer(request, limit))
            .await
            .unwrap_or_else(|_| {
                Err(Failure::unreachable(format!(
                    "no answer within {}",
                    crate::duration::format(TIMEOUT)
                )))
            })
            .map_err(|why| Failure {
                text: format!("{url}: {}", why.text),
                ..why
            })
    }

    /// `GET url`: its body, at most `limit` bytes, when it answers 200.
    pub(crate) async fn get(&self, url: &str, limit: usize) -> Result<Bytes, Failure> {
        let request = http::Request::get(url)
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|error| {
                Failure::misconfigured(format!("{url} is not a usable URL: {error}"))
            })?;
        self.send(request, limit).await
    }

    /// `POST url` of a form, with HTTP Basic client authentication when
    /// `client` is given (RFC 6749 §2.3.1).
    pub(crate) async fn post_form(
        &self,
        url: &str,
        client: Option<(&str, &str)>,
        form: &[(&str, &str)],
        limit: usize,
    ) -> Result<Bytes, String> {
        let body = form
            .iter()
            .map(|(key, value)| format!("{}={}", form_encode(key), form_encode(value)))
            .collect::<Vec<_>>()
            .join("&");
        let mut request = http::Request::post(url)
            .header(http::header::ACCEPT, "application/json")
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            );
        if let Some((id, secret)) = client {
            let basic = base64::engine::general_purpose::STANDARD.encode(format!(
                "{}:{}",
                form_encode(id),
                form_encode(secret)
            ));
            request = request.header(http::header::AUTHORIZATION, format!("Basic {basic}"));
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|error| format!("{url} is not a usable URL: {error}"))?;
        self.send(request, limit)
            .await
            .map_err(|failure| failure.text)
    }

    /// The body of the answer to `request` when it is a `200`.
    async fn send(
        &self,
        request: http::Request<Full<Bytes>>,
        limit: usize,
    ) -> Result<Bytes, Failure> {
        let url = request.uri().to_string();
        let (parts, body) = self.exchange_any(request, limit).await?.into_parts();
        if parts.status != http::StatusCode::OK {
            let text = format!("{url}: answered HTTP {}", parts.status);
            return Err(match parts.status.is_client_error() {
                true => Failure::misconfigured(text),
                false => Failure::unreachable(text),
            });
        }
        Ok(body)
    }

    /// The answer to `request`, whatever its status.
    async fn answer(
        &self,
        request: http::Request<Full<Bytes>>,
        limit: usize,
    ) -> Result<http::Response<Bytes>, Failure> {
        let misconfigured = |text: &str| Failure::misconfigured(text);
        let uri = request.uri().clone();
        let host = uri
            .host()
            .ok_or_else(|| misconfigured("the URL has no host"))?
            .to_owned();
        let bare = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") if self.plain_http_anywhere || is_loopback(&bare) => false,
            Some("http") => return Err(misconfigured(
                "plain http is used only on this machine (localhost, 127.0.0.1, ::1); use https",
            )),
            _ => return Err(misconfigured("the URL is neither https nor http")),
        };
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let stream = tokio::net::TcpStream::connect((bare.as_str(), port))
            .await
            .map_err(|error| Failure::unreachable(format!("cannot connect: {error}")))?;
        let _ = stream.set_nodelay(true);
        let (mut parts, body) = request.into_parts();
        let authority = uri
            .authority()
            .map(|a| a.as_str().to_owned())
            .unwrap_or_default();
        parts.headers.insert(
            http::header::HOST,
            authority
                .parse()
                .map_err(|_| misconfigured("the URL's host is not a valid header"))?,
        );
        parts.uri = uri
            .path_and_query()
            .map_or("/", http::uri::PathAndQuery::as_str)
            .parse()
            .map_err(|_| misconfigured("the URL's path is not valid"))?;
        let request = http::Request::from_parts(parts, body);
        let response = if https {
            let name = rustls::pki_types::ServerName::try_from(bare.clone()).map_err(|_| {
                Failure::misconfigured(format!("`{bare}` is not a valid server name"))
            })?;
            let tls = tokio_rustls::TlsConnector::from(Arc::clone(&self.tls))
                .connect(name, stream)
                .await
                .map_err(|error| Failure::unreachable(format!("TLS: {error}")))?;
            round_trip(TokioIo::new(tls), request)
                .await
                .map_err(Failure::unreachable)?
        } else {
            round_trip(TokioIo::new(stream), request)
                .await
                .map_err(Failure::unreachable)?
        };
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, limit)
            .collect()
            .await
            .map_err(
                |error| match error.is::<http_body_util::LengthLimitError>() {
                    true => Failure::misconfigured(format!("the answer is over {limit} bytes")),
                    false => Failure::unreachable(format!("the answer could not be read: {error}")),
                },
            )?
            .to_bytes();
        Ok(http::Response::from_parts(parts, body))
    }
}

async fn round_trip<I>(
    io: I,
    request: http::Request<Full<Bytes>>,
) -> Result<http::Response<hyper::body::Incoming>, String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|error| format!("HTTP: {error}"))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    sender
        .send_request(request)
        .await
        .map_err(|error| format!("HTTP: {error}"))
}

/// Whether `host` (without brackets) is this machine.
pub(crate) fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// `application/x-www-form-urlencoded` of one key or value.
fn form_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(char::from(byte));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_encoded() {
        assert_eq!(form_encode("a b+c/d~é"), "a+b%2Bc%2Fd%7E%C3%A9");
    }

    #[tokio::test]
    async fn plain_http_goes_only_to_this_machine() {
        let fetcher = Fetcher::new(None).unwrap();
        let refused = fetcher
            .get("http://issuer.example/jwks", 100)
            .await
            .unwrap_err();
        assert!(
            refused
                .text
                .contains("plain http is used only on this machine"),
            "{refused}"
        );
        assert!(refused.misconfigured, "{refused:?}");
        assert!(is_loopback("127.0.0.2") && is_loopback("::1") && is_loopback("LocalHost"));
        assert!(!is_loopback("10.0.0.1"));
    }
}
