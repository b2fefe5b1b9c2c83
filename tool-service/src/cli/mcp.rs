//! The `mcp` command, and the MCP flags `serve --mcp-listen` shares with it.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::host::{Host, HostOptions, Transports};
use crate::mcp::{HttpOptions, HttpTransport, McpOptions, StdioTransport};
use crate::registry::Registry;

use super::{BoxError, CliResult, Meta};

/// How an MCP server over HTTP is reached: its token and the host names and
/// origins it answers.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct McpHttpArgs {
    /// Every request must carry this bearer token.
    #[command(flatten)]
    mcp_token: super::McpTokenArgs,
    /// Also answer requests whose `Host` is this name (repeatable; e.g. the
    /// service's name in a container network; `*` answers any). localhost,
    /// 127.0.0.1, ::1, host.docker.internal and host.containers.internal
    /// are always answered.
    #[arg(
        help_heading = super::headings::MCP_HTTP,
        long,
        env = "TOOL_SERVICE_MCP_ALLOWED_HOST",
        value_delimiter = ',',
        value_name = "HOST"
    )]
    mcp_allowed_host: Vec<String>,
    /// Also accept browser requests from this origin, e.g.
    /// `https://app.example.com` (repeatable; local origins always pass).
    #[arg(
        help_heading = super::headings::MCP_HTTP,
        long,
        env = "TOOL_SERVICE_MCP_ALLOWED_ORIGIN",
        value_delimiter = ',',
        value_name = "ORIGIN"
    )]
    mcp_allowed_origin: Vec<String>,
    /// How long a client has to send a whole request head (request line
    /// and headers), on a new connection and between requests on a kept-alive
    /// one; then the connection closes. Units ms, s, m, h.
    #[arg(help_heading = super::headings::MCP_HTTP, long, env = "TOOL_SERVICE_MCP_HEADER_TIMEOUT", default_value = "10s", value_name = "DURATION", value_parser = crate::duration::parse)]
    mcp_header_timeout: Duration,
    /// How long a client has to send a whole request body once its head
    /// has arrived; then it is answered 408. Units ms, s, m, h.
    #[arg(help_heading = super::headings::MCP_HTTP, long, env = "TOOL_SERVICE_MCP_BODY_TIMEOUT", default_value = "30s", value_name = "DURATION", value_parser = crate::duration::parse)]
    mcp_body_timeout: Duration,
    /// The most MCP connections open at once. At the cap a new connection
    /// closes the one idle longest (between requests, or still sending its
    /// head); when every one is answering a request, the new one is
    /// answered 503. Keep it under the process's file limit (`ulimit -n`).
    #[arg(help_heading = super::headings::MCP_HTTP, long, env = "TOOL_SERVICE_MCP_MAX_CONNECTIONS", default_value_t = crate::mcp::DEFAULT_MAX_CONNECTIONS as u32, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    mcp_max_connections: u32,
    /// The JSON Schema dialect of the tools' schemas: `spec` (JSON Schema
    /// 2020-12 as MCP has it, in the forms the providers' MCP clients
    /// take) or `portable` (taken strictly where a client has a strict
    /// mode). `check-schemas` tells what each client does with each.
    #[arg(help_heading = super::headings::MCP_HTTP, long, env = "TOOL_SERVICE_SCHEMA_FLAVOR", default_value = "spec", value_name = "FLAVOR", value_parser = ["spec", "portable"], ignore_case = true)]
    pub(super) schema_flavor: String,
    /// Serve MCP over HTTPS with this PEM certificate chain (with
    /// --mcp-tls-key); both files are read again when they change.
    #[arg(
        help_heading = super::headings::MCP_HTTP,
        long,
        env = "TOOL_SERVICE_MCP_TLS_CERT",
        value_name = "FILE",
        requires = "mcp_tls_key"
    )]
    mcp_tls_cert: Option<std::path::PathBuf>,
    /// The private key of --mcp-tls-cert (PKCS#8, PKCS#1 or SEC1 PEM).
    #[arg(
        help_heading = super::headings::MCP_HTTP,
        long,
        env = "TOOL_SERVICE_MCP_TLS_KEY",
        value_name = "FILE",
        requires = "mcp_tls_cert"
    )]
    mcp_tls_key: Option<std::path::PathBuf>,
    #[command(flatten)]
    oauth: OAuthArgs,
}

