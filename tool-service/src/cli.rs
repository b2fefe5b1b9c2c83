//! The command line of a tool-service binary.
//!
//! ```text
//! joke                       print the descriptors (same as `joke descriptors`)
//! joke descriptors --out DIR write tool-service/<id>.json and tool/<name>.json
//! joke list                  services, topics and tools
//! joke call tell-joke --args '{"topic": "cats"}' [--config '{…}'] [--user U]
//! joke serve [-p pulsar://host:6650] [--concurrency N] [--only SERVICE_ID]…
//! ```

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::Value;

use crate::wire::Request;
use crate::Registry;

#[derive(Debug, Parser)]
#[command(
    version,
    args_override_self = true,
    about = "TrustGraph tool services over Apache Pulsar",
    long_about = "TrustGraph tool services over Apache Pulsar.\n\nWithout a command, prints the descriptors of every service in this binary."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the `tool-service` and `tool` descriptors as one JSON config tree.
    Descriptors {
        /// Also write one file per item: DIR/tool-service/<id>.json and DIR/tool/<name>.json.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// List the services, their topics and their tools.
    List,
    /// Serve every service (or those named with --only) on a Pulsar broker
    /// until SIGINT or SIGTERM.
    Serve(ServeArgs),
    /// Run one request in-process, through the same decode → handler → encode
    /// path the broker uses, and print the response frame(s) as JSON lines.
    Call {
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
    },
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// The Pulsar broker.
    #[arg(short = 'p', long, env = "PULSAR_HOST", default_value = crate::broker::DEFAULT_PULSAR_URL)]
    pulsar_host: String,
    /// A Pulsar token for authentication. Prefer --pulsar-api-key-file or
    /// the environment: other local users can read a process's arguments.
    #[arg(long, env = "PULSAR_API_KEY", hide_env_values = true)]
    pulsar_api_key: Option<String>,
    /// A file holding the Pulsar token (read once at start; surrounding
    /// whitespace is ignored).
    #[arg(
        long,
        env = "PULSAR_API_KEY_FILE",
        value_name = "FILE",
        conflicts_with = "pulsar_api_key"
    )]
    pulsar_api_key_file: Option<PathBuf>,
    /// The advertised listener name to look topics up with.
    #[arg(long)]
    pulsar_listener: Option<String>,
    /// A PEM file with the CA that signed the broker's certificate (pulsar+ssl://).
    #[arg(long, env = "PULSAR_TLS_CA_FILE", value_name = "FILE")]
    pulsar_tls_ca_file: Option<PathBuf>,
    /// Requests each service handles at once [default: the service's
    /// `concurrency`, else 64].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    concurrency: Option<u32>,
    /// Requests each service takes ahead of its handlers; beyond that a
    /// non-persistent topic's requests are answered `overloaded` at once.
    #[arg(long, value_name = "N", default_value_t = crate::serve::RECEIVE_WINDOW as u32, value_parser = clap::value_parser!(u32).range(1..))]
    receive_window: u32,
    /// Serve only this service id (repeatable).
    #[arg(long, value_name = "SERVICE_ID")]
    only: Vec<String>,
    /// The largest response message to publish, in bytes, when it must be
    /// below the broker's own limit (a topic policy); the broker's
    /// announced maximum applies regardless [default: the broker's].
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(4096..))]
    max_message_size: Option<u32>,
    /// Threads that run the handlers [default: one per core]. On a small
    /// machine shared with the broker, 1 often serves I/O-bound tools fastest.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    worker_threads: Option<u16>,
    /// How long one request may run before it is cancelled and answered
    /// with a `timeout` error, for services whose `timeout` attribute sets
    /// none [default: 600s]. `SERVICE_ID=DURATION` sets one service's
    /// timeout, over its attribute. Repeatable; units ms, s, m, h.
    #[arg(long, value_name = "[SERVICE_ID=]DURATION", value_parser = parse_timeout)]
    timeout: Vec<(Option<String>, std::time::Duration)>,
    /// Seconds in-flight requests may take to finish after SIGINT/SIGTERM.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    grace_period: u64,
    /// Serve Prometheus metrics on this port.
    #[arg(short = 'P', long, default_value_t = crate::metrics::DEFAULT_METRICS_PORT, value_name = "PORT")]
    metrics_port: u16,
    /// The address to serve metrics on; the default, every interface, is
    /// what TrustGraph's processors do and what a scraper in another
    /// container needs.
    #[arg(long, default_value = "0.0.0.0", value_name = "ADDRESS")]
    metrics_address: std::net::IpAddr,
    /// Serve Prometheus metrics (the default; see --no-metrics).
    #[arg(long, overrides_with = "no_metrics")]
    metrics: bool,
    /// Do not serve Prometheus metrics.
    #[arg(long, overrides_with = "metrics")]
    no_metrics: bool,
    /// Also log each request's user, config and arguments (at info level).
    /// Config often holds credentials: use for debugging only.
    #[arg(long)]
    log_payloads: bool,
    /// The most verbose log level shown.
    #[arg(long, default_value = "info", value_parser = ["error", "warn", "info", "debug", "trace"])]
    log_level: String,
}

