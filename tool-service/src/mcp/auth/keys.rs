//! The issuer's signing keys: its JWKS read into keys `ring` verifies
//! with, kept current without letting tokens drive requests to the issuer.
//!
//! - Fetched at start (retried until it answers; readiness waits), then
//!   every [`REFRESH`].
//! - A token naming a key not in the set triggers one fetch, at most once
//!   per [`MIN_REFETCH`], whatever the number of such tokens: a flood of
//!   made-up `kid`s costs the issuer one request.
//! - A failed fetch keeps the keys last fetched (logged as a warning).
//! - At most [`MAX_KEYS`] keys and [`MAX_JWKS_BYTES`] bytes are read.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::Value;

use super::fetch::Fetcher;
use super::Algorithm;

/// How often the keys are fetched again while all goes well.
pub(crate) const REFRESH: Duration = Duration::from_secs(300);

/// The least time between two fetches caused by unknown keys.
pub(crate) const MIN_REFETCH: Duration = Duration::from_secs(5);

/// The most keys read from a JWKS; the rest are ignored.
pub(crate) const MAX_KEYS: usize = 64;

/// The largest JWKS document read.
pub(crate) const MAX_JWKS_BYTES: usize = 256 * 1024;

/// A public key of the issuer's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Key {
    /// An RSA key: modulus and exponent, big-endian.
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// A P-256 point, uncompressed (`04 || x || y`).
    P256(Vec<u8>),
    /// A P-384 point, uncompressed.
    P384(Vec<u8>),
    /// An Ed25519 public key.
    Ed25519(Vec<u8>),
}

/// A key with the algorithm its JWK pins, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    key: Key,
    alg: Option<Algorithm>,
}

impl std::ops::Deref for Entry {
    type Target = Key;

    fn deref(&self) -> &Key {
        &self.key
    }
}

impl Entry {
    /// Whether a token signed with `algorithm` may be checked with this key.
    pub(crate) fn fits(&self, algorithm: Algorithm) -> bool {
        if self.alg.is_some_and(|pinned| pinned != algorithm) {
            return false;
        }
        matches!(
            (&self.key, algorithm),
            (
                Key::Rsa { .. },
                Algorithm::RS256
                    | Algorithm::RS384
                    | Algorithm::RS512
                    | Algorithm::PS256
                    | Algorithm::PS384
                    | Algorithm::PS512
            ) | (Key::P256(_), Algorithm::ES256)
                | (Key::P384(_), Algorithm::ES384)
                | (Key::Ed25519(_), Algorithm::EdDSA)
        )
    }
}

/// The keys of one JWKS, by `kid` (keys without one under their position).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct KeySet {
    by_kid: HashMap<String, Entry>,
    order: Vec<String>,
}

impl KeySet {
    /// The usable keys of a JWKS document, at most `max`; and how many keys
    /// were left out (not for signatures, unknown kinds, malformed, or over
    /// `max`).
    pub(crate) fn from_jwks(jwks: &Value, max: usize) -> (Self, usize) {
        let mut set = Self::default();
        let mut skipped = 0;
        let keys = jwks
            .get("keys")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for (at, jwk) in keys.iter().enumerate() {
            let kid = match jwk.get("kid") {
                Some(Value::String(kid)) => kid.clone(),
                None => format!("#{at}"),
                Some(_) => {
                    skipped += 1;
                    continue;
                }
            };
            match (set.order.len() < max, entry(jwk)) {
                (true, Some(entry)) if !set.by_kid.contains_key(&kid) => {
                    set.order.push(kid.clone());
                    set.by_kid.insert(kid, entry);
                }
                _ => skipped += 1,
            }
        }
        (set, skipped)
    }

    /// The key of this `kid`.
    pub(crate) fn get(&self, kid: &str) -> Option<&Entry> {
        self.by_kid.get(kid)
    }

    /// Every key, in the document's order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.order.iter().filter_map(|kid| self.by_kid.get(kid))
    }

    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }
}

