//! TLS on the MCP port: the server's certificate and private key read from
//! PEM files, and read again when they change.
//!
//! Kubernetes rotates a mounted secret by pointing the volume's `..data`
//! symlink at a new directory: the paths stay the same and their contents
//! change. So [`TlsAcceptor::spawn_reload`] reads both files through their
//! paths on every tick and compares their bytes with the ones served; a
//! change that loads (the key matching the certificate) is served to the
//! connections that follow, one that does not is logged and the previous
//! certificate stays.
//!
//! rustls does the handshake (TLS 1.2 and 1.3, with the `ring` provider,
//! as the Pulsar client has it), offering ALPN `http/1.1` only: the server
//! speaks HTTP/1.1.

use std::fmt;
use std::hash::{DefaultHasher, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock, Weak};
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::{
    CertificateDer, PrivateKeyDer, PrivatePkcs1KeyDer, PrivatePkcs8KeyDer, PrivateSec1KeyDer,
};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;
use tokio_rustls::server::TlsStream;

/// How often [`TlsAcceptor::spawn_reload`] looks at the files by default.
pub(crate) const DEFAULT_RELOAD_EVERY: Duration = Duration::from_secs(10);

/// How long a client has by default to finish the TLS handshake once its
/// connection is accepted; then the connection is closed.
pub(crate) const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The one application protocol offered: the server speaks HTTP/1.1 only.
const ALPN_HTTP_1_1: &[u8] = b"http/1.1";

/// The rustls provider of the MCP port and of the calls to the
/// authorization server: the process's default when the application
/// installed one (`CryptoProvider::install_default`, aws-lc-rs for
/// post-quantum key exchange, say), else *ring*, which the Pulsar client
/// links already.
pub(crate) fn crypto_provider() -> Arc<CryptoProvider> {
    if let Some(installed) = CryptoProvider::get_default() {
        return Arc::clone(installed);
    }
    // rustls 0.23.48 deprecates *ring*'s provider for its want of
    // post-quantum key exchange. It stays the fallback: aws-lc-rs would add
    // a C and CMake build to every user's, and an application that wants
    // post-quantum key exchange installs that provider as the default.
    #[allow(deprecated)]
    let ring = rustls::crypto::ring::default_provider();
    Arc::new(ring)
}

/// The PEM files a server's TLS certificate and private key are read from,
/// and read again when their contents change.
///
/// ```
/// use tool_service::mcp::TlsFiles;
///
/// // A Kubernetes `kubernetes.io/tls` secret, mounted at /etc/tls.
/// let files = TlsFiles::new("/etc/tls/tls.crt", "/etc/tls/tls.key");
/// assert_eq!(files.key, std::path::Path::new("/etc/tls/tls.key"));
/// ```
///
/// The two paths may name the same file, when it holds both the
/// certificates and the key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsFiles {
    /// The certificate chain: PEM `CERTIFICATE` blocks, the server's own
    /// first, then the intermediates that lead to a root the clients trust.
    pub cert: PathBuf,
    /// The first certificate's private key, unencrypted: a PEM
    /// `PRIVATE KEY` (PKCS#8), `RSA PRIVATE KEY` (PKCS#1) or
    /// `EC PRIVATE KEY` (SEC1) block.
    pub key: PathBuf,
}

impl TlsFiles {
    /// The certificate chain at `cert` and its private key at `key`.
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        Self {
            cert: cert.into(),
            key: key.into(),
        }
    }
}

/// Which of the two files an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// [`TlsFiles::cert`].
    Certificate,
    /// [`TlsFiles::key`].
    Key,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Certificate => "certificate",
            Self::Key => "key",
        })
    }
}

