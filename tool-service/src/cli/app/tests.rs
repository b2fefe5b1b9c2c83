//! What an [`App`] runs, end to end through `run_from` and
//! `run_async_from`: the hooks, the runtime, the binary's own flags.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{App, HookError};
use crate::state::State;

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
    for command in super::own_args::RUNS_HANDLERS {
        let (_, plain, _) = run(App::new(), &["bin", command, "--help"]);
        let (_, documented, _) = run(App::new().args::<Documented>(), &["bin", command, "--help"]);
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