/// A JWK as a key, when it is a signing key of a kind we verify.
fn entry(jwk: &Value) -> Option<Entry> {
    let field = |name: &str| -> Option<Vec<u8>> {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(jwk.get(name)?.as_str()?)
            .ok()
    };
    if jwk.get("use").is_some_and(|usage| usage != "sig") {
        return None;
    }
    let alg = match jwk.get("alg") {
        None => None,
        Some(Value::String(name)) => Some(Algorithm::from_name(name)?),
        Some(_) => return None,
    };
    let point = |x: Vec<u8>, y: Vec<u8>, size: usize| {
        (x.len() == size && y.len() == size).then(|| [&[4u8][..], &x, &y].concat())
    };
    let key = match (
        jwk.get("kty")?.as_str()?,
        jwk.get("crv").and_then(Value::as_str),
    ) {
        ("RSA", _) => Key::Rsa {
            n: field("n")?,
            e: field("e")?,
        },
        ("EC", Some("P-256")) => Key::P256(point(field("x")?, field("y")?, 32)?),
        ("EC", Some("P-384")) => Key::P384(point(field("x")?, field("y")?, 48)?),
        ("OKP", Some("Ed25519")) => Key::Ed25519(field("x").filter(|x| x.len() == 32)?),
        _ => return None,
    };
    let entry = Entry { key, alg };
    match alg {
        Some(alg) if !entry.fits(alg) => None,
        _ => Some(entry),
    }
}

/// The issuer's keys, as last fetched.
#[derive(Debug)]
pub(crate) struct KeyStore {
    jwks_uri: String,
    fetcher: Fetcher,
    current: RwLock<Option<Arc<KeySet>>>,
    /// When a fetch for an unknown key last started; held while it runs.
    refetching: tokio::sync::Mutex<Option<Instant>>,
    fetches: AtomicU64,
    /// Counts the changes of the key set: what was checked with one set
    /// is checked again with the next.
    generation: AtomicU64,
}

impl KeyStore {
    pub(crate) fn new(jwks_uri: String, fetcher: Fetcher) -> Self {
        Self {
            jwks_uri,
            fetcher,
            current: RwLock::new(None),
            refetching: tokio::sync::Mutex::new(None),
            fetches: AtomicU64::new(0),
            generation: AtomicU64::new(0),
        }
    }

    /// A key set already known, for tests.
    #[cfg(test)]
    pub(crate) fn with_keys(keys: KeySet) -> Self {
        let store = Self::new(String::new(), Fetcher::new(None).unwrap());
        *store.current.write().unwrap() = Some(Arc::new(keys));
        store
    }

