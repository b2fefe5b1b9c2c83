//! The command line of a tool-service binary.
//!
//! ```text
//! joke                       print the descriptors (same as `joke descriptors`)
//! joke descriptors --out DIR write tool-service/<id>.json and tool/<name>.json
//! joke list                  services, topics and tools
//! joke check-schemas [--schema-flavor spec|portable] [--provider gemini]… [--json]
//! joke call tell-joke --args '{"topic": "cats"}' [--config '{…}'] [--user U]
//! joke serve [-p pulsar://host:6650] [--concurrency N] [--only SERVICE_ID]… [--announce]
//! joke announce [--workspace WS] [--only SERVICE_ID]… [--replace] [--dry-run]
//! joke withdraw [--workspace WS] [--only SERVICE_ID]… [--dry-run]
//! joke mcp [--listen HOST:PORT] [--mcp-token-file FILE] [--mcp-allowed-host HOST]…
//! ```
//!
#![doc = include_str!("../../docs/operations.md")]
#![doc = include_str!("../../docs/deployment.md")]

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use serde_json::Value;

use crate::descriptor::QueueNames;
use crate::registry::Registry;
use crate::wire::Request;

#[cfg(feature = "pulsar")]
mod announce;
mod app;
#[cfg(any(feature = "pulsar", feature = "mcp"))]
mod fields;
#[cfg(any(feature = "pulsar", feature = "mcp"))]
mod host;
#[cfg(feature = "mcp")]
mod mcp;
mod schemas;
#[cfg(feature = "pulsar")]
mod serve;

pub use app::{App, HookError, NoArgs};

#[derive(Debug, Parser)]
#[command(
    args_override_self = true,
    about = DEFAULT_ABOUT,
    long_about = format!("{DEFAULT_ABOUT}.\n\n{WITHOUT_A_COMMAND}")
)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Option<Command>,
}

/// The binary's description when it gives none ([`App::about`]).
const DEFAULT_ABOUT: &str = "TrustGraph tool services over Apache Pulsar and MCP";

/// What the long help says after the description.
const WITHOUT_A_COMMAND: &str =
    "Without a command, prints the descriptors of every service in this binary.";

// Parsed once at start: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Print the `tool-service` and `tool` descriptors as one JSON config tree.
    Descriptors {
        /// Also write one file per item: DIR/tool-service/<id>.json and DIR/tool/<name>.json.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        #[command(flatten)]
        names: QueueNamesArgs,
    },
    /// List the services, their topics and their tools.
    List,
    /// Tell which LLM providers accept each tool's input schema, and why not.
    ///
    /// Gemini, OpenAI's strict mode and Anthropic, as their own client code
    /// decides, in the schema flavour an MCP server serves (`mcp
    /// --schema-flavor`); exits 1 when one refuses a tool.
    CheckSchemas(schemas::CheckArgs),
    /// Serve every service (or those named with --only) on a Pulsar broker
    /// until SIGINT or SIGTERM.
    #[cfg(feature = "pulsar")]
    Serve(serve::ServeArgs),
    /// Put the `tool-service` and `tool` items of every service (or those
    /// named with --only) in TrustGraph's config, in one request, so that
    /// running agents offer the tools. A tool or service of the same name
    /// that belongs to someone else is refused unless --replace is given.
    #[cfg(feature = "pulsar")]
    Announce {
        #[command(flatten)]
        target: announce::TargetArgs,
        /// Overwrite tools and services of the same names that belong to
        /// someone else.
        #[arg(long, env = "TOOL_SERVICE_REPLACE", value_parser = clap::builder::BoolishValueParser::new())]
        replace: bool,
    },
    /// Delete this binary's services from TrustGraph's config, with every
    /// tool that names one of them as its service, in one request.
    #[cfg(feature = "pulsar")]
    Withdraw {
        #[command(flatten)]
        target: announce::TargetArgs,
    },
    /// Serving needs the `pulsar` feature of tool-service, which this
    /// binary was built without.
    #[cfg(not(feature = "pulsar"))]
    #[command(hide = true, disable_help_flag = true)]
    Serve {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        ignored: Vec<OsString>,
    },
    /// Serve every tool (or those of the services named with --only) over
    /// the Model Context Protocol: on stdio, for clients that start this
    /// binary, or with --listen over Streamable HTTP at /mcp. Needs no
    /// broker.
    #[cfg(feature = "mcp")]
    Mcp(mcp::McpArgs),
    /// Serving over MCP needs the `mcp` feature of tool-service, which this
    /// binary was built without.
    #[cfg(not(feature = "mcp"))]
    #[command(hide = true, disable_help_flag = true)]
    Mcp {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        ignored: Vec<OsString>,
    },
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

