//! Parsing a command line into what to run: the commands that need no
//! runtime (descriptors, list, check-schemas, a mistake) run here; the
//! others become a [`Run`].

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::FromArgMatches;

use super::advice::report;
use super::own_args::{with_own_args, RUNS_HANDLERS};
use super::App;
use crate::cli::call::CallArgs;
use crate::cli::descriptors::descriptors;
use crate::cli::flags::QueueNamesArgs;
use crate::cli::list::list;
use crate::cli::{command, Cli, Command};
use crate::registry::Registry;

/// A command that runs handlers, with what it needs. One per process, and
/// boxed where it is made: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub(super) enum Run {
    Call(CallArgs),
    #[cfg(feature = "mcp")]
    Mcp(crate::cli::mcp::McpRun),
    #[cfg(feature = "pulsar")]
    Serve(crate::cli::serve::ServeRun),
    /// `announce` or `withdraw`: runs no handler, so no setup.
    #[cfg(feature = "pulsar")]
    Config(
        crate::cli::announce::Change,
        crate::cli::announce::TargetArgs,
    ),
}

impl Run {
    /// `call`, `announce` or `withdraw`: one exchange, no serving.
    pub(super) fn is_one_request(&self) -> bool {
        match self {
            Run::Call(_) => true,
            #[cfg(feature = "mcp")]
            Run::Mcp(_) => false,
            #[cfg(feature = "pulsar")]
            Run::Serve(_) => false,
            #[cfg(feature = "pulsar")]
            Run::Config(..) => true,
        }
    }

    /// The workers `serve --worker-threads` asks for.
    pub(super) fn worker_threads(&self) -> Option<u16> {
        match self {
            Run::Call(_) => None,
            #[cfg(feature = "mcp")]
            Run::Mcp(_) => None,
            #[cfg(feature = "pulsar")]
            Run::Serve(run) => run.worker_threads,
            #[cfg(feature = "pulsar")]
            Run::Config(..) => None,
        }
    }
}

impl<A: 'static> App<A> {
    /// Parses the arguments and collects the registry; runs what needs no
    /// runtime (descriptors, list, or reporting a mistake). `Err` holds the exit
    /// code when there is nothing more to do.
    pub(super) fn prepare<I, T>(
        &self,
        args: I,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<(Registry, Box<Run>, Option<A>), ExitCode>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let meta = self.meta;
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let about = self
            .about
            .as_deref()
            .or(meta.map(|meta| meta.description))
            .filter(|about| !about.trim().is_empty());
        let command = command(meta, about, args.first());
        let command = match with_own_args(command, self.augment) {
            Ok(command) => command,
            Err(error) => {
                let _ = writeln!(err, "error: {error}");
                return Err(ExitCode::FAILURE);
            }
        };
        let parsed = command.try_get_matches_from(args).and_then(|matches| {
            let settings = match matches.subcommand() {
                Some((name, matches)) if RUNS_HANDLERS.contains(&name) => {
                    Some((self.parse)(matches)?)
                }
                _ => None,
            };
            Ok((Cli::from_arg_matches(&matches)?, settings))
        });
        let (cli, settings) = match parsed {
            Ok(parsed) => parsed,
            Err(error) => {
                let text = error.render().to_string();
                let _ = if error.use_stderr() {
                    write!(err, "{text}")
                } else {
                    write!(out, "{text}")
                };
                return Err(ExitCode::from(error.exit_code().clamp(0, 255) as u8));
            }
        };
        // A binary with no services at all is refused by every command: most
        // often a library crate of services that the binary never names.
        let registry = match Registry::collect() {
            Ok(registry) if registry.services().is_empty() => {
                let _ = writeln!(
                    err,
                    "error: {}",
                    crate::registry::SelectError::NothingToServe
                );
                return Err(ExitCode::FAILURE);
            }
            Ok(registry) => registry,
            Err(error) => {
                let _ = writeln!(err, "error: {error}");
                return Err(ExitCode::FAILURE);
            }
        };
        let command = match cli.command.map_or_else(
            || QueueNamesArgs::from_env().map(|names| Command::Descriptors { out: None, names }),
            Ok,
        ) {
            Ok(command) => command,
            Err(error) => {
                let _ = writeln!(err, "error: {error}");
                return Err(ExitCode::FAILURE);
            }
        };
        let done = match command {
            Command::Descriptors { out: dir, names } => {
                descriptors(&registry, dir.as_deref(), names.queue_names, out, err)
            }
            Command::List => list(&registry, out),
            Command::CheckSchemas(args) => crate::cli::schemas::check(&registry, &args, out),
            #[cfg(feature = "pulsar")]
            Command::Serve(args) => match crate::cli::serve::prepare(args, meta) {
                Ok(run) => return Ok((registry, Box::new(Run::Serve(run)), settings)),
                Err(error) => Err(error),
            },
            #[cfg(feature = "pulsar")]
            Command::Announce { target, replace } => {
                let on_clash = if replace {
                    crate::pulsar::announce::OnClash::Replace
                } else {
                    crate::pulsar::announce::OnClash::Refuse
                };
                let change = crate::cli::announce::Change::Announce(on_clash);
                return Ok((registry, Box::new(Run::Config(change, target)), None));
            }
            #[cfg(feature = "pulsar")]
            Command::Withdraw { target } => {
                let change = crate::cli::announce::Change::Withdraw;
                return Ok((registry, Box::new(Run::Config(change, target)), None));
            }
            #[cfg(feature = "mcp")]
            Command::Mcp(args) => match crate::cli::mcp::prepare(args, &registry, meta) {
                Ok(run) => return Ok((registry, Box::new(Run::Mcp(run)), settings)),
                Err(error) => Err(error),
            },
            #[cfg(not(feature = "mcp"))]
            Command::Mcp { .. } => Err("`mcp` needs the `mcp` feature of tool-service, and this binary was built without it".into()),
            #[cfg(not(feature = "pulsar"))]
            Command::Serve { .. } => Err("`serve` needs the `pulsar` feature of tool-service, and this binary was built without it".into()),
            Command::Call(call) => {
                return Ok((registry, Box::new(Run::Call(call)), settings));
            }
        };
        Err(report(done, err))
    }
}
