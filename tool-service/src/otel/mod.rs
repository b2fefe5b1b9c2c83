//! OpenTelemetry traces: W3C trace context in and out of every request, one
//! span per request and per published frame, and OTLP/HTTP export, all
//! configured by the standard `OTEL_*` environment variables.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // Some(..) when OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) is set.
//! let otel = tool_service::otel::Otel::from_env()?;
//! tracing_subscriber::registry()
//!     .with(otel.as_ref().map(|otel| otel.layer()))
//!     .init();
//! // ... serve ...
//! if let Some(otel) = otel {
//!     otel.shutdown(std::time::Duration::from_secs(5));
//! }
//! # Ok(()) }
//! ```
//!
//! `tool_service::run!()` does all of this itself: its `serve` and `mcp`
//! commands export when an endpoint is set, and flush what is left within
//! the grace period at shutdown.
//!
#![doc = include_str!("../../docs/tracing.md")]

mod export;
#[cfg_attr(not(any(feature = "pulsar", feature = "mcp")), allow(dead_code))]
mod sample;

#[cfg(any(feature = "pulsar", feature = "mcp"))]
pub(crate) use sample::{decide, Decision, UNSAMPLED};

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::registry::LookupSpan;

/// Whether an [`Otel::layer`] was made: spans carry trace context only then.
static ENABLED: AtomicBool = AtomicBool::new(false);
/// Malformed `traceparent`s, ignored.
static IGNORED: AtomicU64 = AtomicU64::new(0);

/// The property (and `_meta`) key of the W3C `traceparent`, as the Pulsar
/// Java client writes it.
#[cfg_attr(not(any(feature = "pulsar", feature = "mcp")), allow(dead_code))]
pub(crate) const TRACEPARENT: &str = "traceparent";
/// The property (and `_meta`) key of the W3C `tracestate`.
#[cfg_attr(not(any(feature = "pulsar", feature = "mcp")), allow(dead_code))]
pub(crate) const TRACESTATE: &str = "tracestate";

/// Tracing as the `OTEL_*` variables configure it: the tracer provider and
/// its exporter. Make the subscriber's layer with [`Otel::layer`], and
/// [`Otel::shutdown`] it to flush what is left.
#[derive(Debug)]
pub struct Otel {
    provider: SdkTracerProvider,
    sampler: opentelemetry_sdk::trace::Sampler,
}

/// Why the `OTEL_*` variables do not describe an exporter.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// A variable has a value the exporter cannot use.
    #[error("{variable}={value}: {reason}")]
    Variable {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The OTLP exporter refused its configuration.
    #[error("the OTLP exporter: {0}")]
    Exporter(String),
}

impl Otel {
    /// Tracing as the environment describes it (see the [module](self)):
    /// `None` when no endpoint is set or tracing is disabled.
    ///
    /// ```
    /// // No OTEL_EXPORTER_OTLP_ENDPOINT here: tracing stays off.
    /// # std::env::remove_var("OTEL_EXPORTER_OTLP_ENDPOINT");
    /// # std::env::remove_var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    /// # std::env::remove_var("OTEL_TRACES_EXPORTER");
    /// assert!(tool_service::otel::Otel::from_env()?.is_none());
    /// # Ok::<(), tool_service::otel::OtelError>(())
    /// ```
    ///
    /// # Errors
    /// A variable the exporter cannot use, such as an `https://` endpoint.
    pub fn from_env() -> Result<Option<Self>, OtelError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// As [`Otel::from_env`], with the variables `var` looks up: for
    /// configuration kept somewhere else than the environment, and tests.
    ///
    /// ```
    /// use tool_service::otel::Otel;
    ///
    /// let otel = Otel::from_vars(|name| {
    ///     (name == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://127.0.0.1:4318".to_owned())
    /// })?;
    /// assert!(otel.is_some());
    /// # Ok::<(), tool_service::otel::OtelError>(())
    /// ```
    ///
    /// # Errors
    /// As [`Otel::from_env`].
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, OtelError> {
        let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|value| value.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let exporter = set("OTEL_TRACES_EXPORTER");
        match exporter.as_deref().map(str::trim) {
            Some(none) if none.eq_ignore_ascii_case("none") => return Ok(None),
            Some(otlp) if otlp.eq_ignore_ascii_case("otlp") => {}
            Some(other) => {
                return Err(OtelError::Variable {
                    variable: "OTEL_TRACES_EXPORTER",
                    value: other.to_owned(),
                    reason: "only `otlp` and `none` are supported".to_owned(),
                })
            }
            None => {
                if set("OTEL_EXPORTER_OTLP_ENDPOINT").is_none()
                    && set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_none()
                {
                    return Ok(None);
                }
            }
        }
        for variable in [
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ] {
            if let Some(value) = set(variable) {
                if !value.trim().starts_with("http://") {
                    return Err(OtelError::Variable {
                        variable,
                        value,
                        reason: "only http:// endpoints are supported; run the collector beside the service".to_owned(),
                    });
                }
                break;
            }
        }
        for variable in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            if let Some(value) = set(variable) {
                if value.trim() != "http/protobuf" {
                    return Err(OtelError::Variable {
                        variable,
                        value,
                        reason: "only http/protobuf is supported".to_owned(),
                    });
                }
                break;
            }
        }
        let sampler = sample::sampler(&set)?;
        let queue = export::QueueConfig::from_vars(&set)?;
        let exporter = {
            use opentelemetry_otlp::WithHttpConfig;
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_http_client(export::Http)
                .build()
                .map_err(|error| OtelError::Exporter(error.to_string()))?
        };
        let provider = SdkTracerProvider::builder()
            .with_sampler(sample::Presampled(sampler.clone()))
            .with_span_processor(export::Queue::start(exporter, queue))
            .build();
        Ok(Some(Self { provider, sampler }))
    }

    /// The `tracing` layer that turns spans into OpenTelemetry spans (INFO
    /// and above; the MCP SDK's own are left out). Making it turns trace
    /// context on: requests read it, responses carry it.
    pub fn layer<S>(&self) -> impl tracing_subscriber::Layer<S> + Send + Sync + 'static
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        use tracing_subscriber::Layer;
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        opentelemetry::global::set_tracer_provider(self.provider.clone());
        sample::install(self.sampler.clone());
        ENABLED.store(true, Ordering::Release);
        use tracing_subscriber::filter::{LevelFilter, Targets};
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("tool-service"))
            // Each costs a request a few allocations and clock reads.
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_filter(
                Targets::new()
                    .with_default(tracing::Level::INFO)
                    .with_target("rmcp", LevelFilter::OFF)
                    .with_target(sample::UNSAMPLED, LevelFilter::OFF),
            )
    }

    /// Sends what is queued and stops the exporter, waiting at most
    /// `timeout`: true when everything went out in time.
    pub fn shutdown(self, timeout: Duration) -> bool {
        ENABLED.store(false, Ordering::Release);
        self.provider.shutdown_with_timeout(timeout).is_ok()
    }
}