/// The name and version a binary shows for `-V` and `--version`; what
/// [`meta!`](crate::meta!) reads from the calling crate, for
/// [`App::meta`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// The binary's name, e.g. `joke`.
    pub name: &'static str,
    /// The binary's version, e.g. `0.3.1`.
    pub version: &'static str,
}

/// The version of this crate, which `--version` names too.
const TOOL_SERVICE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The [`Meta`] of the calling crate's binary: `CARGO_BIN_NAME` (else
/// `CARGO_PKG_NAME`) and `CARGO_PKG_VERSION`, read when it is compiled.
///
/// ```
/// let meta = tool_service::meta!();
/// assert_eq!(meta.version, env!("CARGO_PKG_VERSION"));
/// ```
#[macro_export]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
macro_rules! meta {
    () => {
        $crate::cli::Meta {
            name: match ::core::option_env!("CARGO_BIN_NAME") {
                ::core::option::Option::Some(name) => name,
                ::core::option::Option::None => ::core::env!("CARGO_PKG_NAME"),
            },
            version: ::core::env!("CARGO_PKG_VERSION"),
        }
    };
}

/// Runs the command line of this binary over every registered service, its
/// `-V` showing the name and version of the calling crate's binary and its
/// `--help` the crate's `description`:
/// `App::new().meta(meta!()).about(env!("CARGO_PKG_DESCRIPTION")).run()`.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     tool_service::run!()
/// }
/// ```
///
/// `joke -V` then prints `joke 0.3.1`, and `joke --version` prints
/// `joke 0.3.1 (tool-service 0.1.0)`.
#[macro_export]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
macro_rules! run {
    () => {
        $crate::App::new()
            .meta($crate::meta!())
            .about(::core::env!("CARGO_PKG_DESCRIPTION"))
            .run()
    };
}

/// The command line, named and versioned by `meta`, or else by the file
/// name of `first` (the binary as started) and tool-service's version.
fn command(meta: Option<Meta>, about: Option<&str>, first: Option<&OsString>) -> clap::Command {
    let mut command = Cli::command();
    if let Some(about) = about {
        let about = about.trim().trim_end_matches('.').to_owned();
        command = command
            .long_about(format!("{about}.\n\n{WITHOUT_A_COMMAND}"))
            .about(about);
    }
    match meta {
        Some(meta) => command
            .name(meta.name)
            .version(meta.version)
            .long_version(format!(
                "{} (tool-service {TOOL_SERVICE_VERSION})",
                meta.version
            )),
        None => {
            let name = first
                .and_then(|first| Path::new(first).file_stem())
                .map(|name| name.to_string_lossy().into_owned())
                .filter(|name| !name.is_empty())
                .unwrap_or_else(|| String::from("tool-service"));
            command
                .name(name)
                .version(format!("(tool-service {TOOL_SERVICE_VERSION})"))
        }
    }
}

