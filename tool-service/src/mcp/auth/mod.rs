//! MCP authorization (revisions 2025-11-25 and 2026-07-28): the MCP HTTP
//! port as an OAuth 2.1 resource server.
//!
//! - Protected resource metadata (RFC 9728) at
//!   `/.well-known/oauth-protected-resource/mcp` and
//!   `/.well-known/oauth-protected-resource`, naming the authorization
//!   server, the scopes and the header as the way to send a token.
//! - A request without a token: `401` with `WWW-Authenticate: Bearer
//!   resource_metadata="…", scope="…"`, where a client's sign-in starts. A
//!   bad, expired or foreign token: `401` with `error="invalid_token"`.
//!   A malformed `Authorization` header: `400` with
//!   `error="invalid_request"`. A call of a tool whose scopes the token
//!   lacks: `403` with `error="insufficient_scope"` and every scope the
//!   tool needs, so that a client can ask for them.
//! - JWT access tokens are checked against the issuer's keys (its JWKS,
//!   found through its RFC 8414 or OpenID metadata): the algorithm against
//!   an allow-list without `none` and HMAC, the signature, `iss`, `exp` and
//!   `nbf` (with a leeway), and the audience (RFC 8707): a token issued
//!   for another resource is refused. Opaque tokens are introspected (RFC
//!   7662) when a client id is configured, and the answer cached no longer
//!   than the token lives.
//! - The caller reaches the handler: [`Context::user`](crate::Context::user)
//!   is the token's subject (or another claim), and
//!   [`Context::scopes`](crate::Context::scopes) the scopes granted. The
//!   token itself goes nowhere: not to rmcp, not to logs, not to the
//!   handler.

pub(crate) mod fetch;
mod jwt;
mod keys;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Map, Value};

pub use jwt::Algorithm;

use fetch::{Failure, Fetcher};
use keys::KeyStore;

type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

/// The path of the protected resource metadata of `/mcp`.
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";
/// The path of the metadata at the root, which clients also try.
pub(crate) const ROOT_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The longest token read; a longer one is refused before it is parsed.
pub(crate) const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The largest metadata or introspection answer read.
const MAX_DOCUMENT_BYTES: usize = 64 * 1024;

/// The bytes of remembered tokens, at most; and the longest token
/// remembered (a longer one is checked on every request).
const MAX_REMEMBERED_BYTES: usize = 4 * 1024 * 1024;
const MAX_REMEMBERED_TOKEN: usize = 4 * 1024;

/// How long an introspection answer is kept, at most (and a refusal).
const INTROSPECTION_TTL: Duration = Duration::from_secs(60);
const REFUSAL_TTL: Duration = Duration::from_secs(10);

/// OAuth 2.1 authorization of the MCP HTTP port, as the MCP specification
/// has it: this server is a resource server that trusts one authorization
/// server (the issuer).
///
/// ```
/// use tool_service::mcp::{HttpOptions, OAuthOptions};
///
/// let oauth = OAuthOptions::new("https://login.example.com/realms/tools", "https://tools.example.com/mcp")
///     .user_claim("preferred_username")
///     .scope("tickets-service", "tickets:write");
/// let options = HttpOptions::default().with_oauth(oauth);
/// assert!(options.oauth.is_some());
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthOptions {
    /// The authorization server's issuer identifier, exactly as its tokens'
    /// `iss` and its metadata's `issuer` say it. `https`, or `http` on
    /// this machine only.
    pub issuer: String,
    /// The canonical URL of this MCP server, the one clients reach `/mcp`
    /// at (behind an ingress, the public one, not the listen address):
    /// the protected resource metadata's `resource`, and the audience
    /// tokens must be issued for.
    pub resource: String,
    /// Further audiences a token may name instead of `resource` (issuers
    /// that use an API identifier).
    pub audiences: Vec<String>,
    /// The claim whose value is the caller's name,
    /// [`Context::user`](crate::Context::user): `sub` by default.
    pub user_claim: String,
    /// The signature algorithms accepted. Default: RS256, RS384, RS512,
    /// PS256, PS384, PS512, ES256, ES384 and EdDSA.
    pub algorithms: Vec<Algorithm>,
    /// The clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// The scopes of a service's tools, by service id, in place of those its
    /// attribute names.
    pub scopes: HashMap<String, Vec<String>>,
    /// The client id and secret this server introspects opaque tokens
    /// with (RFC 7662); without them only JWTs are accepted.
    pub introspection: Option<(String, String)>,
    /// PEM certificates to trust for the issuer besides the web's roots (a
    /// private CA).
    pub ca_file: Option<PathBuf>,
}

impl std::fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("audiences", &self.audiences)
            .field("user_claim", &self.user_claim)
            .field("algorithms", &self.algorithms)
            .field("leeway", &self.leeway)
            .field("scopes", &self.scopes)
            .field(
                "introspection",
                &self
                    .introspection
                    .as_ref()
                    .map(|(id, _)| (id, "<redacted>")),
            )
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

/// [`OAuthOptions::leeway`] by default.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);

