//! What `#[tool_service]` registers for each service, and [`Service`], the
//! read-only view of one registration that the rest of the crate works with.
//!
//! Generated code fills in [`ServiceSpec`] and [`ToolSpec`] (through
//! `__private`); nothing else constructs them.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::state::{State, StateNeed};
use crate::stream::Chunks;
use crate::wire::Request;
use crate::{context::Context, error::ToolError};

/// The future a registered handler returns: the final response text or error.
// Not public API: reached through `__private` by generated code.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<String, ToolError>> + Send + 'static>>;

/// A registered handler: generated glue that decodes the invocation and calls
/// the user's function.
pub type Handler = fn(Invocation) -> HandlerFuture;

/// Everything a handler call receives.
#[derive(Debug)]
pub struct Invocation {
    pub(crate) request: Request,
    pub(crate) context: Context,
    pub(crate) chunks: Chunks,
    pub(crate) state: State,
    pub(crate) lease: Lease,
}

/// A share of a call's place in its host (its concurrency permit and its
/// count in the drain), for work that may outlive the call's answer: a
/// blocking handler's thread holds one until the function returns, so that
/// a call answered at its timeout still counts until its thread is free.
#[derive(Clone, Default)]
pub(crate) struct Lease(Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>);

impl Lease {
    /// No place to hold: a call made outside a host ([`Registry::call`](crate::Registry::call)).
    pub(crate) fn none() -> Self {
        Self(None)
    }

    /// A share of `place`, which is released once every share is dropped.
    #[cfg_attr(not(any(feature = "pulsar", feature = "mcp")), allow(dead_code))]
    pub(crate) fn of(place: std::sync::Arc<dyn std::any::Any + Send + Sync>) -> Self {
        Self(Some(place))
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Lease(held)"
        } else {
            "Lease(none)"
        })
    }
}

impl Invocation {
    /// The request being served.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The request's context.
    pub fn context(&self) -> &Context {
        &self.context
    }
}

/// What `#[tool_service]` registers for one service.
// Not public API. Used by generated code.
#[doc(hidden)]
#[derive(Debug)]
pub struct ServiceSpec {
    pub id: &'static str,
    pub topic: &'static str,
    pub request_queue: Option<&'static str>,
    pub response_queue: Option<&'static str>,
    pub subscription: Option<&'static str>,
    pub concurrency: Option<usize>,
    pub timeout: Option<Duration>,
    pub rate: Option<crate::rate::Rate>,
    /// The OAuth scopes a caller's token must carry (none: empty).
    pub scopes: &'static [&'static str],
    pub streaming: bool,
    /// Whether the handler is a plain `fn`, run on the blocking pool.
    pub blocking: bool,
    /// Whether the handler takes the request's `#[context]`.
    pub takes_context: bool,
    pub tools: &'static [ToolSpec],
    pub config_schema: fn() -> schemars::Schema,
    pub arguments_schema: fn() -> schemars::Schema,
    /// The JSON schema of the handler's result as it serializes, when its
    /// type implements `JsonSchema`.
    pub output_schema: fn() -> Option<schemars::Schema>,
    pub check_config: fn(&str) -> Result<(), ToolError>,
    /// The `#[state]` types the handler takes.
    pub states: &'static [StateNeed],
    pub handler: Handler,
    pub function: &'static str,
    pub file: &'static str,
    pub line: u32,
}

/// A tool preset as written in the attribute.
// Not public API. Used by generated code.
#[doc(hidden)]
#[derive(Debug)]
pub struct ToolSpec {
    pub name: &'static str,
    /// MCP's title: the tool's name for people.
    pub title: Option<&'static str>,
    pub description: &'static str,
    /// MCP's hints, merged and checked by the attribute.
    pub annotations: Annotations,
    pub config: &'static [(&'static str, ConfigValue)],
    pub arguments: &'static [(&'static str, &'static str)],
    /// TrustGraph's `group`, `state` and `applicable-states` (empty and
    /// `None`: not set).
    pub group: &'static [&'static str],
    pub state: Option<&'static str>,
    pub applicable_states: &'static [&'static str],
}

/// MCP's hints of one tool (`None`: not written, so MCP's default), from
/// `annotations(…)` on the attribute and in the tool's preset.
// Not public API. Used by generated code.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Annotations {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

impl Annotations {
    /// No hint written.
    pub const NONE: Self = Self {
        read_only: None,
        destructive: None,
        idempotent: None,
        open_world: None,
    };

    /// Whether no hint was written.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The hints in words, as `list` shows them: "read-only, closed world".
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn words(&self) -> Vec<&'static str> {
        let word = |value: Option<bool>, yes: &'static str, no: &'static str| {
            value.map(|flag| if flag { yes } else { no })
        };
        [
            word(self.read_only, "read-only", "writes"),
            word(self.destructive, "destructive", "not destructive"),
            word(self.idempotent, "idempotent", "not idempotent"),
            word(self.open_world, "open world", "closed world"),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// A config value fixed by a tool preset.
// Not public API. Used by generated code.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConfigValue {
    Str(&'static str),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl ConfigValue {
    pub(crate) fn to_json(self) -> serde_json::Value {
        match self {
            ConfigValue::Str(text) => text.into(),
            ConfigValue::Int(number) => number.into(),
            ConfigValue::Float(number) => number.into(),
            ConfigValue::Bool(flag) => flag.into(),
        }
    }
}

inventory::collect!(ServiceSpec);

/// A registered service.
///
/// ```
/// use tool_service::{tool_service, Registry};
///
/// /// Echo the text back.
/// ///
/// /// # Arguments
/// /// * `text` - What to echo.
/// #[tool_service(topic = "echo")]
/// async fn echo(text: String) -> String {
///     text
/// }
///
/// let registry = Registry::collect().unwrap();
/// let service = registry.service("echo-service").unwrap();
/// assert_eq!(service.request_queue(), "non-persistent://tg/request/echo");
/// assert_eq!(service.subscription(), "echo-service-request");
/// ```
#[derive(Clone, Copy)]
pub struct Service(&'static ServiceSpec);

impl fmt::Debug for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("id", &self.id())
            .field("request_queue", &self.request_queue())
            .field("response_queue", &self.response_queue())
            .finish_non_exhaustive()
    }
}

impl Service {
    /// Wraps a registration record.
    pub(crate) const fn from_spec(spec: &'static ServiceSpec) -> Self {
        Self(spec)
    }

