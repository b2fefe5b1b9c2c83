//! `call`: one request run in-process, through the same decode → handler →
//! encode path the transports use, its frames printed as JSON lines; with
//! `--pulsar`, the same request sent to a service running on a broker.

use std::io::Write;
use std::process::ExitCode;

use serde_json::Value;

use super::CliResult;
use crate::registry::Registry;
use crate::wire::Request;

/// What `call` runs: its flags.
#[derive(Debug, clap::Args)]
pub(crate) struct CallArgs {
    /// A tool name (its preset config is sent) or a service id.
    name: String,
    /// The arguments, a JSON object (as the LLM would give them).
    #[arg(long = "args", value_name = "JSON", default_value = "{}")]
    arguments: String,
    /// Config values, a JSON object; for a tool, merged over its preset.
    #[arg(long, value_name = "JSON")]
    config: Option<String>,
    /// The calling user.
    #[arg(long)]
    user: Option<String>,
    /// The request id.
    #[arg(long, default_value = "call")]
    id: String,
    #[cfg(feature = "pulsar")]
    #[command(flatten)]
    pulsar: OverPulsar,
    #[cfg(feature = "mcp")]
    #[command(flatten)]
    mcp: OverMcp,
}

impl CallArgs {
    /// The tool or service called.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Whether the request runs in this process (not over a broker), so
    /// that the state its service takes must be here.
    pub(crate) fn runs_here(&self) -> bool {
        #[cfg(feature = "pulsar")]
        let over_pulsar = self.pulsar.url.is_some();
        #[cfg(not(feature = "pulsar"))]
        let over_pulsar = false;
        #[cfg(feature = "mcp")]
        let over_mcp = self.mcp.url.is_some();
        #[cfg(not(feature = "mcp"))]
        let over_mcp = false;
        !(over_pulsar || over_mcp)
    }
}

/// `call`'s flags that send the request to an MCP server instead.
#[cfg(feature = "mcp")]
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct OverMcp {
    /// Call the tool on the MCP server at this URL (Streamable HTTP, e.g.
    /// http://127.0.0.1:8900/mcp) as an MCP client does, instead of running
    /// it in-process. Over MCP a tool's error carries no type: its frame's
    /// is tool-service-error.
    #[arg(id = "mcp_url", long = "mcp", value_name = "URL", conflicts_with_all = ["config", "user"])]
    url: Option<String>,
    /// With --mcp: a file holding the bearer token to send.
    #[arg(
        long = "mcp-token-file",
        value_name = "FILE",
        requires = "mcp_url",
        conflicts_with = "client_id"
    )]
    token_file: Option<std::path::PathBuf>,
    /// With --mcp: sign in with the client credentials grant at the
    /// authorization server the MCP server's 401 names, as this client
    /// (with --mcp-client-secret-file).
    #[arg(long = "mcp-client-id", value_name = "ID", requires_all = ["mcp_url", "client_secret_file"])]
    client_id: Option<String>,
    /// With --mcp-client-id: a file holding the client's secret.
    #[arg(
        long = "mcp-client-secret-file",
        value_name = "FILE",
        requires = "client_id"
    )]
    client_secret_file: Option<std::path::PathBuf>,
    /// With --mcp-client-id: a scope to ask for (repeatable; default: those
    /// the server's challenge names).
    #[arg(long = "mcp-scope", value_name = "SCOPE", requires = "client_id")]
    scopes: Vec<String>,
}

/// `call`'s flags that send the request over a broker instead.
#[cfg(feature = "pulsar")]
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct OverPulsar {
    /// Send the request to the service running on the broker at this URL
    /// (e.g. pulsar://127.0.0.1:6650) instead of running it in-process;
    /// the answer is waited for as long as the service's timeout.
    #[arg(long = "pulsar", value_name = "URL")]
    #[cfg_attr(feature = "mcp", arg(conflicts_with = "mcp_url"))]
    url: Option<String>,
    /// With --pulsar: a file holding the Pulsar token.
    #[arg(long = "pulsar-api-key-file", value_name = "FILE", requires = "url")]
    api_key_file: Option<std::path::PathBuf>,
    /// With --pulsar: a PEM file with the CA that signed the broker's
    /// certificate (pulsar+ssl://).
    #[arg(long = "pulsar-tls-ca-file", value_name = "FILE", requires = "url")]
    tls_ca_file: Option<std::path::PathBuf>,
}

