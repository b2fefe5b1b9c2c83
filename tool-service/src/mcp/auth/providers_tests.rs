//! Tokens as the identity providers teams run issue them, each built as
//! its provider's documentation shows it (header, claims, key set), and
//! checked with the flags its recipe in the MCP guide gives: accepted with
//! the user and scopes the recipe promises; refused when forged, for
//! another audience, or for a close variant the recipe does not allow.

use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _};
use serde_json::{json, Value};

use super::algorithm::Algorithm;
use super::jwt::tests::b64;
use super::jwt::{now, parse, Claims, Rules};
use super::keys::KeySet;
use super::reason::Reason;

/// A 2048-bit RSA key of a test issuer (PKCS #1 DER, base64): ring
/// signs with RSA keys but does not make them.
const RSA_KEY: &str = concat!(
    "MIIEowIBAAKCAQEAyW0SlOHY95nfmvDM6kRzagpfLeE6gyR+A9Nk/ZLrdK3i+kVbol08GwfyiDKW+wt0FSVJdZfK",
    "70QumX5xpxWAwbMkNfBsdKSVxastWBTvaEixwx4KtrNyDxGbCaKHiLwWOha7RE+dTIJAL2cu21rstkiD3GT0XSMO",
    "Ff8UouY7r7iA0gF98S9ZC3grU4DE1YDpT3SGPXM5isvvCtz2gD9gXtEiqbEZde7QHSVR3Xtqpb7xYMXTVLOLqExy",
    "IeNZ7Ogz3KJVVRGqtWDC27Z81k6E7mtgWZu9wK7qK7Uokpzf9SeWgCNd+N4e95ujjQLCETolaFEcaf2SZszMdObz",
    "+Pix9QIDAQABAoIBABiaZwuiboMH24UsZosy4zoPnEKZYTFFktLazloeyP3Og4v4TtINO1s95ET4kPKHGp2+mTNw",
    "4AvLszlydWVoPfrq68Be5pB0zgp/9yDsJbYCMxxXHg3k60il6N8LaCyudLSRtDwK0XbX7gkcPF/0wjcdsmWIO0Tp",
    "FD5hkt626pFy62KAH8BvgTTYKxczDg/Iz0eHhJshv4pqh42/mVUYmWaf8OVHzlprqQAPlZW8ZNFt3FqnhZZSLf26",
    "QBtDC9N4mA4QOg3Kl9OZBLZOtSmy08tfoakARxx5/39rIMaaY/SM+e4z5vGW98y9Sk78vB7gRSg7vz8YqZWACFZD",
    "Z9StS90CgYEA6W0grqyGpnK+mMDx/d/i9ji8DyLJCXh5bS0F2Ideu+EUz4D1MOdR8Td6TJEashP+si2xlQkquqdz",
    "mZt8DDeAvv7jBhsf+AlSyVdna7ORZt+50ZsXon5aqNNd4iWYn5TV3WTNE9PkUc1JB4uAIId6+/3dQLghflVRivhz",
    "rGNDiQ8CgYEA3Oe5XsbPNojyXwJKjjM28J2OBgCGmsBrUyKHStmSPl8vDW+D7FLPSirCFvDqaMC9aFdhXxRgWgpm",
    "vxWjGnXITqEKTIHpE1dwwEMewxdrCnqtLN15hHsvo5MJRQb+u6k8YIQ0czkYEvR/WRAXfpirPLc1KXmkSJMDRaJS",
    "qDGbLLsCgYEAzQOjqMaunJI7BD6yS5/P3yGFSmXq2/6L52+bqsl6UtklRfqlXwZL2eg36fen0q/tCuFHDva2KKnZ",
    "xhfho3k8AoQrMLmyIk9N/rhdhSJ5mjj1IztsTrNbPNwnoPAUVFSMYZ6e38NCzPXYJmBHcEqNobUeFjGieSrGK6B7",
    "N/UW49ECgYAjLFZMq/UkZsvIqvG6EJeH2l5ZwE2uaELuesn19gyeF8PDLOVhhJHy6jn7MyLvyPifm4IqhHEPBSb0",
    "9/n/ZY+eTW/5XJoC9WJDiqxkPd9STNQ0F5OYr5CXR/sq3YFD2h998q7zRbz6j6mTQcer5Z0mTrmNQAwTbi0QMldc",
    "5oEhrwKBgCQFLN19PMLKpUoRxr37L1y+QDAT+hKlQSVFnZjXlviRgXyn/KhzBhqau4rl+4omTyLVNwIgbkcgHNBe",
    "iDQvbduWTS6L1eCr5M+0E959EGIRJc/v1kKpZnemwqlrjJiDSNueV6ZY2lybbqrK2OUyDywhbwMOwgCH4WeMuGCO",
    "unzF",
);

