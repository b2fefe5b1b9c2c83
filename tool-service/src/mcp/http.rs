//! MCP over Streamable HTTP at `/mcp` on hyper, behind a bearer-token
//! check, with the DNS-rebinding guard (allowed `Host` and `Origin` values)
//! and a drain on shutdown: the common requests answered directly
//! (`direct`), every other by rmcp's `StreamableHttpService`.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::connections::{Answering, Connections};
use super::McpServer;

/// The path MCP is served at.
pub(super) const MCP_PATH: &str = "/mcp";

/// [`HttpOptions::header_timeout`] by default.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// [`HttpOptions::body_timeout`] by default.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// [`HttpOptions::max_connections`] by default: well under the 1,024 file
/// descriptors a container often gets, leaving room for the broker's
/// connections, the metrics port and the process's own files.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// The host names a server answers by default: a client on this machine,
/// directly or from a container on it (the names Docker and Podman give
/// the host inside a container, which TrustGraph's MCP guide has its
/// containers use). None of them is a name an attacker's page can make a
/// browser send, which is what the guard is for.
pub(crate) const LOCAL_HOSTS: &[&str] = &[
    "localhost",
    "127.0.0.1",
    "::1",
    "host.docker.internal",
    "host.containers.internal",
];

/// How MCP is served over HTTP.
///
/// ```
/// use tool_service::mcp::HttpOptions;
///
/// // In a container, the name other containers reach this one by.
/// let options = HttpOptions::default()
///     .allow_host("joke-tools")
///     .with_token("s3cret");
/// assert!(options.allowed_hosts.contains(&"joke-tools".to_owned()));
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The `Host` values (names, optionally with a port) requests may
    /// carry: the DNS-rebinding guard. Default `localhost`, `127.0.0.1`,
    /// `::1`, and `host.docker.internal` and `host.containers.internal`
    /// (this machine as a container on it reaches it); `*` allows any.
    pub allowed_hosts: Vec<String>,
    /// The `Origin` values a browser's requests may carry, besides the
    /// local ones (`http://localhost:*` and the like); requests without an
    /// `Origin` are not browsers' and pass.
    pub allowed_origins: Vec<String>,
    /// When set, every request must carry `Authorization: Bearer TOKEN`
    /// (TrustGraph's `mcp-tool` route sends one fixed token). With
    /// [`Self::oauth`] too, this token is accepted beside OAuth access
    /// tokens, and may call every tool.
    pub token: Option<String>,
    /// OAuth 2.1 authorization as the MCP specification has it: access
    /// tokens of one authorization server, scopes per tool, the caller in
    /// the handler's [`Context`](crate::Context).
    pub oauth: Option<super::OAuthOptions>,
    /// Serve HTTPS with this certificate and key, read again when the
    /// files change.
    pub tls: Option<super::TlsFiles>,
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// How long a client has to send a whole request head (the request
    /// line and headers) once it may send one: on a new connection, and
    /// between requests on a kept-alive one. Then the connection closes.
    pub header_timeout: Duration,
    /// How long a client has to send a whole request body once its head
    /// has arrived; then it is answered `408 Request Timeout`.
    pub body_timeout: Duration,
    /// The most connections open at once. At the cap, a new connection
    /// closes the one idle longest (not answering a request: between
    /// requests, or still sending its head); if every one is answering, the
    /// new one is answered `503 Service Unavailable` and closed.
    pub max_connections: usize,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("oauth", &self.oauth)
            .field("tls", &self.tls)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("header_timeout", &self.header_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            allowed_hosts: LOCAL_HOSTS.iter().map(|host| (*host).to_owned()).collect(),
            allowed_origins: Vec::new(),
            token: None,
            oauth: None,
            tls: None,
            max_body_bytes: 4 * 1024 * 1024,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

impl HttpOptions {
    /// These options, also answering requests for `host`.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// These options, requiring `Authorization: Bearer TOKEN`.
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// These options, taking OAuth access tokens as `oauth` says.
    pub fn with_oauth(mut self, oauth: super::OAuthOptions) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// These options, serving HTTPS with the certificate and key of `tls`.
    pub fn with_tls(mut self, tls: super::TlsFiles) -> Self {
        self.tls = Some(tls);
        self
    }

    /// rmcp's configuration: no sessions, the body limit. The `Host` and
    /// `Origin` checks are [`Endpoint`]'s (one guard for every request,
    /// whichever path answers it), which says how to allow what it refuses.
    fn config(&self, stop: &CancellationToken) -> StreamableHttpServerConfig {
        // No per-replica session state, for every protocol revision: each
        // request is answered on its own (a call's progress on its own
        // response stream), so any replica behind a balancer answers it.
        // GET and DELETE are answered 405, as a server without sessions
        // does.
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .disable_allowed_origins()
            .with_max_request_body_bytes(self.max_body_bytes)
            .with_cancellation_token(stop.clone())
            .disable_allowed_hosts()
    }
}

/// MCP over Streamable HTTP as one of a host's transports (see
/// [`Transports`](crate::host::Transports)), at `/mcp` on its listener.
///
/// ```no_run
/// use tool_service::mcp::{HttpOptions, HttpTransport};
///
/// # async fn demo() -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:8900").await?;
/// let mcp = HttpTransport::new(listener, HttpOptions::default().allow_host("joke-tools"))
///     .named("joke", "0.3.1");
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct HttpTransport {
    listener: TcpListener,
    http: HttpOptions,
    server: super::McpOptions,
}

impl HttpTransport {
    /// MCP on `listener`, as `http` says, named after this crate until
    /// [`Self::named`].
    pub fn new(listener: TcpListener, http: HttpOptions) -> Self {
        Self {
            listener,
            http,
            server: super::McpOptions::default(),
        }
    }

    /// The JSON Schema dialect of the tools' schemas (the MCP
    /// specification's until set).
    #[must_use]
    pub fn schema_flavor(mut self, flavor: super::SchemaFlavor) -> Self {
        self.server.schema_flavor = flavor;
        self
    }

    /// The server's name and version in `initialize`.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.server.name = name.into();
        self.server.version = version.into();
        self
    }
}

