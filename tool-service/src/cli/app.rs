//! [`App`]: the command line with start-up and shutdown hooks, from a plain
//! `main` or inside a Tokio runtime.

use std::ffi::OsString;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::process::ExitCode;

use clap::{ArgMatches, FromArgMatches};

use super::call::{call, CallArgs};
use super::descriptors::descriptors;
use super::list::list;
use super::{command, BoxError, Cli, CliResult, Command, Meta};
use crate::{registry::Registry, state::State};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type Setup<A> = Box<dyn FnOnce(A) -> BoxFuture<Result<State, BoxError>>>;
type Shutdown = Box<dyn FnOnce(State) -> BoxFuture<()>>;

/// The commands whose handlers run, and so take the binary's own flags.
const RUNS_HANDLERS: [&str; 3] = ["serve", "call", "mcp"];

/// A tool-service binary: its command line, the [`State`] its handlers
/// share, and how that state is built and closed.
///
/// The setup hook runs only for the commands that call handlers (`serve`
/// and `call`), never for `descriptors` or `list`, so emitting descriptors
/// in CI needs no database. If it fails, the process prints its error, exits
/// non-zero and subscribes to nothing. The shutdown hook runs after `serve`
/// has drained (or `call` has answered), with the same state, and may take
/// up to `--grace-period`; state values are dropped after it, in the
/// reverse order they were added.
///
/// ```no_run
/// use std::sync::Arc;
/// use tool_service::{tool_service, App, State};
///
/// struct Db { url: String }
///
/// impl Db {
///     async fn connect(url: String) -> Result<Self, std::io::Error> { Ok(Db { url }) }
///     async fn close(&self) {}
/// }
///
/// /// Where the data lives.
/// #[tool_service(topic = "where")]
/// async fn where_(#[state] db: &Db) -> String {
///     db.url.clone()
/// }
///
/// fn main() -> std::process::ExitCode {
///     App::new()
///         .setup(|| async {
///             let url = std::env::var("DB_URL").map_err(|_| "set DB_URL to the database's URL")?;
///             Ok::<_, tool_service::cli::HookError>(State::new().with(Db::connect(url).await?))
///         })
///         .shutdown(|state| async move {
///             if let Some(db) = state.get::<Db>() {
///                 db.close().await;
///             }
///         })
///         .run()
/// }
/// ```
///
/// # The binary's own flags
///
/// [`App::args`] adds a [`clap::Args`] struct to the commands that run
/// handlers (`serve`, `call`, `mcp`): its flags and their env vars appear in
/// their `--help`, under "BIN options", and the setup hook receives it
/// parsed.
///
/// ```
/// use std::path::PathBuf;
/// use tool_service::{tool_service, App, State};
///
/// /// Close a ticket.
/// #[tool_service(topic = "close-ticket")]
/// async fn close_ticket(#[state] db: &PathBuf) -> String {
///     format!("closed in {}", db.display())
/// }
///
/// #[derive(clap::Args)]
/// struct Settings {
///     /// The database file.
///     #[arg(long, env = "TICKETS_DB", default_value = "tickets.db")]
///     db: PathBuf,
///     /// Connections in the pool.
///     #[arg(long, env = "TICKETS_POOL_SIZE", default_value_t = 4)]
///     pool_size: u32,
/// }
///
/// let app = App::new().args::<Settings>().setup(|settings: Settings| async move {
///     assert_eq!(settings.pool_size, 8);
///     Ok::<_, tool_service::cli::HookError>(State::new().with(settings.db))
/// });
/// let mut out = Vec::new();
/// let mut err = Vec::new();
/// let args = ["tickets", "call", "no-such-tool", "--pool-size", "8"];
/// let code = app.run_from(args, &mut out, &mut err);
/// // The setup ran with the flag; then `call` found no such tool.
/// assert!(String::from_utf8(err).unwrap().contains("no tool or service named"));
/// # assert_eq!(code, std::process::ExitCode::FAILURE);
/// ```
///
/// A flag whose name, short form or field name is one of tool-service's
/// own in those commands is refused when the binary starts, with both
/// names in the message.
#[must_use = "nothing runs until `run` or `run_async` is called"]
pub struct App<A = NoArgs> {
    meta: Option<Meta>,
    /// The binary's one-line description in `--help`.
    about: Option<String>,
    setup: Option<Setup<A>>,
    shutdown: Option<Shutdown>,
    /// Adds the binary's own flags to a command that runs handlers.
    augment: fn(clap::Command) -> clap::Command,
    /// Reads them back from that command's matches.
    parse: fn(&ArgMatches) -> Result<A, clap::Error>,
}

