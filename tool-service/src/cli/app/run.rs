//! Running a parsed command: on a Tokio runtime of its own (`App::run`) or
//! on the caller's (`App::run_async`), with the setup hook before it, the
//! shutdown hook after it, and the last spans flushed.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use super::advice::{report, with_advice};
use super::prepare::Run;
use super::App;
use crate::cli::call::call;
use crate::cli::CliResult;
use crate::registry::Registry;
use crate::state::State;

impl<A: 'static> App<A> {
    /// What [`App::run_async_from`] does: the command on the current
    /// runtime, which `--worker-threads` cannot resize.
    pub(super) async fn run_in_current_runtime<I, T>(
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

    /// What [`App::run_from`] does: the command on a runtime of its own,
    /// refused inside another.
    pub(super) fn run_in_new_runtime<I, T>(
        self,
        args: I,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> ExitCode
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
            return crate::cli::announce::run(&registry, change, target, out, err).await;
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
                    .tool(args.name())
                    .map(|(service, _)| service)
                    .or_else(|| registry.service(args.name()));
                if let (Some(service), true) = (service, args.runs_here()) {
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
                (crate::cli::mcp::run(&registry, run).await, grace)
            }
            #[cfg(feature = "pulsar")]
            Run::Serve(run) => {
                let grace = run.host.grace_period;
                (crate::cli::serve::serve(&registry, run).await, grace)
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
        crate::cli::logging::flush_traces(grace).await;
        result
    }
}
