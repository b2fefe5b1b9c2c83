//! The authorizer's unit tests: challenges, scopes, the token cache,
//! introspection answers, the metadata and the options.

use serde_json::Value;

use super::keys::KeyStore;
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
    assert!(
        value.starts_with(
            "Bearer error=\"invalid_token\", error_description=\"the access token has expired\""
        ),
        "{value}"
    );
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

/// A remembered JWT is used until its `exp` plus the leeway, and checked
/// again (and refused as expired) from then on.
#[tokio::test]
async fn a_remembered_token_is_not_used_past_its_expiry() {
    let signer = Signer::new("k1");
    let mut auth = authorizer(&signer);
    auth.rules.leeway = Duration::ZERO;
    let mut claims = good_claims();
    let expires = jwt::now() + 2;
    claims["exp"] = json!(expires);
    let token = signer.sign(&claims);
    let first = Instant::now();
    let epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    assert!(auth.authenticate(&bearer(&token)).await.is_ok());
    let until = auth.remembered.read().unwrap().tokens[token.as_bytes()].until;
    // Its `exp`, as an instant (the two clocks read a moment apart).
    let exp = first + (Duration::from_secs(expires) - epoch);
    assert!(
        until <= exp + Duration::from_millis(50),
        "kept {:?} past its exp",
        until - exp
    );
    // Until then it is taken from memory; from then on, checked again.
    let deadline = first + Duration::from_secs(10);
    loop {
        match auth.authenticate(&bearer(&token)).await {
            Ok(_) => assert!(Instant::now() < deadline, "still taken after its exp"),
            Err(refusal) => {
                assert_eq!(refusal.reason, Reason::Expired);
                assert!(jwt::now() >= expires, "refused before its exp");
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn an_introspection_answer_is_kept_a_minute_at_most_and_never_past_its_expiry() {
    let now = Instant::now();
    let epoch = Duration::from_secs(jwt::now());
    let claims = |expires| {
        Ok(jwt::Claims {
            user: None,
            scopes: Vec::new(),
            expires,
        })
    };
    let kept = |answer| tokens::kept_until(&answer, now, epoch) - now;
    let at = |delta: i64| epoch.as_secs().saturating_add_signed(delta);
    assert_eq!(kept(claims(at(3600))), INTROSPECTION_TTL);
    assert_eq!(kept(claims(at(5))), Duration::from_secs(5));
    assert_eq!(kept(claims(at(-5))), Duration::ZERO);
    assert_eq!(kept(Err(Reason::Inactive)), REFUSAL_TTL);
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

#[test]
fn the_static_token_is_read_as_oauth_reads_a_token_and_refusals_are_counted() {
    let headers = |values: &[&str]| {
        let mut headers = http::HeaderMap::new();
        for value in values {
            headers.append(http::header::AUTHORIZATION, value.parse().unwrap());
        }
        headers
    };
    let reason = |values: &[&str]| {
        check_static(&headers(values), "s3cret")
            .err()
            .map(|refusal| refusal.reason)
    };
    assert_eq!(reason(&["Bearer s3cret"]), None);
    assert_eq!(reason(&["bearer s3cret"]), None);
    assert_eq!(reason(&["BEARER  s3cret "]), None);
    assert_eq!(reason(&["Bearer s3cret2"]), Some(Reason::NotAccepted));
    assert_eq!(reason(&["Bearer s3cre"]), Some(Reason::NotAccepted));
    assert_eq!(reason(&["Bearer "]), Some(Reason::BadRequest));
    assert_eq!(
        reason(&["Bearer s3cret", "Bearer s3cret"]),
        Some(Reason::BadRequest)
    );
    assert_eq!(reason(&["Basic s3cret"]), Some(Reason::Missing));
    assert_eq!(reason(&["s3cret"]), Some(Reason::Missing));
    assert_eq!(reason(&[]), Some(Reason::Missing));
    let huge = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1));
    assert_eq!(reason(&[huge.as_str()]), Some(Reason::TooLarge));

    // Answered as OAuth answers, without the resource metadata a port
    // without OAuth has none of; counted by reason.
    let metrics = crate::metrics::Metrics::new();
    let wrong = check_static(&headers(&["Bearer nope"]), "s3cret").unwrap_err();
    let response = wrong.answer(None, &[], &metrics);
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()[http::header::WWW_AUTHENTICATE],
        "Bearer error=\"invalid_token\", error_description=\"the bearer token is not the one this server takes\""
    );
    let missing = check_static(&headers(&[]), "s3cret").unwrap_err();
    let response = missing.answer(None, &[], &metrics);
    assert_eq!(response.headers()[http::header::WWW_AUTHENTICATE], "Bearer");
    let rendered = metrics.render();
    for reason in ["not_accepted", "missing_token"] {
        assert!(
            rendered.contains(&format!(
                "tg_tool_service_mcp_auth_refusals_total{{reason=\"{reason}\"}} 1"
            )),
            "{rendered}"
        );
    }
    // No issuer, so no keys to wait for.
    assert!(
        !rendered.contains("tg_tool_service_mcp_auth_keys_loaded"),
        "{rendered}"
    );
}
