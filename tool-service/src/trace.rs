//! Each request's span, and the W3C trace context it carries in and out.
//!
//! Without the `otel` feature, a request's span is the `request{service,
//! request_id}` of the logs, and the rest of this module is empty types.
//! With it, once an [`crate::otel::Otel::layer`] is installed, the span is
//! also an OpenTelemetry span named and attributed by the messaging (or
//! MCP) conventions, the child of the caller's context; each published
//! frame has a `send` span whose context the frame carries.

use std::future::Future;

use crate::log_text::Untrusted;
use crate::service::Service;

/// A request's span: the span of its logs and, when the request is sampled,
/// its OpenTelemetry span. Of a request that is not sampled, also the
/// context its handler runs in and its frames carry.
#[derive(Debug, Clone)]
pub(crate) struct RequestSpan {
    span: tracing::Span,
    #[cfg(feature = "otel")]
    unsampled: Option<opentelemetry::Context>,
}

impl std::ops::Deref for RequestSpan {
    type Target = tracing::Span;

    fn deref(&self) -> &tracing::Span {
        &self.span
    }
}

#[cfg(feature = "otel")]
pin_project_lite::pin_project! {
    /// A future polled with `context` (if any) current.
    struct InContext<F> {
        #[pin]
        future: F,
        context: Option<opentelemetry::Context>,
    }
}

#[cfg(feature = "otel")]
impl<F: Future> Future for InContext<F> {
    type Output = F::Output;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        let this = self.project();
        let _context = this.context.clone().map(opentelemetry::Context::attach);
        this.future.poll(cx)
    }
}

/// A [`RequestSpan`] entered, see [`RequestSpan::enter`].
#[cfg(feature = "pulsar")]
pub(crate) struct Entered<'a> {
    _span: tracing::span::Entered<'a>,
    #[cfg(feature = "otel")]
    _context: Option<opentelemetry::ContextGuard>,
}

impl RequestSpan {
    /// A span that records nothing, for tests.
    #[cfg(test)]
    pub(crate) fn none() -> Self {
        Self::logged(tracing::Span::none())
    }

    fn logged(span: tracing::Span) -> Self {
        Self {
            span,
            #[cfg(feature = "otel")]
            unsampled: None,
        }
    }

    /// `future`, polled in this span (and context).
    pub(crate) fn instrument<F: Future>(self, future: F) -> impl Future<Output = F::Output> {
        use tracing::Instrument;
        #[cfg(feature = "otel")]
        let future = InContext {
            future,
            context: self.unsampled,
        };
        future.instrument(self.span)
    }

    /// Enters this span (and context) until the guard is dropped.
    #[cfg(feature = "pulsar")]
    pub(crate) fn enter(&self) -> Entered<'_> {
        Entered {
            _span: self.span.enter(),
            #[cfg(feature = "otel")]
            _context: self.unsampled.clone().map(opentelemetry::Context::attach),
        }
    }

    /// The context the request's answer carries (over MCP, in `_meta`).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn headers(&self) -> Headers {
        #[cfg(feature = "otel")]
        if let Some(context) = &self.unsampled {
            return Headers::from_context(context);
        }
        Headers::of(&self.span)
    }
}

/// What the spans of one service's Pulsar topics are called.
#[cfg(feature = "pulsar")]
#[derive(Debug, Clone, Default)]
pub(crate) struct Topics {
    #[cfg(feature = "otel")]
    process: String,
    #[cfg(feature = "otel")]
    send: String,
    #[cfg(feature = "otel")]
    request: String,
    #[cfg(feature = "otel")]
    response: String,
    #[cfg(feature = "otel")]
    subscription: String,
}

#[cfg(feature = "pulsar")]
impl Topics {
    pub(crate) fn new(service: Service) -> Self {
        #[cfg(feature = "otel")]
        {
            let request = service.request_queue();
            let response = service.response_queue();
            Self {
                process: format!("process {request}"),
                send: format!("send {response}"),
                request,
                response,
                subscription: service.subscription(),
            }
        }
        #[cfg(not(feature = "otel"))]
        {
            let _ = service;
            Self::default()
        }
    }
}