impl OAuthOptions {
    /// Tokens of `issuer`, for the MCP server at `resource`.
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            resource: resource.into(),
            audiences: Vec::new(),
            user_claim: String::from("sub"),
            algorithms: Algorithm::ALL.to_vec(),
            leeway: DEFAULT_LEEWAY,
            scopes: HashMap::new(),
            introspection: None,
            ca_file: None,
        }
    }

    /// These options, naming the caller by `claim` instead of `sub`.
    pub fn user_claim(mut self, claim: impl Into<String>) -> Self {
        self.user_claim = claim.into();
        self
    }

    /// These options, with `scope` among those the tools of `service_id`
    /// need (replacing the attribute's scopes for that service).
    pub fn scope(mut self, service_id: impl Into<String>, scope: impl Into<String>) -> Self {
        self.scopes
            .entry(service_id.into())
            .or_default()
            .push(scope.into());
        self
    }

    /// Why these options cannot serve, if they cannot.
    fn check(&self) -> Result<(), String> {
        let url = |what: &str, text: &str| -> Result<http::Uri, String> {
            let uri: http::Uri = text
                .parse()
                .map_err(|_| format!("the {what} `{text}` is not a URL"))?;
            let host = uri.host().unwrap_or_default();
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            match uri.scheme_str() {
                Some("https") => Ok(uri),
                Some("http") if fetch::is_loopback(bare) => Ok(uri),
                Some("http") => Err(format!(
                    "the {what} `{text}` is plain http on another machine: use https \
                     (plain http is accepted on localhost only)"
                )),
                _ => Err(format!("the {what} `{text}` is not an http(s) URL")),
            }
        };
        url("issuer", &self.issuer)?;
        let resource = url("resource", &self.resource)?;
        if self.resource.contains('#') {
            return Err(format!(
                "the resource `{}` has a fragment; it may not",
                self.resource
            ));
        }
        if resource.path().is_empty() {
            return Err(format!("the resource `{}` has no path", self.resource));
        }
        if self.user_claim.trim().is_empty() {
            return Err(String::from("the user claim is empty"));
        }
        if self.algorithms.is_empty() {
            return Err(String::from("no signature algorithm is accepted"));
        }
        for scopes in self.scopes.values() {
            for scope in scopes {
                crate::scope::check(scope)?;
            }
        }
        Ok(())
    }
}

/// Who called, as a valid token (or the static token) says.
#[derive(Clone)]
pub(crate) struct Caller {
    pub(crate) user: Option<String>,
    /// The scopes granted; `None` for the static token, which may call
    /// every tool.
    pub(crate) scopes: Option<Arc<[String]>>,
    required: Arc<Required>,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Caller")
    }
}

impl Caller {
    /// Whether this caller may call `tool`: every scope it needs granted.
    pub(crate) fn may_call(&self, tool: &str) -> bool {
        self.missing(tool).is_empty()
    }

    /// A caller granted `scopes`, of a server whose tools need `required`.
    #[cfg(test)]
    pub(crate) fn for_tests(scopes: &[&str], required: Required) -> Self {
        Self {
            user: Some(String::from("alice")),
            scopes: Some(scopes.iter().map(|scope| (*scope).to_owned()).collect()),
            required: Arc::new(required),
        }
    }

    /// The scopes `tool` needs that this caller lacks.
    pub(crate) fn missing(&self, tool: &str) -> Vec<&str> {
        let (Some(granted), Some(needed)) = (&self.scopes, self.required.get(tool)) else {
            return Vec::new();
        };
        needed
            .iter()
            .filter(|scope| !granted.iter().any(|has| has == *scope))
            .map(String::as_str)
            .collect()
    }
}

/// The scopes each tool needs, by tool name.
type Required = HashMap<String, Vec<String>>;

/// Tokens already checked: a JWT's signature check (some 60 µs for
/// ES256) and an introspection request are made once per token, not once
/// per request. Keyed by the whole token (the standard library's keyed
/// hash; a digest of it cost more than a tenth of a call), bounded in bytes.
#[derive(Default)]
struct Remembered {
    tokens: HashMap<Box<[u8]>, Checked>,
    bytes: usize,
}

/// What a checked token said, until when it holds, and of which key set.
#[derive(Clone)]
struct Checked {
    answer: Result<(Option<String>, Arc<[String]>), Reason>,
    until: Instant,
    keys: u64,
}

/// Why a request was refused, as counted in
/// `tg_tool_service_mcp_auth_refusals_total{reason}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// No token (or another scheme than Bearer).
    Missing,
    /// An `Authorization` header that is not a bearer token's.
    BadRequest,
    /// Not a JWT at all, or a claim of the wrong type.
    Malformed,
    /// Over [`MAX_TOKEN_BYTES`].
    TooLarge,
    /// An algorithm not accepted (`none`, HMAC, not in the allow-list, or
    /// not the key's).
    Algorithm,
    /// Signed by a key the issuer does not publish.
    UnknownKey,
    /// The signature does not hold.
    Signature,
    /// Another issuer's.
    Issuer,
    /// Issued for another resource.
    Audience,
    Expired,
    NotYetValid,
    /// Introspection says it is not active.
    Inactive,
    /// A tool's scopes not granted.
    InsufficientScope,
    /// The issuer's keys are not loaded yet.
    Unavailable,
}

impl Reason {
    /// Every reason, for the test that holds their labels to the metric's
    /// list (one more label there, and this needs one more reason).
    #[cfg(test)]
    const ALL: [Self; crate::metrics::MCP_AUTH_REASONS.len()] = [
        Self::Missing,
        Self::BadRequest,
        Self::Malformed,
        Self::TooLarge,
        Self::Algorithm,
        Self::UnknownKey,
        Self::Signature,
        Self::Issuer,
        Self::Audience,
        Self::Expired,
        Self::NotYetValid,
        Self::Inactive,
        Self::InsufficientScope,
        Self::Unavailable,
    ];

