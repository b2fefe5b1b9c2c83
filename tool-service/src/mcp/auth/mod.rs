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

mod algorithm;
pub(crate) mod fetch;
mod issuer;
mod jwt;
mod keys;
mod reason;
mod tokens;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::json;

pub use algorithm::Algorithm;
pub(crate) use reason::{Reason, Refusal};

use fetch::Fetcher;
use issuer::Discovered;
use tokens::Remembered;

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
    /// Clients whose access tokens carry no `aud` at all (AWS Cognito's):
    /// such a token is accepted when its `client_id` is listed here and its
    /// `token_use`, if it has one, is `access`. Empty by default: a token
    /// without an audience is refused.
    pub clients_without_audience: Vec<String>,
    /// The claim whose value is the caller's name,
    /// [`Context::user`](crate::Context::user): `sub` by default.
    pub user_claim: String,
    /// The claims the granted scopes are read from, the first the token
    /// has: `scope` (RFC 9068), then `scp`, by default. Other issuers
    /// use: `roles` (Entra ID's application tokens), `permissions`
    /// (Auth0), `realm_access.roles` (Keycloak; a dotted name is looked
    /// for nested when no claim has that name). A space-separated string
    /// or a list of strings.
    pub scope_claims: Vec<String>,
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
            .field("clients_without_audience", &self.clients_without_audience)
            .field("user_claim", &self.user_claim)
            .field("scope_claims", &self.scope_claims)
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
            clients_without_audience: Vec::new(),
            user_claim: String::from("sub"),
            scope_claims: vec![String::from("scope"), String::from("scp")],
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

    /// These options, reading the granted scopes from `claims` (the first
    /// the token has) instead of `scope` and `scp`.
    ///
    /// ```
    /// use tool_service::mcp::OAuthOptions;
    ///
    /// // Keycloak's realm roles as scopes.
    /// let oauth = OAuthOptions::new("https://login.example.com/realms/tools", "https://tools.example.com/mcp")
    ///     .scope_claims(["realm_access.roles"]);
    /// assert_eq!(oauth.scope_claims, ["realm_access.roles"]);
    /// ```
    pub fn scope_claims<I>(mut self, claims: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.scope_claims = claims.into_iter().map(Into::into).collect();
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
        if self.scope_claims.is_empty()
            || self
                .scope_claims
                .iter()
                .any(|claim| claim.trim().is_empty())
        {
            return Err(String::from("a scope claim is empty (or none is named)"));
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
            clients_without_audience: options.clients_without_audience.clone(),
            algorithms: options.algorithms.clone(),
            leeway: options.leeway,
            user_claim: options.user_claim.clone(),
            scope_claims: options.scope_claims.clone(),
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

    /// Who is calling, from the request's `Authorization` header.
    pub(crate) async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Caller, Refusal> {
        let token = bearer_token(headers)?;
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
}

/// The token of a request's `Authorization` header: one header, the
/// `Bearer` scheme (in any case), at most [`MAX_TOKEN_BYTES`]. The one
/// reading of the header, for the static token and OAuth alike.
fn bearer_token(headers: &http::HeaderMap) -> Result<&[u8], Reason> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return Err(match headers.contains_key(http::header::AUTHORIZATION) {
            true => Reason::BadRequest,
            false => Reason::Missing,
        });
    };
    let bytes = value.as_bytes();
    let Some(scheme_end) = bytes.iter().position(|b| *b == b' ') else {
        return Err(Reason::Missing);
    };
    if !bytes[..scheme_end].eq_ignore_ascii_case(b"bearer") {
        // Another scheme (Basic, …): as if there were no token.
        return Err(Reason::Missing);
    }
    let token = bytes[scheme_end..].trim_ascii();
    if token.len() > MAX_TOKEN_BYTES {
        return Err(Reason::TooLarge);
    }
    Ok(token)
}

/// Whether a request carries the static `token` (compared in constant
/// time): the check of a port without OAuth.
pub(crate) fn check_static(headers: &http::HeaderMap, token: &str) -> Result<(), Refusal> {
    let given = bearer_token(headers)?;
    if constant_time_eq(given, token.as_bytes()) {
        return Ok(());
    }
    Err(match given.is_empty() {
        true => Reason::BadRequest,
        false => Reason::NotAccepted,
    }
    .into())
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

#[cfg(test)]
mod providers_tests;
#[cfg(test)]
mod tests;