/// The span of a request that came over Pulsar, its trace context read
/// with `property`.
#[cfg(feature = "pulsar")]
pub(crate) fn pulsar_request<'a>(
    service: Service,
    topics: &Topics,
    id: &str,
    property: impl Fn(&str) -> Option<&'a str>,
) -> RequestSpan {
    #[cfg(feature = "otel")]
    if crate::otel::enabled() {
        use crate::otel::{Decision, UNSAMPLED};
        use opentelemetry::trace::SpanKind;
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        let caller = crate::otel::extract(property);
        // Decided first, so that an unsampled request pays for no
        // OpenTelemetry span. A root in this process: the caller's context,
        // if any, is its parent, or else it starts a trace.
        let decided = match crate::otel::decide(caller, &topics.process, SpanKind::Consumer) {
            Decision::Drop(context) => {
                return RequestSpan {
                    span: tracing::info_span!(
                        target: UNSAMPLED,
                        parent: None,
                        "request",
                        service = %service.id(),
                        request_id = %Untrusted::id(id),
                    ),
                    unsampled: Some(context),
                }
            }
            Decision::Record(decided) => decided,
        };
        let span = tracing::info_span!(
            parent: None,
            "request",
            service = %service.id(),
            request_id = %Untrusted::id(id),
            otel.name = topics.process.as_str(),
            otel.kind = "consumer",
        );
        decided.start(&span);
        if !sampled(&span) {
            return RequestSpan::logged(span);
        }
        span.set_attribute("messaging.system", "pulsar");
        span.set_attribute("messaging.operation.name", "process");
        span.set_attribute("messaging.operation.type", "process");
        span.set_attribute("messaging.destination.name", topics.request.clone());
        span.set_attribute(
            "messaging.destination.subscription.name",
            topics.subscription.clone(),
        );
        span.set_attribute("messaging.message.conversation_id", id.to_owned());
        return RequestSpan::logged(span);
    }
    let _ = (topics, property);
    RequestSpan::logged(tracing::info_span!(
        "request",
        service = %service.id(),
        request_id = %Untrusted::id(id)
    ))
}

/// The span of a `tools/call` that came over MCP, its trace context read
/// from the request's `_meta` with `meta`.
#[cfg(feature = "mcp")]
pub(crate) fn mcp_request<'a>(
    service: Service,
    tool: &str,
    id: &str,
    meta: impl Fn(&str) -> Option<&'a str>,
) -> RequestSpan {
    #[cfg(feature = "otel")]
    if crate::otel::enabled() {
        use crate::otel::{Decision, UNSAMPLED};
        use opentelemetry::trace::SpanKind;
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        let name = format!("tools/call {tool}");
        let caller = crate::otel::extract(meta);
        let decided = match crate::otel::decide(caller, &name, SpanKind::Server) {
            Decision::Drop(context) => {
                return RequestSpan {
                    span: tracing::info_span!(
                        target: UNSAMPLED,
                        "request",
                        service = %service.id(),
                        request_id = %Untrusted::id(id),
                        transport = "mcp",
                    ),
                    unsampled: Some(context),
                }
            }
            Decision::Record(decided) => decided,
        };
        let span = tracing::info_span!(
            "request",
            service = %service.id(),
            request_id = %Untrusted::id(id),
            transport = "mcp",
            otel.name = name,
            otel.kind = "server",
        );
        decided.start(&span);
        if !sampled(&span) {
            return RequestSpan::logged(span);
        }
        span.set_attribute("mcp.method.name", "tools/call");
        span.set_attribute("gen_ai.operation.name", "execute_tool");
        span.set_attribute("gen_ai.tool.name", tool.to_owned());
        span.set_attribute("jsonrpc.request.id", id.to_owned());
        return RequestSpan::logged(span);
    }
    let _ = (tool, meta);
    RequestSpan::logged(tracing::info_span!(
        "request",
        service = %service.id(),
        request_id = %Untrusted::id(id),
        transport = "mcp",
    ))
}

/// Whether `span` (started) is sampled.
#[cfg(feature = "otel")]
fn sampled(span: &tracing::Span) -> bool {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    span.context().span().span_context().is_sampled()
}

/// Ends a request's span now rather than when its handler last ran: the
/// span covers the publishing of its answer.
#[cfg(feature = "pulsar")]
pub(crate) fn finished(span: &RequestSpan) {
    #[cfg(feature = "otel")]
    if crate::otel::enabled() {
        span.in_scope(|| {});
    }
    let _ = span;
}

/// Marks a request's span failed with `kind` (`error.type`).
#[cfg_attr(not(any(feature = "pulsar", feature = "mcp")), allow(dead_code))]
pub(crate) fn failed(span: &RequestSpan, kind: &str) {
    #[cfg(feature = "otel")]
    if span.unsampled.is_some() {
        return;
    }
    failed_span(&span.span, kind);
}