/// Spans dropped since the start: the export queue was full, or the
/// collector did not take their batch.
#[cfg_attr(not(any(feature = "pulsar", feature = "mcp")), allow(dead_code))]
pub(crate) fn spans_dropped() -> u64 {
    export::STATS.dropped.load(Ordering::Relaxed)
}

/// Spans the collector took since the start.
#[cfg_attr(not(any(feature = "pulsar", feature = "mcp")), allow(dead_code))]
pub(crate) fn spans_exported() -> u64 {
    export::STATS.exported.load(Ordering::Relaxed)
}

/// Malformed `traceparent`s seen since the start (each ignored: its
/// request started a trace of its own).
#[cfg_attr(not(any(feature = "pulsar", feature = "mcp")), allow(dead_code))]
pub(crate) fn contexts_ignored() -> u64 {
    IGNORED.load(Ordering::Relaxed)
}

#[cfg(any(feature = "pulsar", feature = "mcp"))]
/// Whether spans carry trace context.
#[inline]
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

#[cfg(any(feature = "pulsar", feature = "mcp"))]
/// The caller's context from `get` (message properties, `_meta`): `None`
/// when there is none, and when it is malformed (then counted).
pub(crate) fn extract<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Option<opentelemetry::Context> {
    let traceparent = get(TRACEPARENT)?;
    let carrier = Carrier {
        traceparent,
        tracestate: get(TRACESTATE),
    };
    use opentelemetry::propagation::TextMapPropagator;
    use opentelemetry::trace::TraceContextExt;
    let context = TraceContextPropagator::new().extract(&carrier);
    if context.span().span_context().is_valid() {
        Some(context)
    } else {
        IGNORED.fetch_add(1, Ordering::Relaxed);
        None
    }
}

#[cfg(any(feature = "pulsar", feature = "mcp"))]
/// The `traceparent` and `tracestate` of `context`, for `set`: what W3C's
/// propagator writes (never an empty `tracestate`). Written here rather
/// than by the SDK's propagator, whose `format!` of the ids costs a
/// request about 2% of its instructions (callgrind).
pub(crate) fn inject(context: &opentelemetry::Context, mut set: impl FnMut(&'static str, String)) {
    use opentelemetry::trace::{TraceContextExt, TraceFlags};
    let span = context.span();
    let span = span.span_context();
    if !span.is_valid() {
        return;
    }
    let mut traceparent = String::with_capacity(55);
    traceparent.push_str("00-");
    hex(&mut traceparent, &span.trace_id().to_bytes());
    traceparent.push('-');
    hex(&mut traceparent, &span.span_id().to_bytes());
    traceparent.push('-');
    hex(
        &mut traceparent,
        &[(span.trace_flags() & TraceFlags::SAMPLED).to_u8()],
    );
    set(TRACEPARENT, traceparent);
    let tracestate = span.trace_state().header();
    if !tracestate.is_empty() {
        set(TRACESTATE, tracestate);
    }
}

#[cfg(any(feature = "pulsar", feature = "mcp"))]
fn hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
}