/// The flags of an [`App`] without flags of its own: none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoArgs;

impl Default for App {
    fn default() -> Self {
        Self::new()
    }
}

/// The error a hook may return: anything that converts into a boxed error,
/// a `&str` or `String` message included.
pub type HookError = BoxError;

impl<A> std::fmt::Debug for App<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("meta", &self.meta)
            .field("about", &self.about)
            .field("setup", &self.setup.is_some())
            .field("shutdown", &self.shutdown.is_some())
            .field("args", &std::any::type_name::<A>())
            .finish()
    }
}

impl App {
    /// A binary with no hooks and no flags of its own: its handlers get an
    /// empty [`State`].
    pub fn new() -> Self {
        App {
            meta: None,
            about: None,
            setup: None,
            shutdown: None,
            augment: |command| command,
            parse: |_| Ok(NoArgs),
        }
    }

    /// Adds the flags of `S` to `serve`, `call` and `mcp`; the setup hook
    /// then receives them parsed (see [`App`]). A setup hook given before
    /// this call keeps running, without them.
    pub fn args<S>(self) -> App<S>
    where
        S: clap::Args + 'static,
    {
        App {
            meta: self.meta,
            about: self.about,
            setup: self
                .setup
                .map(|setup| -> Setup<S> { Box::new(move |_: S| setup(NoArgs)) }),
            shutdown: self.shutdown,
            augment: S::augment_args,
            parse: S::from_arg_matches,
        }
    }

    /// Builds the shared state before `serve` subscribes or `call` calls:
    /// open pools, read the environment. Runs on the runtime that will run
    /// the handlers.
    pub fn setup<F, Fut, E>(mut self, setup: F) -> Self
    where
        F: FnOnce() -> Fut + 'static,
        Fut: Future<Output = Result<State, E>> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        self.setup = Some(Box::new(move |NoArgs| {
            let future = setup();
            Box::pin(async move { future.await.map_err(Into::into) })
        }));
        self
    }
}

impl<S: clap::Args + 'static> App<S> {
    /// Builds the shared state from the binary's own flags (see
    /// [`App::args`]) before `serve` subscribes or `call` calls. Runs on
    /// the runtime that will run the handlers.
    pub fn setup<F, Fut, E>(mut self, setup: F) -> Self
    where
        F: FnOnce(S) -> Fut + 'static,
        Fut: Future<Output = Result<State, E>> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        self.setup = Some(Box::new(move |settings| {
            let future = setup(settings);
            Box::pin(async move { future.await.map_err(Into::into) })
        }));
        self
    }
}