/// OAuth 2.1 authorization of the MCP port (the MCP specification's).
#[derive(Debug, Clone, clap::Args)]
struct OAuthArgs {
    /// Take OAuth access tokens of this authorization server (its issuer
    /// identifier, exactly as its tokens' `iss` says; https, or http on
    /// localhost). Needs --oauth-resource.
    #[arg(
        help_heading = super::headings::OAUTH,
        long,
        env = "TOOL_SERVICE_OAUTH_ISSUER",
        value_name = "URL",
        requires = "oauth_resource"
    )]
    oauth_issuer: Option<String>,
    /// The URL clients reach this server's /mcp at (behind an ingress, the
    /// public one): the audience tokens must be issued for, and the
    /// protected resource metadata's `resource`.
    #[arg(
        help_heading = super::headings::OAUTH,
        long,
        env = "TOOL_SERVICE_OAUTH_RESOURCE",
        value_name = "URL",
        requires = "oauth_issuer"
    )]
    oauth_resource: Option<String>,
    /// Also take tokens whose `aud` is this (repeatable; issuers that name
    /// an API identifier instead of the URL).
    #[arg(
        help_heading = super::headings::OAUTH,
        long,
        env = "TOOL_SERVICE_OAUTH_AUDIENCE",
        value_delimiter = ',',
        value_name = "AUDIENCE",
        requires = "oauth_issuer"
    )]
    oauth_audience: Vec<String>,
    /// A client whose access tokens carry no `aud` (AWS Cognito's), by its
    /// `client_id` (repeatable): its tokens are accepted without an
    /// audience when their `token_use` is `access`. Never by default.
    #[arg(
        help_heading = super::headings::OAUTH,
        long,
        env = "TOOL_SERVICE_OAUTH_CLIENT_WITHOUT_AUDIENCE",
        value_delimiter = ',',
        value_name = "CLIENT_ID",
        requires = "oauth_issuer"
    )]
    oauth_client_without_audience: Vec<String>,
    /// The token claim that names the caller (`ctx.user()`), e.g.
    /// `preferred_username` or `email`.
    #[arg(
        help_heading = super::headings::OAUTH,
        long,
        env = "TOOL_SERVICE_OAUTH_USER_CLAIM",
        default_value = "sub",
        value_name = "CLAIM"
    )]
    oauth_user_claim: String,
    /// The token claims the granted scopes are read from, the first the
    /// token has (repeatable): `roles` (Entra ID applications),
    /// `permissions` (Auth0), `realm_access.roles` (Keycloak; dots reach
    /// nested claims).
    #[arg(
        help_heading = super::headings::OAUTH,
        long,
        env = "TOOL_SERVICE_OAUTH_SCOPE_CLAIM",
        value_delimiter = ',',
        default_values_t = [String::from("scope"), String::from("scp")],
        value_name = "CLAIM"
    )]
    oauth_scope_claim: Vec<String>,
    /// The scopes a service's tools need, in place of its attribute's
    /// (repeatable; `SERVICE_ID=` alone: none).
    #[arg(help_heading = super::headings::OAUTH, long, env = "TOOL_SERVICE_OAUTH_SCOPE", value_delimiter = ',', value_name = "SERVICE_ID=SCOPE", value_parser = parse_scope, requires = "oauth_issuer")]
    oauth_scope: Vec<(String, String)>,
    /// The signature algorithms accepted (repeatable; default RS256, RS384,
    /// RS512, PS256, PS384, PS512, ES256, ES384, EdDSA; never `none` or HMAC).
    #[arg(
        help_heading = super::headings::OAUTH,
        long,
        env = "TOOL_SERVICE_OAUTH_ALGORITHM",
        value_delimiter = ',',
        value_name = "ALG"
    )]
    oauth_algorithm: Vec<crate::mcp::Algorithm>,
    /// The clock skew allowed on a token's `exp` and `nbf`. Units ms, s, m, h.
    #[arg(help_heading = super::headings::OAUTH, long, env = "TOOL_SERVICE_OAUTH_LEEWAY", default_value = "30s", value_name = "DURATION", value_parser = crate::duration::parse)]
    oauth_leeway: Duration,
    /// The client id to introspect opaque tokens with (RFC 7662), with
    /// --oauth-client-secret-file; without it only JWT access tokens are taken.
    #[arg(
        help_heading = super::headings::OAUTH,
        long,
        env = "TOOL_SERVICE_OAUTH_CLIENT_ID",
        value_name = "ID",
        requires = "oauth_client_secret_file"
    )]
    oauth_client_id: Option<String>,
    /// A file holding that client's secret.
    #[arg(
        help_heading = super::headings::OAUTH,
        long,
        env = "TOOL_SERVICE_OAUTH_CLIENT_SECRET_FILE",
        value_name = "FILE",
        requires = "oauth_client_id"
    )]
    oauth_client_secret_file: Option<std::path::PathBuf>,
    /// PEM certificates to trust for the authorization server, besides the
    /// web's roots (a private CA).
    #[arg(help_heading = super::headings::OAUTH, long, env = "TOOL_SERVICE_OAUTH_CA_FILE", value_name = "FILE")]
    oauth_ca_file: Option<std::path::PathBuf>,
}