/// Why the certificate and key cannot be served: each message names the
/// file and says what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    /// The file cannot be read (it does not exist, say).
    #[error("cannot read the TLS {role} file {}: {source}", path.display())]
    Read {
        /// Which file.
        role: Role,
        /// Its path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A PEM block in the file is broken, or the file ends inside one (it
    /// may still be being written).
    #[error("the TLS {role} file {} is not valid PEM: {detail}", path.display())]
    NotPem {
        /// Which file.
        role: Role,
        /// Its path.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// The certificate file has no `CERTIFICATE` block.
    #[error(
        "the TLS certificate file {} has no certificate in it (a PEM `-----BEGIN CERTIFICATE-----` block)",
        path.display()
    )]
    NoCertificate {
        /// The certificate file.
        path: PathBuf,
    },
    /// The key file has no private key block.
    #[error(
        "the TLS key file {} has no private key in it (a PEM `PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY` block)",
        path.display()
    )]
    NoKey {
        /// The key file.
        path: PathBuf,
    },
    /// The key file has more than one private key: which one is meant?
    #[error(
        "the TLS key file {} has {count} private keys in it; keep only the certificate's",
        path.display()
    )]
    ManyKeys {
        /// The key file.
        path: PathBuf,
        /// How many.
        count: usize,
    },
    /// The key is encrypted with a passphrase.
    #[error(
        "the TLS key file {} has an encrypted private key; give it unencrypted (`openssl pkey -in KEY -out PLAIN_KEY`)",
        path.display()
    )]
    EncryptedKey {
        /// The key file.
        path: PathBuf,
    },
    /// The key is not one rustls can sign with (a malformed key, or an
    /// algorithm or size it does not support).
    #[error("the TLS key file {} has a private key that cannot be used: {detail}", path.display())]
    UnusableKey {
        /// The key file.
        path: PathBuf,
        /// rustls's words.
        detail: String,
    },
    /// The first certificate does not parse.
    #[error(
        "the first certificate in the TLS certificate file {} is not a valid X.509 certificate: {detail}",
        path.display()
    )]
    BadCertificate {
        /// The certificate file.
        path: PathBuf,
        /// rustls's words.
        detail: String,
    },
    /// The key is not the first certificate's.
    #[error(
        "the private key in the TLS key file {} does not match the certificate in {} (the first certificate in the file must be the server's own)",
        key.display(),
        cert.display()
    )]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// rustls refused the server's settings (which are fixed, so this is
    /// not expected).
    #[error("cannot set up TLS: {0}")]
    Setup(#[source] rustls::Error),
}

/// The certificate being served, with a fingerprint of the two files'
/// bytes it was read from.
struct Loaded {
    key: Arc<CertifiedKey>,
    fingerprint: u64,
}

/// The rustls certificate resolver: whatever certificate was loaded last.
struct Current {
    files: TlsFiles,
    provider: Arc<CryptoProvider>,
    loaded: RwLock<Loaded>,
}

impl fmt::Debug for Current {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Current")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl ResolvesServerCert for Current {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.certified_key())
    }
}

impl Current {
    fn certified_key(&self) -> Arc<CertifiedKey> {
        Arc::clone(
            &self
                .loaded
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .key,
        )
    }

    fn fingerprint(&self) -> u64 {
        self.loaded
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .fingerprint
    }

    fn replace(&self, loaded: Loaded) {
        *self.loaded.write().unwrap_or_else(PoisonError::into_inner) = loaded;
    }
}

/// Accepts TLS connections with the certificate of a [`TlsFiles`], the
/// latest that loaded. Cheap to clone: the clones share the certificate.
#[derive(Clone)]
pub(crate) struct TlsAcceptor {
    acceptor: tokio_rustls::TlsAcceptor,
    current: Arc<Current>,
    handshake_timeout: Duration,
}

impl fmt::Debug for TlsAcceptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsAcceptor")
            .field("files", &self.current.files)
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

impl TlsAcceptor {
    /// Reads the certificate chain and the key, checks that the key is the
    /// first certificate's, and sets up TLS 1.2 and 1.3 with ALPN
    /// `http/1.1`, a handshake timeout of [`DEFAULT_HANDSHAKE_TIMEOUT`], and
    /// no client certificates.
    pub(crate) fn load(files: &TlsFiles) -> Result<Self, TlsError> {
        let provider = crypto_provider();
        let (cert_pem, key_pem) = read_files(files)?;
        let loaded = Loaded {
            key: Arc::new(certified_key(files, &cert_pem, &key_pem, &provider)?),
            fingerprint: fingerprint(&cert_pem, &key_pem),
        };
        let current = Arc::new(Current {
            files: files.clone(),
            provider: Arc::clone(&provider),
            loaded: RwLock::new(loaded),
        });
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(TlsError::Setup)?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(&current) as Arc<dyn ResolvesServerCert>);
        config.alpn_protocols = vec![ALPN_HTTP_1_1.to_vec()];
        Ok(Self {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            current,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
        })
    }

    /// The same acceptor, giving clients `timeout` to finish the handshake.
    pub(crate) fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// The TLS handshake on an accepted connection, with the certificate
    /// loaded last. Fails when the client does not finish it within the
    /// handshake timeout ([`io::ErrorKind::TimedOut`]), or breaks it off
    /// or is refused (rustls's error, as [`io::ErrorKind::InvalidData`]
    /// mostly).
    pub(crate) async fn accept(&self, stream: TcpStream) -> io::Result<TlsStream<TcpStream>> {
        match tokio::time::timeout(self.handshake_timeout, self.acceptor.accept(stream)).await {
            Ok(result) => result,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no TLS handshake within {:?}", self.handshake_timeout),
            )),
        }
    }

    /// Starts a task that reads the two files `every` so often (say
    /// [`DEFAULT_RELOAD_EVERY`]) and serves their new contents once they
    /// load, logging at INFO that it did. Contents that do not load (a
    /// file half written, a key that does not match the certificate yet)
    /// are logged at WARN, once for the same contents, and the previous
    /// certificate stays until the files change again.
    ///
    /// The task runs on the current Tokio runtime, and ends when the
    /// acceptor, its clones and the connections it accepted are all
    /// dropped, or when the handle is aborted.
    pub(crate) fn spawn_reload(&self, every: Duration) -> JoinHandle<()> {
        tokio::spawn(watch(Arc::downgrade(&self.current), every))
    }
}