#[cfg(any(feature = "pulsar", feature = "mcp"))]
struct Carrier<'a> {
    traceparent: &'a str,
    tracestate: Option<&'a str>,
}

#[cfg(any(feature = "pulsar", feature = "mcp"))]
impl opentelemetry::propagation::Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            TRACEPARENT => Some(self.traceparent),
            TRACESTATE => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec![TRACEPARENT, TRACESTATE]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(any(feature = "pulsar", feature = "mcp"))]
    use opentelemetry::trace::TraceContextExt;

    /// The variables of `pairs`, for `from_vars`.
    pub(super) fn vars<'a>(
        pairs: &'a [(&'a str, &'a str)],
    ) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn off_without_an_endpoint_or_when_disabled() {
        assert!(Otel::from_vars(vars(&[])).unwrap().is_none());
        let disabled = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ];
        assert!(Otel::from_vars(vars(&disabled)).unwrap().is_none());
        let none = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ];
        assert!(Otel::from_vars(vars(&none)).unwrap().is_none());
    }

    #[test]
    fn refuses_what_it_cannot_export_to_with_the_variable_named() {
        let https = [("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318")];
        let error = Otel::from_vars(vars(&https)).unwrap_err().to_string();
        assert!(
            error.starts_with("OTEL_EXPORTER_OTLP_ENDPOINT=https://collector:4318: only http://"),
            "{error}"
        );
        let grpc = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ];
        let error = Otel::from_vars(vars(&grpc)).unwrap_err().to_string();
        assert!(error.contains("only http/protobuf"), "{error}");
        let zipkin = [("OTEL_TRACES_EXPORTER", "zipkin")];
        let error = Otel::from_vars(vars(&zipkin)).unwrap_err().to_string();
        assert!(error.contains("only `otlp` and `none`"), "{error}");
        let queue = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "lots"),
        ];
        let error = Otel::from_vars(vars(&queue)).unwrap_err().to_string();
        assert!(
            error.starts_with("OTEL_BSP_MAX_QUEUE_SIZE=lots:"),
            "{error}"
        );
    }

    #[test]
    #[cfg(any(feature = "pulsar", feature = "mcp"))]
    fn extracts_a_valid_context_and_counts_a_malformed_one() {
        let good = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
        let context = extract(|key| (key == TRACEPARENT).then_some(good)).unwrap();
        let span = context.span();
        assert_eq!(
            span.span_context().trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert!(span.span_context().is_remote());
        assert!(extract(|_| None).is_none());
        let before = contexts_ignored();
        for bad in [
            "",
            "00-xyz",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        ] {
            assert!(extract(|key| (key == TRACEPARENT).then_some(bad)).is_none());
        }
        assert!(contexts_ignored() >= before + 3);
    }

    #[test]
    #[cfg(any(feature = "pulsar", feature = "mcp"))]
    fn injects_what_it_extracted() {
        let good = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
        let context = extract(|key| match key {
            TRACEPARENT => Some(good),
            TRACESTATE => Some("vendor=1"),
            _ => None,
        })
        .unwrap();
        let mut headers = Vec::new();
        inject(&context, |key, value| headers.push((key, value)));
        headers.sort();
        assert_eq!(
            headers,
            [
                (TRACEPARENT, good.to_owned()),
                (TRACESTATE, "vendor=1".to_owned())
            ]
        );
    }

    #[test]
    #[cfg(any(feature = "pulsar", feature = "mcp"))]
    fn injects_what_the_sdks_propagator_injects() {
        use opentelemetry::propagation::TextMapPropagator;
        use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
        let state = TraceState::from_key_value([("a", "1"), ("b", "two")]).unwrap();
        for (trace, span, flags, state) in [
            (1u128, 2u64, TraceFlags::SAMPLED, TraceState::default()),
            (u128::MAX, u64::MAX, TraceFlags::default(), state.clone()),
            (
                0x0af7651916cd43dd8448eb211c80319c,
                0xb7,
                TraceFlags::new(0xff),
                state,
            ),
        ] {
            let span = SpanContext::new(
                TraceId::from(trace),
                SpanId::from(span),
                flags,
                false,
                state,
            );
            let context = opentelemetry::Context::new().with_remote_span_context(span);
            let mut ours = std::collections::HashMap::new();
            inject(&context, |key, value| {
                ours.insert(key.to_owned(), value);
            });
            let mut sdk = std::collections::HashMap::new();
            TraceContextPropagator::new().inject_context(&context, &mut sdk);
            sdk.retain(|_, value| !value.is_empty());
            assert_eq!(ours, sdk);
        }
        let mut none = Vec::new();
        inject(&opentelemetry::Context::new(), |key, value| {
            none.push((key, value))
        });
        assert!(none.is_empty());
    }
}
