//! What a generated handler runs: decoding a request's config and
//! arguments into the service's types (under rules compiled once per
//! service), then calling the user's function; and the schemas and preset
//! check of those types. Generated code reaches it through `__private`.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::context::Context;
use crate::decode::{decode, decode_arguments, decode_showing, Part, Quoted};
use crate::error::ToolError;
use crate::schema::rules::Rules;
use crate::service::{HandlerFuture, Invocation, Lease};
use crate::state::State;
use crate::stream::Chunks;

/// The types a service decodes.
pub trait ServiceTypes: 'static {
    /// What `config` decodes into.
    type Config: DeserializeOwned + schemars::JsonSchema;
    /// What `arguments` decodes into.
    type Arguments: DeserializeOwned + schemars::JsonSchema;
}

/// A service's config type `C` and argument type `A`, as a value.
///
/// Generated code names the user's types in one function only,
/// `__tool_service_types() -> Types<…>`, which checks each of them with a
/// [`TypeProbe`](crate::probe::TypeProbe) and returns them as opaque types
/// (`impl ParameterType + IntoParameter<T>`). Everything else (the handler,
/// the schemas, the preset check) calls that function and works on what it
/// returns, so no other code asks the user's types for a trait, and a type
/// that lacks one is reported once, on the type as written.
pub struct Types<C, A>(PhantomData<fn() -> (C, A)>);

impl<C, A> Types<C, A> {
    /// The types whose markers are given (from
    /// [`TypeProbe`](crate::probe::TypeProbe)s, or `PhantomData` of
    /// [`NoConfig`] / [`NoArguments`] / a generated struct).
    pub fn new(_config: PhantomData<C>, _arguments: PhantomData<A>) -> Self {
        Self(PhantomData)
    }
}

impl<C, A> ServiceTypes for Types<C, A>
where
    C: DeserializeOwned + schemars::JsonSchema + 'static,
    A: DeserializeOwned + schemars::JsonSchema + 'static,
{
    type Config = C;
    type Arguments = A;
}

impl<C, A> Types<C, A>
where
    C: DeserializeOwned + schemars::JsonSchema + 'static,
    A: DeserializeOwned + schemars::JsonSchema + 'static,
{
    /// [`invoke`] with these types.
    pub fn invoke<F, Fut>(
        self,
        rules: &'static ArgumentRules,
        invocation: Invocation,
        body: F,
    ) -> HandlerFuture
    where
        F: FnOnce(C, A, Context, Chunks, State) -> Fut,
        Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
    {
        invoke::<Self, F, Fut>(rules, invocation, body)
    }

    /// [`invoke_blocking`] with these types.
    pub fn invoke_blocking<F>(
        self,
        rules: &'static ArgumentRules,
        invocation: Invocation,
        body: F,
    ) -> HandlerFuture
    where
        C: Send,
        A: Send,
        F: FnOnce(C, A, Context, Chunks, State) -> Result<String, ToolError> + Send + 'static,
    {
        invoke_blocking::<Self, F>(rules, invocation, body)
    }

    /// [`config_schema`] of these types.
    pub fn config_schema(self) -> schemars::Schema {
        config_schema::<Self>()
    }

    /// [`arguments_schema`] of these types.
    pub fn arguments_schema(self) -> schemars::Schema {
        arguments_schema::<Self>()
    }

    /// [`check_config`] of these types.
    pub fn check_config(self, text: &str) -> Result<(), ToolError> {
        check_config::<Self>(text)
    }
}

/// The rules a service's arguments are decoded under: compiled from its
/// argument schema on the first request, then shared by every request. One
/// `static` per service, in its handler.
#[derive(Debug)]
pub struct ArgumentRules {
    rules: std::sync::OnceLock<Rules>,
    tolerant: bool,
}

impl ArgumentRules {
    /// Rules that coerce what LLMs commonly write (`tolerant`), or take the
    /// type's own decoding only (`#[tool_service(strict)]`).
    pub const fn new(tolerant: bool) -> Self {
        Self {
            rules: std::sync::OnceLock::new(),
            tolerant,
        }
    }

    fn get<S: ServiceTypes>(&self) -> &Rules {
        self.rules
            .get_or_init(|| Rules::compile(&serde_json::Value::from(arguments_schema::<S>())))
    }
}

/// Decodes config and arguments, then runs `body` (the call of the user's
/// function and the conversion of its result).
pub fn invoke<S, F, Fut>(
    rules: &'static ArgumentRules,
    invocation: Invocation,
    body: F,
) -> HandlerFuture
where
    S: ServiceTypes,
    F: FnOnce(S::Config, S::Arguments, Context, Chunks, State) -> Fut,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    let Invocation {
        request,
        context,
        chunks,
        state,
        lease: _,
    } = invocation;
    match decode_both::<S>(rules, &request) {
        Ok((config, arguments)) => Box::pin(body(config, arguments, context, chunks, state)),
        Err(error) => Box::pin(std::future::ready(Err(error))),
    }
}

