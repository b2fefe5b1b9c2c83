//! How the commands that run handlers (`serve`, `mcp`) log and trace: the
//! `--log-level` and `--log-format` flags, the subscriber they install
//! (with the OpenTelemetry layer when `otel` is on and configured), and the
//! flush of the last spans at exit.

use super::fields::PlainFields;
use super::BoxError;

/// How the commands that run handlers (`serve`, `mcp`) log, on standard
/// error (standard output is the commands' own, and the MCP protocol's on
/// stdio).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LogArgs {
    /// The most verbose log level shown. `RUST_LOG`, when set, takes its
    /// place (EnvFilter syntax, e.g. `info,tool_service=debug`).
    #[arg(help_heading = super::headings::LOGGING, long, env = "TOOL_SERVICE_LOG_LEVEL", default_value = "info", ignore_case = true, value_parser = ["error", "warn", "info", "debug", "trace"])]
    pub(crate) log_level: String,
    /// How log lines are written: `text` for people, `json` for a log
    /// stack (one object per line: timestamp, level, target, message and
    /// the fields of the spans it is in, such as the service and the
    /// request id).
    #[arg(help_heading = super::headings::LOGGING, long, env = "TOOL_SERVICE_LOG_FORMAT", default_value = "text", ignore_case = true, value_parser = ["text", "json"])]
    pub(crate) log_format: String,
}

/// The log's layer: one JSON object a line (`json`), or text.
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
            .fmt_fields(PlainFields)
            .with_writer(std::io::stderr)
            .boxed()
    }
}

/// Installs the log subscriber `args` describe.
pub(super) fn init_logging(args: &LogArgs) -> Result<(), BoxError> {
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
pub(super) async fn flush_traces(grace: std::time::Duration) {
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
