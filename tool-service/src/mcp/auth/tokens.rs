//! Tokens checked and remembered: a JWT against the issuer's keys, an
//! opaque token by introspection (RFC 7662), each answer kept no longer than
//! the token lives.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::issuer::Discovered;
use super::{
    jwt, Authorizer, Reason, INTROSPECTION_TTL, MAX_DOCUMENT_BYTES, MAX_REMEMBERED_BYTES,
    MAX_REMEMBERED_TOKEN, REFUSAL_TTL,
};

/// Tokens already checked: a JWT's signature check (some 60 µs for
/// ES256) and an introspection request are made once per token, not once
/// per request. Keyed by the whole token (the standard library's keyed
/// hash; a digest of it cost more than a tenth of a call), bounded in bytes.
#[derive(Default)]
pub(super) struct Remembered {
    pub(super) tokens: HashMap<Box<[u8]>, Checked>,
    bytes: usize,
}

/// What a checked token said, until when it holds, and of which key set.
#[derive(Clone)]
pub(super) struct Checked {
    pub(super) answer: Result<(Option<String>, Arc<[String]>), Reason>,
    pub(super) until: Instant,
    pub(super) keys: u64,
}

impl Authorizer {
    /// Keeps what a token said until `until` (and while the key set is the
    /// one it was checked with).
    pub(super) fn remember(
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
    pub(super) async fn check_jwt(
        &self,
        discovered: &Discovered,
        token: &str,
    ) -> (Result<jwt::Claims, Reason>, Option<Instant>) {
        let checked = self.check_signed(discovered, token).await;
        let until = checked.as_ref().ok().map(|claims| {
            let ends =
                Duration::from_secs(claims.expires.saturating_add(self.rules.leeway.as_secs()));
            Instant::now() + ends.saturating_sub(since_epoch())
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
    pub(super) async fn introspect(
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
        let until = kept_until(&answer, Instant::now(), since_epoch());
        (answer, Some(until))
    }

    /// The claims of an introspection answer: active, then checked as a
    /// JWT's are (the issuer implied when absent; no `exp` lives a minute).
    pub(super) fn introspection_claims(&self, body: &[u8]) -> Result<jwt::Claims, Reason> {
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
}

/// Until when an introspection answer is kept (`now`, and `epoch_now`
/// since the epoch, being the same moment): a token's claims a minute at
/// most and never past its `exp`; a refusal 10 s.
pub(super) fn kept_until(
    answer: &Result<jwt::Claims, Reason>,
    now: Instant,
    epoch_now: Duration,
) -> Instant {
    match answer {
        Ok(claims) => {
            let left = Duration::from_secs(claims.expires).saturating_sub(epoch_now);
            now + INTROSPECTION_TTL.min(left)
        }
        Err(_) => now + REFUSAL_TTL,
    }
}

/// The time since the epoch, to the nanosecond: a token's `exp` is a
/// second, and what remains of it is counted from now, not from the
/// second now is in (which would keep it up to a second too long).
fn since_epoch() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}
