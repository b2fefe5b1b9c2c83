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
// The guides below link other guides as files (for GitHub and a
// checkout). A label's first definition wins, so these, read first, send
// its labels to the items and sections of the rustdoc pages instead.
//! [`App`]: crate::App
//! [`App::args`]: crate::App::args
//! [`metrics`]: crate::metrics
//! [deployment]: #deployment
//! [mcp-guide]: crate::mcp
//! [mcp-https]: crate::mcp#https
//! [mcp-oauth]: crate::mcp#authorization-oauth-21
//! [mcp-schemas]: crate::mcp#schemas-every-llm-provider-accepts
//! [pulsar-guide]: crate::pulsar::serve
//! [pulsar-load]: crate::pulsar::serve#load
//! [pulsar-batches]: crate::pulsar::serve#answers-in-batches
//! [rate-limits]: crate::host#rate-limits
//! [trustgraph-guide]: crate::pulsar::announce
//! [metrics-probes]: crate::metrics#probes
//! [mcp-no-sessions]: crate::mcp#no-sessions-any-replica-answers-any-request
//!
#![doc = include_str!("../../docs/operations.md")]
#![doc = include_str!("../../docs/deployment.md")]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

// The commands, one file each; the `App` that runs them; what several of
// them share.
#[cfg(feature = "pulsar")]
mod announce;
mod app;
mod call;
mod descriptors;
#[cfg(any(feature = "pulsar", feature = "mcp"))]
mod fields;
mod flags;
#[cfg(any(feature = "pulsar", feature = "mcp"))]
mod headings;
#[cfg(any(feature = "pulsar", feature = "mcp"))]
mod host;
mod list;
#[cfg(any(feature = "pulsar", feature = "mcp"))]
mod logging;
#[cfg(feature = "mcp")]
mod mcp;
mod meta;
mod schemas;
#[cfg(feature = "pulsar")]
mod serve;
#[cfg(any(feature = "pulsar", feature = "mcp"))]
mod signal;

pub use app::{App, HookError, NoArgs};
pub use meta::Meta;

// What the command files take from here (`super::…`).
#[cfg(feature = "pulsar")]
use flags::parse_mcp_url;
use flags::QueueNamesArgs;
#[cfg(any(feature = "pulsar", feature = "mcp"))]
use flags::{parse_size, parse_timeout, read_token_file, McpTokenArgs};
#[cfg(any(feature = "pulsar", feature = "mcp"))]
use logging::{init_logging, LogArgs};
#[cfg(any(feature = "pulsar", feature = "mcp"))]
use signal::shutdown_signal;

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
    /// path the broker uses, and print the response frame(s) as JSON lines;
    /// with --pulsar, send it to the service running on a broker.
    Call(call::CallArgs),
}

/// The version of this crate, which `--version` names too.
const TOOL_SERVICE_VERSION: &str = env!("CARGO_PKG_VERSION");

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

type CliResult = Result<ExitCode, BoxError>;

/// Any error, as hooks and commands report them.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[cfg(test)]
pub(super) mod tests {
    use serde_json::Value;

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
    fn help_starts_with_the_binarys_description_and_heads_every_serving_flag() {
        let help = |app: App, args: &[&str]| {
            let mut out = Vec::new();
            app.run_from(args.iter().copied(), &mut out, &mut Vec::new());
            String::from_utf8(out).unwrap()
        };
        let meta = Meta {
            name: "joke",
            version: "0.3.1",
            description: "Jokes for the support agent",
        };
        assert!(help(App::new().meta(meta), &["joke", "--help"])
            .starts_with("Jokes for the support agent"));
        let about = App::new().meta(meta).about("Puns only");
        assert!(help(about, &["joke", "--help"]).starts_with("Puns only"));
        let none = Meta {
            description: " ",
            ..meta
        };
        assert!(help(App::new().meta(none), &["joke", "--help"])
            .starts_with("TrustGraph tool services"));
        #[cfg(feature = "mcp")]
        {
            // Each flag under the heading of its group: what follows the
            // authorization flags is not taken for one of them.
            let text = help(App::new(), &["joke", "mcp", "--help"]);
            let section = |heading: &str| {
                let start = text
                    .find(&format!("\n{heading}:\n"))
                    .unwrap_or_else(|| panic!("no {heading}: in\n{text}"));
                let rest = &text[start + heading.len() + 3..];
                rest[..rest.find("\n\n").unwrap_or(rest.len())].to_owned()
            };
            let oauth = section("MCP authorization (OAuth 2.1)");
            assert!(oauth.contains("--oauth-issuer"), "{oauth}");
            for flag in [
                "--only",
                "--concurrency",
                "--metrics-port",
                "--log-level",
                "--mcp-tls-cert",
            ] {
                assert!(
                    !oauth.contains(flag),
                    "{flag} under the authorization heading:\n{oauth}"
                );
            }
            assert!(section("Services and limits").contains("--concurrency"));
            assert!(section("Metrics and probes").contains("--metrics-port"));
            assert!(section("Logging").contains("--log-level"));
            assert!(section("MCP over HTTP").contains("--mcp-tls-cert"));
        }
    }

    #[test]
    fn version_names_the_binary() {
        let meta = Meta {
            name: "joke",
            version: "0.3.1",
            description: "",
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