impl<A: 'static> App<A> {
    /// The name and version `-V` shows, usually [`meta!()`](crate::meta!):
    /// without it, the name the binary was started under and tool-service's
    /// version.
    ///
    /// ```
    /// use tool_service::{cli::Meta, App};
    ///
    /// let meta = Meta { name: "joke", version: "0.3.1" };
    /// let mut out = Vec::new();
    /// let code = App::new().meta(meta).run_from(["./joke", "-V"], &mut out, &mut Vec::new());
    /// assert_eq!(code, std::process::ExitCode::SUCCESS);
    /// assert_eq!(String::from_utf8(out).unwrap(), "joke 0.3.1\n");
    /// ```
    pub fn meta(mut self, meta: Meta) -> Self {
        self.meta = Some(meta);
        self
    }

    /// The binary's one-line description at the top of `--help`;
    /// [`run!()`](crate::run!) gives it the calling crate's `description`.
    /// Without one (or with an empty one), tool-service's own.
    ///
    /// ```
    /// use tool_service::App;
    ///
    /// let mut out = Vec::new();
    /// let app = App::new().about("Joke tools for the support agent");
    /// app.run_from(["./joke", "--help"], &mut out, &mut Vec::new());
    /// assert!(String::from_utf8(out).unwrap().starts_with("Joke tools for the support agent"));
    /// ```
    pub fn about(mut self, about: impl Into<String>) -> Self {
        let about = about.into();
        self.about = (!about.trim().is_empty()).then_some(about);
        self
    }

    /// Closes what the setup opened, after the last request is answered.
    pub fn shutdown<F, Fut>(mut self, shutdown: F) -> Self
    where
        F: FnOnce(State) -> Fut + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.shutdown = Some(Box::new(move |state| Box::pin(shutdown(state))));
        self
    }

    /// Runs the command line from a plain `fn main`, starting the Tokio
    /// runtime that `serve` and `call` need. Inside a runtime, it refuses
    /// with a message that says to use [`App::run_async`].
    pub fn run(self) -> ExitCode {
        // Unlocked handles: log lines written by worker threads must not
        // wait on a lock this thread would hold for the whole run.
        self.run_from(
            std::env::args_os(),
            &mut std::io::stdout(),
            &mut std::io::stderr(),
        )
    }

    /// Runs the command line inside the current Tokio runtime (e.g. in
    /// `#[tokio::main]`). `serve --worker-threads` cannot resize a runtime
    /// that exists already and is refused.
    ///
    /// ```no_run
    /// #[tokio::main]
    /// async fn main() -> std::process::ExitCode {
    ///     tool_service::App::new().run_async().await
    /// }
    /// ```
    pub async fn run_async(self) -> ExitCode {
        self.run_async_from(
            std::env::args_os(),
            &mut std::io::stdout(),
            &mut std::io::stderr(),
        )
        .await
    }

    /// [`App::run_async`] with explicit arguments and output streams.
    pub async fn run_async_from<I, T>(
        self,
        args: I,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let (registry, command, settings) = match self.prepare(args, out, err) {
            Ok(prepared) => prepared,
            Err(code) => return code,
        };
        let result = if command.worker_threads().is_some() {
            Err(String::from("--worker-threads sizes the runtime `serve` starts, and this binary runs inside its own runtime (App::run_async); size that one instead").into())
        } else {
            self.execute(registry, *command, settings, out, err).await
        };
        report(result, err)
    }

    /// [`App::run`] with explicit arguments and output streams.
    pub fn run_from<I, T>(self, args: I, out: &mut dyn Write, err: &mut dyn Write) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        if tokio::runtime::Handle::try_current().is_ok() {
            let _ = writeln!(
                err,
                "error: tool_service::run!() (or App::run) was called inside a Tokio runtime, such as #[tokio::main]; there, use `tool_service::App::new().run_async().await`, or call run!() from a plain `fn main`"
            );
            return ExitCode::FAILURE;
        }
        let (registry, command, settings) = match self.prepare(args, out, err) {
            Ok(prepared) => prepared,
            Err(code) => return code,
        };
        let mut runtime = tokio::runtime::Builder::new_multi_thread();
        runtime.worker_threads(command.worker_threads().map_or_else(
            || std::thread::available_parallelism().map_or(1, usize::from),
            usize::from,
        ));
        if command.is_one_request() {
            // One request: one worker is plenty.
            runtime.worker_threads(1);
        }
        let result = match runtime.enable_all().build() {
            Ok(runtime) => runtime.block_on(self.execute(registry, *command, settings, out, err)),
            Err(error) => Err(error.into()),
        };
        report(result, err)
    }

    /// Builds the state, runs the command with it, then closes it.
    async fn execute(
        self,
        registry: Registry,
        command: Run,
        settings: Option<A>,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> CliResult {
        #[cfg(feature = "pulsar")]
        if let Run::Config(change, target) = command {
            return super::announce::run(&registry, change, target, out, err).await;
        }
        // Only `announce` and `withdraw` write to it.
        #[cfg(not(feature = "pulsar"))]
        let _ = err;
        let state = match (self.setup, settings) {
            (Some(setup), Some(settings)) => setup(settings)
                .await
                .map_err(|error| format!("start-up failed: {error}"))?,
            _ => State::new(),
        };
        let registry = registry.with_state(state);
        let (result, grace) = match command {
            Run::Call(args) => {
                let service = registry
                    .tool(&args.name)
                    .map(|(service, _)| service)
                    .or_else(|| registry.service(&args.name));
                if let Some(service) = service {
                    registry.check_state([service])?;
                }
                (
                    call(&registry, args, out).await,
                    std::time::Duration::from_secs(30),
                )
            }
            #[cfg(feature = "mcp")]
            Run::Mcp(run) => {
                let grace = run.grace_period();
                (super::mcp::run(&registry, run).await, grace)
            }
            #[cfg(feature = "pulsar")]
            Run::Serve(run) => {
                let grace = run.options.host.grace_period;
                (super::serve::serve(&registry, run).await, grace)
            }
            #[cfg(feature = "pulsar")]
            Run::Config(..) => unreachable!("config commands return before the setup"),
        };
        let mut result = result;
        if let Some(shutdown) = self.shutdown {
            let state = registry.state().clone();
            drop(registry);
            if tokio::time::timeout(grace, shutdown(state)).await.is_err() {
                let hook = format!(
                    "the shutdown hook did not finish within {}",
                    crate::duration::format(grace)
                );
                result = Err(match result {
                    Ok(_) => hook.into(),
                    Err(error) => format!("{}; and {hook}", with_advice(&*error)).into(),
                });
            }
        }
        // Whatever the hook did: the spans of the last requests go out.
        #[cfg(any(feature = "pulsar", feature = "mcp"))]
        super::logging::flush_traces(grace).await;
        result
    }
}

