//! JWT access tokens: the compact form taken apart, the signature checked
//! with `ring` against a key of the issuer's JWKS, and the claims checked
//! with their types (a claim of the wrong type refuses the token; it is
//! never taken as absent).
//!
//! RFC 9068's profile, but for `typ`: it asks for `at+jwt`, and Keycloak,
//! Entra ID and Cognito send `JWT` or nothing. So a token typed `at+jwt`
//! (`application/at+jwt`, or a vendor's `…at+jwt` such as Okta's), `JWT`,
//! or not typed is taken; one that says it is another kind of JWT (an ID
//! token, a logout token, a DPoP proof: RFC 8725's explicit typing) is
//! refused. What keeps an ID token of the same issuer out is the audience:
//! it names the client, not this resource.
//!
//! Why not the `jsonwebtoken` crate: its versions on `ring` (9.x) take an
//! `exp` or `nbf` of the wrong type as absent (CVE-2026-25537), and the
//! fixed ones need a second crypto stack (aws-lc-rs, a C build of minutes
//! on two cores, or RustCrypto's `rsa`, which carries an open advisory).
//! `ring` is already linked for TLS; the few lines below only parse.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use ring::signature;
use serde_json::{Map, Value};

use super::keys::{Key, KeySet};
use super::{Algorithm, Reason};

/// What a valid token says about its caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Claims {
    /// The value of the claim that names the user, when it has one.
    pub(crate) user: Option<String>,
    /// The scopes granted (by default `scope`, space-separated, or `scp`).
    pub(crate) scopes: Vec<String>,
    /// When the token expires (seconds since the epoch).
    pub(crate) expires: u64,
}

/// How a token is checked.
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    pub(crate) issuer: String,
    pub(crate) audiences: Vec<String>,
    /// Clients whose access tokens have no `aud` (Cognito's), by
    /// `client_id`.
    pub(crate) clients_without_audience: Vec<String>,
    pub(crate) algorithms: Vec<Algorithm>,
    pub(crate) leeway: Duration,
    pub(crate) user_claim: String,
    pub(crate) scope_claims: Vec<String>,
}

/// A token in three parts, not yet checked.
#[derive(Debug)]
pub(crate) struct Parsed<'a> {
    /// `header.payload`, what the signature signs.
    signed: &'a str,
    signature: Vec<u8>,
    pub(crate) algorithm: Algorithm,
    pub(crate) kid: Option<String>,
    payload: Map<String, Value>,
}

fn decode_part(part: &str) -> Result<Vec<u8>, Reason> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| Reason::Malformed)
}

/// Whether `token` has the shape of a JWT (three dot-separated parts), as
/// opposed to an opaque token.
pub(crate) fn looks_like_jwt(token: &str) -> bool {
    token.bytes().filter(|&b| b == b'.').count() == 2
}

/// Takes a compact JWT apart: header, payload and signature, the algorithm
/// checked against the allow-list.
pub(crate) fn parse<'a>(token: &'a str, rules: &Rules) -> Result<Parsed<'a>, Reason> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Reason::Malformed);
    };
    let header: Map<String, Value> =
        serde_json::from_slice(&decode_part(header)?).map_err(|_| Reason::Malformed)?;
    // Extensions a recipient must understand: none is understood here.
    if header.contains_key("crit") {
        return Err(Reason::Malformed);
    }
    match header.get("typ") {
        None => {}
        Some(Value::String(typ)) if access_token_type(typ) => {}
        Some(_) => return Err(Reason::TokenType),
    }
    let algorithm = match header.get("alg") {
        Some(Value::String(name)) => Algorithm::from_name(name)
            .filter(|alg| rules.algorithms.contains(alg))
            .ok_or(Reason::Algorithm)?,
        _ => return Err(Reason::Malformed),
    };
    let kid = match header.get("kid") {
        None => None,
        Some(Value::String(kid)) => Some(kid.clone()),
        Some(_) => return Err(Reason::Malformed),
    };
    let payload: Map<String, Value> =
        serde_json::from_slice(&decode_part(payload)?).map_err(|_| Reason::Malformed)?;
    let signed_len = token.len() - signature.len() - 1;
    Ok(Parsed {
        signed: &token[..signed_len],
        signature: decode_part(signature)?,
        algorithm,
        kid,
        payload,
    })
}