/// How the commands that run handlers (`serve`, `mcp`) log, on standard
/// error (standard output is the commands' own, and the MCP protocol's on
/// stdio).
#[cfg(any(feature = "pulsar", feature = "mcp"))]
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LogArgs {
    /// The most verbose log level shown. `RUST_LOG`, when set, takes its
    /// place (EnvFilter syntax, e.g. `info,tool_service=debug`).
    #[arg(long, env = "TOOL_SERVICE_LOG_LEVEL", default_value = "info", ignore_case = true, value_parser = ["error", "warn", "info", "debug", "trace"])]
    pub(crate) log_level: String,
    /// How log lines are written: `text` for people, `json` for a log
    /// stack (one object per line: timestamp, level, target, message and
    /// the fields of the spans it is in, such as the service and the
    /// request id).
    #[arg(long, env = "TOOL_SERVICE_LOG_FORMAT", default_value = "text", ignore_case = true, value_parser = ["text", "json"])]
    pub(crate) log_format: String,
}

/// The log's layer: one JSON object a line (`json`), or text.
#[cfg(any(feature = "pulsar", feature = "mcp"))]
fn log_layer<S>(json: bool) -> Box<dyn tracing_subscriber::Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    use tracing_subscriber::Layer;

    if json {
        tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(true)
            .with_writer(std::io::stderr)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .fmt_fields(fields::PlainFields)
            .with_writer(std::io::stderr)
            .boxed()
    }
}

/// Installs the log subscriber `args` describe.
#[cfg(any(feature = "pulsar", feature = "mcp"))]
fn init_logging(args: &LogArgs) -> Result<(), BoxError> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};

    // `tracing::Level` parses any case, as the flag accepts it.
    let level: tracing::Level = args.log_level.parse()?;
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::builder()
            .with_default_directive(level.into())
            .parse(&directives)
            .map_err(|error| format!("RUST_LOG={directives}: {error}"))?,
        // The MCP SDK's own lines (each session's client, each
        // notification) only when debugging; its transport's warnings (a
        // refused `Host`, say) always. Its session loop's lines are about
        // one client: a call of an unknown tool (already answered to the
        // client, in Rust debug text), a response to a client that left, a
        // session closed by the drain. Those show when debugging only; the
        // tools server logs what matters of them in its own words.
        _ => {
            let debugging = level >= tracing::Level::DEBUG;
            let sdk = if debugging {
                level
            } else {
                level.min(tracing::Level::WARN)
            };
            let sessions = if debugging { "debug" } else { "off" };
            EnvFilter::default()
                .add_directive(level.into())
                .add_directive(format!("rmcp={sdk}").parse()?)
                .add_directive(format!("rmcp::service={sessions}").parse()?)
        }
    };
    let json = args.log_format.eq_ignore_ascii_case("json");
    #[cfg(feature = "otel")]
    let otel = crate::otel::Otel::from_env()?;
    #[cfg(feature = "otel")]
    let traces = otel.as_ref().map(crate::otel::Otel::layer);
    #[cfg(not(feature = "otel"))]
    let traces: Option<tracing_subscriber::layer::Identity> = None;
    let installed = match traces {
        // The log level filters the log only; traces have their sampler.
        Some(traces) => tracing_subscriber::registry()
            .with(log_layer(json).with_filter(filter))
            .with(traces)
            .try_init(),
        // Nothing but the log: the level filters everything. A filter of
        // the whole subscriber costs less than one of a layer, which looks
        // its span up again at every enter, exit and close (about 550
        // instructions a request, `scripts/bench.sh served-instructions`).
        None => tracing_subscriber::registry()
            .with(filter)
            .with(log_layer(json))
            .try_init(),
    }
    .is_ok();
    #[cfg(feature = "otel")]
    if let Some(otel) = otel {
        if installed {
            *TRACES
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(otel);
        } else {
            otel.shutdown(std::time::Duration::ZERO);
        }
    }
    if !installed {
        // The application installed its own subscriber: it decides what is
        // shown, and says so where its lines go.
        tracing::info!(
            "a tracing subscriber is already installed; --log-level, --log-format and RUST_LOG do not apply to it"
        );
    }
    Ok(())
}