impl crate::host::Transport for HttpTransport {
    fn name(&self) -> &'static str {
        "mcp"
    }
}

impl crate::host::sealed::Runs for HttpTransport {
    fn run(self: Box<Self>, host: crate::host::Host) -> crate::host::TransportRun {
        let Self {
            listener,
            http,
            server,
        } = *self;
        let server = McpServer::new(host, server);
        Box::pin(async move {
            serve_http(server, listener, http).await?;
            Ok(Vec::new())
        })
    }
}

type Body = BoxBody<Bytes, Infallible>;

/// An answer a step of the port gives before the request reaches a tool
/// (a refusal, the metadata): boxed, as it is the rare way out.
type Early = Box<hyper::Response<Body>>;

/// How long the start waits for a first answer from the authorization
/// server before it serves without its keys.
const ISSUER_CHECK: Duration = Duration::from_secs(5);

/// Serves `server` over Streamable HTTP at `http://ADDRESS/mcp` on
/// `listener` until its host's drain begins; then takes no new calls,
/// answers while those in flight finish (the host's drain), and closes.
///
/// # Errors
/// Accepting connections failed for good; the TLS certificate or key do
/// not load; or the OAuth options cannot serve (a malformed issuer or
/// resource URL, scopes for a service not served, an unreadable CA file).
async fn serve_http(
    server: McpServer,
    listener: TcpListener,
    options: HttpOptions,
) -> std::io::Result<()> {
    let stop = CancellationToken::new();
    let factory = server.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(factory.clone()),
        Arc::new(LocalSessionManager::default()),
        options.config(&stop),
    );
    let auth = match &options.oauth {
        Some(oauth) => {
            let required = server
                .required_scopes(&oauth.scopes)
                .map_err(std::io::Error::other)?;
            let authorizer = super::auth::Authorizer::new(
                oauth.clone(),
                options.token.clone(),
                required,
                Arc::clone(server.host().metrics()),
            )
            .map_err(|error| std::io::Error::other(format!("OAuth: {error}")))?;
            Some(Arc::new(authorizer))
        }
        None => None,
    };
    let tls = match &options.tls {
        Some(files) => Some(
            // The handshake counts as part of a request head's time.
            super::tls::TlsAcceptor::load(files)
                .map_err(|error| std::io::Error::other(error.to_string()))?
                .with_handshake_timeout(options.header_timeout),
        ),
        None => None,
    };
    let reloading = tls
        .as_ref()
        .map(|tls| tls.spawn_reload(super::tls::DEFAULT_RELOAD_EVERY));
    // A misconfigured issuer stops the start here, with the sentence that
    // says what to change; one that does not answer yet is waited for.
    // Bounded: an issuer that hangs does not hold the port (and its
    // probes) back; `keep_keys` goes on trying.
    if let Some(auth) = &auth {
        if let Ok(checked) = tokio::time::timeout(ISSUER_CHECK, auth.check_issuer()).await {
            checked.map_err(|error| std::io::Error::other(format!("OAuth: {error}")))?;
        }
    }
    let keeping_keys = auth
        .as_ref()
        .map(|auth| tokio::spawn(Arc::clone(auth).keep_keys()));
    // One for every connection and request: rmcp's service is answered by
    // reference, so no request copies its configuration.
    let endpoint = Arc::new(Endpoint {
        server: server.clone(),
        mcp,
        auth,
        token: options.token.clone(),
        guard: super::guard::Guard::new(&options.allowed_hosts, &options.allowed_origins),
        body_timeout: options.body_timeout,
        max_body_bytes: options.max_body_bytes,
        metrics: Arc::clone(server.host().metrics()),
    });
    let connections =
        Connections::new(options.max_connections, Arc::clone(server.host().metrics()));
    // The header timeout: idle connections swept a few times per period
    // (see `connections` for why not hyper's own).
    let sweeping = {
        let connections = Arc::clone(&connections);
        let timeout = options.header_timeout;
        let every = (timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                connections.sweep(timeout);
            }
        })
    };
    let http1 = hyper::server::conn::http1::Builder::new();
    if let Ok(address) = listener.local_addr() {
        tracing::info!(
            url = %format!(
                "{}://{address}{MCP_PATH}",
                if tls.is_some() { "https" } else { "http" }
            ),
            authentication = match (&endpoint.auth, &endpoint.token) {
                (Some(_), Some(_)) => "oauth and static token",
                (Some(_), None) => "oauth",
                (None, Some(_)) => "static token",
                (None, None) => "none",
            },
            "serving MCP"
        );
    }
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let accept = |stream: tokio::net::TcpStream| {
        let Some(admitted) = connections.admit() else {
            // Every connection is answering a request: this one is told so
            // at once, if its socket takes the few bytes, and closed.
            let _ = stream.try_write(OVER_CAPACITY);
            return;
        };
        let _ = stream.set_nodelay(true);
        let endpoint = Arc::clone(&endpoint);
        let connection = admitted.handle();
        let service = hyper::service::service_fn(move |request| {
            Arc::clone(&endpoint).answer(request, connection.answering())
        });
        let http1 = http1.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            let served = async {
                match tls {
                    None => {
                        let connection = http1.serve_connection(TokioIo::new(stream), service);
                        watcher.watch(connection).await
                    }
                    Some(tls) => match tls.accept(stream).await {
                        Ok(stream) => {
                            let connection = http1.serve_connection(TokioIo::new(stream), service);
                            watcher.watch(connection).await
                        }
                        Err(error) => {
                            tracing::debug!(%error, "an MCP client's TLS handshake failed");
                            Ok(())
                        }
                    },
                }
            };
            tokio::select! {
                ended = served => if let Err(error) = ended {
                    tracing::debug!(%error, "MCP connection ended");
                },
                () = admitted.closed() => {
                    tracing::debug!("an idle MCP connection closed (header timeout, or room for a new one)");
                }
            }
            drop(admitted);
        });
    };
    server.set_serving(true);
    accept_until(&listener, server.host().draining(), &accept).await;
    server.set_serving(false);
    // Still answering while calls in flight finish (new ones are refused),
    // and a moment after, so that their clients can end their sessions.
    accept_until(&listener, server.host().drained(), &accept).await;
    accept_until(&listener, tokio::time::sleep(LINGER), &accept).await;
    drop(listener);
    // Ends the sessions' streams, then the connections.
    stop.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(1), graceful.shutdown()).await;
    sweeping.abort();
    if let Some(keeping) = keeping_keys {
        keeping.abort();
    }
    if let Some(reloading) = reloading {
        reloading.abort();
    }
    Ok(())
}

