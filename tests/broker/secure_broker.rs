//! Token authentication and TLS against a real broker configured for them.
//! The test makes its own keys, tokens and certificates (with the `openssl`
//! command), starts a private standalone broker that requires a token on both
//! its plain port and its TLS port, and checks that `serve` and the client
//! work with the right settings and fail at start-up, clearly, with wrong
//! ones, without ever logging the token.

use crate::support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use support::{PrivateBroker, Replica};
use tool_service::pulsar::broker::BrokerOptions;

fn openssl(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Vec<u8> {
    let mut child = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run `openssl` (install it: apt-get install openssl)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.unwrap_or_default())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "openssl {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// `openssl` with whitespace-separated arguments.
fn run(dir: &Path, args: &str) {
    let args: Vec<&str> = args.split_whitespace().collect();
    openssl(dir, &args, None);
}

/// Base64url without padding, as JWTs use it.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, byte)| n | u32::from(*byte) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}

/// An HS256 JWT for `subject`, signed with `key` (what Pulsar's
/// `tokens create --secret-key` makes).
fn token(dir: &Path, key: &[u8], subject: &str) -> String {
    let signing_input = format!(
        "{}.{}",
        base64url(br#"{"alg":"HS256"}"#),
        base64url(format!(r#"{{"sub":"{subject}"}}"#).as_bytes())
    );
    let hex_key: String = key.iter().map(|byte| format!("{byte:02x}")).collect();
    let signature = openssl(
        dir,
        &[
            "dgst",
            "-sha256",
            "-mac",
            "HMAC",
            "-macopt",
            &format!("hexkey:{hex_key}"),
            "-binary",
        ],
        Some(signing_input.as_bytes()),
    );
    format!("{signing_input}.{}", base64url(&signature))
}

struct Material {
    dir: PathBuf,
    admin_token: String,
    service_token: String,
    /// Well formed, but signed with another key.
    forged_token: String,
    ca: PathBuf,
    /// A CA that did not sign the broker's certificate.
    other_ca: PathBuf,
}

fn make_material() -> Material {
    let dir = std::env::temp_dir().join(format!(
        "tool-service-secure-broker-test-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let secret = openssl(&dir, &["rand", "32"], None);
    std::fs::write(dir.join("secret.key"), &secret).unwrap();
    let other_secret = openssl(&dir, &["rand", "32"], None);
    for ca in ["ca", "other-ca"] {
        run(
            &dir,
            &format!(
                "req -x509 -newkey rsa:2048 -nodes -days 2 -keyout {ca}.key -out {ca}.pem \
             -subj /CN=tool-service-test-{ca} -addext basicConstraints=critical,CA:TRUE \
             -addext keyUsage=critical,keyCertSign,cRLSign"
            ),
        );
    }
    run(
        &dir,
        "req -newkey rsa:2048 -nodes -keyout broker.key -out broker.csr -subj /CN=localhost",
    );
    std::fs::write(
        dir.join("broker.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(
        &dir,
        "x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
               -extfile broker.ext -out broker.pem",
    );
    Material {
        admin_token: token(&dir, &secret, "admin"),
        service_token: token(&dir, &secret, "tool-service"),
        forged_token: token(&dir, &other_secret, "tool-service"),
        ca: dir.join("ca.pem"),
        other_ca: dir.join("other-ca.pem"),
        dir,
    }
}

/// A maximum message size of this broker's own, below Pulsar's default.
const MAX_MESSAGE_SIZE: usize = 3 * 1024 * 1024;

fn broker_config(material: &Material, tls_port: u16) -> PathBuf {
    let dir = &material.dir;
    let config = format!(
        "authenticationEnabled=true\n\
         authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderToken\n\
         tokenSecretKey=file://{secret}\n\
         superUserRoles=admin\n\
         brokerClientAuthenticationPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken\n\
         brokerClientAuthenticationParameters=token:{admin}\n\
         brokerServicePortTls={tls_port}\n\
         tlsCertificateFilePath={cert}\n\
         tlsKeyFilePath={key}\n\
         tlsTrustCertsFilePath={ca}\n\
         maxMessageSize={MAX_MESSAGE_SIZE}\n",
        secret = dir.join("secret.key").display(),
        admin = material.admin_token,
        cert = dir.join("broker.pem").display(),
        key = dir.join("broker.key").display(),
        ca = material.ca.display(),
    );
    let path = dir.join("broker.conf");
    std::fs::write(&path, config).unwrap();
    path
}

/// Runs `serve` with `args` and `env`, expects it to stop at start-up with
/// exit code 1, and returns its log.
fn refused(url: &str, args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let mut replica = Replica::spawn_with_env(url, "echo", args, env);
    let (tx, rx) = std::sync::mpsc::channel();
    let waiting = std::thread::spawn(move || {
        let status = replica.child.wait().unwrap();
        let lines: Vec<String> = replica.log.iter().collect();
        let _ = tx.send(());
        (status, lines)
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(30)).is_ok(),
        "serve {args:?} kept running instead of stopping at start-up"
    );
    let (status, lines) = waiting.join().unwrap();
    assert_eq!(status.code(), Some(1), "{lines:#?}");
    lines
}

fn assert_said(lines: &[String], expected: &str) {
    assert!(
        lines.iter().any(|line| line.contains(expected)),
        "expected {expected:?} in\n{}",
        lines.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_authentication_and_tls_on_a_broker_that_requires_them() {
    let _suite = support::suite(module_path!());
    let material = make_material();
    let tls_port = support::free_port();
    let config = broker_config(&material, tls_port);
    let broker = PrivateBroker::start(&[
        ("PULSAR_EXTRA_CONF", config.to_str().unwrap()),
        ("PULSAR_ADMIN_TOKEN", &material.admin_token),
    ]);
    let plain_url = broker.url();
    let tls_url = format!("pulsar+ssl://127.0.0.1:{tls_port}");
    let token = material.service_token.as_str();
    let ca = material.ca.to_str().unwrap();

    // TLS and a token from PULSAR_API_KEY: served and answered.
    let tls_replica = Replica::spawn_with_env(
        &tls_url,
        "echo",
        &[
            "--only",
            "echo-service",
            "--pulsar-tls-ca-file",
            ca,
            "--log-level",
            "debug",
        ],
        &[("PULSAR_API_KEY", token)],
    );
    let started = tls_replica.wait_for_log(" ready", Duration::from_secs(60));
    // The broker's own limit, learnt in the handshake (over TLS, with the token).
    assert_said(&started, &format!("max_message_size={MAX_MESSAGE_SIZE}"));
    let tls = BrokerOptions::new(&tls_url)
        .with_api_key(token)
        .with_tls_ca_file(&material.ca);
    let echo = support::client_on(&tls, "non-persistent", "echo", Duration::from_secs(20)).await;
    let answer = echo
        .call(&json!({}), &json!({"text": "over TLS"}))
        .await
        .unwrap();
    assert_eq!(answer, "over TLS");

    // The plain port with the token from --pulsar-api-key.
    let plain_replica = Replica::start_at(
        &plain_url,
        "echo",
        &["--only", "whoami-service", "--pulsar-api-key", token],
    );
    let plain = BrokerOptions::new(&plain_url).with_api_key(token);
    let whoami =
        support::client_on(&plain, "non-persistent", "whoami", Duration::from_secs(20)).await;
    let answer = whoami.call(&json!({}), &json!({})).await.unwrap();
    assert!(answer.contains("whoami-service"), "{answer}");

    // The token from a file (trailing newline and all), as the README
    // recommends: `whoami` replies from the replica that read it.
    let token_file = material.dir.join("service.token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let file_replica = Replica::start_at(
        &plain_url,
        "echo",
        &[
            "--only",
            "whoami-service",
            "--pulsar-api-key-file",
            token_file.to_str().unwrap(),
        ],
    );
    let empty = json!({});
    let pids: std::collections::HashSet<u64> =
        futures_util::future::join_all((0..20).map(|_| whoami.call(&empty, &empty)))
            .await
            .into_iter()
            .map(|answer| {
                serde_json::from_str::<serde_json::Value>(&answer.unwrap()).unwrap()["pid"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
    assert!(
        pids.contains(&u64::from(file_replica.child.id())),
        "the replica with --pulsar-api-key-file did not serve: {pids:?}"
    );

    // Wrong settings stop `serve` at start-up with a sentence saying what to fix.
    let lines = refused(&plain_url, &["--only", "whoami-service"], &[]);
    assert_said(
        &lines,
        "the broker requires authentication, and no token was given (the broker said: ",
    );
    assert_said(
        &lines,
        "; pass a token with --pulsar-api-key (or PULSAR_API_KEY)",
    );
    let forged = material.forged_token.as_str();
    let lines = refused(
        &plain_url,
        &["--only", "whoami-service"],
        &[("PULSAR_API_KEY", forged)],
    );
    assert_said(
        &lines,
        "the broker rejected the token: it is wrong, expired, or signed with another key",
    );
    assert_said(
        &lines,
        "; check the token given with --pulsar-api-key, --pulsar-api-key-file or PULSAR_API_KEY",
    );
    assert!(!lines.join("\n").contains(forged), "the token was logged");
    let lines = refused(
        &tls_url,
        &["--only", "whoami-service", "--pulsar-api-key", token],
        &[],
    );
    assert_said(
        &lines,
        "the broker's TLS certificate is not trusted by this system's roots (the broker said: ",
    );
    assert_said(
        &lines,
        "; pass the CA that signed it with --pulsar-tls-ca-file (or PULSAR_TLS_CA_FILE)",
    );
    let other_ca = material.other_ca.to_str().unwrap();
    let lines = refused(
        &tls_url,
        &["--only", "whoami-service", "--pulsar-tls-ca-file", other_ca],
        &[("PULSAR_API_KEY", token)],
    );
    assert_said(
        &lines,
        "the broker's TLS certificate is not trusted by the CA in",
    );

    // `--help` shows that PULSAR_API_KEY is read, never its value.
    let help = Command::new(support::example("echo"))
        .args(["serve", "--help"])
        .env("PULSAR_API_KEY", token)
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("PULSAR_API_KEY"), "{help}");
    assert!(!help.contains(token), "{help}");

    // Nothing the serving replicas logged, at debug level, holds the token.
    for replica in [tls_replica, plain_replica, file_replica] {
        let (status, lines) = replica.finish();
        assert!(status.success(), "{lines:#?}");
        let all = lines.join("\n");
        assert!(!all.contains(token), "the token was logged:\n{all}");
        assert!(
            !all.contains(&token[token.len() - 20..]),
            "part of the token was logged"
        );
    }
}