/// What the files looked like the last time a reload failed.
#[derive(PartialEq, Eq)]
enum Failed {
    /// Read, with this fingerprint, and did not load.
    Contents(u64),
    /// Not read, for this reason.
    Unreadable(String),
}

/// The reload loop of [`TlsAcceptor::spawn_reload`].
async fn watch(current: Weak<Current>, every: Duration) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut failed: Option<Failed> = None;
    loop {
        ticks.tick().await;
        let Some(current) = current.upgrade() else {
            return;
        };
        let files = current.files.clone();
        let served = current.fingerprint();
        let provider = Arc::clone(&current.provider);
        let seen = failed.take();
        // Reading a mounted secret should be quick, but a file system can
        // hang: not on a runtime thread.
        let outcome =
            tokio::task::spawn_blocking(move || reload(&files, &provider, served, seen.as_ref()))
                .await;
        failed = match outcome {
            Ok(Ok(Reload::Unchanged)) => None,
            Ok(Ok(Reload::Loaded(loaded))) => {
                current.replace(loaded);
                tracing::info!(
                    cert = %current.files.cert.display(),
                    "reloaded the TLS certificate"
                );
                None
            }
            Ok(Err(Outcome::Again(seen))) => Some(seen),
            Ok(Err(Outcome::Failed(seen, error))) => {
                tracing::warn!(
                    %error,
                    "cannot reload the TLS certificate; still serving the previous one until the files change"
                );
                Some(seen)
            }
            // The runtime is shutting down.
            Err(_) => return,
        };
    }
}

/// What one look at the files found, when it found something to serve or
/// nothing new.
enum Reload {
    /// The bytes served, or back to them.
    Unchanged,
    /// New contents that load.
    Loaded(Loaded),
}

/// What one look at the files found, when it cannot serve it.
enum Outcome {
    /// The same as the last failure: already logged.
    Again(Failed),
    /// A new failure.
    Failed(Failed, TlsError),
}

/// Reads the files and loads them when their bytes differ from the ones
/// `served` and from the ones that failed last (`seen`).
fn reload(
    files: &TlsFiles,
    provider: &CryptoProvider,
    served: u64,
    seen: Option<&Failed>,
) -> Result<Reload, Outcome> {
    let failure = |now: Failed, error: TlsError| {
        if seen == Some(&now) {
            Outcome::Again(now)
        } else {
            Outcome::Failed(now, error)
        }
    };
    let (cert_pem, key_pem) = match read_files(files) {
        Ok(read) => read,
        Err(error) => return Err(failure(Failed::Unreadable(error.to_string()), error)),
    };
    let read = fingerprint(&cert_pem, &key_pem);
    if read == served {
        return Ok(Reload::Unchanged);
    }
    if seen == Some(&Failed::Contents(read)) {
        return Err(Outcome::Again(Failed::Contents(read)));
    }
    match certified_key(files, &cert_pem, &key_pem, provider) {
        Ok(key) => Ok(Reload::Loaded(Loaded {
            key: Arc::new(key),
            fingerprint: read,
        })),
        Err(error) => Err(failure(Failed::Contents(read), error)),
    }
}