/// [`invoke`] for a plain `fn`: decodes here, then runs `body` on tokio's
/// blocking pool, in the request's span. The thread holds the call's
/// [`Lease`](crate::service::Lease): a call answered at its timeout (or
/// cancelled) keeps its concurrency permit and its place in the drain until
/// the function returns, since a thread cannot be stopped, and a WARN says
/// when it did. A panic on the thread is the handler's panic.
pub(crate) fn invoke_blocking<S, F>(
    rules: &'static ArgumentRules,
    invocation: Invocation,
    body: F,
) -> HandlerFuture
where
    S: ServiceTypes,
    S::Config: Send,
    S::Arguments: Send,
    F: FnOnce(S::Config, S::Arguments, Context, Chunks, State) -> Result<String, ToolError>
        + Send
        + 'static,
{
    let Invocation {
        request,
        context,
        chunks,
        state,
        lease,
    } = invocation;
    let (config, arguments) = match decode_both::<S>(rules, &request) {
        Ok(decoded) => decoded,
        Err(error) => return Box::pin(std::future::ready(Err(error))),
    };
    let current = Current::capture();
    Box::pin(blocking(lease, current, move || {
        body(config, arguments, context, chunks, state)
    }))
}

/// Runs `work` on the blocking pool, holding `lease` until it returns.
async fn blocking<F>(lease: Lease, current: Current, work: F) -> Result<String, ToolError>
where
    F: FnOnce() -> Result<String, ToolError> + Send + 'static,
{
    let answered = Arc::new(AtomicBool::new(false));
    let thread_answered = Arc::clone(&answered);
    let started = std::time::Instant::now();
    let thread = tokio::task::spawn_blocking(move || {
        let _lease = lease;
        let outcome = current.in_scope(work);
        if thread_answered.load(Ordering::Acquire) {
            current.in_scope(|| {
                tracing::warn!(
                    ran = ?started.elapsed(),
                    "a blocking handler returned after its call was answered (timed out or cancelled); \
                     its concurrency permit was held until now"
                );
            });
        }
        outcome
    });
    // Marks the call answered if this future is dropped before the thread
    // is done: at the timeout, or when the client cancels.
    let mut waiting = Answered(Some(answered));
    let joined = thread.await;
    waiting.0 = None;
    match joined {
        Ok(outcome) => outcome,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => Err(ToolError::with_type(
            ToolError::UNAVAILABLE,
            "the service is shutting down; try again",
        )),
    }
}

/// Sets its flag when dropped while still holding it.
struct Answered(Option<Arc<AtomicBool>>);

impl Drop for Answered {
    fn drop(&mut self) {
        if let Some(flag) = self.0.take() {
            flag.store(true, Ordering::Release);
        }
    }
}

/// Where a request's work is, to take to another thread: the current span
/// and, with `otel`, the current OpenTelemetry context (which is all an
/// unsampled request has), so that spans the work makes there are the
/// request's children, sampled or not as it is.
#[derive(Debug)]
pub(crate) struct Current {
    span: tracing::Span,
    #[cfg(feature = "otel")]
    context: opentelemetry::Context,
}

impl Current {
    /// Where the calling thread's work is now.
    pub(crate) fn capture() -> Self {
        Self {
            span: tracing::Span::current(),
            #[cfg(feature = "otel")]
            context: opentelemetry::Context::current(),
        }
    }

    /// Runs `work` there.
    pub(crate) fn in_scope<R>(&self, work: impl FnOnce() -> R) -> R {
        #[cfg(feature = "otel")]
        let _context = self.context.clone().attach();
        self.span.in_scope(work)
    }
}

/// A request's config and arguments, decoded as the service's types.
fn decode_both<S: ServiceTypes>(
    rules: &'static ArgumentRules,
    request: &crate::wire::Request,
) -> Result<(S::Config, S::Arguments), ToolError> {
    let config = decode::<S::Config>(&request.config, Part::Config)?;
    let arguments =
        decode_arguments::<S::Arguments>(&request.arguments, rules.get::<S>(), rules.tolerant)?;
    Ok((config, arguments))
}

/// The `#[state]` value of type `T`, or the error a request gets when it was
/// never provided (`serve` and `call` check before they start, so only a
/// registry built by hand can get here).
pub fn state<T: Send + Sync + 'static>(
    state: &State,
    service: &'static str,
) -> Result<std::sync::Arc<T>, ToolError> {
    state.get::<T>().ok_or_else(|| {
        ToolError::with_type(
            ToolError::MISSING_STATE,
            format!(
                "service `{service}` takes a `{}` as #[state], and none was provided",
                std::any::type_name::<T>()
            ),
        )
    })
}

/// The JSON schema of a service's config type.
pub fn config_schema<S: ServiceTypes>() -> schemars::Schema {
    schemars::SchemaGenerator::default().into_root_schema_for::<S::Config>()
}

/// The JSON schema of a service's argument type, without `$schema`
/// unless the type states one itself (MCP's default dialect is 2020-12
/// already, and a client's draft-07 validator refuses a schema that names
/// 2020-12).
pub fn arguments_schema<S: ServiceTypes>() -> schemars::Schema {
    let mut settings = schemars::generate::SchemaSettings::default();
    settings.meta_schema = None;
    schemars::SchemaGenerator::new(settings).into_root_schema_for::<S::Arguments>()
}

/// Checks that a preset's config values decode as the service's config type.
pub fn check_config<S: ServiceTypes>(text: &str) -> Result<(), ToolError> {
    // Preset values come from the source code, so they may be quoted.
    decode_showing::<S::Config>(text, Part::Config, Quoted::Shortened).map(drop)
}

// The config type of a service that takes no config. A plain comment, so
// that the schema a client sees has no description of ours.
#[doc(hidden)]
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "::serde")]
#[schemars(crate = "::schemars")]
pub struct NoConfig {}

// The argument type of a service that takes no arguments: `{"type":
// "object", "properties": {}}`, with no description of ours.
#[doc(hidden)]
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "::serde")]
#[schemars(crate = "::schemars")]
pub struct NoArguments {}

impl<C, A> std::fmt::Debug for Types<C, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Types")
    }
}
