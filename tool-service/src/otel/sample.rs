//! Sampling, decided before a request's span is made. A request that is not
//! sampled gets a span on the [`UNSAMPLED`] target, which the OpenTelemetry
//! layer does not see: it costs what a log span costs. Its context (not
//! sampled) is current while its handler runs (`trace::RequestSpan`), so
//! that its handler's own spans are not sampled either, and its frames
//! carry it.

use std::cell::RefCell;
use std::sync::{PoisonError, RwLock};

use opentelemetry::trace::{SpanContext, SpanKind, TraceContextExt, TraceFlags, TraceId};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{
    IdGenerator, RandomIdGenerator, Sampler, SamplingDecision, SamplingResult, ShouldSample,
};

use super::OtelError;

/// The target of the span of a request that is not sampled.
pub(crate) const UNSAMPLED: &str = "tool_service::unsampled";

/// The sampler of the installed layer, for [`decide`].
static SAMPLER: RwLock<Option<Sampler>> = RwLock::new(None);

thread_local! {
    /// The decision [`decide`] made, for the span being started on this
    /// thread: [`Presampled`] returns it rather than deciding again.
    static DECIDED: RefCell<Option<SamplingResult>> = const { RefCell::new(None) };
}

/// The sampler `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name,
/// as the specification defines them (default `parentbased_always_on`).
pub(super) fn sampler(set: &impl Fn(&str) -> Option<String>) -> Result<Sampler, OtelError> {
    let ratio = || {
        let value = set("OTEL_TRACES_SAMPLER_ARG").unwrap_or_else(|| "1.0".to_owned());
        match value.trim().parse::<f64>() {
            Ok(ratio) if (0.0..=1.0).contains(&ratio) => Ok(ratio),
            _ => Err(OtelError::Variable {
                variable: "OTEL_TRACES_SAMPLER_ARG",
                value,
                reason: "the sampling ratio is a number from 0 to 1".to_owned(),
            }),
        }
    };
    let parent_based = |root: Sampler| Sampler::ParentBased(Box::new(root));
    let Some(name) = set("OTEL_TRACES_SAMPLER") else {
        return Ok(parent_based(Sampler::AlwaysOn));
    };
    Ok(match name.trim() {
        "always_on" => Sampler::AlwaysOn,
        "always_off" => Sampler::AlwaysOff,
        "traceidratio" => Sampler::TraceIdRatioBased(ratio()?),
        "parentbased_always_on" => parent_based(Sampler::AlwaysOn),
        "parentbased_always_off" => parent_based(Sampler::AlwaysOff),
        "parentbased_traceidratio" => parent_based(Sampler::TraceIdRatioBased(ratio()?)),
        _ => {
            return Err(OtelError::Variable {
                variable: "OTEL_TRACES_SAMPLER",
                value: name,
                reason: "supported: always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio".to_owned(),
            })
        }
    })
}

/// The provider's sampler: `inner`, except for a request span that
/// [`decide`] already decided.
#[derive(Debug, Clone)]
pub(super) struct Presampled(pub(super) Sampler);

impl ShouldSample for Presampled {
    fn should_sample(
        &self,
        parent: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[opentelemetry::trace::Link],
    ) -> SamplingResult {
        DECIDED
            .with(|decided| decided.borrow_mut().take())
            .unwrap_or_else(|| {
                self.0
                    .should_sample(parent, trace_id, name, kind, attributes, links)
            })
    }
}

/// Makes `sampler` the one [`decide`] asks.
pub(super) fn install(sampler: Sampler) {
    *SAMPLER.write().unwrap_or_else(PoisonError::into_inner) = Some(sampler);
}

/// Whether a request, `caller` its context if it sent one, is recorded.
pub(crate) enum Decision {
    /// Recorded: make its span, then [`Decided::start`] it.
    Record(Decided),
    /// Not sampled: the context its handler runs in and its frames carry.
    Drop(Context),
}