/// Signs `claims` as `alg` with `key` (RSA) under the header `kid`.
pub(crate) fn rsa_token(
    key: &signature::RsaKeyPair,
    alg: Algorithm,
    kid: &str,
    claims: &Value,
) -> String {
    rsa_token_with(key, &json!({"alg": alg.name(), "kid": kid}), claims)
}

/// Signs `claims` with `key` (RSA) under `header`, as its `alg` says.
fn rsa_token_with(key: &signature::RsaKeyPair, header: &Value, claims: &Value) -> String {
    let alg = header["alg"]
        .as_str()
        .and_then(Algorithm::from_name)
        .unwrap();
    let padding: &'static dyn signature::RsaEncoding = match alg {
        Algorithm::RS256 => &signature::RSA_PKCS1_SHA256,
        Algorithm::RS384 => &signature::RSA_PKCS1_SHA384,
        Algorithm::RS512 => &signature::RSA_PKCS1_SHA512,
        Algorithm::PS256 => &signature::RSA_PSS_SHA256,
        Algorithm::PS384 => &signature::RSA_PSS_SHA384,
        _ => &signature::RSA_PSS_SHA512,
    };
    let signed = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let mut sig = vec![0; key.public().modulus_len()];
    key.sign(padding, &SystemRandom::new(), signed.as_bytes(), &mut sig)
        .unwrap();
    format!("{signed}.{}", b64(&sig))
}

#[test]
fn every_algorithm_verifies_with_its_key_and_no_other() {
    let rsa = rsa_key();
    let public: signature::RsaPublicKeyComponents<Vec<u8>> = rsa.public().into();
    let rsa_jwk = json!({"kty": "RSA", "kid": "rsa", "n": b64(&public.n), "e": b64(&public.e)});
    let rng = SystemRandom::new();
    let p384 = EcdsaKeyPair::from_pkcs8(
        &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
        EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P384_SHA384_FIXED_SIGNING, &rng)
            .unwrap()
            .as_ref(),
        &rng,
    )
    .unwrap();
    let point = p384.public_key().as_ref();
    let p384_jwk = json!({"kty": "EC", "crv": "P-384", "kid": "p384",
        "x": b64(&point[1..49]), "y": b64(&point[49..97])});
    let keys = KeySet::from_jwks(&json!({"keys": [rsa_jwk, p384_jwk]}), 10).0;
    let rules = super::jwt::tests::rules();
    let check =
        |token: &str| parse(token, &rules).and_then(|parsed| parsed.check(&keys, &rules, now()));
    for alg in [
        Algorithm::RS256,
        Algorithm::RS384,
        Algorithm::RS512,
        Algorithm::PS256,
        Algorithm::PS384,
        Algorithm::PS512,
    ] {
        let token = rsa_token(&rsa, alg, "rsa", &super::jwt::tests::good_claims());
        assert_eq!(
            check(&token).map(|claims| claims.user),
            Ok(Some("alice".into())),
            "{alg}"
        );
        // The same signature under another algorithm's name, or a
        // changed payload, does not hold.
        let other = if alg == Algorithm::RS256 {
            "PS256"
        } else {
            "RS256"
        };
        let renamed = token.replacen(
            &b64(json!({"alg": alg.name(), "kid": "rsa"})
                .to_string()
                .as_bytes()),
            &b64(json!({"alg": other, "kid": "rsa"}).to_string().as_bytes()),
            1,
        );
        assert_eq!(check(&renamed), Err(Reason::Signature), "{alg} as {other}");
        // Under the EC key's id, an RSA algorithm is refused outright.
        let wrong_key = rsa_token(&rsa, alg, "p384", &super::jwt::tests::good_claims());
        assert_eq!(
            check(&wrong_key),
            Err(Reason::Algorithm),
            "{alg} with an EC key"
        );
    }
    let signed = format!(
        "{}.{}",
        b64(json!({"alg": "ES384", "kid": "p384"})
            .to_string()
            .as_bytes()),
        b64(super::jwt::tests::good_claims().to_string().as_bytes())
    );
    let sig = p384.sign(&rng, signed.as_bytes()).unwrap();
    let es384 = format!("{signed}.{}", b64(sig.as_ref()));
    assert_eq!(
        check(&es384).map(|claims| claims.user),
        Ok(Some("alice".into()))
    );
    let tampered = format!("{signed}x.{}", b64(sig.as_ref()));
    assert!(check(&tampered).is_err());
    // ES384 under the RSA key's id: the key's kind refuses it.
    let under_rsa = format!(
        "{}.{}.{}",
        b64(json!({"alg": "ES384", "kid": "rsa"}).to_string().as_bytes()),
        b64(super::jwt::tests::good_claims().to_string().as_bytes()),
        b64(sig.as_ref())
    );
    assert_eq!(check(&under_rsa), Err(Reason::Algorithm));
}