/// Runs the command line of this binary over every registered service.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     tool_service::run()
/// }
/// ```
pub fn run() -> ExitCode {
    // Unlocked handles: log lines written by worker threads must not wait on
    // a lock this thread would hold for the whole run.
    run_from(
        std::env::args_os(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )
}

/// Runs the command line with explicit arguments and output streams.
///
/// ```
/// let mut out = Vec::new();
/// let mut err = Vec::new();
/// let code = tool_service::cli::run_from(["bin", "descriptors"], &mut out, &mut err);
/// assert_eq!(code, std::process::ExitCode::SUCCESS);
/// let tree: serde_json::Value = serde_json::from_slice(&out).unwrap();
/// assert!(tree["tool-service"].is_object());
/// ```
pub fn run_from<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            let text = error.render().to_string();
            let _ = if error.use_stderr() {
                write!(err, "{text}")
            } else {
                write!(out, "{text}")
            };
            return ExitCode::from(error.exit_code().clamp(0, 255) as u8);
        }
    };
    let registry = match Registry::collect() {
        Ok(registry) => registry,
        Err(error) => {
            let _ = writeln!(err, "error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command.unwrap_or(Command::Descriptors { out: None }) {
        Command::Descriptors { out: dir } => descriptors(&registry, dir.as_deref(), out, err),
        Command::List => list(&registry, out),
        Command::Serve(args) => serve(&registry, args),
        Command::Call {
            name,
            arguments,
            config,
            user,
            id,
        } => call(&registry, &name, arguments, config, user, &id, out),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            let _ = writeln!(err, "error: {error}");
            ExitCode::FAILURE
        }
    }
}

type CliResult = Result<ExitCode, Box<dyn std::error::Error>>;

/// The token in `path`, without surrounding whitespace.
fn read_token_file(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        format!(
            "--pulsar-api-key-file {}: cannot read the token: {error}",
            path.display()
        )
    })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!(
            "--pulsar-api-key-file {}: the file is empty; it should hold the Pulsar token",
            path.display()
        ));
    }
    Ok(token.to_owned())
}