/// `SERVICE_ID=SCOPE`, or `SERVICE_ID=` for none.
fn parse_scope(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((service, scope)) if !service.trim().is_empty() => {
            Ok((service.trim().to_owned(), scope.trim().to_owned()))
        }
        _ => Err(format!(
            "`{text}` is not SERVICE_ID=SCOPE, e.g. tickets-service=tickets:write"
        )),
    }
}

impl OAuthArgs {
    fn options(&self) -> Result<Option<crate::mcp::OAuthOptions>, BoxError> {
        let (Some(issuer), Some(resource)) = (&self.oauth_issuer, &self.oauth_resource) else {
            return Ok(None);
        };
        let mut options = crate::mcp::OAuthOptions::new(issuer, resource)
            .user_claim(self.oauth_user_claim.clone())
            .scope_claims(self.oauth_scope_claim.iter().cloned());
        options.audiences.clone_from(&self.oauth_audience);
        options
            .clients_without_audience
            .clone_from(&self.oauth_client_without_audience);
        if !self.oauth_algorithm.is_empty() {
            options.algorithms.clone_from(&self.oauth_algorithm);
        }
        options.leeway = self.oauth_leeway;
        for (service, scope) in &self.oauth_scope {
            let scopes = options.scopes.entry(service.clone()).or_default();
            if !scope.is_empty() {
                scopes.push(scope.clone());
            }
        }
        if let (Some(id), Some(file)) = (&self.oauth_client_id, &self.oauth_client_secret_file) {
            let secret = super::read_token_file("--oauth-client-secret-file", file)?;
            options.introspection = Some((id.clone(), secret));
        }
        options.ca_file.clone_from(&self.oauth_ca_file);
        Ok(Some(options))
    }
}

impl McpHttpArgs {
    /// The schema flavour asked for.
    pub(super) fn flavor(&self) -> crate::mcp::SchemaFlavor {
        self.schema_flavor.parse().unwrap_or_default()
    }

    /// The HTTP options, with the token read from its file.
    pub(super) fn options(&self) -> Result<HttpOptions, BoxError> {
        let token = self.mcp_token.token()?;
        let defaults = HttpOptions::default();
        let allowed_hosts = defaults
            .allowed_hosts
            .iter()
            .chain(&self.mcp_allowed_host)
            .cloned()
            .collect();
        Ok(HttpOptions {
            allowed_hosts,
            allowed_origins: self.mcp_allowed_origin.clone(),
            token,
            oauth: self.oauth.options()?,
            tls: match (&self.mcp_tls_cert, &self.mcp_tls_key) {
                (Some(cert), Some(key)) => Some(crate::mcp::TlsFiles::new(cert, key)),
                _ => None,
            },
            header_timeout: self.mcp_header_timeout,
            body_timeout: self.mcp_body_timeout,
            max_connections: self.mcp_max_connections as usize,
            ..defaults
        })
    }
}

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct McpArgs {
    /// Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio.
    #[arg(help_heading = super::headings::MCP_HTTP, long, env = "TOOL_SERVICE_MCP_LISTEN", value_name = "HOST:PORT")]
    listen: Option<SocketAddr>,
    #[command(flatten)]
    http: McpHttpArgs,
    #[command(flatten)]
    host: super::host::HostArgs,
    /// With --listen, metrics and probes are served by default (as by
    /// `serve`); on stdio only when --metrics or --metrics-port asks.
    #[command(flatten)]
    metrics: super::host::MetricsArgs,
    #[command(flatten)]
    log: super::LogArgs,
}

/// What `mcp` runs, checked before any hook.
#[derive(Debug)]
pub(super) struct McpRun {
    listen: Option<SocketAddr>,
    http: HttpOptions,
    options: McpOptions,
    /// What is served, and each service's policy.
    host: HostOptions,
    metrics: Option<SocketAddr>,
}

impl McpRun {
    pub(super) fn grace_period(&self) -> Duration {
        self.host.grace_period
    }
}

