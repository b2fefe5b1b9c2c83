//! The `serve` command: its flags, and how they become [`ServeOptions`].

use std::path::PathBuf;
use std::process::ExitCode;

use crate::pulsar::broker::BrokerOptions;
use crate::pulsar::serve::ServeOptions;
use crate::registry::Registry;

use super::{BoxError, CliResult};

/// The broker options every command that connects takes.
#[derive(Debug, clap::Args)]
pub(crate) struct BrokerArgs {
    /// The Pulsar broker.
    #[arg(help_heading = super::headings::PULSAR, short = 'p', long, env = "PULSAR_HOST", default_value = crate::pulsar::broker::DEFAULT_PULSAR_URL)]
    pulsar_host: String,
    /// A Pulsar token for authentication. Prefer --pulsar-api-key-file or
    /// the environment: other local users can read a process's arguments.
    #[arg(help_heading = super::headings::PULSAR, long, env = "PULSAR_API_KEY", hide_env_values = true)]
    pulsar_api_key: Option<String>,
    /// A file holding the Pulsar token (read once at start; surrounding
    /// whitespace is ignored).
    #[arg(
        help_heading = super::headings::PULSAR,
        long,
        env = "PULSAR_API_KEY_FILE",
        value_name = "FILE",
        conflicts_with = "pulsar_api_key"
    )]
    pulsar_api_key_file: Option<PathBuf>,
    /// The advertised listener name to look topics up with.
    #[arg(help_heading = super::headings::PULSAR, long, env = "PULSAR_LISTENER")]
    pulsar_listener: Option<String>,
    /// A PEM file with the CA that signed the broker's certificate (pulsar+ssl://).
    #[arg(help_heading = super::headings::PULSAR, long, env = "PULSAR_TLS_CA_FILE", value_name = "FILE")]
    pulsar_tls_ca_file: Option<PathBuf>,
}