    /// Which key set this is: it changes when the issuer's keys do.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Another key set, as a fetch that found it would keep it.
    #[cfg(test)]
    pub(crate) fn replace(&self, keys: KeySet) {
        *self.current.write().unwrap() = Some(Arc::new(keys));
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// The keys, once fetched.
    pub(crate) fn keys(&self) -> Option<Arc<KeySet>> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many times the JWKS was fetched (tried).
    #[cfg(test)]
    pub(crate) fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// Fetches the JWKS and keeps its keys; how many there are. A failure
    /// keeps the keys there were.
    pub(crate) async fn fetch(&self) -> Result<usize, super::fetch::Failure> {
        use super::fetch::Failure;
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let body = self.fetcher.get(&self.jwks_uri, MAX_JWKS_BYTES).await?;
        let jwks: Value = serde_json::from_slice(&body).map_err(|error| {
            Failure::misconfigured(format!(
                "{}: the key set is not JSON: {error}",
                self.jwks_uri
            ))
        })?;
        let (keys, skipped) = KeySet::from_jwks(&jwks, MAX_KEYS);
        if keys.len() == 0 {
            return Err(Failure::misconfigured(format!(
                "{}: the key set has no signing key this server can use",
                self.jwks_uri
            )));
        }
        if skipped > 0 {
            tracing::debug!(
                kept = keys.len(),
                skipped,
                "keys of the authorization server left out (not for signatures, of another kind, or over {MAX_KEYS})"
            );
        }
        let count = keys.len();
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        if current.as_deref() != Some(&keys) {
            *current = Some(Arc::new(keys));
            self.generation.fetch_add(1, Ordering::Release);
        }
        Ok(count)
    }

    /// The keys after fetching them again because a token names `kid`, a
    /// key not known: at most once per [`MIN_REFETCH`] for all tokens;
    /// those arriving during a fetch wait for it.
    pub(crate) async fn refetch_for(&self, kid: &str) -> Option<Arc<KeySet>> {
        let mut last = self.refetching.lock().await;
        if let Some(keys) = self.keys().filter(|keys| keys.get(kid).is_some()) {
            return Some(keys);
        }
        if last.is_some_and(|last| last.elapsed() < MIN_REFETCH) {
            return self.keys();
        }
        *last = Some(Instant::now());
        if let Err(error) = self.fetch().await {
            self.warn_stale(&error.text);
        }
        self.keys()
    }

    /// Logs that the keys could not be refreshed, and that the cached ones
    /// still serve.
    pub(crate) fn warn_stale(&self, error: &str) {
        let cached = self.keys().map_or(0, |keys| keys.len());
        tracing::warn!(
            cached,
            "cannot refresh the authorization server's keys; the cached ones still serve: {error}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_signing_keys_of_known_kinds_are_kept_up_to_the_cap() {
        let ec = super::super::jwt::tests::Signer::new("a").jwk();
        let mut enc = ec.clone();
        enc["use"] = json!("enc");
        enc["kid"] = json!("b");
        let mut hmac = json!({"kty": "oct", "k": "c2VjcmV0", "kid": "c"});
        hmac["alg"] = json!("HS256");
        let mut wrong_alg = ec.clone();
        wrong_alg["alg"] = json!("RS256");
        wrong_alg["kid"] = json!("d");
        let mut short = ec.clone();
        short["x"] = json!("AAAA");
        short["kid"] = json!("e");
        let (keys, skipped) =
            KeySet::from_jwks(&json!({"keys": [ec, enc, hmac, wrong_alg, short, ec]}), 10);
        assert_eq!(keys.len(), 1);
        assert_eq!(skipped, 5);
        assert!(keys.get("a").unwrap().fits(Algorithm::ES256));
        assert!(!keys.get("a").unwrap().fits(Algorithm::ES384));

        let many: Vec<Value> = (0..5000)
            .map(|at| {
                let mut key = ec.clone();
                key["kid"] = json!(format!("k{at}"));
                key
            })
            .collect();
        let (keys, skipped) = KeySet::from_jwks(&json!({"keys": many}), MAX_KEYS);
        assert_eq!((keys.len(), skipped), (MAX_KEYS, 5000 - MAX_KEYS));
        assert_eq!(KeySet::from_jwks(&json!({"nokeys": 1}), 10).0.len(), 0);
    }

    /// A JWKS endpoint on this machine that counts its requests.
    async fn issuer(jwks: Value) -> (String, Arc<AtomicU64>) {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        let count = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&count);
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                counted.fetch_add(1, Ordering::Relaxed);
                let body = jwks.to_string();
                tokio::spawn(async move {
                    let mut buffer = [0u8; 4096];
                    let _ = stream.read(&mut buffer).await;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(body.as_bytes()).await;
                });
            }
        });
        (url, count)
    }

    #[tokio::test]
    async fn a_flood_of_unknown_keys_fetches_the_key_set_once() {
        let signer = super::super::jwt::tests::Signer::new("known");
        let (url, requests) = issuer(json!({"keys": [signer.jwk()]})).await;
        let store = Arc::new(KeyStore::new(url, Fetcher::new(None).unwrap()));
        assert_eq!(store.fetch().await, Ok(1));
        let flood: Vec<_> = (0..200)
            .map(|at| {
                let store = Arc::clone(&store);
                tokio::spawn(async move { store.refetch_for(&format!("made-up-{at}")).await })
            })
            .collect();
        for one in flood {
            let keys = one.await.unwrap().unwrap();
            assert!(keys.get("known").is_some());
        }
        // The start's fetch, and one for the whole flood.
        assert_eq!(requests.load(Ordering::Relaxed), 2);
        assert_eq!(store.fetches(), 2);
        // A key the set already has costs nothing.
        store.refetch_for("known").await.unwrap();
        assert_eq!(store.fetches(), 2);
    }

    #[tokio::test]
    async fn the_last_good_keys_serve_while_the_issuer_is_down() {
        let signer = super::super::jwt::tests::Signer::new("known");
        let (url, _) = issuer(json!({"keys": [signer.jwk()]})).await;
        let store = KeyStore::new(url, Fetcher::new(None).unwrap());
        store.fetch().await.unwrap();
        // Pointed at a port nobody listens on, as an issuer that went down.
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let gone = format!("http://{}/jwks", closed.local_addr().unwrap());
        drop(closed);
        let store = KeyStore {
            jwks_uri: gone,
            ..store
        };
        let failure = store.fetch().await.unwrap_err();
        assert!(
            failure.text.contains("cannot connect") && !failure.misconfigured,
            "{failure:?}"
        );
        assert!(store.keys().unwrap().get("known").is_some());
    }
}
