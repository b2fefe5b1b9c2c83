//! How to reach the broker: the options, the connection (with the
//! handshake that explains a refusal), and the client-wide settings a
//! process keeps while connected (TCP_NODELAY, the client's log lines).

use std::fmt;
use std::time::Duration;

use pulsar::{
    Authentication, ConnectionRetryOptions, OperationRetryOptions, Pulsar, TokioExecutor,
};

use crate::pulsar::compat::handshake::{BrokerInfo, HandshakeError, Refusal};

/// How to reach the broker.
///
/// ```
/// use tool_service::pulsar::broker::BrokerOptions;
///
/// let options = BrokerOptions::new("pulsar://127.0.0.1:6650").with_api_key("secret-token");
/// assert!(!format!("{options:?}").contains("secret-token"));
/// ```
#[derive(Clone)]
pub struct BrokerOptions {
    url: String,
    api_key: Option<String>,
    tls_ca_file: Option<std::path::PathBuf>,
    max_backoff: Duration,
}

impl fmt::Debug for BrokerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerOptions")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("tls_ca_file", &self.tls_ca_file)
            .finish()
    }
}

impl BrokerOptions {
    /// A broker at `url` (`pulsar://host:port` or `pulsar+ssl://host:port`).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            api_key: None,
            tls_ca_file: None,
            max_backoff: Duration::from_secs(3),
        }
    }

    /// Authenticates with a Pulsar token (TrustGraph's `PULSAR_API_KEY`).
    pub fn with_api_key(mut self, token: impl Into<String>) -> Self {
        self.api_key = Some(token.into());
        self
    }

    /// Trusts the certificate authority in this PEM file for `pulsar+ssl://`.
    pub fn with_tls_ca_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.tls_ca_file = Some(path.into());
        self
    }

    /// The longest wait between two connection attempts (default 3 s).
    pub fn with_max_backoff(mut self, max_backoff: Duration) -> Self {
        self.max_backoff = max_backoff;
        self
    }

    /// The broker URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What to warn about when a token would cross the network in clear
    /// text: a token is set, the URL is `pulsar://` (not TLS), and the host
    /// is not this machine. `serve` logs it at start-up.
    ///
    /// ```
    /// use tool_service::pulsar::broker::BrokerOptions;
    ///
    /// let remote = BrokerOptions::new("pulsar://pulsar:6650").with_api_key("t");
    /// assert!(remote.cleartext_token_warning().unwrap().contains("pulsar+ssl://"));
    /// let local = BrokerOptions::new("pulsar://127.0.0.1:6650").with_api_key("t");
    /// assert_eq!(local.cleartext_token_warning(), None);
    /// ```
    pub fn cleartext_token_warning(&self) -> Option<String> {
        self.api_key.as_ref()?;
        if !self.url.starts_with("pulsar://") {
            return None;
        }
        let address = broker_address(&self.url)?;
        let host = host_of(&address);
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        (!loopback).then(|| {
            format!(
                "the Pulsar token is sent to {address} in clear text (pulsar://); anyone on the network path can read it. Use pulsar+ssl://, trusting the CA that signed the broker's certificate"
            )
        })
    }

    /// Connects once: the client reconnects by itself afterwards, with
    /// exponential backoff up to the configured maximum.
    ///
    /// # Errors
    /// The client's error when the broker cannot be reached or refuses us.
    pub async fn connect(&self) -> Result<Pulsar<TokioExecutor>, pulsar::Error> {
        let mut builder = Pulsar::builder(self.url.clone(), TokioExecutor)
            .with_connection_retry_options(ConnectionRetryOptions {
                min_backoff: Duration::from_millis(50),
                max_backoff: self.max_backoff,
                max_retries: u32::MAX,
                connection_timeout: Duration::from_secs(5),
                keep_alive: Duration::from_secs(30),
                ..ConnectionRetryOptions::default()
            })
            .with_operation_retry_options(OperationRetryOptions {
                operation_timeout: Duration::from_secs(30),
                retry_delay: Duration::from_millis(500),
                max_retries: None,
            });
        if let Some(token) = &self.api_key {
            builder = builder.with_auth(Authentication {
                name: String::from("token"),
                data: token.clone().into_bytes(),
            });
        }
        if let Some(path) = &self.tls_ca_file {
            builder = builder.with_certificate_chain_file(path).map_err(|error| {
                pulsar::Error::Custom(format!(
                    "cannot read the CA file {}: {error}",
                    path.display()
                ))
            })?;
        }
        let pulsar = builder.build().await?;
        if let Some(address) = broker_address(&self.url) {
            if let Ok(addresses) = tokio::net::lookup_host(address.as_str()).await {
                crate::pulsar::compat::nodelay::register(addresses);
            }
        }
        Ok(pulsar)
    }

    /// Connects, retrying with backoff (and saying so in the log) until the
    /// broker answers or `give_up` completes. Returns the client and what
    /// the broker said about itself in the handshake.
    ///
    /// # Errors
    /// The last connection error, when `give_up` completed first; at once,
    /// a refusal when the broker refuses the token or its TLS certificate
    /// is not trusted.
    pub(crate) async fn connect_with_retry(
        &self,
        give_up: impl std::future::Future<Output = ()>,
    ) -> Result<(Pulsar<TokioExecutor>, BrokerInfo), ConnectError> {
        tokio::pin!(give_up);
        let mut backoff =
            crate::pulsar::backoff::Backoff::new(Duration::from_millis(200), self.max_backoff);
        let mut first = true;
        loop {
            // The client itself retries forever; shake hands first so that
            // every failed attempt is logged and the caller can give up.
            let error = match self.handshake().await {
                Ok(info) => match self.connect().await {
                    Ok(pulsar) => return Ok((pulsar, info)),
                    Err(error) => error,
                },
                // The broker refused our credentials or we refused its
                // certificate: trying again cannot help.
                Err(HandshakeError::Refused { reason, cause }) => {
                    return Err(ConnectError(Failure::Refused {
                        reason,
                        cause,
                        tls_ca_file: self.tls_ca_file.clone(),
                        token: self.api_key.is_some(),
                    }))
                }
                Err(error) => pulsar::Error::Custom(error.to_string()),
            };
            if first {
                tracing::warn!(url = %self.url, %error, retry_in = ?backoff.delay(), "Pulsar broker not reachable; retrying (each attempt is logged at debug)");
                first = false;
            } else {
                tracing::debug!(url = %self.url, %error, retry_in = ?backoff.delay(), "Pulsar broker still not reachable; retrying");
            }
            tokio::select! {
                () = backoff.wait() => {}
                () = &mut give_up => return Err(ConnectError(Failure::Client(error))),
            }
        }
    }

    /// Shakes hands with the first broker of the URL, as the client does
    /// when it connects, and hangs up: the broker's version and its maximum
    /// message size, or why it cannot be reached or refuses us.
    pub(crate) async fn handshake(&self) -> Result<BrokerInfo, HandshakeError> {
        let address = broker_address(&self.url).ok_or_else(|| {
            HandshakeError::Unreachable(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "`{}` is not a Pulsar URL such as pulsar://host:6650",
                    self.url
                ),
            ))
        })?;
        let tls_host = self
            .url
            .starts_with("pulsar+ssl://")
            .then(|| host_of(&address));
        crate::pulsar::compat::handshake::handshake(&crate::pulsar::compat::handshake::Target {
            address: &address,
            tls_host,
            tls_ca_file: self.tls_ca_file.as_deref(),
            token: self.api_key.as_deref(),
        })
        .await
    }
}

