//! [`App`]: the command line with start-up and shutdown hooks, from a plain
//! `main` or inside a Tokio runtime.
//!
//! This file is the builder and the public surface; the work is in `app/`:
//! `run` (the runtime, the hooks around a command), `prepare` (parsing and
//! the commands that need no runtime), `own_args` (the binary's own flags)
//! and `advice` (errors with the flags that fix them).

use std::ffi::OsString;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::process::ExitCode;

use clap::ArgMatches;

use super::{BoxError, Meta};
use crate::state::State;

mod advice;
mod own_args;
mod prepare;
mod run;
#[cfg(test)]
mod tests;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type Setup<A> = Box<dyn FnOnce(A) -> BoxFuture<Result<State, BoxError>>>;
type Shutdown = Box<dyn FnOnce(State) -> BoxFuture<()>>;

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
    /// let meta = Meta { name: "joke", version: "0.3.1", description: "Jokes for the agent" };
    /// let mut out = Vec::new();
    /// let code = App::new().meta(meta).run_from(["./joke", "-V"], &mut out, &mut Vec::new());
    /// assert_eq!(code, std::process::ExitCode::SUCCESS);
    /// assert_eq!(String::from_utf8(out).unwrap(), "joke 0.3.1\n");
    /// ```
    pub fn meta(mut self, meta: Meta) -> Self {
        self.meta = Some(meta);
        self
    }

    /// The binary's one-line description at the top of `--help`, in place
    /// of its [`Meta::description`] ([`meta!()`](crate::meta!) reads the
    /// calling crate's `description`). Without either (or with empty ones),
    /// tool-service's own.
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
        self.run_in_current_runtime(args, out, err).await
    }

    /// [`App::run`] with explicit arguments and output streams.
    pub fn run_from<I, T>(self, args: I, out: &mut dyn Write, err: &mut dyn Write) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        self.run_in_new_runtime(args, out, err)
    }
}