    /// The service id (default `{topic}-service`), the key of its
    /// `tool-service` descriptor.
    pub fn id(&self) -> &'static str {
        self.0.id
    }

    /// The short topic name given to the attribute.
    pub fn topic(&self) -> &'static str {
        self.0.topic
    }

    /// The full request topic (default `non-persistent://tg/request/{topic}`).
    pub fn request_queue(&self) -> String {
        match self.0.request_queue {
            Some(queue) => queue.to_owned(),
            None => format!("non-persistent://tg/request/{}", self.0.topic),
        }
    }

    /// The full response topic (default `non-persistent://tg/response/{topic}`).
    pub fn response_queue(&self) -> String {
        match self.0.response_queue {
            Some(queue) => queue.to_owned(),
            None => format!("non-persistent://tg/response/{}", self.0.topic),
        }
    }

    /// The Shared subscription on the request topic (default `{id}-request`).
    pub fn subscription(&self) -> String {
        match self.0.subscription {
            Some(name) => name.to_owned(),
            None => format!("{}-request", self.0.id),
        }
    }

    /// The most requests this service handles at once, if the attribute set it.
    pub fn concurrency(&self) -> Option<usize> {
        self.0.concurrency
    }

    /// How long one request may run, if the attribute set it
    /// (`timeout = "30s"`).
    pub fn timeout(&self) -> Option<Duration> {
        self.0.timeout
    }

    /// The most calls per second, minute or hour it takes on one replica,
    /// if the attribute set it (`rate = "100/s"`).
    pub fn rate(&self) -> Option<crate::rate::Rate> {
        self.0.rate
    }

    /// The OAuth scopes the attribute gives the service (`scopes = […]`);
    /// empty when it gives none.
    ///
    /// ```
    /// use tool_service::{tool_service, Registry};
    ///
    /// /// Close a ticket.
    /// ///
    /// /// # Arguments
    /// /// * `ticket` - The ticket to close.
    /// #[tool_service(topic = "close-ticket", scopes = ["tickets:write"])]
    /// async fn close_ticket(ticket: String) -> String {
    ///     format!("closed {ticket}")
    /// }
    ///
    /// /// Count the tickets.
    /// #[tool_service(topic = "count-tickets")]
    /// async fn count_tickets() -> String {
    ///     String::from("3")
    /// }
    ///
    /// let registry = Registry::collect().unwrap();
    /// let close = registry.service("close-ticket-service").unwrap();
    /// assert_eq!(close.scopes(), ["tickets:write"]);
    /// let count = registry.service("count-tickets-service").unwrap();
    /// assert!(count.scopes().is_empty());
    /// ```
    ///
    /// Over MCP with OAuth on, a caller's token must carry every one of
    /// them to call the service's tools; over Pulsar they are not checked.
    /// An operator may override them per service with `--oauth-scope
    /// SERVICE_ID=SCOPE`; this gives what the attribute wrote.
    pub fn scopes(&self) -> &'static [&'static str] {
        self.0.scopes
    }

    /// Whether the handler streams chunks (`#[stream]`).
    pub fn is_streaming(&self) -> bool {
        self.0.streaming
    }

    /// Whether the handler is a plain `fn`, which runs on tokio's blocking
    /// pool.
    pub fn is_blocking(&self) -> bool {
        self.0.blocking
    }

    /// The names of the tools this service backs.
    pub fn tool_names(&self) -> impl Iterator<Item = &'static str> {
        self.0.tools.iter().map(|tool| tool.name)
    }

    /// Whether the handler takes the request's `#[context]`.
    /// The JSON schema of what the handler returns, as it serializes, when
    /// its type implements `JsonSchema` (`{"type": "string"}` for text).
    pub fn output_schema(&self) -> Option<schemars::Schema> {
        (self.0.output_schema)()
    }

    pub(crate) fn takes_context(&self) -> bool {
        self.0.takes_context
    }

    /// Whether the handler takes any `#[state]` value.
    pub(crate) fn takes_state(&self) -> bool {
        !self.0.states.is_empty()
    }

    /// The type names of the `#[state]` values the handler takes.
    pub fn state_types(&self) -> impl Iterator<Item = &'static str> {
        self.0.states.iter().map(|need| (need.type_name)())
    }

    /// Where the service is defined: `path::to::function (file:line)`.
    pub fn defined_at(&self) -> String {
        format!("{} ({}:{})", self.0.function, self.0.file, self.0.line)
    }

    pub(crate) fn spec(&self) -> &'static ServiceSpec {
        self.0
    }

    pub(crate) fn handler(&self) -> Handler {
        self.0.handler
    }
}
