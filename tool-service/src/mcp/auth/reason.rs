//! Why a request is refused, and the answer that says so: its status, the
//! `WWW-Authenticate` challenge a client signs in (or steps up) from, and
//! the refusal counted by reason.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

use super::{Authorizer, Body};

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
    /// Not the static token (the port takes no other).
    NotAccepted,
    /// A JWT typed as another kind than an access token (`typ`).
    TokenType,
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
    pub(super) const ALL: [Self; crate::metrics::MCP_AUTH_REASONS.len()] = [
        Self::Missing,
        Self::BadRequest,
        Self::Malformed,
        Self::NotAccepted,
        Self::TokenType,
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
            Self::NotAccepted => "not_accepted",
            Self::TokenType => "token_type",
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
            Self::Missing => "this MCP server needs a bearer token (Authorization: Bearer)",
            Self::BadRequest => "the Authorization header is not `Bearer` and one token",
            Self::Malformed => "the access token is not a well-formed JWT",
            Self::NotAccepted => "the bearer token is not the one this server takes",
            Self::TokenType => "the token is typed as another kind of JWT than an access token",
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
    pub(super) reason: Reason,
    pub(super) scopes: Vec<String>,
}

impl From<Reason> for Refusal {
    fn from(reason: Reason) -> Self {
        Self {
            reason,
            scopes: Vec::new(),
        }
    }
}

impl Authorizer {
    /// The answer to a refused request: its status and the challenge that
    /// names this resource's metadata and scopes, counted.
    pub(crate) fn refuse(&self, refusal: Refusal) -> hyper::Response<Body> {
        refusal.answer(Some(&self.metadata_url), &self.all_scopes, &self.metrics)
    }
}

impl Refusal {
    /// The answer to a request refused for this: its status and challenge
    /// (naming `metadata_url` and, but for a missing scope, `all_scopes`,
    /// when the port has them), counted in `metrics`.
    pub(crate) fn answer(
        self,
        metadata_url: Option<&str>,
        all_scopes: &[String],
        metrics: &crate::metrics::Metrics,
    ) -> hyper::Response<Body> {
        let reason = self.reason;
        metrics.mcp_auth_refused(reason.label());
        tracing::debug!(reason = reason.label(), "an MCP request refused");
        let (status, error) = match reason {
            Reason::Missing => (http::StatusCode::UNAUTHORIZED, None),
            Reason::BadRequest => (http::StatusCode::BAD_REQUEST, Some("invalid_request")),
            Reason::InsufficientScope => (http::StatusCode::FORBIDDEN, Some("insufficient_scope")),
            Reason::Unavailable => (http::StatusCode::SERVICE_UNAVAILABLE, None),
            _ => (http::StatusCode::UNAUTHORIZED, Some("invalid_token")),
        };
        let scopes = match reason {
            Reason::InsufficientScope => self.scopes.join(" "),
            _ => all_scopes.join(" "),
        };
        let mut parameters = Vec::new();
        if let Some(error) = error {
            parameters.push(format!("error=\"{error}\""));
            parameters.push(format!("error_description=\"{}\"", reason.describe()));
        }
        if let Some(url) = metadata_url {
            parameters.push(format!("resource_metadata=\"{url}\""));
        }
        if !scopes.is_empty() {
            parameters.push(format!("scope=\"{scopes}\""));
        }
        let challenge = match parameters.is_empty() {
            true => String::from("Bearer"),
            false => format!("Bearer {}", parameters.join(", ")),
        };
        let body = match reason {
            Reason::InsufficientScope => format!("{}: it needs {scopes}\n", reason.describe()),
            _ => format!("{}\n", reason.describe()),
        };
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

/// A plain-text answer.
pub(super) fn text(status: http::StatusCode, body: String) -> hyper::Response<Body> {
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