/// The traces `init_logging` exports, flushed by [`flush_traces`].
#[cfg(feature = "otel")]
static TRACES: std::sync::Mutex<Option<crate::otel::Otel>> = std::sync::Mutex::new(None);

/// Sends the spans still queued, waiting at most `grace`.
#[cfg(any(feature = "pulsar", feature = "mcp"))]
async fn flush_traces(grace: std::time::Duration) {
    #[cfg(feature = "otel")]
    {
        let otel = TRACES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(otel) = otel {
            let flushed = tokio::task::spawn_blocking(move || otel.shutdown(grace)).await;
            if !matches!(flushed, Ok(true)) {
                tracing::warn!(
                    grace = %crate::duration::format(grace),
                    "not every span was exported within the grace period"
                );
            }
        }
    }
    let _ = grace;
}

/// The token in `path`, without surrounding whitespace.
#[cfg(any(feature = "pulsar", feature = "mcp"))]
fn read_token_file(flag: &str, path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("{flag} {}: cannot read the token: {error}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!(
            "{flag} {}: the file is empty; it should hold the token",
            path.display()
        ));
    }
    Ok(token.to_owned())
}

/// How descriptors write a service's queues: `descriptors`, `announce` and
/// `serve --announce` take it.
#[derive(Debug, Clone, Copy, clap::Args)]
pub(crate) struct QueueNamesArgs {
    /// How `tool-service` items write their queues: `trustgraph`
    /// (`request:tg:joke`, which TrustGraph reads on every backend) or
    /// `pulsar` (`non-persistent://tg/request/joke`, for a release that
    /// reads only those). Both name the same Pulsar topic.
    #[arg(
        long,
        env = QUEUE_NAMES_ENV,
        default_value = "trustgraph",
        value_name = "FORM",
        value_parser = clap::builder::ValueParser::new(str::parse::<QueueNames>)
    )]
    pub(crate) queue_names: QueueNames,
}

/// The variable of `--queue-names`.
const QUEUE_NAMES_ENV: &str = "TOOL_SERVICE_QUEUE_NAMES";

impl QueueNamesArgs {
    /// As with no command (the descriptors are printed): the variable, or
    /// the default.
    pub(crate) fn from_env() -> Result<Self, BoxError> {
        let queue_names = match std::env::var(QUEUE_NAMES_ENV) {
            Ok(text) => text
                .parse()
                .map_err(|error| format!("{QUEUE_NAMES_ENV}: {error}"))?,
            Err(_) => QueueNames::default(),
        };
        Ok(Self { queue_names })
    }
}

/// An MCP server's bearer token: what `mcp` and `serve --mcp-listen` require
/// of every request, and what `announce --mcp-url` hands to TrustGraph.
#[cfg(any(feature = "pulsar", feature = "mcp"))]
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct McpTokenArgs {
    /// A file holding the MCP server's bearer token (`Authorization: Bearer
    /// TOKEN`; read once at start, surrounding whitespace ignored).
    #[arg(long, env = "TOOL_SERVICE_MCP_TOKEN_FILE", value_name = "FILE")]
    mcp_token_file: Option<PathBuf>,
    /// The bearer token itself. Prefer --mcp-token-file: a file is not
    /// inherited by every child process, as the environment is.
    #[arg(
        long,
        env = "TOOL_SERVICE_MCP_TOKEN",
        hide_env_values = true,
        conflicts_with = "mcp_token_file"
    )]
    mcp_token: Option<String>,
}

#[cfg(any(feature = "pulsar", feature = "mcp"))]
impl McpTokenArgs {
    /// The token, read from its file when one is named; none when neither
    /// is given (or the variable is empty).
    fn token(&self) -> Result<Option<String>, String> {
        match &self.mcp_token_file {
            Some(path) => read_token_file("--mcp-token-file", path).map(Some),
            None => Ok(self.mcp_token.clone().filter(|token| !token.is_empty())),
        }
    }
}