fn failed_span(span: &tracing::Span, kind: &str) {
    #[cfg(feature = "otel")]
    if crate::otel::enabled() {
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        span.set_attribute("error.type", kind.to_owned());
        span.set_status(opentelemetry::trace::Status::error(kind.to_owned()));
    }
    let _ = (span, kind);
}

/// The trace context one message carries: `traceparent` and `tracestate`.
#[derive(Debug, Default)]
pub(crate) struct Headers {
    #[cfg(feature = "otel")]
    pairs: Vec<(&'static str, String)>,
}

impl Headers {
    /// The context of `span`, when tracing is on.
    #[cfg_attr(not(any(feature = "mcp", feature = "otel")), allow(dead_code))]
    pub(crate) fn of(span: &tracing::Span) -> Self {
        #[cfg(feature = "otel")]
        if crate::otel::enabled() {
            use tracing_opentelemetry::OpenTelemetrySpanExt;
            return Self::from_context(&span.context());
        }
        let _ = span;
        Self::default()
    }

    #[cfg(feature = "otel")]
    fn from_context(context: &opentelemetry::Context) -> Self {
        let mut pairs = Vec::new();
        crate::otel::inject(context, |key, value| pairs.push((key, value)));
        Self { pairs }
    }

    /// Each header, for `set`.
    pub(crate) fn for_each(self, set: impl FnMut(&'static str, String)) {
        #[cfg(feature = "otel")]
        {
            let mut set = set;
            for (key, value) in self.pairs {
                set(key, value);
            }
        }
        #[cfg(not(feature = "otel"))]
        let _ = set;
    }
}

/// The span of one published message (`send {topic}`, PRODUCER), from the
/// publish until the broker's receipt: dropped, it ends.
#[cfg(feature = "pulsar")]
#[derive(Debug, Default)]
pub(crate) struct Send {
    #[cfg(feature = "otel")]
    span: Option<tracing::Span>,
    /// Of a request that is not sampled, no `send` span is made: its
    /// messages carry the request's context (not sampled either).
    #[cfg(feature = "otel")]
    unsampled: Option<opentelemetry::Context>,
}

#[cfg(feature = "pulsar")]
impl Send {
    /// A response frame of the request whose span is `request`.
    pub(crate) fn response(request: &RequestSpan, topics: &Topics) -> Self {
        #[cfg(feature = "otel")]
        if crate::otel::enabled() {
            use opentelemetry::trace::TraceContextExt;
            use tracing_opentelemetry::OpenTelemetrySpanExt;
            if let Some(context) = &request.unsampled {
                return Self {
                    span: None,
                    unsampled: Some(context.clone()),
                };
            }
            let context = request.span.context();
            if !context.span().span_context().is_sampled() {
                return Self {
                    span: None,
                    unsampled: Some(context),
                };
            }
            let span = tracing::info_span!(
                parent: &request.span,
                "send",
                otel.name = topics.send.as_str(),
                otel.kind = "producer",
            );
            return Self::attributed(span, &topics.response);
        }
        let _ = (request, topics);
        Self::default()
    }

    /// A request a client publishes on `topic`, in the current span.
    pub(crate) fn request(topic: &str) -> Self {
        #[cfg(feature = "otel")]
        if crate::otel::enabled() {
            let span = tracing::info_span!(
                "send",
                otel.name = format!("send {topic}"),
                otel.kind = "producer",
            );
            return Self::attributed(span, topic);
        }
        let _ = topic;
        Self::default()
    }

    #[cfg(feature = "otel")]
    fn attributed(span: tracing::Span, topic: &str) -> Self {
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        span.set_attribute("messaging.system", "pulsar");
        span.set_attribute("messaging.operation.name", "send");
        span.set_attribute("messaging.operation.type", "send");
        span.set_attribute("messaging.destination.name", topic.to_owned());
        Self {
            span: Some(span),
            unsampled: None,
        }
    }

    /// The context the message carries.
    pub(crate) fn headers(&self) -> Headers {
        #[cfg(feature = "otel")]
        {
            if let Some(span) = &self.span {
                return Headers::of(span);
            }
            if let Some(context) = &self.unsampled {
                return Headers::from_context(context);
            }
        }
        Headers::default()
    }

    /// The broker has the message: the span ends. Whether its request is
    /// sampled.
    pub(crate) fn end(self) -> bool {
        #[cfg(feature = "otel")]
        return self.span.is_some();
        #[cfg(not(feature = "otel"))]
        false
    }

    /// The broker did not take the message.
    pub(crate) fn failed(&self, kind: &str) {
        #[cfg(feature = "otel")]
        if let Some(span) = &self.span {
            failed_span(span, kind);
        }
        let _ = kind;
    }
}