/// The answer to a connection over the cap while every open one is
/// answering a request.
const OVER_CAPACITY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\
Content-Type: text/plain; charset=utf-8\r\nContent-Length: 58\r\nConnection: close\r\n\r\n\
this MCP server has no room for another connection; retry\n";

/// How long a draining server still answers once its calls are done: for
/// their clients to end their sessions (TrustGraph's client ends one after
/// every call, and fails if it cannot).
const LINGER: Duration = Duration::from_millis(500);

/// Accepts connections until `until` completes; its output.
async fn accept_until<T>(
    listener: &TcpListener,
    until: impl Future<Output = T>,
    accept: &impl Fn(tokio::net::TcpStream),
) -> Option<T> {
    tokio::pin!(until);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => accept(stream),
                Err(error) => {
                    // Out of file descriptors, say: wait, then go on.
                    tracing::warn!(%error, "cannot accept an MCP connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            done = &mut until => return Some(done),
        }
    }
}

/// What every HTTP request meets first: the `Host`, the path, the token;
/// then rmcp.
struct Endpoint {
    /// The tools, for the requests answered directly.
    server: McpServer,
    mcp: StreamableHttpService<McpServer, LocalSessionManager>,
    /// OAuth, when on (it then checks the static token too).
    auth: Option<Arc<super::auth::Authorizer>>,
    token: Option<String>,
    /// The DNS-rebinding guard: the `Host` and `Origin` values answered.
    guard: super::guard::Guard,
    body_timeout: Duration,
    max_body_bytes: usize,
    metrics: Arc<crate::metrics::Metrics>,
}