/// A command that runs handlers, with what it needs. One per process, and
/// boxed where it is made: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Run {
    Call(CallArgs),
    #[cfg(feature = "mcp")]
    Mcp(super::mcp::McpRun),
    #[cfg(feature = "pulsar")]
    Serve(super::serve::ServeRun),
    /// `announce` or `withdraw`: runs no handler, so no setup.
    #[cfg(feature = "pulsar")]
    Config(super::announce::Change, super::announce::TargetArgs),
}

impl Run {
    /// `call`, `announce` or `withdraw`: one exchange, no serving.
    fn is_one_request(&self) -> bool {
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

    fn worker_threads(&self) -> Option<u16> {
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
    fn prepare<I, T>(
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
        let command = command(meta, self.about.as_deref(), args.first());
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
            || {
                super::QueueNamesArgs::from_env()
                    .map(|names| Command::Descriptors { out: None, names })
            },
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
            Command::CheckSchemas(args) => super::schemas::check(&registry, &args, out),
            #[cfg(feature = "pulsar")]
            Command::Serve(args) => match super::serve::prepare(args, meta) {
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
                let change = super::announce::Change::Announce(on_clash);
                return Ok((registry, Box::new(Run::Config(change, target)), None));
            }
            #[cfg(feature = "pulsar")]
            Command::Withdraw { target } => {
                let change = super::announce::Change::Withdraw;
                return Ok((registry, Box::new(Run::Config(change, target)), None));
            }
            #[cfg(feature = "mcp")]
            Command::Mcp(args) => match super::mcp::prepare(args, &registry, meta) {
                Ok(run) => return Ok((registry, Box::new(Run::Mcp(run)), settings)),
                Err(error) => Err(error),
            },
            #[cfg(not(feature = "mcp"))]
            Command::Mcp { .. } => Err("`mcp` needs the `mcp` feature of tool-service, and this binary was built without it".into()),
            #[cfg(not(feature = "pulsar"))]
            Command::Serve { .. } => Err("`serve` needs the `pulsar` feature of tool-service, and this binary was built without it".into()),
            Command::Call {
                name,
                arguments,
                config,
                user,
                id,
            } => {
                let call = CallArgs {
                    name,
                    arguments,
                    config,
                    user,
                    id,
                };
                return Ok((registry, Box::new(Run::Call(call)), settings));
            }
        };
        Err(report(done, err))
    }
}

/// `command` with the binary's own flags added to the commands that run
/// handlers; a flag that takes the name, short form or id of one of ours
/// is refused, naming both.
fn with_own_args(
    mut command: clap::Command,
    augment: fn(clap::Command) -> clap::Command,
) -> Result<clap::Command, String> {
    let own = augment(clap::Command::new("own"));
    if own.get_arguments().next().is_none() {
        return Ok(command);
    }
    let heading = format!("{} options", command.get_name());
    for name in RUNS_HANDLERS {
        let Some(ours) = command.find_subcommand(name) else {
            continue;
        };
        for theirs in own.get_arguments() {
            let help = theirs.get_long() == Some("help") || theirs.get_short() == Some('h');
            if let Some(clash) = ours.get_arguments().find(|ours| clashes(ours, theirs)) {
                return Err(format!(
                    "the binary's own flag {} clashes with `{name} {}`, which tool-service defines; rename it",
                    describe(theirs),
                    describe(clash)
                ));
            }
            if help {
                return Err(format!(
                    "the binary's own flag {} clashes with `{name} --help (-h)`; rename it",
                    describe(theirs)
                ));
            }
        }
        command = command.mut_subcommand(name, |sub| {
            // clap's derive gives a documented flags struct's doc comment
            // to the command it augments: keep the subcommand's own.
            let about = sub.get_about().cloned();
            let long_about = sub.get_long_about().cloned();
            let sub =
                augment(sub.next_help_heading(heading.clone())).next_help_heading(None::<&str>);
            let sub = match about {
                Some(about) => sub.about(about),
                None => sub.about(None::<&str>),
            };
            match long_about {
                Some(long_about) => sub.long_about(long_about),
                None => sub.long_about(None::<&str>),
            }
        });
    }
    Ok(command)
}

/// Whether two arguments share an id, a long name or a short one.
fn clashes(a: &clap::Arg, b: &clap::Arg) -> bool {
    a.get_id() == b.get_id()
        || a.get_long().is_some() && a.get_long() == b.get_long()
        || a.get_short().is_some() && a.get_short() == b.get_short()
}

/// `--db (field `db`)`, or the short form when it has no long one.
fn describe(arg: &clap::Arg) -> String {
    let flag = match (arg.get_long(), arg.get_short()) {
        (Some(long), Some(short)) => format!("--{long} (-{short})"),
        (Some(long), None) => format!("--{long}"),
        (None, Some(short)) => format!("-{short}"),
        (None, None) => format!("<{}>", arg.get_id()),
    };
    format!("{flag} (field `{}`)", arg.get_id())
}

/// The exit code of a command's result, printing its error.
fn report(result: CliResult, err: &mut dyn Write) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(error) => {
            let _ = writeln!(err, "error: {}", with_advice(&*error));
            ExitCode::FAILURE
        }
    }
}