    /// Its label value, one of [`crate::metrics::MCP_AUTH_REASONS`].
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Missing => "missing_token",
            Self::BadRequest => "malformed_header",
            Self::Malformed => "malformed_token",
            Self::TooLarge => "token_too_large",
            Self::Algorithm => "algorithm",
            Self::UnknownKey => "unknown_key",
            Self::Signature => "signature",
            Self::Issuer => "issuer",
            Self::Audience => "audience",
            Self::Expired => "expired",
            Self::NotYetValid => "not_yet_valid",
            Self::Inactive => "inactive",
            Self::InsufficientScope => "insufficient_scope",
            Self::Unavailable => "issuer_unavailable",
        }
    }

    /// What the client is told (`error_description`, and the body).
    fn describe(self) -> &'static str {
        match self {
            Self::Missing => "this MCP server needs an OAuth access token (Authorization: Bearer)",
            Self::BadRequest => "the Authorization header is not `Bearer` and one token",
            Self::Malformed => "the access token is not a well-formed JWT",
            Self::TooLarge => "the access token is too large",
            Self::Algorithm => {
                "the access token is signed with an algorithm this server does not accept"
            }
            Self::UnknownKey => "the access token is signed with a key its issuer does not publish",
            Self::Signature => "the access token's signature does not hold",
            Self::Issuer => "the access token is not from this server's authorization server",
            Self::Audience => "the access token was not issued for this MCP server",
            Self::Expired => "the access token has expired",
            Self::NotYetValid => "the access token is not valid yet",
            Self::Inactive => "the access token is not active",
            Self::InsufficientScope => "the access token lacks a scope this tool needs",
            Self::Unavailable => "the authorization server's keys are not loaded yet; retry",
        }
    }
}

/// A refusal: the reason, and for [`Reason::InsufficientScope`] the scopes.
#[derive(Debug)]
pub(crate) struct Refusal {
    reason: Reason,
    scopes: Vec<String>,
}

impl From<Reason> for Refusal {
    fn from(reason: Reason) -> Self {
        Self {
            reason,
            scopes: Vec::new(),
        }
    }
}

/// The issuer's endpoints, once discovered.
#[derive(Debug)]
struct Discovered {
    keys: KeyStore,
    introspection_endpoint: Option<String>,
}

/// The resource server: checks each request's token against the issuer.
pub(crate) struct Authorizer {
    options: OAuthOptions,
    rules: jwt::Rules,
    /// TrustGraph's route: one fixed token, which may call every tool.
    static_token: Option<String>,
    required: Arc<Required>,
    /// Every scope of every tool, for the metadata and the challenge of a
    /// request without a token.
    all_scopes: Vec<String>,
    metadata: Bytes,
    metadata_url: String,
    fetcher: Fetcher,
    discovered: OnceLock<Discovered>,
    remembered: std::sync::RwLock<Remembered>,
    metrics: Arc<crate::metrics::Metrics>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("issuer", &self.options.issuer)
            .field("resource", &self.options.resource)
            .finish_non_exhaustive()
    }
}

