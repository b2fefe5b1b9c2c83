//! The authorization server as this resource server knows it: its metadata
//! and keys found at start (a misconfigured issuer stops the start), kept
//! current while serving, and the protected resource metadata (RFC 9728)
//! that names it to clients.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use serde_json::{Map, Value};

use super::fetch::Failure;
use super::keys::{self, KeyStore};
use super::reason::text;
use super::{Authorizer, Body, MAX_DOCUMENT_BYTES};

/// The issuer's endpoints, once discovered.
#[derive(Debug)]
pub(super) struct Discovered {
    pub(super) keys: KeyStore,
    pub(super) introspection_endpoint: Option<String>,
}

impl Authorizer {
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