impl Endpoint {
    async fn answer(
        self: Arc<Self>,
        request: hyper::Request<Incoming>,
        answering: Answering,
    ) -> Result<hyper::Response<Sending>, Infallible> {
        let response = self.respond(request).await;
        Ok(response.map(|body| Sending {
            body,
            _answering: answering,
        }))
    }

    /// A request through the port's steps, each answering it or passing it
    /// on: [`Self::admit`] (the guard, the metadata, the path, the bearer
    /// check), [`Self::read_body`], then [`Self::serve`] (the early scope
    /// answer, then the request answered directly or by rmcp).
    async fn respond(&self, request: hyper::Request<Incoming>) -> hyper::Response<Body> {
        // An answer given before the body is read (a refusal) ends the
        // connection when a body may still be on its way: hyper would
        // close it anyway once it found the body unread, without saying
        // so, and a client that sent its next request on it (an OAuth
        // client retrying with its new token) would lose that request.
        let unread_body = may_have_body(&request);
        let caller = match self.admit(&request).await {
            Ok(caller) => caller,
            Err(answer) if unread_body => return close_after(*answer),
            Err(answer) => return *answer,
        };
        let (parts, body) = request.into_parts();
        match self.read_body(body).await {
            Ok(body) => self.serve(parts, body, caller).await,
            Err(answer) => *answer,
        }
    }

    /// The steps before the body: the DNS-rebinding guard (`Host`,
    /// `Origin`), the protected resource metadata (with OAuth), the path,
    /// and the bearer check (the static token's or OAuth's; not for a
    /// browser's CORS preflight, which carries no credentials and runs
    /// nothing). The caller, when OAuth names one.
    async fn admit<B>(
        &self,
        request: &hyper::Request<B>,
    ) -> Result<Option<super::auth::Caller>, Early> {
        self.guard.check(request.headers())?;
        let path = request.uri().path();
        if let Some(auth) = &self.auth {
            if path == super::auth::METADATA_PATH || path == super::auth::ROOT_METADATA_PATH {
                return Err(Box::new(auth.metadata_response(request.method())));
            }
        }
        if path != MCP_PATH {
            return Err(Box::new(plain(
                hyper::StatusCode::NOT_FOUND,
                "MCP is served at /mcp",
            )));
        }
        if request.method() == hyper::Method::OPTIONS {
            return Ok(None);
        }
        match (&self.auth, &self.token) {
            (Some(auth), _) => match auth.authenticate(request.headers()).await {
                Ok(caller) => Ok(Some(caller)),
                Err(refusal) => Err(Box::new(auth.refuse(refusal))),
            },
            (None, Some(token)) => super::auth::check_static(request.headers(), token)
                .map(|()| None)
                .map_err(|refusal| Box::new(refusal.answer(None, &[], &self.metrics))),
            (None, None) => Ok(None),
        }
    }