impl BrokerArgs {
    /// The broker options, with the token read from its file.
    pub(super) fn options(self) -> Result<BrokerOptions, BoxError> {
        if let Some(listener) = &self.pulsar_listener {
            return Err(format!(
                "--pulsar-listener {listener}: advertised listener names are not supported by this Pulsar client; connect to the listener's address directly"
            )
            .into());
        }
        let mut broker = BrokerOptions::new(self.pulsar_host);
        let token = match &self.pulsar_api_key_file {
            Some(path) => Some(super::read_token_file("--pulsar-api-key-file", path)?),
            None => self.pulsar_api_key.filter(|token| !token.is_empty()),
        };
        if let Some(token) = token {
            broker = broker.with_api_key(token);
        }
        if let Some(path) = self.pulsar_tls_ca_file {
            broker = broker.with_tls_ca_file(path);
        }
        Ok(broker)
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    broker: BrokerArgs,
    #[command(flatten)]
    host: super::host::HostArgs,
    /// Requests each service takes ahead of its handlers; beyond that a
    /// non-persistent topic's requests are answered `overloaded` at once.
    #[arg(help_heading = super::headings::PULSAR, long, env = "TOOL_SERVICE_RECEIVE_WINDOW", value_name = "N", default_value_t = crate::pulsar::serve::DEFAULT_RECEIVE_WINDOW as u32, value_parser = clap::value_parser!(u32).range(1..))]
    receive_window: u32,
    /// The largest response message to publish, in bytes, when it must be
    /// below the broker's own limit (a topic policy); the broker's
    /// announced maximum applies regardless [default: the broker's].
    #[arg(help_heading = super::headings::PULSAR, long, env = "TOOL_SERVICE_MAX_MESSAGE_SIZE", value_name = "BYTES", value_parser = clap::value_parser!(u32).range(4096..))]
    max_message_size: Option<u32>,
    /// Send the answers that are ready together as one Pulsar batch; no
    /// answer waits for a timer. Off: every answer its own message, for a
    /// consumer that cannot read batches (every Pulsar client can).
    #[arg(help_heading = super::headings::PULSAR, long, env = "TOOL_SERVICE_RESPONSE_BATCHING", value_name = "BOOL", default_value = "on", action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    response_batching: bool,
    /// Threads that run the handlers [default: one per core]. On a small
    /// machine shared with the broker, 1 often serves I/O-bound tools fastest.
    #[arg(help_heading = super::headings::SERVICES, long, env = "TOOL_SERVICE_WORKER_THREADS", value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    worker_threads: Option<u16>,
    #[command(flatten)]
    metrics: super::host::MetricsArgs,
    /// Also log each request's user, config and arguments (at info level).
    /// Config often holds credentials: use for debugging only.
    #[arg(help_heading = super::headings::LOGGING, long, env = "TOOL_SERVICE_LOG_PAYLOADS", value_parser = clap::builder::BoolishValueParser::new())]
    log_payloads: bool,
    #[command(flatten)]
    log: super::LogArgs,
    /// Once subscribed, announce the services and their tools to
    /// TrustGraph's config service (as the `announce` command does),
    /// retrying with backoff while it does not answer.
    #[arg(help_heading = super::headings::ANNOUNCE, long, env = "TOOL_SERVICE_ANNOUNCE", value_parser = clap::builder::BoolishValueParser::new())]
    announce: bool,
    /// The TrustGraph workspace to announce to.
    #[arg(help_heading = super::headings::ANNOUNCE, long, env = "TOOL_SERVICE_WORKSPACE", default_value = crate::pulsar::announce::DEFAULT_WORKSPACE, requires = "announce")]
    workspace: String,
    /// Overwrite tools and services of the same names that belong to
    /// someone else (refused otherwise).
    #[arg(help_heading = super::headings::ANNOUNCE, long, env = "TOOL_SERVICE_REPLACE", value_parser = clap::builder::BoolishValueParser::new(), requires = "announce")]
    replace: bool,
    /// Withdraw the announced items at shutdown. Off by default: replicas
    /// share their services, and one stopping must not take the tools away
    /// from the others.
    #[arg(help_heading = super::headings::ANNOUNCE, long, env = "TOOL_SERVICE_WITHDRAW_ON_EXIT", value_parser = clap::builder::BoolishValueParser::new(), requires = "announce")]
    withdraw_on_exit: bool,
    /// How long each attempt waits for the config service's replies before
    /// it is retried; units ms, s, m, h.
    #[arg(help_heading = super::headings::ANNOUNCE, long, env = "TOOL_SERVICE_ANNOUNCE_TIMEOUT", default_value = "10s", value_name = "DURATION", value_parser = crate::duration::parse, requires = "announce")]
    announce_timeout: std::time::Duration,
    #[command(flatten)]
    names: super::QueueNamesArgs,
    /// Also serve every tool over MCP (Streamable HTTP) at
    /// http://HOST:PORT/mcp, in this process; the drain and shutdown
    /// cover both.
    #[cfg(feature = "mcp")]
    #[arg(help_heading = super::headings::MCP_HTTP, long, env = "TOOL_SERVICE_MCP_LISTEN", value_name = "HOST:PORT")]
    mcp_listen: Option<std::net::SocketAddr>,
    #[cfg(feature = "mcp")]
    #[command(flatten)]
    mcp_http: super::mcp::McpHttpArgs,
    /// With --announce: announce the tools as `mcp-tool` tools at this URL
    /// of the MCP server --mcp-listen serves (as other containers reach it,
    /// e.g. http://joke-tools:8900/mcp), with the --mcp-token-file token.
    #[cfg(feature = "mcp")]
    #[arg(help_heading = super::headings::MCP_HTTP, long, env = "TOOL_SERVICE_MCP_URL", value_name = "URL", value_parser = super::parse_mcp_url, requires_all = ["announce", "mcp_listen"])]
    mcp_url: Option<String>,
}

/// What `serve` runs: Pulsar, the handler threads it asks for, and MCP
/// beside it.
#[derive(Debug)]
pub(super) struct ServeRun {
    options: ServeOptions,
    /// What is served, and each service's policy, on every transport.
    pub(super) host: crate::host::HostOptions,
    /// Where `/metrics` and the probes are served.
    metrics: Option<std::net::SocketAddr>,
    pub(super) worker_threads: Option<u16>,
    /// Where MCP is served beside Pulsar, how, and its name.
    #[cfg(feature = "mcp")]
    mcp: Option<(
        std::net::SocketAddr,
        crate::mcp::HttpOptions,
        crate::mcp::SchemaFlavor,
        Option<super::Meta>,
    )>,
}

/// The options `serve` runs with, and the handler threads it asks for;
/// logging is set up here, before any hook runs.
pub(super) fn prepare(args: ServeArgs, meta: Option<super::Meta>) -> Result<ServeRun, BoxError> {
    super::init_logging(&args.log)?;
    // The Pulsar client's warnings and errors, into `tracing`.
    crate::pulsar::compat::client_log::forward();
    let mut options = ServeOptions::with_broker(args.broker.options()?);
    if args.announce {
        let mut announce = crate::pulsar::serve::AnnounceOptions::new(args.workspace)
            .withdraw_on_exit(args.withdraw_on_exit);
        announce.timeout = args.announce_timeout;
        announce.queue_names = args.names.queue_names;
        if args.replace {
            announce.on_clash = crate::pulsar::announce::OnClash::Replace;
        }
        #[cfg(feature = "mcp")]
        if let Some(url) = &args.mcp_url {
            let mut target = crate::pulsar::announce::McpTarget::new(url.clone());
            target.token = args.mcp_http.options()?.token;
            announce.mcp = Some(target);
        }
        options.announce = Some(announce);
    }
    options.receive_window = Some(args.receive_window as usize);
    options.max_message_size = args.max_message_size.map(|bytes| bytes as usize);
    options.log_payloads = args.log_payloads;
    options.batch_responses = args.response_batching;
    #[cfg(feature = "mcp")]
    let mcp = match args.mcp_listen {
        Some(address) => Some((
            address,
            args.mcp_http.options()?,
            args.mcp_http.flavor(),
            meta,
        )),
        None => None,
    };
    #[cfg(not(feature = "mcp"))]
    let _ = meta;
    Ok(ServeRun {
        options,
        host: args.host.options(),
        metrics: args.metrics.unless_taken(args.metrics.address(true, None)),
        worker_threads: args.worker_threads,
        #[cfg(feature = "mcp")]
        mcp,
    })
}

/// Serves until SIGINT or SIGTERM, on Pulsar and (with --mcp-listen) over
/// MCP; an error when requests were abandoned.
pub(super) async fn serve(registry: &Registry, run: ServeRun) -> CliResult {
    use crate::host::{Host, Transports};
    let host = Host::new(std::sync::Arc::new(registry.clone()), &run.host)?;
    let mut transports = Transports::new(host);
    #[cfg(feature = "mcp")]
    if let Some((address, http, flavor, meta)) = run.mcp {
        // Bound first, so a taken port fails at once.
        let listener = super::mcp::bind(address).await?;
        let mut mcp = crate::mcp::HttpTransport::new(listener, http).schema_flavor(flavor);
        if let Some(meta) = meta {
            mcp = mcp.named(meta.name, meta.version);
        }
        transports = transports.with(mcp);
    }
    if let Some(address) = run.metrics {
        transports = transports.metrics_on(address);
    }
    let served = transports
        .with(crate::pulsar::serve::PulsarTransport::new(run.options))
        .run(super::shutdown_signal())
        .await?;
    abandoned(served.abandoned as u64)
}

/// Success, or an error when requests were abandoned at shutdown.
fn abandoned(abandoned: u64) -> CliResult {
    if abandoned > 0 {
        return Err(
            format!("{abandoned} requests were still running when the grace period ended").into(),
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::tests::run;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn serve_args(args: &[&str]) -> ServeArgs {
        let mut all = vec!["bin", "serve"];
        all.extend_from_slice(args);
        match Cli::try_parse_from(all).unwrap().command {
            Some(Command::Serve(args)) => args,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn repeated_flags_add_up_and_single_ones_take_the_last_value() {
        use std::time::Duration;
        let args = serve_args(&[
            "--only",
            "a",
            "--only",
            "b",
            "--timeout",
            "30s",
            "--timeout",
            "a=250ms",
            "--metrics-port",
            "1",
            "--metrics-port",
            "2",
            "--no-metrics",
            "--metrics",
            "--rate",
            "10/s",
            "--rate",
            "a=off",
        ]);
        let host = args.host.options();
        assert_eq!(host.only, ["a", "b"]);
        assert_eq!(host.timeout, Duration::from_secs(30));
        assert_eq!(
            host.service_timeouts,
            [(String::from("a"), Duration::from_millis(250))]
        );
        assert_eq!(
            host.rates,
            [
                (None, Some(crate::Rate::per_second(10))),
                (Some(String::from("a")), None)
            ]
        );
        let at = |address: [u8; 4], port| Some(std::net::SocketAddr::from((address, port)));
        assert_eq!(args.metrics.address(true, None), at([0, 0, 0, 0], 2));
        assert_eq!(
            serve_args(&["--metrics", "--no-metrics"])
                .metrics
                .address(true, None),
            None
        );
        assert_eq!(
            serve_args(&[]).metrics.address(true, None),
            at([0, 0, 0, 0], 8000)
        );
        // Off unless asked for, where that is the default (`mcp` on stdio).
        assert_eq!(serve_args(&[]).metrics.address(false, None), None);
        assert_eq!(
            serve_args(&["--metrics"]).metrics.address(false, None),
            at([0, 0, 0, 0], 8000)
        );
        assert_eq!(
            serve_args(&["-P", "9"]).metrics.address(false, None),
            at([0, 0, 0, 0], 9)
        );
        assert_eq!(
            serve_args(&["--metrics-address", "127.0.0.1"])
                .metrics
                .address(true, None),
            at([127, 0, 0, 1], 8000)
        );
        assert_eq!(
            serve_args(&["--metrics-address", "::1"])
                .metrics
                .address(true, None),
            Some("[::1]:8000".parse().unwrap())
        );
        // Beside a server for this machine only, on its address, unless
        // --metrics-address says otherwise.
        let loopback = Some(std::net::IpAddr::from([127, 0, 0, 1]));
        assert_eq!(
            serve_args(&[]).metrics.address(true, loopback),
            at([127, 0, 0, 1], 8000)
        );
        assert_eq!(
            serve_args(&[])
                .metrics
                .address(true, Some(std::net::IpAddr::from([10, 0, 0, 7]))),
            at([0, 0, 0, 0], 8000)
        );
        assert_eq!(
            serve_args(&["--metrics-address", "0.0.0.0"])
                .metrics
                .address(true, loopback),
            at([0, 0, 0, 0], 8000)
        );
    }

    #[test]
    fn log_flags_take_any_case_and_refuse_other_values() {
        let args = serve_args(&["--log-level", "DEBUG", "--log-format", "Json"]);
        assert_eq!(
            (args.log.log_level.as_str(), args.log.log_format.as_str()),
            ("DEBUG", "Json")
        );
        let defaults = serve_args(&[]);
        assert_eq!(
            (
                defaults.log.log_level.as_str(),
                defaults.log.log_format.as_str()
            ),
            ("info", "text")
        );
        let (code, _, err) = run(&["bin", "serve", "--log-format", "xml"]);
        assert_eq!(code, ExitCode::from(2));
        assert!(err.contains("--log-format"), "{err}");
    }

    #[test]
    fn serve_rejects_a_timeout_that_is_not_a_duration() {
        let (code, _, err) = run(&["bin", "serve", "--timeout", "echo-service=soon"]);
        assert_eq!(code, ExitCode::from(2));
        assert!(err.contains("`soon` is not a duration"), "{err}");
    }

    #[test]
    fn serve_rejects_zero_concurrency() {
        let (code, _, err) = run(&["bin", "serve", "--concurrency", "0"]);
        assert_eq!(code, ExitCode::from(2));
        assert!(err.contains("--concurrency"), "{err}");
    }

    #[test]
    fn the_token_file_is_read_once_and_trimmed() {
        let dir = std::env::temp_dir().join(format!("tool-service-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "  eyJ-token\n\n").unwrap();
        assert_eq!(
            super::super::read_token_file("--pulsar-api-key-file", &path).unwrap(),
            "eyJ-token"
        );
        std::fs::write(&path, " \n").unwrap();
        assert!(
            super::super::read_token_file("--pulsar-api-key-file", &path)
                .unwrap_err()
                .contains("the file is empty")
        );
        let missing = super::super::read_token_file("--pulsar-api-key-file", &dir.join("missing"))
            .unwrap_err();
        assert!(missing.contains("cannot read the token"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
        let (code, _, err) = run(&[
            "bin",
            "serve",
            "--pulsar-api-key",
            "t",
            "--pulsar-api-key-file",
            "f",
        ]);
        assert_eq!(code, ExitCode::from(2));
        assert!(err.contains("cannot be used with"), "{err}");
    }
}