/// The two files' bytes, read through their paths (through the symlinks
/// of a mounted secret, as they point now).
///
/// The certificate is read again after the key: when it changed in
/// between (a secret's `..data` swapped between the two reads), the pair
/// is read again, rather than a new certificate taken with the old key.
fn read_files(files: &TlsFiles) -> Result<(Vec<u8>, Vec<u8>), TlsError> {
    const ATTEMPTS: usize = 3;
    let read = |role, path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Read {
            role,
            path: path.to_owned(),
            source,
        })
    };
    let mut cert = read(Role::Certificate, &files.cert)?;
    for _ in 1..ATTEMPTS {
        let key = read(Role::Key, &files.key)?;
        let again = read(Role::Certificate, &files.cert)?;
        if again == cert {
            return Ok((cert, key));
        }
        cert = again;
    }
    // Still changing: the last reads, to be judged as they are.
    Ok((cert, read(Role::Key, &files.key)?))
}

/// A fingerprint of the two files' bytes, to tell when they change.
fn fingerprint(cert_pem: &[u8], key_pem: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write(cert_pem);
    hasher.write_u8(0xff);
    hasher.write(key_pem);
    hasher.finish()
}

/// The PEM blocks of a file. A file that ends inside a block (one that is
/// still being written) is an error rather than one block fewer.
fn pem_blocks(role: Role, path: &Path, bytes: &[u8]) -> Result<Vec<pem::Pem>, TlsError> {
    let not_pem = |detail: String| TlsError::NotPem {
        role,
        path: path.to_owned(),
        detail,
    };
    let blocks = pem::parse_many(bytes).map_err(|error| not_pem(error.to_string()))?;
    let begun = bytes
        .windows(b"-----BEGIN ".len())
        .filter(|window| *window == b"-----BEGIN ")
        .count();
    if begun > blocks.len() {
        return Err(not_pem(
            "it ends inside a block (is it still being written?)".to_owned(),
        ));
    }
    Ok(blocks)
}

/// The certificate chain and its key, from the files' bytes, checked to
/// belong together.
fn certified_key(
    files: &TlsFiles,
    cert_pem: &[u8],
    key_pem: &[u8],
    provider: &CryptoProvider,
) -> Result<CertifiedKey, TlsError> {
    let chain: Vec<CertificateDer<'static>> = pem_blocks(Role::Certificate, &files.cert, cert_pem)?
        .into_iter()
        .filter(|block| block.tag() == "CERTIFICATE")
        .map(|block| CertificateDer::from(block.into_contents()))
        .collect();
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: files.cert.clone(),
        });
    }
    let key = private_key(&files.key, key_pem)?;
    let signing_key = provider
        .key_provider
        .load_private_key(key)
        .map_err(|error| TlsError::UnusableKey {
            path: files.key.clone(),
            detail: error.to_string(),
        })?;
    let certified = CertifiedKey::new(chain, signing_key);
    match certified.keys_match() {
        // A key whose public half rustls cannot tell (not one of ring's) is
        // taken on trust, as rustls's own `CertifiedKey::from_der` does.
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {
            Ok(certified)
        }
        Err(rustls::Error::InconsistentKeys(_)) => Err(TlsError::KeyMismatch {
            cert: files.cert.clone(),
            key: files.key.clone(),
        }),
        Err(error) => Err(TlsError::BadCertificate {
            path: files.cert.clone(),
            detail: match error {
                rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding) => {
                    "its DER encoding does not parse".to_owned()
                }
                rustls::Error::InvalidCertificate(error) => error.to_string(),
                error => error.to_string(),
            },
        }),
    }
}