/// Runs the request and prints its frames; fails when the last is an error.
pub(super) async fn call(registry: &Registry, args: CallArgs, out: &mut dyn Write) -> CliResult {
    let CallArgs {
        name,
        arguments,
        config,
        user,
        id,
        #[cfg(feature = "pulsar")]
        pulsar,
        #[cfg(feature = "mcp")]
        mcp,
    } = args;
    #[cfg(feature = "mcp")]
    if mcp.url.is_some() {
        return over_mcp(&name, &id, &arguments, mcp, out).await;
    }
    let request = Request {
        user: user.filter(|user| !user.is_empty()),
        config: config.unwrap_or_else(|| String::from("{}")),
        arguments,
    };
    #[cfg(feature = "pulsar")]
    let frames = match pulsar.url {
        Some(_) => over_pulsar(registry, &name, &id, request, pulsar).await?,
        None => registry.call(&name, &id, request).await?,
    };
    #[cfg(not(feature = "pulsar"))]
    let frames = registry.call(&name, &id, request).await?;
    for frame in &frames {
        let mut line = serde_json::Map::new();
        line.insert("id".into(), id.as_str().into());
        if let Value::Object(fields) = serde_json::to_value(frame)? {
            line.extend(fields);
        }
        writeln!(out, "{}", Value::Object(line))?;
    }
    let ok = frames.last().is_some_and(|frame| frame.error.is_none());
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The frames of `request`, sent to the service `name` names on the broker
/// `over` says, as TrustGraph's agent sends it (the tool's preset config
/// merged in).
#[cfg(feature = "pulsar")]
async fn over_pulsar(
    registry: &Registry,
    name: &str,
    id: &str,
    mut request: Request,
    over: OverPulsar,
) -> Result<Vec<crate::wire::Frame>, super::BoxError> {
    let service = registry.resolve(name, &mut request)?;
    let url = over.url.unwrap_or_default();
    let mut broker = crate::pulsar::broker::BrokerOptions::new(url.clone());
    if let Some(path) = &over.api_key_file {
        broker = broker.with_api_key(super::read_token_file("--pulsar-api-key-file", path)?);
    }
    if let Some(path) = over.tls_ca_file {
        broker = broker.with_tls_ca_file(path);
    }
    // The client retries by itself; a shell command should not wait long.
    const CONNECT: std::time::Duration = std::time::Duration::from_secs(30);
    let pulsar = match tokio::time::timeout(CONNECT, broker.connect()).await {
        Ok(Ok(pulsar)) => pulsar,
        Ok(Err(error)) => {
            return Err(format!("cannot connect to the Pulsar broker at {url}: {error}").into())
        }
        Err(_) => {
            return Err(format!(
                "cannot connect to the Pulsar broker at {url} within 30 s (is it running? --pulsar takes its URL)"
            )
            .into())
        }
    };
    // As long as the service may run, and a moment for the broker.
    let timeout = service.timeout().unwrap_or(crate::host::DEFAULT_TIMEOUT)
        + std::time::Duration::from_secs(5);
    let client = crate::pulsar::client::ToolClient::connect(
        &pulsar,
        &service.request_queue(),
        &service.response_queue(),
    )
    .await?
    .with_timeout(timeout);
    match client.send_payload_as(request.encode(), id).await {
        Ok(frames) => Ok(frames),
        Err(crate::pulsar::client::CallError::Timeout(waited)) => Err(format!(
            "no answer from `{}` on {url} within {}: is a replica serving it on this broker?",
            service.id(),
            crate::duration::format(waited)
        )
        .into()),
        Err(error) => Err(error.into()),
    }
}

/// The tool called on the MCP server `over` names, its answer printed as
/// the frame the in-process call prints; a refusal before the tool ran is
/// an error naming the status and the challenge.
#[cfg(feature = "mcp")]
async fn over_mcp(
    name: &str,
    id: &str,
    arguments: &str,
    over: OverMcp,
    out: &mut dyn Write,
) -> CliResult {
    use crate::mcp::client::{call_tool, Answer, SignIn};
    let url = over.url.unwrap_or_default();
    let arguments: Value =
        serde_json::from_str(arguments).map_err(|error| format!("--args is not JSON: {error}"))?;
    let sign_in = match (&over.token_file, &over.client_id, &over.client_secret_file) {
        (Some(path), _, _) => SignIn::Token(super::read_token_file("--mcp-token-file", path)?),
        (None, Some(client), Some(path)) => SignIn::ClientCredentials {
            id: client.clone(),
            secret: super::read_token_file("--mcp-client-secret-file", path)?,
            scopes: over.scopes.clone(),
        },
        _ => SignIn::Anonymous,
    };
    match call_tool(&url, sign_in, name, arguments).await? {
        Answer::Result { text, is_error } => {
            let frame = crate::wire::Frame {
                error: is_error.then(|| crate::error::ToolError::new(text.clone())),
                response: if is_error { String::new() } else { text },
                end_of_stream: true,
            };
            let mut line = serde_json::Map::new();
            line.insert("id".into(), id.into());
            if let Value::Object(fields) = serde_json::to_value(&frame)? {
                line.extend(fields);
            }
            writeln!(out, "{}", Value::Object(line))?;
            Ok(if is_error {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Answer::Refused { status, challenge } => Err(format!(
            "{url} refused the call: HTTP {status}{}",
            challenge.map_or_else(String::new, |challenge| format!(
                "; WWW-Authenticate: {challenge}"
            ))
        )
        .into()),
    }
}