impl Authorizer {
    /// An authorizer for `options`, whose tools need the scopes `required`
    /// (by tool name; the overrides of `options.scopes` already applied).
    pub(crate) fn new(
        options: OAuthOptions,
        static_token: Option<String>,
        required: Required,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Result<Self, String> {
        options.check()?;
        let all_scopes: Vec<String> = required
            .values()
            .flatten()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let resource: http::Uri = options.resource.parse().map_err(|_| "bad resource")?;
        let origin = format!(
            "{}://{}",
            resource.scheme_str().unwrap_or("https"),
            resource
                .authority()
                .map_or("", http::uri::Authority::as_str)
        );
        let path = resource.path().trim_end_matches('/');
        let metadata_url = format!("{origin}{ROOT_METADATA_PATH}{path}");
        let metadata = json!({
            "resource": options.resource,
            "authorization_servers": [options.issuer],
            // The 2026-07-28 revision: a resource does not advertise
            // offline_access.
            "scopes_supported": all_scopes.iter().filter(|s| *s != "offline_access").collect::<Vec<_>>(),
            "bearer_methods_supported": ["header"],
        });
        let mut audiences = vec![options.resource.clone()];
        audiences.extend(options.audiences.iter().cloned());
        let rules = jwt::Rules {
            issuer: options.issuer.clone(),
            audiences,
            algorithms: options.algorithms.clone(),
            leeway: options.leeway,
            user_claim: options.user_claim.clone(),
        };
        metrics.mcp_auth_keys_loaded(false);
        Ok(Self {
            fetcher: Fetcher::new(options.ca_file.as_deref())?,
            options,
            rules,
            static_token: static_token.filter(|token| !token.is_empty()),
            required: Arc::new(required),
            all_scopes,
            metadata: Bytes::from(metadata.to_string()),
            metadata_url,
            discovered: OnceLock::new(),
            remembered: std::sync::RwLock::new(Remembered::default()),
            metrics,
        })
    }

    /// The first look at the issuer, before the port serves: its
    /// metadata and keys loaded, or the reason they are not. An issuer that
    /// answers wrongly (its metadata names another issuer, it serves no
    /// usable key set, nothing at its metadata paths) is a configuration
    /// error, returned as one sentence naming what was configured and what
    /// was found: the port does not start. One that does not answer may
    /// yet: the port starts, answers tokens 503 and fails `/readyz/mcp`
    /// until [`Self::keep_keys`] loads the keys.
    pub(crate) async fn check_issuer(&self) -> Result<(), String> {
        match self.discover().await {
            Ok(count) => {
                self.loaded(count);
                Ok(())
            }
            Err(failure) if failure.misconfigured => {
                Err(format!("--oauth-issuer {}: {failure}", self.options.issuer))
            }
            Err(failure) => {
                tracing::error!(
                    "cannot reach the authorization server: {failure}; until it answers, \
                     requests with a token are answered 503 and /readyz/mcp fails \
                     (check --oauth-issuer)"
                );
                Ok(())
            }
        }
    }

    /// Says that `count` keys of the issuer are loaded.
    fn loaded(&self, count: usize) {
        tracing::info!(
            issuer = %self.options.issuer,
            keys = count,
            "the authorization server's keys are loaded"
        );
    }

    /// Finds the issuer's endpoints and keys, retrying until it answers
    /// (unless [`Self::check_issuer`] found them), then keeps the keys
    /// current; runs until dropped.
    pub(crate) async fn keep_keys(self: Arc<Self>) {
        let mut wait = Duration::from_secs(1);
        let mut said = false;
        while self.discovered.get().is_none() {
            match self.discover().await {
                Ok(count) => {
                    self.loaded(count);
                    break;
                }
                Err(error) => {
                    if said {
                        tracing::warn!(
                            "still cannot load the authorization server's keys: {error}"
                        );
                    } else {
                        said = true;
                    }
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(30));
                }
            }
        }
        let Some(discovered) = self.discovered.get() else {
            return;
        };
        let mut ticks = tokio::time::interval(keys::REFRESH);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            if let Err(error) = discovered.keys.fetch().await {
                discovered.keys.warn_stale(&error.text);
            }
        }
    }

    /// Reads the issuer's metadata, then its keys; how many keys.
    async fn discover(&self) -> Result<usize, Failure> {
        if let Some(discovered) = self.discovered.get() {
            return discovered.keys.fetch().await;
        }
        let metadata = self.metadata_of_issuer().await?;
        let jwks_uri =
            match metadata.get("jwks_uri") {
                Some(Value::String(uri)) => uri.clone(),
                _ => return Err(Failure::misconfigured(
                    "its metadata has no jwks_uri, so it serves no key set to check tokens with",
                )),
            };
        let introspection_endpoint = metadata
            .get("introspection_endpoint")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if self.options.introspection.is_some() && introspection_endpoint.is_none() {
            tracing::warn!(
                "the authorization server has no introspection_endpoint: opaque tokens will be refused"
            );
        }
        let keys = KeyStore::new(jwks_uri, self.fetcher.clone());
        let count = keys.fetch().await?;
        let _ = self.discovered.set(Discovered {
            keys,
            introspection_endpoint,
        });
        self.metrics.mcp_auth_keys_loaded(true);
        Ok(count)
    }

    /// The issuer's RFC 8414 metadata, or its OpenID configuration; its
    /// `issuer` must be the one configured.
    async fn metadata_of_issuer(&self) -> Result<Map<String, Value>, Failure> {
        let issuer = self.options.issuer.trim_end_matches('/');
        let uri: http::Uri = issuer
            .parse()
            .map_err(|_| Failure::misconfigured("it is not a URL"))?;
        let origin = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("https"),
            uri.authority().map_or("", http::uri::Authority::as_str)
        );
        let path = uri.path().trim_end_matches('/');
        let candidates = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{issuer}/.well-known/openid-configuration"),
        ];
        let mut failures = Vec::new();
        for url in candidates.iter().collect::<BTreeSet<_>>() {
            match self.fetcher.get(url, MAX_DOCUMENT_BYTES).await {
                Ok(body) => {
                    let metadata: Map<String, Value> =
                        serde_json::from_slice(&body).map_err(|error| {
                            Failure::misconfigured(format!("{url} is not a JSON object: {error}"))
                        })?;
                    return match metadata.get("issuer") {
                        Some(Value::String(named)) if *named == self.options.issuer => Ok(metadata),
                        named => Err(Failure::misconfigured(another_issuer(
                            url,
                            named,
                            &self.options.issuer,
                        ))),
                    };
                }
                Err(failure) => failures.push(failure),
            }
        }
        // Every path answered, and none with metadata: a wrong issuer URL
        // (a missing realm or tenant path, say).
        let misconfigured = failures.iter().all(|failure| failure.misconfigured);
        let text = failures
            .into_iter()
            .map(|failure| failure.text)
            .collect::<Vec<_>>()
            .join("; ");
        Err(match misconfigured {
            true => Failure::misconfigured(format!(
                "no authorization server metadata at its well-known paths ({text}): is the URL \
                 the issuer identifier its tokens carry in `iss`, with its realm or tenant path?"
            )),
            false => Failure::unreachable(text),
        })
    }

    /// The protected resource metadata, for a `GET` of either path.
    pub(crate) fn metadata_response(&self, method: &http::Method) -> hyper::Response<Body> {
        if method != http::Method::GET && method != http::Method::HEAD {
            let mut response = text(http::StatusCode::METHOD_NOT_ALLOWED, "use GET\n".into());
            response.headers_mut().insert(
                http::header::ALLOW,
                http::HeaderValue::from_static("GET, HEAD"),
            );
            return response;
        }
        let mut response = hyper::Response::new(Full::new(self.metadata.clone()).boxed());
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        // A public document, which browser-based clients read from their
        // own origin.
        headers.insert(
            http::header::ACCESS_CONTROL_ALLOW_ORIGIN,
            http::HeaderValue::from_static("*"),
        );
        headers.insert(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("max-age=300"),
        );
        response
    }

    /// Who is calling, from the request's `Authorization` header.
    pub(crate) async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Caller, Refusal> {
        let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(match headers.contains_key(http::header::AUTHORIZATION) {
                true => Reason::BadRequest.into(),
                false => Reason::Missing.into(),
            });
        };
        let bytes = value.as_bytes();
        let Some(scheme_end) = bytes.iter().position(|b| *b == b' ') else {
            return Err(Reason::Missing.into());
        };
        if !bytes[..scheme_end].eq_ignore_ascii_case(b"bearer") {
            // Another scheme (Basic, …): as if there were no token.
            return Err(Reason::Missing.into());
        }
        let token = bytes[scheme_end..].trim_ascii();
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Reason::TooLarge.into());
        }
        // The operator's own token, whatever its characters.
        if let Some(fixed) = &self.static_token {
            if constant_time_eq(token, fixed.as_bytes()) {
                return Ok(Caller {
                    user: None,
                    scopes: None,
                    required: Arc::clone(&self.required),
                });
            }
        }
        if token.is_empty() {
            return Err(Reason::BadRequest.into());
        }
        let Some(discovered) = self.discovered.get() else {
            return Err(Reason::Unavailable.into());
        };
        // A token seen before is found before its characters are checked:
        // only a token of the right characters is ever remembered.
        let keys = discovered.keys.generation();
        let now = Instant::now();
        let remembered = self
            .remembered
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .tokens
            .get(token)
            .filter(|checked| checked.until > now && checked.keys == keys)
            .map(|checked| checked.answer.clone());
        let answer = match remembered {
            Some(answer) => answer,
            None => {
                // RFC 6750's b64token.
                let Some(token) = b64token(token) else {
                    return Err(Reason::BadRequest.into());
                };
                let (answer, until) = if jwt::looks_like_jwt(token) {
                    self.check_jwt(discovered, token).await
                } else {
                    self.introspect(discovered, token).await
                };
                let answer = answer.map(|claims| (claims.user, Arc::from(claims.scopes)));
                if let Some(until) = until {
                    self.remember(token, answer.clone(), until, keys, now);
                }
                answer
            }
        };
        let (user, scopes) = answer?;
        Ok(Caller {
            user,
            scopes: Some(scopes),
            required: Arc::clone(&self.required),
        })
    }

    /// Keeps what a token said until `until` (and while the key set is the
    /// one it was checked with).
    fn remember(
        &self,
        token: &str,
        answer: Result<(Option<String>, Arc<[String]>), Reason>,
        until: Instant,
        keys: u64,
        now: Instant,
    ) {
        if token.len() > MAX_REMEMBERED_TOKEN {
            return;
        }
        let mut remembered = self
            .remembered
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if remembered.bytes + token.len() > MAX_REMEMBERED_BYTES {
            remembered.tokens.retain(|_, checked| checked.until > now);
            remembered.bytes = remembered.tokens.keys().map(|token| token.len()).sum();
            if remembered.bytes + token.len() > MAX_REMEMBERED_BYTES {
                remembered.tokens.clear();
                remembered.bytes = 0;
            }
        }
        let checked = Checked {
            answer,
            until,
            keys,
        };
        if remembered
            .tokens
            .insert(token.as_bytes().into(), checked)
            .is_none()
        {
            remembered.bytes += token.len();
        }
    }

    /// What a token says, and until when that may be remembered (a valid
    /// JWT until it expires; a refused one not at all).
    async fn check_jwt(
        &self,
        discovered: &Discovered,
        token: &str,
    ) -> (Result<jwt::Claims, Reason>, Option<Instant>) {
        let checked = self.check_signed(discovered, token).await;
        let until = checked.as_ref().ok().map(|claims| {
            let left = claims
                .expires
                .saturating_add(self.rules.leeway.as_secs())
                .saturating_sub(jwt::now());
            Instant::now() + Duration::from_secs(left)
        });
        (checked, until)
    }

    async fn check_signed(
        &self,
        discovered: &Discovered,
        token: &str,
    ) -> Result<jwt::Claims, Reason> {
        let parsed = jwt::parse(token, &self.rules)?;
        let mut keys = discovered.keys.keys().ok_or(Reason::Unavailable)?;
        if let Some(kid) = &parsed.kid {
            if keys.get(kid).is_none() {
                // A key the issuer may just have added (rotation).
                keys = discovered
                    .keys
                    .refetch_for(kid)
                    .await
                    .ok_or(Reason::Unavailable)?;
            }
        }
        parsed.check(&keys, &self.rules, jwt::now())
    }

    /// An opaque token's claims, from the issuer's introspection endpoint,
    /// and until when the answer may be remembered: no longer than the token
    /// lives, and at most a minute (a refusal, 10 s).
    async fn introspect(
        &self,
        discovered: &Discovered,
        token: &str,
    ) -> (Result<jwt::Claims, Reason>, Option<Instant>) {
        let (Some((client, secret)), Some(endpoint)) = (
            &self.options.introspection,
            &discovered.introspection_endpoint,
        ) else {
            return (Err(Reason::Malformed), None);
        };
        let form = [("token", token), ("token_type_hint", "access_token")];
        let answer = match self
            .fetcher
            .post_form(endpoint, Some((client, secret)), &form, MAX_DOCUMENT_BYTES)
            .await
        {
            Ok(body) => self.introspection_claims(&body),
            Err(error) => {
                tracing::warn!("cannot introspect a token: {error}");
                return (Err(Reason::Unavailable), None);
            }
        };
        let now = Instant::now();
        let until = match &answer {
            Ok(claims) => {
                let left = claims.expires.saturating_sub(jwt::now());
                now + INTROSPECTION_TTL.min(Duration::from_secs(left))
            }
            Err(_) => now + REFUSAL_TTL,
        };
        (answer, Some(until))
    }

    /// The claims of an introspection answer: active, then checked as a
    /// JWT's are (the issuer implied when absent; no `exp` lives a minute).
    fn introspection_claims(&self, body: &[u8]) -> Result<jwt::Claims, Reason> {
        let mut answer: Map<String, Value> =
            serde_json::from_slice(body).map_err(|_| Reason::Inactive)?;
        if answer.get("active") != Some(&Value::Bool(true)) {
            return Err(Reason::Inactive);
        }
        answer
            .entry("iss")
            .or_insert_with(|| Value::String(self.options.issuer.clone()));
        answer
            .entry("exp")
            .or_insert_with(|| json!(jwt::now() + INTROSPECTION_TTL.as_secs()));
        jwt::claims(&answer, &self.rules, jwt::now())
    }

    /// Whether `caller` may make the JSON-RPC request `body`: for a
    /// `tools/call`, every scope of the tool granted.
    pub(crate) fn check_call(&self, caller: &Caller, body: &[u8]) -> Result<(), Refusal> {
        if caller.scopes.is_none() || self.required.is_empty() {
            return Ok(());
        }
        #[derive(serde::Deserialize)]
        struct Message<'a> {
            #[serde(borrow)]
            method: Option<std::borrow::Cow<'a, str>>,
            params: Option<Params<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Params<'a> {
            #[serde(borrow)]
            name: Option<std::borrow::Cow<'a, str>>,
        }
        // Not a message rmcp would take: it answers that itself.
        let Ok(message) = serde_json::from_slice::<Message<'_>>(body) else {
            return Ok(());
        };
        if message.method.as_deref() != Some("tools/call") {
            return Ok(());
        }
        let Some(name) = message.params.and_then(|params| params.name) else {
            return Ok(());
        };
        self.check_tool(caller, &name)
    }

    /// Whether `caller` may call `tool`: every scope it needs granted.
    pub(crate) fn check_tool(&self, caller: &Caller, tool: &str) -> Result<(), Refusal> {
        if caller.missing(tool).is_empty() {
            return Ok(());
        }
        // Every scope the tool needs, so that one step-up suffices.
        let scopes = self.required.get(tool).cloned().unwrap_or_default();
        Err(Refusal {
            reason: Reason::InsufficientScope,
            scopes,
        })
    }

    /// The answer to a refused request: its status and challenge, counted.
    pub(crate) fn refuse(&self, refusal: Refusal) -> hyper::Response<Body> {
        let reason = refusal.reason;
        self.metrics.mcp_auth_refused(reason.label());
        tracing::debug!(reason = reason.label(), "an MCP request refused");
        let (status, error) = match reason {
            Reason::Missing => (http::StatusCode::UNAUTHORIZED, None),
            Reason::BadRequest => (http::StatusCode::BAD_REQUEST, Some("invalid_request")),
            Reason::InsufficientScope => (http::StatusCode::FORBIDDEN, Some("insufficient_scope")),
            Reason::Unavailable => (http::StatusCode::SERVICE_UNAVAILABLE, None),
            _ => (http::StatusCode::UNAUTHORIZED, Some("invalid_token")),
        };
        let scopes = match reason {
            Reason::InsufficientScope => refusal.scopes.join(" "),
            _ => self.all_scopes.join(" "),
        };
        let mut challenge = String::from("Bearer ");
        if let Some(error) = error {
            challenge.push_str(&format!(
                "error=\"{error}\", error_description=\"{}\", ",
                reason.describe()
            ));
        }
        challenge.push_str(&format!("resource_metadata=\"{}\"", self.metadata_url));
        if !scopes.is_empty() {
            challenge.push_str(&format!(", scope=\"{scopes}\""));
        }
        let mut body = format!("{}\n", reason.describe());
        if reason == Reason::InsufficientScope {
            body = format!("{}: it needs {scopes}\n", reason.describe());
        }
        let mut response = text(status, body);
        if let Ok(value) = http::HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(http::header::WWW_AUTHENTICATE, value);
        }
        if reason == Reason::Unavailable {
            response.headers_mut().insert(
                http::header::RETRY_AFTER,
                http::HeaderValue::from_static("5"),
            );
        }
        response
    }
}

