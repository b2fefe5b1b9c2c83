//! The Pulsar connection handshake, done once by us before the client
//! connects: the broker announces its maximum message size in it, and the
//! `pulsar` crate keeps that to itself. It also tells a refusal (wrong
//! token, untrusted certificate) from a broker that is not up yet.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use pulsar::error::ConnectionError;
use pulsar::message::proto::{self, base_command::Type as CommandType};
use pulsar::message::{Codec, Message};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

use crate::wire::DEFAULT_MAX_MESSAGE_SIZE;

/// What a broker said about itself when we connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BrokerInfo {
    /// The broker's version, as it reports it (e.g. `Pulsar Server4.2.4`).
    pub(crate) server_version: String,
    /// The largest message the broker accepts, in bytes: its
    /// `maxMessageSize`, or Pulsar's default
    /// ([`DEFAULT_MAX_MESSAGE_SIZE`]) when it does not say.
    pub(crate) max_message_size: usize,
}

/// Why a handshake failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HandshakeError {
    /// The broker could not be reached, or broke off: trying again may help.
    #[error("{0}")]
    Unreachable(#[source] io::Error),
    /// The broker refused our credentials, or we refused its TLS
    /// certificate: trying again cannot help.
    #[error("{cause}")]
    Refused {
        /// What was refused.
        reason: Refusal,
        /// The broker's or the TLS library's own words.
        cause: String,
    },
}

/// What a [`HandshakeError::Refused`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The broker refused the token, or wants one.
    Unauthenticated,
    /// The broker's TLS certificate is not trusted (or does not name the host).
    UntrustedCertificate,
    /// The TLS settings themselves cannot be used (an unreadable CA file, a
    /// host that is not a valid server name).
    Configuration,
}

fn refused(reason: Refusal, cause: String) -> HandshakeError {
    HandshakeError::Refused { reason, cause }
}

/// How long one handshake may take, connecting included.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Where and how to connect for a handshake.
pub(crate) struct Target<'a> {
    /// `host:port`.
    pub address: &'a str,
    /// The host name a TLS certificate must name, when TLS is used.
    pub tls_host: Option<&'a str>,
    /// PEM file of the certificate authority to trust, beyond the public ones.
    pub tls_ca_file: Option<&'a std::path::Path>,
    /// A Pulsar token.
    pub token: Option<&'a str>,
}

/// Connects to the broker, says hello as the Pulsar client would, reads its
/// answer, and hangs up.
pub(crate) async fn handshake(target: &Target<'_>) -> Result<BrokerInfo, HandshakeError> {
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, exchange(target)).await {
        Ok(result) => result,
        Err(_) => Err(HandshakeError::Unreachable(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "no Pulsar handshake with {} within {HANDSHAKE_TIMEOUT:?}",
                target.address
            ),
        ))),
    }
}

async fn exchange(target: &Target<'_>) -> Result<BrokerInfo, HandshakeError> {
    let stream = TcpStream::connect(target.address)
        .await
        .map_err(HandshakeError::Unreachable)?;
    let _ = stream.set_nodelay(true);
    match target.tls_host {
        None => hello(stream, target.token).await,
        Some(host) => {
            let connector = tls_connector(target.tls_ca_file)?;
            let name = rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(|_| {
                refused(
                    Refusal::Configuration,
                    format!("`{host}` is not a valid TLS server name"),
                )
            })?;
            let stream =
                connector.connect(name, stream).await.map_err(
                    |error| match certificate_problem(&error) {
                        Some(cause) => refused(Refusal::UntrustedCertificate, cause),
                        None => HandshakeError::Unreachable(error),
                    },
                )?;
            hello(stream, target.token).await
        }
    }
}

/// A TLS connector trusting the public roots and the CA file, as the Pulsar
/// client does.
fn tls_connector(
    ca_file: Option<&std::path::Path>,
) -> Result<tokio_rustls::TlsConnector, HandshakeError> {
    let roots =
        crate::roots::trusted(ca_file).map_err(|detail| refused(Refusal::Configuration, detail))?;
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// The certificate problem behind a failed TLS handshake, if that is what
/// failed it.
fn certificate_problem(error: &io::Error) -> Option<String> {
    let tls = error.get_ref()?.downcast_ref::<rustls::Error>()?;
    match tls {
        rustls::Error::InvalidCertificate(problem) => {
            Some(format!("invalid peer certificate: {problem:?}"))
        }
        _ => None,
    }
}

async fn hello<S>(stream: S, token: Option<&str>) -> Result<BrokerInfo, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut framed = Framed::new(stream, Codec);
    framed
        .send(connect_command(token))
        .await
        .map_err(unreachable)?;
    let answer = framed.next().await.ok_or_else(|| {
        HandshakeError::Unreachable(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the broker closed the connection during the handshake",
        ))
    })?;
    let _ = framed.close().await;
    read_answer(answer.map_err(unreachable)?)
}