/// An MCP server's URL: `http://` or `https://`.
#[cfg(feature = "pulsar")]
fn parse_mcp_url(text: &str) -> Result<String, String> {
    if text.starts_with("http://") || text.starts_with("https://") {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "`{text}` is not an http:// or https:// URL; give the MCP server's URL, e.g. http://joke-tools:8900/mcp"
        ))
    }
}

/// A size in bytes: a number, with an optional unit (`B`, `KB`, `KiB`,
/// `MB`, `MiB`, `GB`, `GiB`, any case).
#[cfg(any(feature = "pulsar", feature = "mcp"))]
fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = unit.trim();
    let scale: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "kib" => 1 << 10,
        "mb" => 1_000_000,
        "mib" => 1 << 20,
        "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "`{unit}` is not a unit of size; use B, KB, KiB, MB, MiB, GB or GiB, e.g. 128MiB"
            ))
        }
    };
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size; give a number and a unit, e.g. 128MiB"))?;
    number
        .checked_mul(scale)
        .filter(|&bytes| bytes > 0)
        .and_then(|bytes| usize::try_from(bytes).ok())
        .ok_or_else(|| {
            format!("`{text}` is not a usable size: it must be above zero and fit in memory")
        })
}

#[cfg(any(feature = "pulsar", feature = "mcp"))]
fn parse_timeout(text: &str) -> Result<(Option<String>, std::time::Duration), String> {
    match text.rsplit_once('=') {
        Some((id, limit)) if !id.is_empty() => {
            Ok((Some(id.to_owned()), crate::duration::parse(limit)?))
        }
        _ => Ok((None, crate::duration::parse(text)?)),
    }
}

/// Completes on SIGINT or SIGTERM.
#[cfg(any(feature = "pulsar", feature = "mcp"))]
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

type CliResult = Result<ExitCode, BoxError>;