/// Checks the flags, and sets up logging (to standard error).
pub(super) fn prepare(
    args: McpArgs,
    registry: &Registry,
    meta: Option<Meta>,
) -> Result<McpRun, BoxError> {
    super::init_logging(&args.log)?;
    let mut options = match meta {
        Some(meta) => McpOptions::new(meta.name, meta.version),
        None => McpOptions::default(),
    };
    options.schema_flavor = args.http.flavor();
    let host = args.host.options();
    crate::host::check_names(registry, &host)?;
    Ok(McpRun {
        // A server for this machine only keeps its metrics there too.
        metrics: args.metrics.unless_taken(
            args.metrics
                .address(args.listen.is_some(), args.listen.map(|listen| listen.ip())),
        ),
        listen: args.listen,
        http: args.http.options()?,
        options,
        host,
    })
}

/// Serves MCP on stdio or HTTP until the client leaves (stdio) or SIGINT or
/// SIGTERM; an error when calls were abandoned.
pub(super) async fn run(registry: &Registry, run: McpRun) -> CliResult {
    let host = Host::new(Arc::new(registry.clone()), &run.host)?;
    let McpOptions {
        name,
        version,
        schema_flavor,
    } = run.options;
    // The MCP port first, then the metrics port: a taken one fails at once.
    let mut transports = match run.listen {
        Some(address) => Transports::new(host).with(
            HttpTransport::new(bind(address).await?, run.http)
                .named(name, version)
                .schema_flavor(schema_flavor),
        ),
        None => Transports::new(host).with(
            StdioTransport::default()
                .named(name, version)
                .schema_flavor(schema_flavor),
        ),
    };
    if let Some(address) = run.metrics {
        transports = transports.metrics_on(address);
    }
    let served = transports.run(super::shutdown_signal()).await?;
    if served.abandoned > 0 {
        return Err(format!(
            "{} calls were still running when the grace period ended",
            served.abandoned
        )
        .into());
    }
    Ok(ExitCode::SUCCESS)
}

/// The MCP listener, or an error that says which address was taken.
pub(super) async fn bind(address: SocketAddr) -> Result<tokio::net::TcpListener, BoxError> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| format!("cannot serve MCP on {address}: {error}").into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    /// Every `--oauth-*` flag lands in the options: a flag parsed and
    /// then ignored fails here.
    #[test]
    fn every_oauth_flag_reaches_the_options() {
        let dir = std::env::temp_dir().join(format!("oauth-flags-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let secret = dir.join("secret");
        std::fs::write(&secret, "s3cret\n").unwrap();
        let secret = secret.to_str().unwrap();
        let args = [
            "bin",
            "mcp",
            "--listen",
            "127.0.0.1:0",
            "--oauth-issuer",
            "https://login.example/realms/tools",
            "--oauth-resource",
            "https://tools.example/mcp",
            "--oauth-audience",
            "api://tools",
            "--oauth-client-without-audience",
            "1example23456789",
            "--oauth-user-claim",
            "preferred_username",
            "--oauth-scope-claim",
            "realm_access.roles",
            "--oauth-scope",
            "tickets-service=tickets:write",
            "--oauth-algorithm",
            "RS256",
            "--oauth-leeway",
            "5s",
            "--oauth-client-id",
            "tools",
            "--oauth-client-secret-file",
            secret,
            "--oauth-ca-file",
            "/etc/ca.pem",
        ];
        let Some(Command::Mcp(args)) = Cli::try_parse_from(args).unwrap().command else {
            panic!("not the mcp command");
        };
        let oauth = args.http.options().unwrap().oauth.expect("OAuth on");
        let defaults = crate::mcp::OAuthOptions::new(
            "https://login.example/realms/tools",
            "https://tools.example/mcp",
        );
        let mut expected = defaults
            .clone()
            .user_claim("preferred_username")
            .scope_claims(["realm_access.roles"])
            .scope("tickets-service", "tickets:write");
        expected.audiences = vec![String::from("api://tools")];
        expected.clients_without_audience = vec![String::from("1example23456789")];
        expected.algorithms = vec![crate::mcp::Algorithm::RS256];
        expected.leeway = Duration::from_secs(5);
        expected.introspection = Some((String::from("tools"), String::from("s3cret")));
        expected.ca_file = Some(std::path::PathBuf::from("/etc/ca.pem"));
        assert_eq!(oauth, expected);
        // Each flag changed something from the defaults.
        assert_ne!(oauth.audiences, defaults.audiences);
        assert_ne!(
            oauth.clients_without_audience,
            defaults.clients_without_audience
        );
        assert_ne!(oauth.user_claim, defaults.user_claim);
        assert_ne!(oauth.scope_claims, defaults.scope_claims);
        assert_ne!(oauth.scopes, defaults.scopes);
        assert_ne!(oauth.algorithms, defaults.algorithms);
        assert_ne!(oauth.leeway, defaults.leeway);
        assert_ne!(oauth.introspection, defaults.introspection);
        assert_ne!(oauth.ca_file, defaults.ca_file);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