/// A request that is recorded, and the sampler's result for it.
pub(crate) struct Decided {
    caller: Option<Context>,
    result: SamplingResult,
}

/// Asks the layer's sampler about a request span called `name`.
pub(crate) fn decide(caller: Option<Context>, name: &str, kind: SpanKind) -> Decision {
    let trace_id = match &caller {
        Some(caller) => caller.span().span_context().trace_id(),
        None => RandomIdGenerator::default().new_trace_id(),
    };
    let result = {
        let sampler = SAMPLER.read().unwrap_or_else(PoisonError::into_inner);
        match sampler.as_ref() {
            Some(sampler) => {
                sampler.should_sample(caller.as_ref(), trace_id, name, &kind, &[], &[])
            }
            None => SamplingResult {
                decision: SamplingDecision::RecordAndSample,
                attributes: Vec::new(),
                trace_state: Default::default(),
            },
        }
    };
    if result.decision != SamplingDecision::Drop {
        return Decision::Record(Decided { caller, result });
    }
    // As the SDK makes a span it drops: the trace's id, its own span id,
    // not sampled.
    let span = SpanContext::new(
        trace_id,
        RandomIdGenerator::default().new_span_id(),
        TraceFlags::default(),
        false,
        result.trace_state,
    );
    Decision::Drop(caller.unwrap_or_default().with_remote_span_context(span))
}

impl Decided {
    /// Starts `span`, made for this decision: the caller's child (or a
    /// root), recorded as decided.
    pub(crate) fn start(self, span: &tracing::Span) {
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        let _ = span.set_parent(self.caller.unwrap_or_default());
        DECIDED.with(|decided| *decided.borrow_mut() = Some(self.result));
        // Started now, on this thread, so that `Presampled` takes the result.
        let _ = span.context();
        DECIDED.with(|decided| decided.borrow_mut().take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::otel::tests::vars;

    #[test]
    fn reads_the_sampler_the_specification_names() {
        let named = |name: &str, arg: Option<&str>| {
            let mut pairs = vec![("OTEL_TRACES_SAMPLER", name)];
            pairs.extend(arg.map(|arg| ("OTEL_TRACES_SAMPLER_ARG", arg)));
            format!("{:?}", sampler(&vars(&pairs)).unwrap())
        };
        assert_eq!(
            format!("{:?}", sampler(&vars(&[])).unwrap()),
            "ParentBased(AlwaysOn)"
        );
        assert_eq!(named("always_off", None), "AlwaysOff");
        assert_eq!(
            named("traceidratio", Some("0.25")),
            "TraceIdRatioBased(0.25)"
        );
        assert_eq!(named("traceidratio", None), "TraceIdRatioBased(1.0)");
        assert_eq!(
            named("parentbased_traceidratio", Some("0")),
            "ParentBased(TraceIdRatioBased(0.0))"
        );
        let error = sampler(&vars(&[
            ("OTEL_TRACES_SAMPLER", "traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "half"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("OTEL_TRACES_SAMPLER_ARG=half: "),
            "{error}"
        );
        let error = sampler(&vars(&[("OTEL_TRACES_SAMPLER", "xray")]))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("OTEL_TRACES_SAMPLER=xray: supported: "),
            "{error}"
        );
    }

    #[test]
    fn a_decided_result_is_returned_once_then_the_sampler_decides() {
        let presampled = Presampled(Sampler::AlwaysOff);
        let ask = || {
            presampled
                .should_sample(None, TraceId::from(7), "s", &SpanKind::Internal, &[], &[])
                .decision
        };
        DECIDED.with(|decided| {
            *decided.borrow_mut() = Some(SamplingResult {
                decision: SamplingDecision::RecordAndSample,
                attributes: Vec::new(),
                trace_state: Default::default(),
            })
        });
        assert_eq!(ask(), SamplingDecision::RecordAndSample);
        assert_eq!(ask(), SamplingDecision::Drop);
    }
}