/// Why the broker could not be reached before giving up, or refused this
/// process (its token, or our trust in its TLS certificate): the message
/// says which.
///
/// ```
/// # fn takes(_: &dyn std::error::Error) {}
/// # fn demo(error: tool_service::pulsar::broker::ConnectError) { takes(&error);
/// if error.is_refused() {
///     eprintln!("fix the settings: {error}");
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct ConnectError(Failure);

#[derive(Debug)]
enum Failure {
    /// The client's own error: the broker did not answer in time.
    Client(pulsar::Error),
    /// The handshake was refused: trying again cannot help.
    Refused {
        reason: Refusal,
        /// The broker's or the TLS library's own words.
        cause: String,
        tls_ca_file: Option<std::path::PathBuf>,
        /// Whether a token was given.
        token: bool,
    },
}

impl ConnectError {
    /// Whether the broker refused this process: trying again with the same
    /// settings cannot help.
    pub fn is_refused(&self) -> bool {
        matches!(self.0, Failure::Refused { .. })
    }

    /// What to change on the command line, for the CLI to add to the
    /// message.
    #[cfg(feature = "cli")]
    pub(crate) fn flag_advice(&self) -> Option<&'static str> {
        match &self.0 {
            Failure::Refused {
                reason: Refusal::UntrustedCertificate,
                tls_ca_file: None,
                ..
            } => Some("pass the CA that signed it with --pulsar-tls-ca-file (or PULSAR_TLS_CA_FILE)"),
            Failure::Refused {
                reason: Refusal::Unauthenticated,
                token: false,
                ..
            } => Some("pass a token with --pulsar-api-key (or PULSAR_API_KEY), better from a file with --pulsar-api-key-file"),
            Failure::Refused {
                reason: Refusal::Unauthenticated,
                token: true,
                ..
            } => Some("check the token given with --pulsar-api-key, --pulsar-api-key-file or PULSAR_API_KEY"),
            _ => None,
        }
    }
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (reason, cause, tls_ca_file, token) = match &self.0 {
            Failure::Client(error) => return f.write_str(&describe(error)),
            Failure::Refused {
                reason,
                cause,
                tls_ca_file,
                token,
            } => (reason, cause, tls_ca_file, token),
        };
        match (reason, tls_ca_file) {
            (Refusal::UntrustedCertificate, None) => f.write_str("the broker's TLS certificate is not trusted by this system's roots")?,
            (Refusal::UntrustedCertificate, Some(path)) => write!(f, "the broker's TLS certificate is not trusted by the CA in {}, or does not name this host", path.display())?,
            (Refusal::Unauthenticated, _) if !token => f.write_str("the broker requires authentication, and no token was given")?,
            (Refusal::Unauthenticated, _) => f.write_str("the broker rejected the token: it is wrong, expired, or signed with another key")?,
            (Refusal::Configuration, _) => f.write_str("the TLS settings cannot be used")?,
        }
        write!(f, " (the broker said: {cause})")
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            Failure::Client(error) => Some(error),
            Failure::Refused { .. } => None,
        }
    }
}

