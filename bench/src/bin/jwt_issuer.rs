//! A minimal OAuth authorization server for the authorization benchmark:
//! one ES256 key, generated at start, published as a JWKS through RFC 8414
//! metadata, and one access token for the resource given, printed as one
//! JSON line (`{"issuer": …, "token": …}`). Serves until killed.
//!
//! ```text
//! jwt_issuer --resource http://127.0.0.1:8900/mcp
//! ```
//!
//! Plain HTTP on 127.0.0.1 (which `--oauth-issuer` accepts on this machine
//! only):
//!   `/.well-known/oauth-authorization-server` → `{"issuer", "jwks_uri"}`
//!   `/jwks` → `{"keys": [the key as a JWK]}`
//! The token: header `{alg: ES256, kid, typ: at+jwt}`, claims `iss`, `aud`
//! (the resource), `sub: "bench"`, `scope: ""`, `iat` now and `exp` an hour
//! on (`--lifetime SECONDS` for another).

use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

type Error = Box<dyn std::error::Error + Send + Sync>;

const KID: &str = "bench-es256";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

struct Args {
    resource: String,
    listen: String,
    lifetime: u64,
}

fn parse() -> Result<Args, Error> {
    let mut args = Args {
        resource: String::new(),
        listen: String::from("127.0.0.1:0"),
        lifetime: 3600,
    };
    let mut all = std::env::args().skip(1);
    while let Some(arg) = all.next() {
        let mut value = || all.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--resource" => args.resource = value()?,
            "--listen" => args.listen = value()?,
            "--lifetime" => args.lifetime = value()?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if args.resource.is_empty() {
        return Err("usage: jwt_issuer --resource URL [--listen 127.0.0.1:PORT]".into());
    }
    Ok(args)
}

/// A compact JWS of `claims`, signed with `pair`.
fn sign(pair: &EcdsaKeyPair, claims: &Value) -> Result<String, Error> {
    let header = json!({"alg": "ES256", "kid": KID, "typ": "at+jwt"});
    let signed = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature = pair
        .sign(&SystemRandom::new(), signed.as_bytes())
        .map_err(|_| "cannot sign")?;
    Ok(format!("{signed}.{}", b64(signature.as_ref())))
}

fn answer(status: u16, body: Bytes) -> hyper::Response<Full<Bytes>> {
    let mut response = hyper::Response::new(Full::new(body));
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let args = parse()?;
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .map_err(|_| "cannot generate a key")?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .map_err(|_| "cannot read the generated key")?;
    let listener = tokio::net::TcpListener::bind(&args.listen).await?;
    let issuer = format!("http://{}", listener.local_addr()?);
    // The public key, uncompressed: 04 || x || y.
    let point = pair.public_key().as_ref();
    let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": KID, "alg": "ES256",
                                "use": "sig", "x": b64(&point[1..33]), "y": b64(&point[33..65])}]});
    let metadata = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")});
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let token = sign(
        &pair,
        &json!({"iss": issuer, "aud": args.resource, "sub": "bench", "scope": "",
                "iat": now, "exp": now + args.lifetime}),
    )?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", json!({"issuer": issuer, "token": token}))?;
    stdout.flush()?;
    drop(stdout);
    let jwks = Bytes::from(jwks.to_string());
    let metadata = Bytes::from(metadata.to_string());
    loop {
        let (stream, _) = listener.accept().await?;
        let (jwks, metadata) = (jwks.clone(), metadata.clone());
        let service =
            hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let response = match request.uri().path() {
                    "/.well-known/oauth-authorization-server" => answer(200, metadata.clone()),
                    "/jwks" => answer(200, jwks.clone()),
                    _ => answer(404, Bytes::from_static(b"{\"error\": \"not found\"}")),
                };
                async move { Ok::<_, std::convert::Infallible>(response) }
            });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