/// Whether a `typ` header may be an access token's: `JWT`, `at+jwt`, or a
/// vendor's `…at+jwt`, with or without `application/`.
fn access_token_type(typ: &str) -> bool {
    let typ = typ.trim().to_ascii_lowercase();
    let typ = typ.strip_prefix("application/").unwrap_or(&typ);
    typ == "jwt" || typ.ends_with("at+jwt")
}

impl Parsed<'_> {
    /// Whether `key` signed this token.
    pub(crate) fn verify_with(&self, key: &Key) -> bool {
        verify(self.algorithm, key, self.signed.as_bytes(), &self.signature)
    }

    /// Verifies the signature with the key the header names (or, with no
    /// `kid`, any key of the algorithm's kind), then the claims.
    pub(crate) fn check(&self, keys: &KeySet, rules: &Rules, now: u64) -> Result<Claims, Reason> {
        let verified = match &self.kid {
            Some(kid) => {
                let key = keys.get(kid).ok_or(Reason::UnknownKey)?;
                if !key.fits(self.algorithm) {
                    return Err(Reason::Algorithm);
                }
                self.verify_with(key)
            }
            None => keys
                .iter()
                .filter(|key| key.fits(self.algorithm))
                .any(|key| self.verify_with(key)),
        };
        if !verified {
            return Err(Reason::Signature);
        }
        claims(&self.payload, rules, now)
    }
}

/// Checks the claims of a token whose signature (or introspection) holds:
/// issuer, audience, expiry and start with the leeway; then the user and
/// the scopes.
pub(crate) fn claims(
    payload: &Map<String, Value>,
    rules: &Rules,
    now: u64,
) -> Result<Claims, Reason> {
    match payload.get("iss") {
        Some(Value::String(issuer)) if *issuer == rules.issuer => {}
        _ => return Err(Reason::Issuer),
    }
    let audience_fits = |aud: &Value| match aud {
        Value::String(aud) => rules.audiences.iter().any(|ours| ours == aud),
        _ => false,
    };
    let audience_ok = match payload.get("aud") {
        Some(aud @ Value::String(_)) => audience_fits(aud),
        Some(Value::Array(auds)) => {
            auds.iter().all(Value::is_string) && auds.iter().any(audience_fits)
        }
        // Only for a client named for it, and only an access token: an ID
        // token of the same pool says `token_use: id`.
        None => {
            matches!(payload.get("client_id"), Some(Value::String(client))
                if rules.clients_without_audience.iter().any(|listed| listed == client))
                && payload
                    .get("token_use")
                    .is_none_or(|token_use| token_use == "access")
        }
        _ => false,
    };
    if !audience_ok {
        return Err(Reason::Audience);
    }
    let leeway = rules.leeway.as_secs();
    let expires = match payload.get("exp").map(number) {
        Some(Some(exp)) => exp,
        _ => return Err(Reason::Malformed),
    };
    if now >= expires.saturating_add(leeway) {
        return Err(Reason::Expired);
    }
    match payload.get("nbf").map(number) {
        None => {}
        Some(Some(nbf)) if nbf <= now.saturating_add(leeway) => {}
        Some(Some(_)) => return Err(Reason::NotYetValid),
        Some(None) => return Err(Reason::Malformed),
    }
    if payload.get("iat").is_some_and(|iat| number(iat).is_none()) {
        return Err(Reason::Malformed);
    }
    // Without the claim, the client the token was issued to (client
    // credentials: a machine calling for itself).
    let user = match payload.get(&rules.user_claim) {
        None | Some(Value::Null) => match payload.get("client_id") {
            Some(Value::String(client)) if !client.is_empty() => Some(client.clone()),
            _ => None,
        },
        Some(Value::String(user)) if !user.is_empty() => Some(user.clone()),
        Some(Value::Number(user)) => Some(user.to_string()),
        Some(_) => return Err(Reason::Malformed),
    };
    Ok(Claims {
        user,
        scopes: scopes(payload, &rules.scope_claims)?,
        expires,
    })
}

/// The granted scopes: the first of `claims` the token has (by default
/// `scope`, RFC 9068's, then `scp`), a space-separated string or a list.
/// A claim whose name has dots and that the token does not have under that
/// name is looked for nested (`realm_access.roles`).
fn scopes(payload: &Map<String, Value>, claims: &[String]) -> Result<Vec<String>, Reason> {
    let words = |text: &str| text.split_ascii_whitespace().map(str::to_owned).collect();
    match claims.iter().find_map(|claim| claim_at(payload, claim)) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(text)) => Ok(words(text)),
        Some(Value::Array(list)) => list
            .iter()
            .map(|scope| scope.as_str().map(str::to_owned).ok_or(Reason::Malformed))
            .collect(),
        Some(_) => Err(Reason::Malformed),
    }
}