/// A client error as a sentence: its own message, without the `error: `
/// that the client puts before messages of its own.
pub(crate) fn describe(error: &pulsar::Error) -> String {
    match error {
        pulsar::Error::Custom(message) => message.clone(),
        other => other.to_string(),
    }
}

/// Keeps TCP_NODELAY on this process's connections to the brokers that
/// [`BrokerOptions::connect`] reached, while the returned guard lives: set
/// now on every such connection, then every second, so that connections the
/// client opens later (for a topic lookup, after a reconnect) get it too.
/// `serve` and [`crate::pulsar::client::ToolClient`] hold one already; a consumer or
/// producer built by hand on the client needs one, or its small messages
/// may wait up to 40 ms each for Nagle's algorithm.
///
/// ```no_run
/// # async fn demo() -> Result<(), tool_service::pulsar::broker::pulsar::Error> {
/// use tool_service::pulsar::broker::{keep_nodelay, BrokerOptions};
///
/// let pulsar = BrokerOptions::new("pulsar://127.0.0.1:6650").connect().await?;
/// let producer = pulsar.producer().with_topic("non-persistent://tg/response/joke").build().await?;
/// let _nodelay = keep_nodelay(); // held while the producer is used
/// # drop(producer); Ok(()) }
/// ```
pub fn keep_nodelay() -> NoDelay {
    crate::pulsar::compat::nodelay::apply();
    NoDelay {
        _ticker: crate::pulsar::compat::nodelay::keep_applying(),
    }
}

/// Keeps TCP_NODELAY applied while it lives; see [`keep_nodelay`].
#[derive(Debug)]
#[must_use = "TCP_NODELAY is kept only while the guard lives"]
pub struct NoDelay {
    _ticker: crate::pulsar::compat::nodelay::Ticker,
}

/// The host of a `host:port` address, without IPv6 brackets.
fn host_of(address: &str) -> &str {
    let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// `host:port` of the first broker in a `pulsar://` or `pulsar+ssl://` URL.
fn broker_address(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme {
        "pulsar" => 6650,
        "pulsar+ssl" => 6651,
        _ => return None,
    };
    let authority = rest.split(['/', ',']).next()?;
    if authority.is_empty() {
        return None;
    }
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, port)| port.parse::<u16>().is_ok());
    Some(if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:{default_port}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_addresses() {
        assert_eq!(
            broker_address("pulsar://127.0.0.1:6650").as_deref(),
            Some("127.0.0.1:6650")
        );
        assert_eq!(
            broker_address("pulsar://pulsar").as_deref(),
            Some("pulsar:6650")
        );
        assert_eq!(
            broker_address("pulsar+ssl://broker.example/").as_deref(),
            Some("broker.example:6651")
        );
        assert_eq!(broker_address("pulsar://a:1,b:2").as_deref(), Some("a:1"));
        assert_eq!(broker_address("http://x"), None);
        assert_eq!(host_of("broker.example:6651"), "broker.example");
        assert_eq!(host_of("[::1]:6651"), "::1");
    }

    #[test]
    fn a_token_in_clear_text_to_another_host_is_warned_about() {
        let warned = |url: &str| {
            BrokerOptions::new(url)
                .with_api_key("t")
                .cleartext_token_warning()
        };
        let warning = warned("pulsar://pulsar:6650").unwrap();
        assert!(warning.contains("pulsar:6650 in clear text"), "{warning}");
        assert!(warned("pulsar://10.0.0.5").is_some());
        for quiet in [
            "pulsar://127.0.0.1:6650",
            "pulsar://127.3.4.5:6650",
            "pulsar://localhost:6650",
            "pulsar://[::1]:6650",
            "pulsar+ssl://pulsar:6651",
        ] {
            assert_eq!(warned(quiet), None, "{quiet}");
        }
        let no_token = BrokerOptions::new("pulsar://pulsar:6650");
        assert_eq!(no_token.cleartext_token_warning(), None);
        assert_eq!(broker_address("nonsense"), None);
    }

    #[test]
    fn the_api_key_never_shows() {
        let options = BrokerOptions::new("pulsar://x").with_api_key("eyJ-secret");
        assert!(!format!("{options:?}").contains("eyJ"));
    }

    #[tokio::test]
    async fn giving_up_returns_the_last_error() {
        // Port 9 (discard) on loopback is closed on these machines.
        let options = BrokerOptions::new("pulsar://127.0.0.1:9");
        let result = options
            .connect_with_retry(tokio::time::sleep(Duration::from_millis(300)))
            .await;
        match result {
            Ok(_) => panic!("something answered on 127.0.0.1:9"),
            Err(error) => assert!(!error.to_string().is_empty()),
        }
    }
}