fn text(status: http::StatusCode, body: String) -> hyper::Response<Body> {
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// `token` as text, when it is an RFC 6750 b64token (letters, digits,
/// `-._~+/`, then `=` padding).
fn b64token(token: &[u8]) -> Option<&str> {
    let padding = token.iter().rev().take_while(|b| **b == b'=').count();
    let body = &token[..token.len() - padding];
    let ok = !body.is_empty()
        && body.iter().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
        });
    ok.then(|| std::str::from_utf8(token).ok()).flatten()
}

/// Whether two byte strings are equal, in time that does not depend on
/// where they differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// Why metadata at `url` that names the issuer `named` is not the
/// configured `issuer`'s, with the fix; the trailing slash told apart, since
/// it is the usual difference (Auth0 writes one, most issuers do not).
fn another_issuer(url: &str, named: Option<&Value>, issuer: &str) -> String {
    let Some(Value::String(named)) = named else {
        return format!("its metadata at {url} names no issuer");
    };
    let slash = if named.trim_end_matches('/') == issuer.trim_end_matches('/') {
        match named.ends_with('/') {
            true => " (with its trailing slash)",
            false => " (without a trailing slash)",
        }
    } else {
        ""
    };
    format!(
        "its metadata at {url} names the issuer {named}, and tokens carry that value in `iss`: \
         write --oauth-issuer exactly as {named}{slash}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use jwt::tests::{good_claims, Signer};

    fn authorizer(signer: &Signer) -> Authorizer {
        let options = OAuthOptions::new("https://issuer.example", "https://tools.example/mcp");
        let required = HashMap::from([
            ("list-tickets".to_owned(), vec!["tickets:read".to_owned()]),
            (
                "close-ticket".to_owned(),
                vec!["tickets:read".to_owned(), "tickets:admin".to_owned()],
            ),
        ]);
        let auth = Authorizer::new(
            options,
            Some("static-token".into()),
            required,
            Arc::new(crate::metrics::Metrics::new()),
        )
        .unwrap();
        let keys = keys::KeySet::from_jwks(&json!({"keys": [signer.jwk()]}), 10).0;
        let _ = auth.discovered.set(Discovered {
            keys: KeyStore::with_keys(keys),
            introspection_endpoint: None,
        });
        auth
    }

    fn bearer(token: &str) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        headers
    }

    async fn challenge(auth: &Authorizer, headers: &http::HeaderMap) -> (u16, String) {
        let refusal = auth.authenticate(headers).await.unwrap_err();
        let response = auth.refuse(refusal);
        let value = response.headers()[http::header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .to_owned();
        (response.status().as_u16(), value)
    }

    #[tokio::test]
    async fn requests_are_refused_with_the_challenge_a_client_signs_in_from() {
        let signer = Signer::new("k1");
        let auth = authorizer(&signer);
        let meta =
            "resource_metadata=\"https://tools.example/.well-known/oauth-protected-resource/mcp\"";
        let (status, value) = challenge(&auth, &http::HeaderMap::new()).await;
        assert_eq!(status, 401);
        assert_eq!(
            value,
            format!("Bearer {meta}, scope=\"tickets:admin tickets:read\"")
        );
        let mut basic = http::HeaderMap::new();
        basic.insert(http::header::AUTHORIZATION, "Basic YTpi".parse().unwrap());
        assert_eq!(challenge(&auth, &basic).await.0, 401);
        for malformed in ["Bearer", "Bearer a b", "Bearer {x}"] {
            let mut headers = http::HeaderMap::new();
            headers.insert(http::header::AUTHORIZATION, malformed.parse().unwrap());
            let (status, value) = challenge(&auth, &headers).await;
            assert_eq!(
                status,
                if malformed == "Bearer" { 401 } else { 400 },
                "{malformed}"
            );
            if status == 400 {
                assert!(value.contains("error=\"invalid_request\""), "{value}");
            }
        }
        let mut expired = good_claims();
        expired["exp"] = json!(jwt::now() - 100);
        let (status, value) = challenge(&auth, &bearer(&signer.sign(&expired))).await;
        assert_eq!(status, 401);
        assert!(value.starts_with("Bearer error=\"invalid_token\", error_description=\"the access token has expired\""), "{value}");
        assert!(value.contains(meta), "{value}");
        let huge = "a".repeat(MAX_TOKEN_BYTES + 1);
        let (status, value) = challenge(&auth, &bearer(&huge)).await;
        assert_eq!(status, 401);
        assert!(value.contains("too large"), "{value}");
        // An opaque token without introspection configured.
        assert_eq!(challenge(&auth, &bearer("opaque-token")).await.0, 401);
        let rendered = auth.metrics.render();
        assert!(
            rendered.contains("tg_tool_service_mcp_auth_refusals_total{reason=\"expired\"} 1"),
            "{rendered}"
        );
    }

    #[tokio::test]
    async fn scopes_decide_which_tools_a_caller_may_call() {
        let signer = Signer::new("k1");
        let auth = authorizer(&signer);
        let mut reader = good_claims();
        reader["scope"] = json!("tickets:read");
        let caller = auth
            .authenticate(&bearer(&signer.sign(&reader)))
            .await
            .unwrap();
        assert_eq!(caller.user.as_deref(), Some("alice"));
        assert!(caller.may_call("list-tickets") && !caller.may_call("close-ticket"));
        let call = |tool: &str| {
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool}})
                .to_string()
        };
        assert!(auth
            .check_call(&caller, call("list-tickets").as_bytes())
            .is_ok());
        let refused = auth
            .check_call(&caller, call("close-ticket").as_bytes())
            .unwrap_err();
        let response = auth.refuse(refused);
        assert_eq!(response.status(), 403);
        let value = response.headers()[http::header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap();
        assert!(value.contains("error=\"insufficient_scope\""), "{value}");
        // Every scope the tool needs, not only the missing one.
        assert!(
            value.contains("scope=\"tickets:read tickets:admin\""),
            "{value}"
        );
        assert!(auth
            .check_call(&caller, br#"{"method": "tools/list"}"#)
            .is_ok());

        let fixed = auth.authenticate(&bearer("static-token")).await.unwrap();
        assert!(fixed.user.is_none() && fixed.may_call("close-ticket"));
        assert!(auth
            .check_call(&fixed, call("close-ticket").as_bytes())
            .is_ok());
    }

    #[tokio::test]
    async fn a_checked_token_is_remembered_until_the_keys_change() {
        let signer = Signer::new("k1");
        let auth = authorizer(&signer);
        let token = signer.sign(&good_claims());
        for _ in 0..3 {
            assert!(auth.authenticate(&bearer(&token)).await.is_ok());
        }
        assert_eq!(auth.remembered.read().unwrap().tokens.len(), 1);
        // The issuer drops the key (it leaked, say): the token is checked
        // again, against the new set, and refused.
        let other = Signer::new("k2");
        let keys = keys::KeySet::from_jwks(&json!({"keys": [other.jwk()]}), 10).0;
        auth.discovered.get().unwrap().keys.replace(keys);
        let refused = auth.authenticate(&bearer(&token)).await.unwrap_err();
        assert_eq!(refused.reason, Reason::UnknownKey);
    }

    #[test]
    fn an_introspection_answer_is_checked_as_a_token_is() {
        let auth = authorizer(&Signer::new("k1"));
        let now = jwt::now();
        let answer = |value: Value| auth.introspection_claims(value.to_string().as_bytes());
        let claims = answer(
            json!({"active": true, "client_id": "agent", "aud": "https://tools.example/mcp",
                                   "scope": "tickets:read", "exp": now + 60}),
        )
        .unwrap();
        assert_eq!(claims.user.as_deref(), Some("agent"));
        assert_eq!(claims.scopes, ["tickets:read"]);
        assert_eq!(answer(json!({"active": false})), Err(Reason::Inactive));
        assert_eq!(answer(json!({"active": "true"})), Err(Reason::Inactive));
        assert_eq!(
            answer(json!({"active": true, "aud": "https://other.example/mcp"})),
            Err(Reason::Audience)
        );
        assert_eq!(
            answer(
                json!({"active": true, "aud": "https://tools.example/mcp", "iss": "https://evil.example"})
            ),
            Err(Reason::Issuer)
        );
        assert_eq!(
            auth.introspection_claims(b"not json"),
            Err(Reason::Inactive)
        );
    }

    #[test]
    fn the_metadata_names_the_resource_the_issuer_and_the_scopes() {
        let auth = authorizer(&Signer::new("k1"));
        let metadata: Value = serde_json::from_slice(&auth.metadata).unwrap();
        assert_eq!(
            metadata,
            json!({"resource": "https://tools.example/mcp",
                   "authorization_servers": ["https://issuer.example"],
                   "scopes_supported": ["tickets:admin", "tickets:read"],
                   "bearer_methods_supported": ["header"]})
        );
    }

    #[test]
    fn tokens_are_b64tokens() {
        for (token, ok) in [
            ("abc.DEF-_~+/", true),
            ("abc==", true),
            ("==", false),
            ("a=b", false),
            ("a b", false),
            ("{x}", false),
            ("é", false),
        ] {
            assert_eq!(b64token(token.as_bytes()).is_some(), ok, "{token}");
        }
    }

    #[test]
    fn options_are_checked() {
        let check = |issuer: &str, resource: &str| OAuthOptions::new(issuer, resource).check();
        assert!(check("https://a.example", "https://b.example/mcp").is_ok());
        assert!(check("http://127.0.0.1:9000", "http://localhost:8900/mcp").is_ok());
        let refused = check("http://a.example", "https://b.example/mcp").unwrap_err();
        assert!(
            refused.contains("plain http on another machine"),
            "{refused}"
        );
        assert!(check("https://a.example", "https://b.example/mcp#x").is_err());
        assert!(check("a.example", "https://b.example/mcp").is_err());
        let bad_scope =
            OAuthOptions::new("https://a.example", "https://b.example/mcp").scope("s", "has space");
        assert!(bad_scope.check().is_err());
        let shown = format!(
            "{:?}",
            OAuthOptions {
                introspection: Some(("id".into(), "s3cret".into())),
                ..OAuthOptions::new("https://a.example", "https://b.example/mcp")
            }
        );
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn every_reason_has_its_own_label_and_the_metric_lists_each() {
        let labels: Vec<&str> = Reason::ALL.iter().map(|reason| reason.label()).collect();
        let mut distinct = labels.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            labels.len(),
            "two reasons share a label: {labels:?}"
        );
        let mut listed = crate::metrics::MCP_AUTH_REASONS.to_vec();
        listed.sort_unstable();
        assert_eq!(
            distinct, listed,
            "the metric's reasons (metrics::MCP_AUTH_REASONS) and Reason::label differ"
        );
    }
}