/// The claim `name`: at the top level, or else along its dotted path.
fn claim_at<'a>(payload: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if let Some(value) = payload.get(name) {
        return Some(value);
    }
    let mut steps = name.split('.');
    let mut value = payload.get(steps.next()?)?;
    for step in steps {
        value = value.as_object()?.get(step)?;
    }
    Some(value)
}

/// A NumericDate: a non-negative JSON number, seconds (fractions dropped).
fn number(value: &Value) -> Option<u64> {
    match value {
        Value::Number(number) => number.as_u64().or_else(|| {
            number
                .as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(|f| f as u64)
        }),
        _ => None,
    }
}

/// Seconds since the epoch, now.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

fn verify(algorithm: Algorithm, key: &Key, message: &[u8], signature: &[u8]) -> bool {
    match (algorithm, key) {
        (
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512,
            Key::Rsa { n, e },
        ) => {
            let params: &signature::RsaParameters = match algorithm {
                Algorithm::RS256 => &signature::RSA_PKCS1_2048_8192_SHA256,
                Algorithm::RS384 => &signature::RSA_PKCS1_2048_8192_SHA384,
                Algorithm::RS512 => &signature::RSA_PKCS1_2048_8192_SHA512,
                Algorithm::PS256 => &signature::RSA_PSS_2048_8192_SHA256,
                Algorithm::PS384 => &signature::RSA_PSS_2048_8192_SHA384,
                _ => &signature::RSA_PSS_2048_8192_SHA512,
            };
            signature::RsaPublicKeyComponents { n, e }
                .verify(params, message, signature)
                .is_ok()
        }
        (Algorithm::ES256, Key::P256(point)) => {
            signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                .verify(message, signature)
                .is_ok()
        }
        (Algorithm::ES384, Key::P384(point)) => {
            signature::UnparsedPublicKey::new(&signature::ECDSA_P384_SHA384_FIXED, point)
                .verify(message, signature)
                .is_ok()
        }
        (Algorithm::EdDSA, Key::Ed25519(point)) => {
            signature::UnparsedPublicKey::new(&signature::ED25519, point)
                .verify(message, signature)
                .is_ok()
        }
        _ => false,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};
    use serde_json::json;

    pub(crate) fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    /// An ES256 key pair of a test issuer, with its JWK.
    pub(crate) struct Signer {
        pair: EcdsaKeyPair,
        pub(crate) kid: String,
    }

    impl Signer {
        pub(crate) fn new(kid: &str) -> Self {
            let rng = SystemRandom::new();
            let pkcs8 =
                EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                    .unwrap();
            let pair = EcdsaKeyPair::from_pkcs8(
                &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                pkcs8.as_ref(),
                &rng,
            )
            .unwrap();
            Self {
                pair,
                kid: kid.to_owned(),
            }
        }

        pub(crate) fn jwk(&self) -> Value {
            let point = self.pair.public_key().as_ref();
            json!({"kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig", "alg": "ES256",
                   "x": b64(&point[1..33]), "y": b64(&point[33..65])})
        }

        pub(crate) fn sign_with(&self, header: &Value, claims: &Value) -> String {
            let signed = format!(
                "{}.{}",
                b64(header.to_string().as_bytes()),
                b64(claims.to_string().as_bytes())
            );
            let sig = self
                .pair
                .sign(&SystemRandom::new(), signed.as_bytes())
                .unwrap();
            format!("{signed}.{}", b64(sig.as_ref()))
        }

        pub(crate) fn sign(&self, claims: &Value) -> String {
            self.sign_with(
                &json!({"alg": "ES256", "kid": self.kid, "typ": "at+jwt"}),
                claims,
            )
        }
    }

    pub(crate) fn rules() -> Rules {
        Rules {
            issuer: "https://issuer.example".into(),
            audiences: vec!["https://tools.example/mcp".into()],
            clients_without_audience: Vec::new(),
            algorithms: Algorithm::ALL.to_vec(),
            leeway: Duration::from_secs(30),
            user_claim: "sub".into(),
            scope_claims: vec!["scope".into(), "scp".into()],
        }
    }

    pub(crate) fn good_claims() -> Value {
        let now = now();
        json!({"iss": "https://issuer.example", "aud": "https://tools.example/mcp",
               "sub": "alice", "scope": "tickets:read tickets:write",
               "exp": now + 300, "iat": now, "nbf": now - 1})
    }

    fn keys(signer: &Signer) -> KeySet {
        KeySet::from_jwks(&json!({"keys": [signer.jwk()]}), 100).0
    }

    fn check(token: &str, keys: &KeySet) -> Result<Claims, Reason> {
        parse(token, &rules())?.check(keys, &rules(), now())
    }

    #[test]
    fn a_good_token_gives_its_user_and_scopes() {
        let signer = Signer::new("k1");
        let claims = check(&signer.sign(&good_claims()), &keys(&signer)).unwrap();
        assert_eq!(claims.user.as_deref(), Some("alice"));
        assert_eq!(claims.scopes, ["tickets:read", "tickets:write"]);
    }

    #[test]
    fn access_tokens_typed_as_issuers_type_them_are_taken() {
        let signer = Signer::new("k1");
        for typ in [
            json!("at+jwt"),
            json!("application/at+jwt"),
            json!("JWT"),
            json!("jwt"),
            json!("application/okta-internal-at+jwt"),
        ] {
            let token = signer.sign_with(
                &json!({"alg": "ES256", "kid": "k1", "typ": typ}),
                &good_claims(),
            );
            assert!(check(&token, &keys(&signer)).is_ok(), "{typ}");
        }
        let untyped = signer.sign_with(&json!({"alg": "ES256", "kid": "k1"}), &good_claims());
        assert!(check(&untyped, &keys(&signer)).is_ok());
    }

    #[test]
    fn every_bad_token_is_refused_for_its_reason() {
        let signer = Signer::new("k1");
        let other = Signer::new("k1");
        let keys = keys(&signer);
        let with = |change: &dyn Fn(&mut Map<String, Value>)| {
            let mut claims = good_claims();
            change(claims.as_object_mut().unwrap());
            signer.sign(&claims)
        };
        let now = now();
        let header = |alg: &str| b64(json!({"alg": alg, "kid": "k1"}).to_string().as_bytes());
        let payload = b64(good_claims().to_string().as_bytes());
        let cases: Vec<(String, Reason)> = vec![
            ("not a token".into(), Reason::Malformed),
            ("a.b.c".into(), Reason::Malformed),
            (other.sign(&good_claims()), Reason::Signature),
            (format!("{}.{payload}.", header("none")), Reason::Algorithm),
            // An HMAC "signed" with the public key: not an algorithm here.
            (
                format!("{}.{payload}.c2ln", header("HS256")),
                Reason::Algorithm,
            ),
            (
                signer.sign_with(&json!({"alg": "ES256", "kid": "k9"}), &good_claims()),
                Reason::UnknownKey,
            ),
            // The key is an EC key; RS256 with it is refused before any check.
            (
                signer.sign_with(&json!({"alg": "RS256", "kid": "k1"}), &good_claims()),
                Reason::Algorithm,
            ),
            (
                signer.sign_with(
                    &json!({"alg": "ES256", "kid": "k1", "crit": ["x"]}),
                    &good_claims(),
                ),
                Reason::Malformed,
            ),
            // Typed as another kind of JWT than an access token.
            (
                signer.sign_with(
                    &json!({"alg": "ES256", "kid": "k1", "typ": "logout+jwt"}),
                    &good_claims(),
                ),
                Reason::TokenType,
            ),
            (
                signer.sign_with(
                    &json!({"alg": "ES256", "kid": "k1", "typ": "dpop+jwt"}),
                    &good_claims(),
                ),
                Reason::TokenType,
            ),
            (
                signer.sign_with(
                    &json!({"alg": "ES256", "kid": "k1", "typ": 1}),
                    &good_claims(),
                ),
                Reason::TokenType,
            ),
            (
                with(&|c| drop(c.insert("iss".into(), json!("https://evil.example")))),
                Reason::Issuer,
            ),
            (with(&|c| drop(c.remove("iss"))), Reason::Issuer),
            (
                with(&|c| drop(c.insert("aud".into(), json!("https://other.example/mcp")))),
                Reason::Audience,
            ),
            (
                with(&|c| drop(c.insert("aud".into(), json!(["https://other.example/mcp"])))),
                Reason::Audience,
            ),
            (with(&|c| drop(c.remove("aud"))), Reason::Audience),
            (
                with(&|c| drop(c.insert("exp".into(), json!(now - 31)))),
                Reason::Expired,
            ),
            (with(&|c| drop(c.remove("exp"))), Reason::Malformed),
            (
                with(&|c| drop(c.insert("exp".into(), json!("never")))),
                Reason::Malformed,
            ),
            (
                with(&|c| drop(c.insert("nbf".into(), json!(now + 60)))),
                Reason::NotYetValid,
            ),
            // A start of the wrong type is not taken as no start.
            (
                with(&|c| drop(c.insert("nbf".into(), json!("99999999999")))),
                Reason::Malformed,
            ),
            (
                with(&|c| drop(c.insert("scope".into(), json!(7)))),
                Reason::Malformed,
            ),
        ];
        for (token, reason) in cases {
            assert_eq!(check(&token, &keys), Err(reason), "{token}");
        }
    }

    #[test]
    fn scopes_come_from_the_claims_an_issuer_writes_them_in() {
        let signer = Signer::new("k1");
        let keys = keys(&signer);
        let mut claims = good_claims();
        claims.as_object_mut().unwrap().remove("scope");
        // Entra ID's application tokens, Auth0's permissions, Keycloak's
        // realm roles, and a namespaced claim whose name has dots.
        claims["roles"] = json!(["Tickets.Read"]);
        claims["permissions"] = json!(["read:tickets", "write:tickets"]);
        claims["realm_access"] = json!({"roles": ["tickets-reader"]});
        claims["https://tools.example/scopes"] = json!("a b");
        let token = signer.sign(&claims);
        for (claims_read, expected) in [
            (vec!["roles"], vec!["Tickets.Read"]),
            (vec!["permissions"], vec!["read:tickets", "write:tickets"]),
            (vec!["realm_access.roles"], vec!["tickets-reader"]),
            (vec!["https://tools.example/scopes"], vec!["a", "b"]),
            (vec!["scope", "scp", "roles"], vec!["Tickets.Read"]),
            (
                vec!["realm_access.missing", "permissions"],
                vec!["read:tickets", "write:tickets"],
            ),
            (vec!["absent"], vec![]),
        ] {
            let mut rules = rules();
            rules.scope_claims = claims_read
                .iter()
                .map(|claim| (*claim).to_owned())
                .collect();
            let parsed = parse(&token, &rules).unwrap();
            let got = parsed.check(&keys, &rules, now()).unwrap();
            assert_eq!(got.scopes, expected, "{claims_read:?}");
        }
        let mut rules = rules();
        rules.scope_claims = vec!["realm_access".into()];
        let parsed = parse(&token, &rules).unwrap();
        assert_eq!(parsed.check(&keys, &rules, now()), Err(Reason::Malformed));
    }

    #[test]
    fn the_leeway_and_the_audience_list_are_honoured() {
        let signer = Signer::new("k1");
        let mut claims = good_claims();
        claims["exp"] = json!(now() - 10);
        claims["nbf"] = json!(now() + 10);
        claims["aud"] = json!(["https://a.example", "https://tools.example/mcp"]);
        claims["scope"] = Value::Null;
        claims["scp"] = json!(["a", "b"]);
        let got = check(&signer.sign(&claims), &keys(&signer)).unwrap();
        assert!(got.scopes.is_empty());
        claims.as_object_mut().unwrap().remove("scope");
        let got = check(&signer.sign(&claims), &keys(&signer)).unwrap();
        assert_eq!(got.scopes, ["a", "b"]);
    }

    #[test]
    fn a_token_without_kid_is_tried_with_each_key_of_its_kind() {
        let signer = Signer::new("k1");
        let token = signer.sign_with(&json!({"alg": "ES256"}), &good_claims());
        assert!(check(&token, &keys(&signer)).is_ok());
    }

    #[test]
    fn ed25519_tokens_verify() {
        let rng = SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let jwks = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "ed",
                                    "x": b64(pair.public_key().as_ref())}]});
        let keys = KeySet::from_jwks(&jwks, 10).0;
        let signed = format!(
            "{}.{}",
            b64(json!({"alg": "EdDSA", "kid": "ed"}).to_string().as_bytes()),
            b64(good_claims().to_string().as_bytes())
        );
        let token = format!("{signed}.{}", b64(pair.sign(signed.as_bytes()).as_ref()));
        assert!(check(&token, &keys).is_ok());
    }
}