/// An error's message, with what to change on the command line when the
/// library's error says what is wrong in its own terms.
fn with_advice(error: &(dyn std::error::Error + 'static)) -> String {
    match std::iter::successors(Some(error), |error| error.source()).find_map(flag_advice) {
        Some(advice) => format!("{error}{advice}"),
        None => error.to_string(),
    }
}

/// The flags that fix `error`, with the punctuation that joins them to
/// its message.
#[cfg_attr(not(feature = "pulsar"), allow(unused_variables))]
fn flag_advice(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    #[cfg(feature = "pulsar")]
    {
        use crate::pulsar::announce::AnnounceError;
        use crate::pulsar::serve::ServeError;
        if let Some(error) = error.downcast_ref::<ServeError>() {
            return match error {
                ServeError::Metrics { .. } => Some(String::from(
                    "; pick another port with --metrics-port or turn metrics off with --no-metrics",
                )),
                // Its source is boxed: the chain's next error is the box,
                // which no downcast to `ConnectError` sees.
                ServeError::Connect { source, .. } => {
                    source.flag_advice().map(|advice| format!("; {advice}"))
                }
                _ => None,
            };
        }
        if let Some(error) = error.downcast_ref::<AnnounceError>() {
            return match error {
                AnnounceError::NoWorkspace { .. } => Some(String::from(" (--workspace)")),
                AnnounceError::Clash(_) => {
                    Some(String::from(" (pass --replace to overwrite them)"))
                }
                _ => None,
            };
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    fn run<A: 'static>(app: App<A>, args: &[&str]) -> (ExitCode, String, String) {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let code = app.run_from(args.iter().copied(), &mut out, &mut err);
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn descriptors_and_list_never_run_the_hooks() {
        let ran = Arc::new(AtomicBool::new(false));
        for command in ["descriptors", "list"] {
            let flag = Arc::clone(&ran);
            let app = App::new().setup(move || async move {
                flag.store(true, Ordering::SeqCst);
                Ok::<_, HookError>(State::new())
            });
            let (code, _, err) = run(app, &["bin", command]);
            assert_eq!(code, ExitCode::SUCCESS, "{err}");
        }
        assert!(!ran.load(Ordering::SeqCst));
    }

    #[test]
    fn a_failing_setup_is_reported_and_nothing_is_called() {
        let app = App::new().setup(|| async { Err::<State, _>("DB_URL is not set") });
        let (code, out, err) = run(app, &["bin", "call", "no-such-tool"]);
        assert_eq!(code, ExitCode::FAILURE);
        assert_eq!(err, "error: start-up failed: DB_URL is not set\n");
        assert_eq!(out, "");
    }

    #[test]
    fn call_runs_setup_then_shutdown_with_the_same_state() {
        let closed = Arc::new(std::sync::Mutex::new(None));
        let seen = Arc::clone(&closed);
        let app = App::new()
            .setup(|| async { Ok::<_, HookError>(State::new().with(7u32)) })
            .shutdown(move |state| async move {
                *seen.lock().unwrap() = state.get::<u32>().map(|value| *value);
            });
        // An unknown name fails after the setup, and the shutdown still runs.
        let (code, _, err) = run(app, &["bin", "call", "no-such-tool"]);
        assert_eq!(code, ExitCode::FAILURE);
        assert!(
            err.contains("no tool or service named `no-such-tool`"),
            "{err}"
        );
        assert_eq!(*closed.lock().unwrap(), Some(7));
    }

    /// Says hi.
    #[crate::tool_service(topic = "app-tests-hi")]
    async fn greet_from_state(#[state] greeting: &&'static str) -> &'static str {
        greeting
    }

    #[tokio::test]
    async fn run_async_calls_inside_the_current_runtime() {
        let app = App::new().setup(|| async { Ok::<_, HookError>(State::new().with("hi")) });
        let mut out = Vec::new();
        let mut err = Vec::new();
        let code = app
            .run_async_from(["bin", "call", "app-tests-hi-service"], &mut out, &mut err)
            .await;
        let out = String::from_utf8(out).unwrap();
        assert_eq!(
            code,
            ExitCode::SUCCESS,
            "{}",
            String::from_utf8(err).unwrap()
        );
        assert!(out.contains(r#""response":"hi""#), "{out}");
    }

    #[tokio::test]
    async fn run_async_refuses_to_size_a_runtime_it_does_not_own() {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let args = [
            "bin",
            "serve",
            "--worker-threads",
            "2",
            "-p",
            "pulsar://127.0.0.1:9",
        ];
        let code = App::new().run_async_from(args, &mut out, &mut err).await;
        assert_eq!(code, ExitCode::FAILURE);
        let err = String::from_utf8(err).unwrap();
        assert!(err.contains("--worker-threads sizes the runtime"), "{err}");
    }

    #[derive(Debug, clap::Args)]
    struct Clashing {
        /// Takes `serve`'s name.
        #[arg(long)]
        grace_period: Option<u64>,
    }

    #[derive(Debug, clap::Args)]
    struct Own {
        /// A flag of the binary's own.
        #[arg(long, default_value_t = 4)]
        pool_size: u32,
    }

    #[test]
    #[cfg(any(feature = "pulsar", feature = "mcp"))]
    fn the_binarys_own_flags_reach_the_setup_and_a_clash_is_refused() {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let store = Arc::clone(&seen);
        let app = App::new().args::<Own>().setup(move |own: Own| async move {
            *store.lock().unwrap() = Some(own.pool_size);
            Ok::<_, HookError>(State::new())
        });
        let (_, _, err) = run(app, &["bin", "call", "nothing", "--pool-size", "9"]);
        assert!(err.contains("no tool or service named"), "{err}");
        assert_eq!(*seen.lock().unwrap(), Some(9));
        // `list` does not take them.
        let (code, _, err) = run(
            App::new().args::<Own>(),
            &["bin", "list", "--pool-size", "9"],
        );
        assert_eq!(code, ExitCode::from(2), "{err}");
        // A setup given before `args` still runs.
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        let app = App::new()
            .setup(move || async move {
                flag.store(true, Ordering::SeqCst);
                Ok::<_, HookError>(State::new())
            })
            .args::<Own>();
        run(app, &["bin", "call", "nothing"]);
        assert!(ran.load(Ordering::SeqCst));
        let (code, _, err) = run(App::new().args::<Clashing>(), &["bin", "list"]);
        assert_eq!(code, ExitCode::FAILURE);
        assert!(
            err.contains("--grace-period (field `grace_period`)") && err.contains("rename it"),
            "{err}"
        );
    }

    /// The pool's settings (a doc comment clap's derive would make the
    /// about text of the command it is added to).
    #[derive(clap::Args)]
    #[cfg(all(feature = "pulsar", feature = "mcp"))]
    struct Documented {
        /// How many connections.
        #[arg(long, default_value_t = 4)]
        pool_size: u32,
    }

    #[test]
    #[cfg(all(feature = "pulsar", feature = "mcp"))]
    fn a_documented_flags_struct_keeps_each_commands_own_help() {
        for command in RUNS_HANDLERS {
            let (_, plain, _) = run(App::new(), &["bin", command, "--help"]);
            let (_, documented, _) =
                run(App::new().args::<Documented>(), &["bin", command, "--help"]);
            assert!(!documented.contains("The pool's settings"), "{documented}");
            assert!(documented.contains("--pool-size"), "{documented}");
            let about = |help: &str| help.split("Usage:").next().unwrap_or_default().to_owned();
            assert!(
                !about(&plain).trim().is_empty(),
                "`{command} --help`: {plain}"
            );
            assert_eq!(about(&documented), about(&plain), "`{command} --help`");
        }
    }

    #[test]
    fn run_inside_a_runtime_says_what_to_use_instead() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (code, out, err) = runtime.block_on(async { run(App::new(), &["bin", "list"]) });
        assert_eq!(code, ExitCode::FAILURE);
        assert_eq!(out, "");
        assert!(
            err.contains("called inside a Tokio runtime")
                && err.contains("App::new().run_async().await"),
            "{err}"
        );
    }

    #[cfg(feature = "pulsar")]
    #[test]
    fn the_command_line_adds_the_flags_that_fix_a_library_error() {
        use crate::pulsar::announce::AnnounceError;
        let metrics = crate::pulsar::serve::ServeError::Metrics {
            address: "0.0.0.0:8000".parse().unwrap(),
            source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
        };
        let library = metrics.to_string();
        assert!(!library.contains("--"), "{library}");
        assert_eq!(
            with_advice(&metrics),
            format!("{library}; pick another port with --metrics-port or turn metrics off with --no-metrics")
        );
        // Found anywhere in the chain of causes, as `?` boxes it.
        let workspace: BoxError = Box::new(AnnounceError::NoWorkspace {
            workspace: "w".into(),
            queue: "q".into(),
        });
        assert!(with_advice(&*workspace).ends_with("or announce to one that exists (--workspace)"));
        let timeout = AnnounceError::Timeout {
            queue: "q".into(),
            timeout: std::time::Duration::from_secs(1),
        };
        assert_eq!(with_advice(&timeout), timeout.to_string());
    }
}
