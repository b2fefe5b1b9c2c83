//! How a failed command is reported: its error, and when a library error
//! says what is wrong in its own terms, the flags that fix it.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::CliResult;

/// The exit code of a command's result, printing its error.
pub(super) fn report(result: CliResult, err: &mut dyn Write) -> ExitCode {
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
pub(super) fn with_advice(error: &(dyn std::error::Error + 'static)) -> String {
    match std::iter::successors(Some(error), |error| error.source()).find_map(flag_advice) {
        Some(advice) => format!("{error}{advice}"),
        None => error.to_string(),
    }
}

/// What fixes a metrics port that cannot be bound.
#[cfg(any(feature = "pulsar", feature = "mcp"))]
const METRICS_PORT_ADVICE: &str =
    "; pick another port with --metrics-port or turn metrics off with --no-metrics";

/// The flags that fix `error`, with the punctuation that joins them to
/// its message.
#[cfg_attr(not(any(feature = "pulsar", feature = "mcp")), allow(unused_variables))]
fn flag_advice(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    #[cfg(any(feature = "pulsar", feature = "mcp"))]
    if let Some(crate::host::RunError::Metrics { .. }) = error.downcast_ref() {
        return Some(String::from(METRICS_PORT_ADVICE));
    }
    #[cfg(feature = "pulsar")]
    {
        use crate::pulsar::announce::AnnounceError;
        use crate::pulsar::serve::ServeError;
        if let Some(error) = error.downcast_ref::<ServeError>() {
            return match error {
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

#[cfg(all(test, any(feature = "pulsar", feature = "mcp")))]
mod tests {
    use super::*;
    use crate::cli::BoxError;

    #[test]
    fn a_metrics_port_that_is_taken_names_the_flags_on_every_command() {
        // `mcp`, and `serve --mcp-listen`, run their transports on a host.
        let taken: BoxError = Box::new(crate::host::RunError::Metrics {
            address: "0.0.0.0:8000".parse().unwrap(),
            source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
        });
        assert_eq!(
            with_advice(&*taken),
            "cannot serve metrics on 0.0.0.0:8000: address in use; pick another port with \
             --metrics-port or turn metrics off with --no-metrics"
        );
    }

    #[cfg(feature = "pulsar")]
    #[test]
    fn the_command_line_adds_the_flags_that_fix_a_library_error() {
        use crate::pulsar::announce::AnnounceError;
        // Found anywhere in the chain of causes, as `?` boxes it.
        let workspace: BoxError = Box::new(AnnounceError::NoWorkspace {
            workspace: "w".into(),
            queue: "q".into(),
        });
        let library = workspace.to_string();
        assert!(!library.contains("--"), "{library}");
        assert!(with_advice(&*workspace).ends_with("or announce to one that exists (--workspace)"));
        let timeout = AnnounceError::Timeout {
            queue: "q".into(),
            timeout: std::time::Duration::from_secs(1),
        };
        assert_eq!(with_advice(&timeout), timeout.to_string());
    }
}
