//! The command line of a tool-service binary.
//!
//! ```text
//! joke                       print the descriptors (same as `joke descriptors`)
//! joke descriptors --out DIR write tool-service/<id>.json and tool/<name>.json
//! joke list                  services, topics and tools
//! joke call tell-joke --args '{"topic": "cats"}' [--config '{…}'] [--user U]
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

/// Runs the command line of this binary over every registered service.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     tool_service::run()
/// }
/// ```
pub fn run() -> ExitCode {
    run_from(
        std::env::args_os(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
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