/// The RSA key of the test issuers.
pub(crate) fn rsa_key() -> signature::RsaKeyPair {
    let der = base64::engine::general_purpose::STANDARD
        .decode(RSA_KEY)
        .unwrap();
    signature::RsaKeyPair::from_der(&der).unwrap()
}

/// The RSA key as a provider's key set lists it: `kty`, `use`, `kid`, `n`,
/// `e`, and what the provider adds (Entra: `x5t` and `x5c`, no `alg`).
fn key_set(kid: &str, extra: Value) -> KeySet {
    let public: signature::RsaPublicKeyComponents<Vec<u8>> = rsa_key().public().into();
    let mut jwk = json!({"kty": "RSA", "use": "sig", "kid": kid,
                         "n": b64(&public.n), "e": b64(&public.e)});
    for (name, value) in extra.as_object().unwrap() {
        jwk[name] = value.clone();
    }
    let (keys, skipped) = KeySet::from_jwks(&json!({"keys": [jwk]}), 10);
    assert_eq!(
        (keys.len(), skipped),
        (1, 0),
        "the provider's key is usable"
    );
    keys
}

/// The rules a recipe's flags make: issuer, resource, and what else.
fn recipe(issuer: &str, configure: impl FnOnce(&mut Rules)) -> Rules {
    let mut rules = Rules {
        issuer: issuer.to_owned(),
        audiences: vec![String::from("https://tools.example/mcp")],
        clients_without_audience: Vec::new(),
        algorithms: Algorithm::ALL.to_vec(),
        leeway: std::time::Duration::from_secs(30),
        user_claim: String::from("sub"),
        scope_claims: vec![String::from("scope"), String::from("scp")],
    };
    configure(&mut rules);
    rules
}

/// A provider's token: its header and claims, signed with the test key.
struct Shape {
    header: Value,
    claims: Value,
}

impl Shape {
    fn token(&self) -> String {
        rsa_token_with(&rsa_key(), &self.header, &self.claims)
    }

    /// The token with one claim changed (or removed, with `Value::Null`).
    fn with(&self, claim: &str, value: Value) -> Self {
        let mut claims = self.claims.clone();
        match value {
            Value::Null => drop(claims.as_object_mut().unwrap().remove(claim)),
            value => claims[claim] = value,
        }
        Self {
            header: self.header.clone(),
            claims,
        }
    }

    fn check(&self, keys: &KeySet, rules: &Rules) -> Result<Claims, Reason> {
        let token = self.token();
        parse(&token, rules)?.check(keys, rules, now())
    }

    /// The token with its claims changed after signing: a forgery.
    fn forged(&self, keys: &KeySet, rules: &Rules) -> Result<Claims, Reason> {
        let token = self.token();
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        let mut claims = self.claims.clone();
        claims["sub"] = json!("mallory");
        parts[1] = b64(claims.to_string().as_bytes());
        parse(&parts.join("."), rules)?.check(keys, rules, now())
    }
}