/// `CONNECT`, as the Pulsar client sends it.
fn connect_command(token: Option<&str>) -> Message {
    Message {
        command: proto::BaseCommand {
            r#type: CommandType::Connect as i32,
            connect: Some(proto::CommandConnect {
                client_version: format!("tool-service-{}", env!("CARGO_PKG_VERSION")),
                auth_method_name: token.map(|_| String::from("token")),
                auth_data: token.map(|token| token.as_bytes().to_vec()),
                protocol_version: Some(12),
                ..Default::default()
            }),
            ..Default::default()
        },
        payload: None,
    }
}

/// `CONNECTED` gives the broker's facts; `ERROR` an authentication refusal
/// or a broker not ready yet.
fn read_answer(answer: Message) -> Result<BrokerInfo, HandshakeError> {
    if let Some(connected) = answer.command.connected {
        let max_message_size = connected
            .max_message_size
            .and_then(|size| usize::try_from(size).ok())
            .filter(|size| *size > 0)
            .unwrap_or(DEFAULT_MAX_MESSAGE_SIZE);
        return Ok(BrokerInfo {
            server_version: connected.server_version,
            max_message_size,
        });
    }
    if let Some(error) = answer.command.error {
        let kind = proto::ServerError::try_from(error.error).ok();
        let cause = format!(
            "{}: {}",
            kind.map_or("ServerError", |kind| kind.as_str_name()),
            error.message
        );
        return Err(match kind {
            Some(
                proto::ServerError::AuthenticationError | proto::ServerError::AuthorizationError,
            ) => refused(Refusal::Unauthenticated, cause),
            _ => HandshakeError::Unreachable(io::Error::other(cause)),
        });
    }
    Err(HandshakeError::Unreachable(io::Error::other(format!(
        "unexpected answer to the Pulsar handshake (command type {})",
        answer.command.r#type
    ))))
}

fn unreachable(error: ConnectionError) -> HandshakeError {
    HandshakeError::Unreachable(match error {
        ConnectionError::Io(error) => error,
        other => io::Error::other(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(command: proto::BaseCommand) -> Message {
        Message {
            command,
            payload: None,
        }
    }

    #[test]
    fn connected_gives_the_announced_size_or_the_default() {
        let connected = |size| {
            answer(proto::BaseCommand {
                r#type: CommandType::Connected as i32,
                connected: Some(proto::CommandConnected {
                    server_version: String::from("Pulsar Server4.2.4"),
                    protocol_version: Some(21),
                    max_message_size: size,
                }),
                ..Default::default()
            })
        };
        let info = read_answer(connected(Some(1_048_576))).unwrap();
        assert_eq!(info.max_message_size, 1_048_576);
        assert_eq!(info.server_version, "Pulsar Server4.2.4");
        for silent in [None, Some(0), Some(-1)] {
            let info = read_answer(connected(silent)).unwrap();
            assert_eq!(info.max_message_size, DEFAULT_MAX_MESSAGE_SIZE);
        }
    }

    #[test]
    fn authentication_errors_are_refusals_and_others_are_retried() {
        let error = |kind: proto::ServerError| {
            answer(proto::BaseCommand {
                r#type: CommandType::Error as i32,
                error: Some(proto::CommandError {
                    request_id: 0,
                    error: kind as i32,
                    message: String::from("detail"),
                }),
                ..Default::default()
            })
        };
        match read_answer(error(proto::ServerError::AuthenticationError)) {
            Err(HandshakeError::Refused { reason, cause }) => {
                assert_eq!(reason, Refusal::Unauthenticated);
                assert_eq!(cause, "AuthenticationError: detail");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            read_answer(error(proto::ServerError::ServiceNotReady)),
            Err(HandshakeError::Unreachable(_))
        ));
    }

    #[test]
    fn the_connect_command_carries_the_token() {
        let command = connect_command(Some("t0k3n")).command;
        let connect = command.connect.unwrap();
        assert_eq!(connect.auth_method_name.as_deref(), Some("token"));
        assert_eq!(connect.auth_data.as_deref(), Some(&b"t0k3n"[..]));
        assert_eq!(
            connect_command(None).command.connect.unwrap().auth_data,
            None
        );
    }

    #[tokio::test]
    async fn a_closed_port_is_unreachable() {
        // Port 9 (discard) on loopback is closed on these machines.
        let target = Target {
            address: "127.0.0.1:9",
            tls_host: None,
            tls_ca_file: None,
            token: None,
        };
        assert!(matches!(
            handshake(&target).await,
            Err(HandshakeError::Unreachable(_))
        ));
    }
}