    /// The body, read in bounded time and size before anything parses it:
    /// a client that sends it slowly holds nothing past the body timeout.
    async fn read_body(&self, body: Incoming) -> Result<Bytes, Early> {
        let read = Limited::new(body, self.max_body_bytes).collect();
        match tokio::time::timeout(self.body_timeout, read).await {
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
            Ok(Err(error)) if error.is::<LengthLimitError>() => Err(Box::new(closing(
                hyper::StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request body is over this MCP server's limit of {} bytes\n",
                    self.max_body_bytes
                ),
            ))),
            Ok(Err(error)) => Err(Box::new(closing(
                hyper::StatusCode::BAD_REQUEST,
                format!("the request body could not be read: {error}\n"),
            ))),
            Err(_) => {
                self.metrics
                    .mcp_connection_closed(crate::metrics::CloseReason::BodyTimeout);
                tracing::debug!("an MCP client sent no whole request body in time; closed");
                Err(Box::new(closing(
                    hyper::StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "the request body did not arrive within {}\n",
                        crate::duration::format(self.body_timeout)
                    ),
                )))
            }
        }
    }

    /// The request answered: a `tools/call` whose token lacks the tool's
    /// scopes answered 403 with the challenge that names them (the call
    /// checks them again itself); then the requests most calls are made of
    /// answered directly, the body read once, and every other by rmcp.
    async fn serve(
        &self,
        mut parts: http::request::Parts,
        body: Bytes,
        caller: Option<super::auth::Caller>,
    ) -> hyper::Response<Body> {
        let direct = super::direct::Direct::read(&parts, &body);
        if let (Some(auth), Some(caller)) = (&self.auth, &caller) {
            let checked = match &direct {
                Some(direct) => direct
                    .tool()
                    .map_or(Ok(()), |tool| auth.check_tool(caller, tool)),
                None => auth.check_call(caller, &body),
            };
            if let Err(refusal) = checked {
                return auth.refuse(refusal);
            }
        }
        if let Some(direct) = direct {
            return direct.answer(&self.server, caller.as_ref()).await;
        }
        let ends_session = parts.method == hyper::Method::DELETE;
        if let Some(caller) = caller {
            // The token stops here: rmcp and the handler see the caller.
            parts.headers.remove(hyper::header::AUTHORIZATION);
            parts.extensions.insert(caller);
        }
        let request = hyper::Request::from_parts(parts, Full::new(body));
        let mut response = self.mcp.handle(request).await;
        // A session ended: rmcp says 202, and the Python SDK (so TrustGraph's
        // client, after every call) warns unless it hears 200 or 204.
        if ends_session && response.status() == hyper::StatusCode::ACCEPTED {
            *response.status_mut() = hyper::StatusCode::NO_CONTENT;
        }
        response
    }
}

/// A response's body, the connection answering until it has been sent (or
/// dropped, when its client goes away); its length known when it is (a
/// whole answer goes out with `Content-Length`, not in chunks).
struct Sending {
    body: Body,
    _answering: Answering,
}

impl hyper::body::Body for Sending {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(context)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// A refusal after which the connection closes (its request was not read
/// to its end).
fn closing(status: hyper::StatusCode, text: String) -> hyper::Response<Body> {
    let mut response = plain(status, "");
    *response.body_mut() = Full::new(Bytes::from(text)).boxed();
    close_after(response)
}

/// `response`, saying that the connection closes after it.
fn close_after(mut response: hyper::Response<Body>) -> hyper::Response<Body> {
    response.headers_mut().insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    response
}

/// Whether a body may follow the request's head: a length above zero, or
/// one sent in chunks.
fn may_have_body<B>(request: &hyper::Request<B>) -> bool {
    let headers = request.headers();
    if headers.contains_key(hyper::header::TRANSFER_ENCODING) {
        return true;
    }
    headers
        .get(hyper::header::CONTENT_LENGTH)
        .is_some_and(|length| length.to_str().map_or(true, |length| length.trim() != "0"))
}

fn plain(status: hyper::StatusCode, text: &'static str) -> hyper::Response<Body> {
    let mut response = hyper::Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_not_shown_in_debug_output() {
        let options = HttpOptions::default().with_token("s3cret");
        assert!(!format!("{options:?}").contains("s3cret"));
    }
}