/// What every provider's token shares: forged, it is refused; for
/// another audience, it is refused.
fn refuses_forgeries_and_other_audiences(shape: &Shape, keys: &KeySet, rules: &Rules) {
    assert_eq!(shape.forged(keys, rules), Err(Reason::Signature));
    let other = shape.with("aud", json!("https://other.example/mcp"));
    assert_eq!(other.check(keys, rules), Err(Reason::Audience));
}

fn times() -> (u64, u64, u64) {
    let now = now();
    (now - 5, now - 5, now + 3600)
}

#[test]
fn entra_id_delegated_v2_tokens_give_the_user_and_scp() {
    // login.microsoftonline.com/{tenant}/v2.0, `aud` the API's client id,
    // delegated scopes in `scp`, the header `typ` JWT with `x5t`; keys
    // listed with `x5t` and `x5c` and no `alg`.
    let tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47";
    let api = "6e74172b-be56-4843-9ff4-e66a39bb12e3";
    let (iat, nbf, exp) = times();
    let shape = Shape {
        header: json!({"typ": "JWT", "alg": "RS256", "x5t": "i6lGk3FZzxRcUb2C3nEQ7syHJlY",
                       "kid": "i6lGk3FZzxRcUb2C3nEQ7syHJlY"}),
        claims: json!({
            "aud": api, "iss": format!("https://login.microsoftonline.com/{tenant}/v2.0"),
            "iat": iat, "nbf": nbf, "exp": exp, "aio": "AXQAi/8TAAAA", "azp": "0b9e1e4c",
            "azpacr": "0", "name": "Alice Example", "oid": "690222be-ff1a-4d56-abd1-7e4f7d38e474",
            "preferred_username": "alice@contoso.example", "rh": "0.AAAA", "scp": "tickets.read tickets.write",
            "sub": "HKZpfaHyWadeOouYlitjrI-KffTm222X5rrV3xDqfKQ", "tid": tenant,
            "uti": "fqiBqXLPj0eQa82S-IYFAA", "ver": "2.0"}),
    };
    let keys = key_set(
        "i6lGk3FZzxRcUb2C3nEQ7syHJlY",
        json!({"x5t": "i6lGk3FZzxRcUb2C3nEQ7syHJlY", "x5c": ["MIIDBTCCAe2gAwIBAgIQ"],
               "issuer": format!("https://login.microsoftonline.com/{tenant}/v2.0")}),
    );
    // --oauth-issuer https://login.microsoftonline.com/TENANT/v2.0
    // --oauth-audience API_CLIENT_ID --oauth-user-claim preferred_username
    let rules = recipe(
        &format!("https://login.microsoftonline.com/{tenant}/v2.0"),
        |rules| {
            rules.audiences.push(api.to_owned());
            rules.user_claim = String::from("preferred_username");
        },
    );
    let claims = shape.check(&keys, &rules).unwrap();
    assert_eq!(claims.user.as_deref(), Some("alice@contoso.example"));
    assert_eq!(claims.scopes, ["tickets.read", "tickets.write"]);
    refuses_forgeries_and_other_audiences(&shape, &keys, &rules);
    // A v1 token of the same tenant names another issuer.
    let v1 = shape.with("iss", json!(format!("https://sts.windows.net/{tenant}/")));
    assert_eq!(v1.check(&keys, &rules), Err(Reason::Issuer));
}