/// The one private key of the key file.
fn private_key(path: &Path, key_pem: &[u8]) -> Result<PrivateKeyDer<'static>, TlsError> {
    let mut keys = Vec::new();
    for block in pem_blocks(Role::Key, path, key_pem)? {
        let encrypted = block
            .headers()
            .get("Proc-Type")
            .is_some_and(|value| value.contains("ENCRYPTED"));
        let key = match block.tag() {
            "ENCRYPTED PRIVATE KEY" => None,
            "RSA PRIVATE KEY" | "EC PRIVATE KEY" if encrypted => None,
            "PRIVATE KEY" => Some(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
                block.into_contents(),
            ))),
            "RSA PRIVATE KEY" => Some(PrivateKeyDer::Pkcs1(PrivatePkcs1KeyDer::from(
                block.into_contents(),
            ))),
            "EC PRIVATE KEY" => Some(PrivateKeyDer::Sec1(PrivateSec1KeyDer::from(
                block.into_contents(),
            ))),
            // Certificates, `EC PARAMETERS` and the like.
            _ => continue,
        };
        keys.push(key);
    }
    match keys.len() {
        0 => Err(TlsError::NoKey {
            path: path.to_owned(),
        }),
        1 => keys.pop().flatten().ok_or_else(|| TlsError::EncryptedKey {
            path: path.to_owned(),
        }),
        count => Err(TlsError::ManyKeys {
            path: path.to_owned(),
            count,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::process::Command;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    use std::time::Instant;

    use rustls::pki_types::ServerName;
    use tokio::net::TcpListener;

    /// A directory of its own for one test, removed at the end.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(test: &str) -> Self {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "tool-service-tls-{test}-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        fn path(&self, name: &str) -> PathBuf {
            self.0.join(name)
        }

        /// `openssl` with whitespace-separated arguments, in the directory.
        fn openssl(&self, args: &str) {
            let output = Command::new("openssl")
                .args(args.split_whitespace())
                .current_dir(&self.0)
                .output()
                .expect("run `openssl` (install it: apt-get install openssl)");
            assert!(
                output.status.success(),
                "openssl {args} failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }

        /// A self-signed EC P-256 certificate for `localhost`, at
        /// `NAME.crt`, and its PKCS#8 key at `NAME.key`.
        fn self_signed(&self, name: &str) -> TlsFiles {
            self.openssl(&format!(
                "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
                 -keyout {name}.key -out {name}.crt -subj /CN=localhost \
                 -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
                 -addext basicConstraints=critical,CA:FALSE"
            ));
            TlsFiles::new(
                self.path(&format!("{name}.crt")),
                self.path(&format!("{name}.key")),
            )
        }

        fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
            let path = self.path(name);
            std::fs::write(&path, contents).unwrap();
            path
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// The DER of the first certificate of a PEM file.
    fn leaf(path: &Path) -> Vec<u8> {
        pem::parse_many(std::fs::read(path).unwrap()).unwrap()[0]
            .contents()
            .to_vec()
    }

    fn error(files: &TlsFiles) -> String {
        TlsAcceptor::load(files).unwrap_err().to_string()
    }

    /// What a client saw of one TLS handshake.
    #[derive(Debug)]
    struct Seen {
        leaf: Vec<u8>,
        alpn: Option<Vec<u8>>,
        version: rustls::ProtocolVersion,
    }

    /// A client that trusts the certificates of `trusted` (self-signed, so
    /// each its own root) and offers `alpn`, over the TLS `versions`.
    fn client(
        trusted: &[&TlsFiles],
        alpn: &[&[u8]],
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> tokio_rustls::TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        for files in trusted {
            roots.add(CertificateDer::from(leaf(&files.cert))).unwrap();
        }
        let mut config = rustls::ClientConfig::builder_with_provider(super::crypto_provider())
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|protocol| protocol.to_vec()).collect();
        tokio_rustls::TlsConnector::from(Arc::new(config))
    }

    /// One connection from `connector` to `acceptor`, through a real socket.
    async fn handshake(
        acceptor: &TlsAcceptor,
        connector: &tokio_rustls::TlsConnector,
    ) -> io::Result<Seen> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                acceptor.accept(stream).await
            })
        };
        let stream = TcpStream::connect(address).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let client = connector.connect(name, stream).await;
        let served = server.await.unwrap();
        let client = client?;
        served?;
        let (_, connection) = client.get_ref();
        Ok(Seen {
            leaf: connection.peer_certificates().unwrap()[0].to_vec(),
            alpn: connection.alpn_protocol().map(<[u8]>::to_vec),
            version: connection.protocol_version().unwrap(),
        })
    }

    const BOTH: &[&rustls::SupportedProtocolVersion] =
        &[&rustls::version::TLS13, &rustls::version::TLS12];

    #[tokio::test]
    async fn load_errors_name_the_file_and_the_reason() {
        let dir = Scratch::new("errors");
        let good = dir.self_signed("good");
        let other = dir.self_signed("other");
        let cert = good.cert.display().to_string();
        let key = good.key.display().to_string();

        let missing = TlsFiles::new(dir.path("absent.crt"), &good.key);
        let message = error(&missing);
        assert!(
            message.starts_with(&format!(
                "cannot read the TLS certificate file {}: ",
                dir.path("absent.crt").display()
            )),
            "{message}"
        );
        assert!(message.contains("No such file"), "{message}");
        let message = error(&TlsFiles::new(&good.cert, dir.path("absent.key")));
        assert!(
            message.starts_with(&format!(
                "cannot read the TLS key file {}: ",
                dir.path("absent.key").display()
            )),
            "{message}"
        );

        // The paths swapped: no certificate in the key file, no key in the
        // certificate file.
        assert_eq!(
            error(&TlsFiles::new(&good.key, &good.key)),
            format!(
                "the TLS certificate file {key} has no certificate in it \
                 (a PEM `-----BEGIN CERTIFICATE-----` block)"
            )
        );
        assert_eq!(
            error(&TlsFiles::new(&good.cert, &good.cert)),
            format!(
                "the TLS key file {cert} has no private key in it \
                 (a PEM `PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY` block)"
            )
        );
        let empty = dir.write("empty.pem", "");
        assert!(error(&TlsFiles::new(&empty, &good.key)).contains("has no certificate in it"));

        assert_eq!(
            error(&TlsFiles::new(&good.cert, &other.key)),
            format!(
                "the private key in the TLS key file {} does not match the certificate in \
                 {cert} (the first certificate in the file must be the server's own)",
                other.key.display()
            )
        );

        // A file cut short in a block, as one being written is.
        let whole = std::fs::read_to_string(&good.cert).unwrap();
        let half = dir.write("half.crt", &whole[..whole.len() / 2]);
        assert_eq!(
            error(&TlsFiles::new(&half, &good.key)),
            format!(
                "the TLS certificate file {} is not valid PEM: \
                 it ends inside a block (is it still being written?)",
                half.display()
            )
        );
        let chain_cut = dir.write(
            "chain-cut.crt",
            format!("{whole}{}", &whole[..whole.len() / 2]),
        );
        assert!(error(&TlsFiles::new(&chain_cut, &good.key)).contains("ends inside a block"));

        let garbage = dir.write(
            "garbage.crt",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        );
        let message = error(&TlsFiles::new(&garbage, &good.key));
        assert!(
            message.starts_with(&format!(
                "the first certificate in the TLS certificate file {} is not a valid X.509 \
                 certificate: ",
                garbage.display()
            )),
            "{message}"
        );

        let bad_key = dir.write(
            "bad.key",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        );
        let message = error(&TlsFiles::new(&good.cert, &bad_key));
        assert!(
            message.starts_with(&format!(
                "the TLS key file {} has a private key that cannot be used: ",
                bad_key.display()
            )),
            "{message}"
        );

        dir.openssl(
            "pkcs8 -topk8 -in good.key -out encrypted.key -v2 aes-256-cbc -passout pass:secret",
        );
        assert_eq!(
            error(&TlsFiles::new(&good.cert, dir.path("encrypted.key"))),
            format!(
                "the TLS key file {} has an encrypted private key; give it unencrypted \
                 (`openssl pkey -in KEY -out PLAIN_KEY`)",
                dir.path("encrypted.key").display()
            )
        );

        let two_keys = dir.write(
            "two.key",
            [
                std::fs::read(&good.key).unwrap(),
                std::fs::read(&other.key).unwrap(),
            ]
            .concat(),
        );
        assert_eq!(
            error(&TlsFiles::new(&good.cert, &two_keys)),
            format!(
                "the TLS key file {} has 2 private keys in it; keep only the certificate's",
                two_keys.display()
            )
        );
    }

    #[tokio::test]
    async fn loads_pkcs8_sec1_and_pkcs1_keys_and_a_combined_file() {
        let dir = Scratch::new("formats");
        let ec = dir.self_signed("ec");
        TlsAcceptor::load(&ec).unwrap();

        // SEC1, with the `EC PARAMETERS` block `openssl ecparam` writes.
        dir.openssl("ecparam -name prime256v1 -genkey -out sec1.key");
        assert!(std::fs::read_to_string(dir.path("sec1.key"))
            .unwrap()
            .contains("-----BEGIN EC PRIVATE KEY-----"));
        dir.openssl(
            "req -x509 -key sec1.key -days 2 -out sec1.crt -subj /CN=localhost \
             -addext basicConstraints=critical,CA:FALSE",
        );
        TlsAcceptor::load(&TlsFiles::new(dir.path("sec1.crt"), dir.path("sec1.key"))).unwrap();

        // PKCS#1 RSA (ring signs with 2048 bits and more).
        dir.openssl("genrsa -traditional -out rsa.key 2048");
        assert!(std::fs::read_to_string(dir.path("rsa.key"))
            .unwrap()
            .contains("-----BEGIN RSA PRIVATE KEY-----"));
        dir.openssl(
            "req -x509 -key rsa.key -days 2 -out rsa.crt -subj /CN=localhost \
             -addext basicConstraints=critical,CA:FALSE",
        );
        TlsAcceptor::load(&TlsFiles::new(dir.path("rsa.crt"), dir.path("rsa.key"))).unwrap();

        // The key and the certificate in one file, in either order.
        let combined = dir.write(
            "combined.pem",
            [
                std::fs::read(&ec.key).unwrap(),
                std::fs::read(&ec.cert).unwrap(),
            ]
            .concat(),
        );
        TlsAcceptor::load(&TlsFiles::new(&combined, &combined)).unwrap();
    }

    #[tokio::test]
    async fn serves_the_certificate_over_tls_1_3_and_1_2_with_http_1_1() {
        let dir = Scratch::new("handshake");
        let files = dir.self_signed("server");
        let acceptor = TlsAcceptor::load(&files).unwrap();
        let served = leaf(&files.cert);

        let h2_too = client(&[&files], &[b"h2", b"http/1.1"], BOTH);
        let seen = handshake(&acceptor, &h2_too).await.unwrap();
        assert_eq!(seen.leaf, served);
        assert_eq!(seen.alpn.as_deref(), Some(&b"http/1.1"[..]));
        assert_eq!(seen.version, rustls::ProtocolVersion::TLSv1_3);

        let tls12 = client(&[&files], &[], &[&rustls::version::TLS12]);
        let seen = handshake(&acceptor, &tls12).await.unwrap();
        assert_eq!(seen.leaf, served);
        assert_eq!(seen.alpn, None);
        assert_eq!(seen.version, rustls::ProtocolVersion::TLSv1_2);

        // A client that does not trust the certificate is refused by its
        // own side.
        let stranger = dir.self_signed("stranger");
        let distrustful = client(&[&stranger], &[], BOTH);
        let error = handshake(&acceptor, &distrustful).await.unwrap_err();
        assert!(
            error.to_string().contains("invalid peer certificate"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_client_that_never_finishes_the_handshake_is_let_go() {
        let dir = Scratch::new("timeout");
        let acceptor = TlsAcceptor::load(&dir.self_signed("server"))
            .unwrap()
            .with_handshake_timeout(Duration::from_millis(100));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _silent = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        let started = Instant::now();
        let error = acceptor.accept(stream).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(error.to_string(), "no TLS handshake within 100ms");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    /// The log lines written while a test runs, on the test's thread.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<(tracing::Level, String)>>>);

    impl Lines {
        fn at(&self, level: tracing::Level) -> Vec<String> {
            self.0
                .lock()
                .unwrap()
                .iter()
                .filter(|(at, _)| *at == level)
                .map(|(_, line)| line.clone())
                .collect()
        }
    }

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Lines {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            struct Fields<'a>(&'a mut String);
            impl tracing::field::Visit for Fields<'_> {
                fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
                    use std::fmt::Write;
                    let _ = write!(self.0, "{}={value:?} ", field.name());
                }
            }
            let mut line = String::new();
            event.record(&mut Fields(&mut line));
            self.0
                .lock()
                .unwrap()
                .push((*event.metadata().level(), line));
        }
    }

    /// A mounted Kubernetes secret: `tls.crt` and `tls.key` are symlinks
    /// through `..data`, a symlink to the directory of the current version,
    /// which an update replaces in one rename.
    struct Secret<'a> {
        dir: &'a Scratch,
        versions: usize,
    }

    impl<'a> Secret<'a> {
        fn mount(dir: &'a Scratch, cert: &[u8], key: &[u8]) -> (Self, TlsFiles) {
            let mut secret = Self { dir, versions: 0 };
            secret.update(cert, key);
            for name in ["tls.crt", "tls.key"] {
                std::os::unix::fs::symlink(format!("..data/{name}"), dir.path(name)).unwrap();
            }
            (
                secret,
                TlsFiles::new(dir.path("tls.crt"), dir.path("tls.key")),
            )
        }

        fn update(&mut self, cert: &[u8], key: &[u8]) {
            self.versions += 1;
            let version = format!("..version-{}", self.versions);
            std::fs::create_dir(self.dir.path(&version)).unwrap();
            self.dir.write(&format!("{version}/tls.crt"), cert);
            self.dir.write(&format!("{version}/tls.key"), key);
            std::os::unix::fs::symlink(&version, self.dir.path("..data_tmp")).unwrap();
            std::fs::rename(self.dir.path("..data_tmp"), self.dir.path("..data")).unwrap();
        }
    }

    /// Connects until the server shows `expected`, for a few seconds.
    async fn until_served(
        acceptor: &TlsAcceptor,
        connector: &tokio_rustls::TlsConnector,
        expected: &[u8],
    ) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if handshake(acceptor, connector).await.unwrap().leaf == expected {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the new certificate is not served"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn until_logged(lines: &Lines, level: tracing::Level, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while lines.at(level).len() < count {
            assert!(Instant::now() < deadline, "{:?}", lines.0.lock().unwrap());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    const TICK: Duration = Duration::from_millis(50);

    #[tokio::test]
    async fn a_rotated_secret_is_served_and_a_broken_one_is_not() {
        use tracing::Level;
        use tracing_subscriber::layer::SubscriberExt;
        let lines = Lines::default();
        let _logging =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(lines.clone()));
        // Callsites another test registered first are wanted here too.
        tracing::callsite::rebuild_interest_cache();

        let dir = Scratch::new("reload");
        let [a, b, c] = ["a", "b", "c"].map(|name| dir.self_signed(name));
        let read = |path: &Path| std::fs::read(path).unwrap();
        let (mut secret, files) = Secret::mount(&dir, &read(&a.cert), &read(&a.key));
        let acceptor = TlsAcceptor::load(&files).unwrap();
        let _reloading = acceptor.spawn_reload(TICK);
        let connector = client(&[&a, &b, &c], &[], BOTH);
        assert_eq!(
            handshake(&acceptor, &connector).await.unwrap().leaf,
            leaf(&a.cert)
        );

        // Rotated: the next connections get the new certificate.
        secret.update(&read(&b.cert), &read(&b.key));
        until_served(&acceptor, &connector, &leaf(&b.cert)).await;
        until_logged(&lines, Level::INFO, 1).await;
        let info = lines.at(Level::INFO);
        assert_eq!(
            info,
            [format!(
                "message=reloaded the TLS certificate cert={} ",
                files.cert.display()
            )]
        );

        // A new certificate with the old key: a warning, once, and the
        // previous certificate stays.
        secret.update(&read(&c.cert), &read(&b.key));
        until_logged(&lines, Level::WARN, 1).await;
        tokio::time::sleep(TICK * 4).await;
        let warnings = lines.at(Level::WARN);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0]
                .contains("cannot reload the TLS certificate; still serving the previous one")
                && warnings[0].contains("does not match the certificate"),
            "{warnings:?}"
        );
        assert_eq!(
            handshake(&acceptor, &connector).await.unwrap().leaf,
            leaf(&b.cert)
        );

        // The key follows: served.
        secret.update(&read(&c.cert), &read(&c.key));
        until_served(&acceptor, &connector, &leaf(&c.cert)).await;
        until_logged(&lines, Level::INFO, 2).await;

        // Files replaced one at a time, the certificate first: a file cut
        // short, then the certificate without its key, then both.
        let replace = |path: &Path, contents: &[u8]| {
            let next = dir.write("next", contents);
            std::fs::rename(next, path).unwrap();
        };
        let whole = read(&a.cert);
        replace(&files.cert, &whole[..whole.len() / 2]);
        until_logged(&lines, Level::WARN, 2).await;
        assert!(lines.at(Level::WARN)[1].contains("ends inside a block"));
        replace(&files.cert, &whole);
        until_logged(&lines, Level::WARN, 3).await;
        assert!(lines.at(Level::WARN)[2].contains("does not match"));
        replace(&files.key, &read(&a.key));
        until_served(&acceptor, &connector, &leaf(&a.cert)).await;
        until_logged(&lines, Level::INFO, 3).await;

        // Unchanged files: nothing more is logged.
        tokio::time::sleep(TICK * 4).await;
        assert_eq!(lines.at(Level::INFO).len(), 3);
        assert_eq!(lines.at(Level::WARN).len(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn the_reload_task_ends_with_the_acceptor() {
        let dir = Scratch::new("task");
        let acceptor = TlsAcceptor::load(&dir.self_signed("server")).unwrap();
        let reloading = acceptor.spawn_reload(DEFAULT_RELOAD_EVERY);
        // A clone keeps it going.
        let clone = acceptor.clone();
        drop(acceptor);
        tokio::time::sleep(DEFAULT_RELOAD_EVERY * 3).await;
        assert!(!reloading.is_finished());
        drop(clone);
        tokio::time::timeout(DEFAULT_RELOAD_EVERY * 2, reloading)
            .await
            .expect("the reload task ends at its next tick")
            .unwrap();
    }
}