fn descriptors(
    registry: &Registry,
    dir: Option<&Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> CliResult {
    let tree = registry.descriptors();
    serde_json::to_writer_pretty(&mut *out, tree)?;
    writeln!(out)?;
    if let Some(dir) = dir {
        let items = tree.items();
        for (key, value) in &items {
            let path = dir.join(format!("{key}.json"));
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|error| format!("cannot create {}: {error}", parent.display()))?;
            }
            let mut text = serde_json::to_string_pretty(value)?;
            text.push('\n');
            std::fs::write(&path, text)
                .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        }
        writeln!(
            err,
            "wrote {} descriptor files to {}",
            items.len(),
            dir.display()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn serve(registry: &Registry, args: ServeArgs) -> CliResult {
    let level: tracing::Level = args.log_level.parse()?;
    // A second binary-level subscriber (e.g. set by the user) wins; keep it.
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
    crate::broker::forward_client_logs();
    if let Some(listener) = &args.pulsar_listener {
        return Err(format!(
            "--pulsar-listener {listener}: advertised listener names are not supported by this Pulsar client; connect to the listener's address directly"
        )
        .into());
    }
    let mut broker = crate::broker::BrokerOptions::new(args.pulsar_host);
    let token = match &args.pulsar_api_key_file {
        Some(path) => Some(read_token_file(path)?),
        None => args.pulsar_api_key.filter(|token| !token.is_empty()),
    };
    if let Some(token) = token {
        broker = broker.with_api_key(token);
    }
    if let Some(path) = args.pulsar_tls_ca_file {
        broker = broker.with_tls_ca_file(path);
    }
    let mut options = crate::serve::ServeOptions::new(String::new());
    options.broker = broker;
    options.concurrency = args.concurrency.map(|n| n as usize);
    options.only = args.only;
    options.receive_window = Some(args.receive_window as usize);
    options.max_message_size = args.max_message_size.map(|bytes| bytes as usize);
    options.grace_period = std::time::Duration::from_secs(args.grace_period);
    options.log_payloads = args.log_payloads;
    if !args.no_metrics {
        options.metrics = Some(std::net::SocketAddr::from((
            args.metrics_address,
            args.metrics_port,
        )));
    }
    for (service, limit) in args.timeout {
        match service {
            Some(id) => options.service_timeouts.push((id, limit)),
            None => options.timeout = limit,
        }
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = args.worker_threads {
        runtime.worker_threads(usize::from(threads));
    }
    let runtime = runtime.enable_all().build()?;
    let reports = runtime.block_on(crate::serve::serve(registry, &options, shutdown_signal()))?;
    let abandoned: u64 = reports.values().map(|report| report.abandoned).sum();
    if abandoned > 0 {
        return Err(
            format!("{abandoned} requests were still running when the grace period ended").into(),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `30s` (every service) or `joke-service=30s` (one service).
fn parse_timeout(text: &str) -> Result<(Option<String>, std::time::Duration), String> {
    match text.rsplit_once('=') {
        Some((id, limit)) if !id.is_empty() => {
            Ok((Some(id.to_owned()), crate::serve::parse_duration(limit)?))
        }
        _ => Ok((None, crate::serve::parse_duration(text)?)),
    }
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    tracing::info!("shutdown requested");
}

fn list(registry: &Registry, out: &mut dyn Write) -> CliResult {
    if registry.services().is_empty() {
        writeln!(out, "no tool services are registered in this binary")?;
    }
    for service in registry.services() {
        writeln!(out, "{}", service.id())?;
        writeln!(out, "  request   {}", service.request_queue())?;
        writeln!(out, "  response  {}", service.response_queue())?;
        writeln!(out, "  subscription {} (Shared)", service.subscription())?;
        if service.is_streaming() {
            writeln!(out, "  streaming")?;
        }
        for name in service.tool_names() {
            writeln!(out, "  tool      {name}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn call(
    registry: &Registry,
    name: &str,
    arguments: String,
    config: Option<String>,
    user: Option<String>,
    id: &str,
    out: &mut dyn Write,
) -> CliResult {
    let request = Request {
        user: user.filter(|user| !user.is_empty()),
        config: config.unwrap_or_else(|| String::from("{}")),
        arguments,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let frames = runtime.block_on(registry.call(name, id, request))?;
    for frame in &frames {
        let mut line = serde_json::Map::new();
        line.insert("id".into(), id.into());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> (ExitCode, String, String) {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let code = run_from(args.iter().copied(), &mut out, &mut err);
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn no_command_prints_the_descriptors() {
        let (code, out, _) = run(&["bin"]);
        assert_eq!(code, ExitCode::SUCCESS);
        let tree: Value = serde_json::from_str(&out).unwrap();
        assert!(tree["tool"].is_object());
    }

    #[test]
    fn help_goes_to_stdout_and_mistakes_to_stderr() {
        let (code, out, _) = run(&["bin", "--help"]);
        assert_eq!(code, ExitCode::SUCCESS);
        assert!(out.contains("descriptors") && out.contains("serve") && out.contains("call"));
        let (code, _, err) = run(&["bin", "serv"]);
        assert_eq!(code, ExitCode::from(2));
        assert!(err.contains("unrecognized subcommand"), "{err}");
    }

    #[test]
    fn serve_refuses_a_listener_name_it_cannot_honour() {
        let (code, _, err) = run(&["bin", "serve", "--pulsar-listener", "internal"]);
        assert_eq!(code, ExitCode::FAILURE);
        assert!(
            err.contains("advertised listener names are not supported"),
            "{err}"
        );
    }

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
        ]);
        assert_eq!(args.only, ["a", "b"]);
        assert_eq!(
            args.timeout,
            [
                (None, Duration::from_secs(30)),
                (Some(String::from("a")), Duration::from_millis(250))
            ]
        );
        assert_eq!(args.metrics_port, 2);
        assert!(!args.no_metrics);
        assert!(serve_args(&["--metrics", "--no-metrics"]).no_metrics);
        assert_eq!(serve_args(&[]).metrics_port, 8000);
        assert_eq!(
            serve_args(&[]).metrics_address,
            std::net::IpAddr::from([0, 0, 0, 0])
        );
        assert_eq!(
            serve_args(&["--metrics-address", "127.0.0.1"]).metrics_address,
            std::net::IpAddr::from([127, 0, 0, 1])
        );
        assert_eq!(
            serve_args(&["--metrics-address", "::1"]).metrics_address,
            "::1".parse::<std::net::IpAddr>().unwrap()
        );
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
        assert_eq!(read_token_file(&path).unwrap(), "eyJ-token");
        std::fs::write(&path, " \n").unwrap();
        assert!(read_token_file(&path)
            .unwrap_err()
            .contains("the file is empty"));
        let missing = read_token_file(&dir.join("missing")).unwrap_err();
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