#[test]
fn entra_id_application_tokens_give_their_roles_as_scopes() {
    // Client credentials: no `scp`; application permissions in `roles`,
    // `idtyp` app; `sub` and `oid` the service principal's.
    let tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47";
    let (iat, nbf, exp) = times();
    let shape = Shape {
        header: json!({"typ": "JWT", "alg": "RS256", "kid": "k1"}),
        claims: json!({
            "aud": "api://tickets-mcp", "iss": format!("https://sts.windows.net/{tenant}/"),
            "iat": iat, "nbf": nbf, "exp": exp, "appid": "0b9e1e4c", "appidacr": "1",
            "idp": format!("https://sts.windows.net/{tenant}/"), "idtyp": "app",
            "oid": "5d3e4c2b", "roles": ["Tickets.Write"], "sub": "5d3e4c2b", "tid": tenant,
            "ver": "1.0"}),
    };
    let keys = key_set("k1", json!({"x5c": ["MIIDBTCCAe2gAwIBAgIQ"]}));
    // v1 tokens: the issuer with its trailing slash, the application ID
    // URI as the audience, `roles` read after `scp`.
    let rules = recipe(&format!("https://sts.windows.net/{tenant}/"), |rules| {
        rules.audiences.push(String::from("api://tickets-mcp"));
        rules.scope_claims = vec![String::from("scp"), String::from("roles")];
    });
    let claims = shape.check(&keys, &rules).unwrap();
    assert_eq!(claims.user.as_deref(), Some("5d3e4c2b"));
    assert_eq!(claims.scopes, ["Tickets.Write"]);
    // With the default claims an application token has no scopes.
    let defaults = recipe(&format!("https://sts.windows.net/{tenant}/"), |rules| {
        rules.audiences.push(String::from("api://tickets-mcp"))
    });
    assert!(shape.check(&keys, &defaults).unwrap().scopes.is_empty());
    refuses_forgeries_and_other_audiences(&shape, &keys, &rules);
    // The issuer written without its slash is another issuer.
    let unslashed = recipe(&format!("https://sts.windows.net/{tenant}"), |rules| {
        rules.audiences.push(String::from("api://tickets-mcp"))
    });
    assert_eq!(shape.check(&keys, &unslashed), Err(Reason::Issuer));
}

#[test]
fn auth0_tokens_give_their_permissions_with_the_audience_among_two() {
    // The issuer with a trailing slash; `aud` the API identifier and the
    // userinfo URL; RBAC permissions beside `scope`.
    let (iat, _, exp) = times();
    let shape = Shape {
        header: json!({"alg": "RS256", "typ": "at+jwt", "kid": "NjVBRjY5MDlCMUIwNzU4RTA2QzZFMDQ4QzQ2MDAyQjVDNjk1RTM2Qg"}),
        claims: json!({
            "iss": "https://tools-team.us.auth0.com/", "sub": "auth0|6466f35f2c2e6a4a7b0a1c3d",
            "aud": ["https://tools.example/mcp", "https://tools-team.us.auth0.com/userinfo"],
            "iat": iat, "exp": exp, "azp": "Gx7bq1sYx9", "scope": "openid profile tickets:read",
            "permissions": ["tickets:read", "tickets:write"]}),
    };
    let keys = key_set(
        "NjVBRjY5MDlCMUIwNzU4RTA2QzZFMDQ4QzQ2MDAyQjVDNjk1RTM2Qg",
        json!({"alg": "RS256", "x5t": "NjVBRjY5MDlC", "x5c": ["MIIDDTCCAfWgAwIBAgIJ"]}),
    );
    let rules = recipe("https://tools-team.us.auth0.com/", |rules| {
        rules.scope_claims = vec![String::from("permissions")];
    });
    let claims = shape.check(&keys, &rules).unwrap();
    assert_eq!(
        claims.user.as_deref(),
        Some("auth0|6466f35f2c2e6a4a7b0a1c3d")
    );
    assert_eq!(claims.scopes, ["tickets:read", "tickets:write"]);
    refuses_forgeries_and_other_audiences(&shape, &keys, &rules);
}

#[test]
fn okta_tokens_give_their_scp_list() {
    // A custom authorization server: `scp` a list, `cid` and `uid`.
    let (iat, _, exp) = times();
    let shape = Shape {
        header: json!({"kid": "okta-1", "alg": "RS256", "typ": "application/okta-internal-at+jwt"}),
        claims: json!({
            "ver": 1, "jti": "AT.0mP4JKAZX1iACIT4vbEDF7LpvDVjxypPMf0D7uX39RE",
            "iss": "https://tools-team.okta.com/oauth2/default", "aud": "https://tools.example/mcp",
            "iat": iat, "exp": exp, "cid": "0oa1b2c3d4", "uid": "00u1a2b3c4",
            "scp": ["tickets:read"], "auth_time": iat, "sub": "alice@tools.example"}),
    };
    let keys = key_set("okta-1", json!({"alg": "RS256"}));
    let rules = recipe("https://tools-team.okta.com/oauth2/default", |_| {});
    let claims = shape.check(&keys, &rules).unwrap();
    assert_eq!(claims.user.as_deref(), Some("alice@tools.example"));
    assert_eq!(claims.scopes, ["tickets:read"]);
    refuses_forgeries_and_other_audiences(&shape, &keys, &rules);
}