/// Any error, as hooks and commands report them.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn descriptors(
    registry: &Registry,
    dir: Option<&Path>,
    names: QueueNames,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> CliResult {
    let tree = registry.descriptors().clone().with_queue_names(names);
    serde_json::to_writer_pretty(&mut *out, &tree)?;
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

fn list(registry: &Registry, out: &mut dyn Write) -> CliResult {
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

/// What `call` runs.
#[derive(Debug)]
struct CallArgs {
    name: String,
    arguments: String,
    config: Option<String>,
    user: Option<String>,
    id: String,
}

async fn call(registry: &Registry, args: CallArgs, out: &mut dyn Write) -> CliResult {
    let CallArgs {
        name,
        arguments,
        config,
        user,
        id,
    } = args;
    let request = Request {
        user: user.filter(|user| !user.is_empty()),
        config: config.unwrap_or_else(|| String::from("{}")),
        arguments,
    };
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(super) fn run(args: &[&str]) -> (ExitCode, String, String) {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let code = App::new().run_from(args.iter().copied(), &mut out, &mut err);
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
    fn version_names_the_binary() {
        let meta = Meta {
            name: "joke",
            version: "0.3.1",
        };
        let version = |args: &[&str], meta: Option<Meta>| {
            let mut out = Vec::new();
            let mut err = Vec::new();
            let app = match meta {
                Some(meta) => App::new().meta(meta),
                None => App::new(),
            };
            let code = app.run_from(args.iter().copied(), &mut out, &mut err);
            assert_eq!(code, ExitCode::SUCCESS);
            assert_eq!(String::from_utf8(err).unwrap(), "");
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            version(&["/opt/bin/joke", "-V"], Some(meta)),
            "joke 0.3.1\n"
        );
        assert_eq!(
            version(&["joke", "--version"], Some(meta)),
            format!("joke 0.3.1 (tool-service {TOOL_SERVICE_VERSION})\n")
        );
        let plain = format!("joke (tool-service {TOOL_SERVICE_VERSION})\n");
        assert_eq!(version(&["/opt/bin/joke", "-V"], None), plain);
        assert_eq!(version(&["joke.exe", "--version"], None), plain);
        assert_eq!(
            version(&["", "-V"], None),
            format!("tool-service (tool-service {TOOL_SERVICE_VERSION})\n")
        );
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
    #[cfg(feature = "pulsar")]
    fn serve_refuses_a_listener_name_it_cannot_honour() {
        let (code, _, err) = run(&["bin", "serve", "--pulsar-listener", "internal"]);
        assert_eq!(code, ExitCode::FAILURE);
        assert!(
            err.contains("advertised listener names are not supported"),
            "{err}"
        );
    }
}

#[cfg(test)]
mod env_tests {
    use super::*;

    #[test]
    #[cfg(feature = "pulsar")]
    fn sizes_take_units_in_any_case() {
        assert_eq!(parse_size("128MiB"), Ok(128 << 20));
        assert_eq!(parse_size("64 mib"), Ok(64 << 20));
        assert_eq!(parse_size("500MB"), Ok(500_000_000));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("2kb"), Ok(2000));
        assert!(parse_size("0").unwrap_err().contains("above zero"));
        assert!(parse_size("12 parsecs")
            .unwrap_err()
            .contains("not a unit of size"));
        assert!(parse_size("MiB").unwrap_err().contains("not a size"));
        assert!(parse_size("99999999999GiB").is_err());
    }

    #[test]
    #[cfg(all(feature = "pulsar", feature = "mcp"))]
    fn the_memory_budget_flag_defaults_to_the_library_default() {
        let cli = Cli::command();
        for command in ["serve", "mcp"] {
            let flag = cli
                .find_subcommand(command)
                .unwrap()
                .get_arguments()
                .find(|arg| arg.get_id() == "memory_budget")
                .unwrap();
            let default = flag.get_default_values()[0].to_str().unwrap();
            assert_eq!(parse_size(default), Ok(crate::host::DEFAULT_MEMORY_BUDGET));
        }
    }

    /// The variable a flag of a long-running command reads: the broker's
    /// under TrustGraph's `PULSAR_` names, every other `TOOL_SERVICE_` and
    /// the flag's name, so that a container's environment configures what
    /// its command line would.
    fn expected_env(command: &str, id: &str) -> Option<String> {
        let name = match (command, id) {
            // One-off: a dry run is asked for, not deployed.
            (_, "dry_run") => return None,
            // The positive twin of --no-metrics, which has the variable.
            (_, "metrics") => return None,
            ("announce" | "withdraw", "timeout") => "announce_timeout",
            ("mcp", "listen") => "mcp_listen",
            (_, id) => id,
        };
        Some(if name.starts_with("pulsar_") {
            name.to_uppercase()
        } else {
            format!("TOOL_SERVICE_{}", name.to_uppercase())
        })
    }

    #[test]
    fn every_flag_of_the_serving_and_config_commands_has_its_variable() {
        let cli = Cli::command();
        let commands: &[&str] = &[
            #[cfg(feature = "pulsar")]
            "serve",
            #[cfg(feature = "pulsar")]
            "announce",
            #[cfg(feature = "pulsar")]
            "withdraw",
            #[cfg(feature = "mcp")]
            "mcp",
        ];
        let mut seen = 0;
        for &name in commands {
            let command = cli.find_subcommand(name).unwrap();
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                let env = arg.get_env().map(|env| env.to_string_lossy().into_owned());
                let expected = if id == "pulsar_host" {
                    Some(String::from("PULSAR_HOST"))
                } else {
                    expected_env(name, id)
                };
                assert_eq!(env, expected, "`{name} --{id}`");
                seen += 1;
            }
        }
        assert!(seen > 0 || commands.is_empty());
    }
}