#[test]
fn cognito_access_tokens_have_no_audience_and_are_taken_only_from_a_listed_client() {
    // No `aud`: `client_id`, `token_use` access, a `scope` string of
    // resource-server scopes, `cognito:groups`; the header has no `typ`.
    let pool = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123";
    let (iat, _, exp) = times();
    let shape = Shape {
        header: json!({"kid": "abcdefghijklmnopqrsexample=", "alg": "RS256"}),
        claims: json!({
            "sub": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "cognito:groups": ["admin"],
            "iss": pool, "version": 2, "client_id": "1example23456789",
            "origin_jti": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "token_use": "access",
            "scope": "tickets/read tickets/write", "auth_time": iat, "exp": exp, "iat": iat,
            "jti": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "username": "alice"}),
    };
    let keys = key_set("abcdefghijklmnopqrsexample=", json!({"alg": "RS256"}));
    // Refused unless the client is named: a token with no audience could
    // be any application's of the pool.
    let defaults = recipe(pool, |_| {});
    assert_eq!(shape.check(&keys, &defaults), Err(Reason::Audience));
    // --oauth-client-without-audience 1example23456789 --oauth-user-claim username
    let rules = recipe(pool, |rules| {
        rules.clients_without_audience = vec![String::from("1example23456789")];
        rules.user_claim = String::from("username");
    });
    let claims = shape.check(&keys, &rules).unwrap();
    assert_eq!(claims.user.as_deref(), Some("alice"));
    assert_eq!(claims.scopes, ["tickets/read", "tickets/write"]);
    assert_eq!(shape.forged(&keys, &rules), Err(Reason::Signature));
    // Another client of the pool, and the listed client's ID token.
    let other = shape.with("client_id", json!("9other87654321"));
    assert_eq!(other.check(&keys, &rules), Err(Reason::Audience));
    let id_token = shape.with("token_use", json!("id"));
    assert_eq!(id_token.check(&keys, &rules), Err(Reason::Audience));
    // A token that does name an audience is held to it.
    let named = shape.with("aud", json!("1example23456789"));
    assert_eq!(named.check(&keys, &rules), Err(Reason::Audience));
}

#[test]
fn keycloak_tokens_need_the_audience_mapper_and_give_realm_roles() {
    // `typ` JWT in the header; `aud` is `account` unless an audience
    // mapper adds ours; roles in `realm_access.roles`.
    let realm = "https://login.tools.example/realms/tools";
    let (iat, _, exp) = times();
    let shape = Shape {
        header: json!({"alg": "RS256", "typ": "JWT", "kid": "wXh1Qd4X2lGm"}),
        claims: json!({
            "exp": exp, "iat": iat, "auth_time": iat, "jti": "onrtac:6f1a",
            "iss": realm, "aud": ["https://tools.example/mcp", "account"],
            "sub": "f3b3a1c0-0000-4000-8000-000000000001", "typ": "Bearer", "azp": "claude",
            "sid": "1c4e", "acr": "1", "allowed-origins": ["*"],
            "realm_access": {"roles": ["tickets:read", "offline_access", "default-roles-tools"]},
            "resource_access": {"account": {"roles": ["manage-account"]}},
            "scope": "openid profile email", "email_verified": true,
            "preferred_username": "alice"}),
    };
    let keys = key_set(
        "wXh1Qd4X2lGm",
        json!({"alg": "RS256", "x5c": ["MIICnTCCAYUCBgGN"],
                                               "x5t": "c2V0", "x5t#S256": "c2V0"}),
    );
    let rules = recipe(realm, |rules| {
        rules.user_claim = String::from("preferred_username");
        rules.scope_claims = vec![String::from("realm_access.roles")];
    });
    let claims = shape.check(&keys, &rules).unwrap();
    assert_eq!(claims.user.as_deref(), Some("alice"));
    assert_eq!(
        claims.scopes,
        ["tickets:read", "offline_access", "default-roles-tools"]
    );
    refuses_forgeries_and_other_audiences(&shape, &keys, &rules);
    // Without the mapper.
    let unmapped = shape.with("aud", json!("account"));
    assert_eq!(unmapped.check(&keys, &rules), Err(Reason::Audience));
}
