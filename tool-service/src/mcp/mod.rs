//! Serving every tool over the Model Context Protocol (MCP), on stdio or
//! Streamable HTTP, through the same decode → handler → encode path as
//! Pulsar.
//!
//! ```no_run
//! use std::sync::Arc;
//! use tool_service::host::{Host, HostOptions, Transports};
//! use tool_service::mcp::{HttpOptions, HttpTransport};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Arc::new(tool_service::Registry::collect()?);
//! let host = Host::new(registry, &HostOptions::default())?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8900").await?;
//! Transports::new(host)
//!     .with(HttpTransport::new(listener, HttpOptions::default()))
//!     .run(async { tokio::signal::ctrl_c().await.unwrap() })
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! What a client sees:
//! - one MCP tool per TrustGraph `tool`, with its name and description; the
//!   tool's preset config is applied here, as TrustGraph's agent would;
//! - an input schema from the service's argument schema, in the
//!   [flavour](SchemaFlavor) the server was asked for (see
//!   [input schemas](self#input-schemas));
//! - a result that is text (a `String`, a unit enum) as text only, with no
//!   `structuredContent`: TrustGraph's `mcp-tool` client prefers structured
//!   content and would show the LLM its JSON;
//! - a result that serializes to a JSON object as `structuredContent` and
//!   its JSON text, with an `outputSchema` when the type has a schema;
//!   other JSON whose type has a schema (a list, a number, a boolean) as
//!   `structuredContent` `{"result": …}` and its JSON text, with the
//!   output schema wrapped the same way (as FastMCP wraps it);
//! - never an empty text (TrustGraph's client fails on it): a tool that
//!   returns nothing (`()`) or an empty string answers [`NO_OUTPUT`];
//! - every failure (bad arguments, the handler's error, a panic, the
//!   timeout) as `isError: true` with the message a Pulsar error frame
//!   carries; an unknown tool as a JSON-RPC error (-32602);
//! - a `#[stream]` service's chunks as progress notifications, when the
//!   client sent a `progressToken`, and the whole text as the result.
//!
//! # Input schemas
//! Two flavours ([`McpOptions::schema_flavor`], `--schema-flavor`):
//! [`SchemaFlavor::Spec`], the default, serves JSON Schema 2020-12 as the
//! MCP specification has it, in the forms the LLM providers' MCP clients
//! take (no `$schema` unless the type states it, documented enum values as
//! `enum`, `Option<T>` as `anyOf` with `null`); [`SchemaFlavor::Portable`]
//! serves what every client takes strictly where it has a strict mode (no
//! references, `const`, `oneOf` or lists of types; what they refuse said
//! in the descriptions). Either way each argument's description is its
//! `tool` descriptor's. `check-schemas` tells what each provider's client
//! does with a binary's tools in either flavour.
//!
// The guide below links other guides as files (for GitHub and a
// checkout). A label's first definition wins, so these, read first, send
// its labels to the items and sections of the rustdoc pages instead.
//! [flags-and-variables]: crate::cli#flags-and-variables
//! [attribute-scopes]: macro@crate::tool_service#oauth-scopes
//! [attribute-annotations]: macro@crate::tool_service#mcp-annotations-and-titles
//! [who-is-calling]: crate::pulsar::announce#who-is-calling
//!
#![doc = include_str!("../../docs/mcp.md")]

mod auth;
#[cfg(feature = "cli")]
pub(crate) mod client;
mod connections;
mod direct;
mod guard;
mod http;
mod stdio;
mod tls;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    DiscoverResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerCapabilities, ServerConfig,
    Tool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

pub use auth::{Algorithm, OAuthOptions, DEFAULT_LEEWAY};
pub use http::{
    HttpOptions, HttpTransport, DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
};
pub use stdio::StdioTransport;
pub use tls::TlsFiles;

use crate::schema::flavor;
pub use crate::schema::{ParseSchemaFlavorError, SchemaFlavor};

use crate::dispatch::{self, FrameSink, Limits};
use crate::error::ToolError;
use crate::host::{Host, OverBudget};
use crate::log_text::Untrusted;
use crate::metrics::{ServiceMetrics, Via};
use crate::service::Service;
use crate::wire::{Frame, Request};

/// The text a tool that returned nothing answers with: MCP clients such as
/// TrustGraph's fail on an empty text.
pub const NO_OUTPUT: &str = "The tool finished and returned no output.";

/// What an MCP server calls itself in `initialize`, and the flavour of its
/// tools' schemas: what [`McpServer`], [`HttpTransport`] and
/// [`StdioTransport`] are built with.
///
/// ```
/// use tool_service::mcp::{McpOptions, SchemaFlavor};
///
/// let mut options = McpOptions::new("joke", "0.3.1");
/// options.schema_flavor = SchemaFlavor::Portable;
/// assert_eq!(options.name, "joke");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpOptions {
    /// The server's name in `initialize` (`serverInfo.name`).
    pub name: String,
    /// The server's version in `initialize`.
    pub version: String,
    /// The JSON Schema dialect of the tools' input and output schemas:
    /// the MCP specification's (the default) or what strict LLM providers
    /// accept.
    pub schema_flavor: SchemaFlavor,
}

impl Default for McpOptions {
    fn default() -> Self {
        Self::new("tool-service", env!("CARGO_PKG_VERSION"))
    }
}

impl McpOptions {
    /// Options for a server of this name and version, with the defaults.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            schema_flavor: SchemaFlavor::default(),
        }
    }
}

/// An MCP server of a registry's tools: an rmcp [`ServerHandler`], cheap to
/// clone (one per HTTP session).
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    /// Selection, policies, admission, the drain and the metrics.
    host: Host,
    info: Implementation,
    tools: Vec<McpTool>,
    by_name: HashMap<String, usize>,
}

/// One TrustGraph tool as an MCP tool.
struct McpTool {
    tool: Tool,
    service: Service,
    /// The preset config, as the request's `config` text.
    config: String,
    /// How a result is sent.
    shape: Shape,
    limits: Limits,
    /// Its service's place among the host's: its admission.
    hosted: usize,
    /// Its calls' samples, labelled `transport="mcp"`.
    metrics: Arc<ServiceMetrics>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.inner.info.name)
            .field(
                "tools",
                &self
                    .inner
                    .tools
                    .iter()
                    .map(|tool| &tool.tool.name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl McpServer {
    /// The server of every tool `host` serves, with the host's policies,
    /// admission, drain and metrics (shared with its other transports):
    /// for serving over rmcp's own transports, or for calling the tools
    /// in-process.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tool_service::host::{Host, HostOptions};
    /// use tool_service::{mcp::{McpOptions, McpServer}, tool_service, Registry};
    ///
    /// /// Shout the text.
    /// ///
    /// /// # Arguments
    /// /// * `text` - What to shout.
    /// #[tool_service(topic = "shout")]
    /// async fn shout(text: String) -> String {
    ///     text.to_uppercase()
    /// }
    ///
    /// let registry = Arc::new(Registry::collect().unwrap());
    /// let host = Host::new(registry, &HostOptions::default()).unwrap();
    /// let server = McpServer::new(host, McpOptions::new("shouter", "1.0.0"));
    /// let tool = server.tool("shout").unwrap();
    /// assert_eq!(tool.input_schema["properties"]["text"]["type"], "string");
    /// ```
    pub fn new(host: Host, options: McpOptions) -> Self {
        let McpOptions {
            name,
            version,
            schema_flavor,
        } = options;
        let registry = Arc::clone(host.registry());
        let mut tools = Vec::new();
        for (at, hosted) in host.hosted_services().iter().enumerate() {
            let service = hosted.service;
            let metrics = host.metrics().service_on(service.id(), Via::Mcp);
            for spec in service.spec().tools {
                let name = spec.name;
                let Some(descriptor) = registry.descriptors().tool.get(name) else {
                    continue;
                };
                let arguments = (service.spec().arguments_schema)().to_value();
                let described = descriptor.argument_descriptions();
                let input = flavor::input_schema(schema_flavor, &arguments, &described);
                let output = service.output_schema().map(schemars::Schema::to_value);
                let mut shape = if output.as_ref().is_some_and(flavor::is_text) {
                    Shape::Text
                } else {
                    Shape::Structured
                };
                let mut tool = Tool::new(
                    name.to_owned(),
                    descriptor.description.clone(),
                    Arc::new(input),
                );
                tool.title = spec.title.map(str::to_owned);
                tool.annotations = annotations(spec);
                if let Some((output, wrapped)) = output.as_ref().and_then(flavor::output_schema) {
                    tool = tool.with_raw_output_schema(Arc::new(output));
                    if wrapped {
                        shape = Shape::Wrapped;
                    }
                }
                tools.push(McpTool {
                    tool,
                    service,
                    config: Value::Object(descriptor.config.clone()).to_string(),
                    shape,
                    limits: Limits::default().with_timeout(hosted.timeout),
                    hosted: at,
                    metrics: Arc::clone(&metrics),
                });
            }
        }
        // Listed in the order of their names, as the descriptors are.
        tools.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(at, tool)| (tool.tool.name.to_string(), at))
            .collect();
        Self {
            inner: Arc::new(Inner {
                host,
                info: Implementation::new(name, version),
                tools,
                by_name,
            }),
        }
    }

    /// Marks every tool's service as served over MCP (ready) or not.
    fn set_serving(&self, serving: bool) {
        for tool in &self.inner.tools {
            tool.metrics.set_running(serving);
        }
    }

    /// The host: selection, policies, the drain and the metrics.
    pub fn host(&self) -> &Host {
        &self.inner.host
    }

    /// The MCP tool of this name, as `tools/list` shows it.
    pub fn tool(&self, name: &str) -> Option<Tool> {
        self.find(name).map(|tool| tool.tool.clone())
    }

    /// The scopes each tool needs, by tool name: its service's (the
    /// attribute's), or those `overrides` names for the service.
    ///
    /// # Errors
    /// An override names a service this server does not serve.
    fn required_scopes(
        &self,
        overrides: &HashMap<String, Vec<String>>,
    ) -> Result<HashMap<String, Vec<String>>, String> {
        for id in overrides.keys() {
            if !self.inner.tools.iter().any(|tool| tool.service.id() == id) {
                let known = crate::names::list(
                    self.inner
                        .tools
                        .iter()
                        .map(|tool| tool.service.id())
                        .collect::<std::collections::BTreeSet<_>>(),
                );
                return Err(format!(
                    "scopes are given for the service `{id}`, which this server does not serve (it serves: {known})"
                ));
            }
        }
        Ok(self
            .inner
            .tools
            .iter()
            .map(|tool| {
                let scopes = match overrides.get(tool.service.id()) {
                    Some(scopes) => scopes.clone(),
                    None => tool
                        .service
                        .scopes()
                        .iter()
                        .map(|s| (*s).to_owned())
                        .collect(),
                };
                (tool.tool.name.to_string(), scopes)
            })
            .filter(|(_, scopes)| !scopes.is_empty())
            .collect())
    }

    fn find(&self, name: &str) -> Option<&McpTool> {
        self.inner
            .by_name
            .get(name)
            .map(|&at| &self.inner.tools[at])
    }

    /// Calls a tool: the host's admission, the one request path, then the
    /// result as MCP shows it.
    async fn call(
        &self,
        tool: &McpTool,
        id: &str,
        arguments: serde_json::Map<String, Value>,
        progress: Option<Progress>,
        caller: Option<&auth::Caller>,
        span: &crate::trace::RequestSpan,
    ) -> CallToolResult {
        let request = Request {
            user: caller.and_then(|caller| caller.user.clone()),
            config: tool.config.clone(),
            arguments: Value::Object(arguments).to_string(),
        };
        // Held against the replica's byte budget, as a Pulsar request is.
        let host = &self.inner.host;
        let bytes = request.config.len() + request.arguments.len();
        let hosted = &host.hosted_services()[tool.hosted];
        let refuse = |refusal: ToolError| {
            crate::host::refused(&tool.metrics, span, &refusal);
            failure(refusal.message())
        };
        // Every scope the tool needs, checked at the call whatever read the
        // request before it (the port answers most such calls 403 first).
        if let Some(caller) = caller {
            let missing = caller.missing(&tool.tool.name);
            if !missing.is_empty() {
                return refuse(ToolError::insufficient_scope(&tool.tool.name, &missing));
            }
        }
        let admitted = match host.admit(hosted, bytes, OverBudget::Refuse) {
            Ok(admitted) => admitted,
            Err(refusal) => return refuse(refusal),
        };
        let _held = host.budget().hold((), bytes);
        let call = match admitted.start(host, &tool.metrics).await {
            Ok(call) => call,
            Err(refusal) => return refuse(refusal),
        };
        let mut sink = Collect {
            text: String::new(),
            chunks: 0,
            last: None,
            progress,
        };
        let state = host.registry().state();
        let respond = dispatch::dispatch_request(
            tool.service,
            state,
            id,
            Ok(request),
            tool.limits,
            call.lease(),
            &mut sink,
        );
        let granted = caller.and_then(|caller| caller.scopes.clone());
        let outcome = crate::context::with_granted(granted, respond).await;
        let Ok(_) = outcome;
        let last = sink
            .last
            .expect("every response ends with a last frame (dispatch::dispatch_request)");
        call.finish(span, last.error.as_ref());
        if let Some(error) = &last.error {
            return failure(error.message());
        }
        let mut text = sink.text;
        text.push_str(&last.response);
        result(text, tool.shape)
    }
}

/// How a tool's result is sent, from its type's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Text only (a `String`, a unit enum, `()`).
    Text,
    /// Its JSON text, and as structured content when it is an object.
    Structured,
    /// Its JSON text, and as structured content `{"result": …}`: a list,
    /// a number or a boolean, whose output schema is wrapped so.
    Wrapped,
}

/// The progress notifications of one call.
struct Progress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
}

/// Collects a response's frames: chunks joined (each sent on as a progress
/// notification), and the last frame.
struct Collect {
    text: String,
    chunks: u32,
    last: Option<Frame>,
    progress: Option<Progress>,
}

impl FrameSink for Collect {
    type Error = std::convert::Infallible;

    async fn send(&mut self, _id: &str, frame: Frame) -> Result<(), Self::Error> {
        if frame.end_of_stream {
            self.last = Some(frame);
            return Ok(());
        }
        self.chunks += 1;
        if let Some(progress) = &self.progress {
            let notice =
                ProgressNotificationParam::new(progress.token.clone(), f64::from(self.chunks))
                    .with_message(frame.response.clone());
            if let Err(error) = progress.peer.notify_progress(notice).await {
                tracing::debug!(%error, "cannot send a progress notification");
            }
        }
        self.text.push_str(&frame.response);
        Ok(())
    }
}

/// The result of a call that failed, as MCP shows it: `isError` and the
/// message.
fn failure(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// The result of a call that succeeded with `text`.
fn result(text: String, shape: Shape) -> CallToolResult {
    if text.is_empty() {
        return CallToolResult::success(vec![ContentBlock::text(NO_OUTPUT)]);
    }
    let structured = match shape {
        Shape::Text => None,
        Shape::Structured if text.starts_with('{') => serde_json::from_str::<Value>(&text)
            .ok()
            .filter(Value::is_object),
        Shape::Structured => None,
        Shape::Wrapped => serde_json::from_str::<Value>(&text)
            .ok()
            .map(|value| serde_json::json!({ flavor::RESULT_KEY: value })),
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = structured;
    result
}

/// A tool's MCP annotations: its hints and its title (for clients on
/// 2025-03-26, which has no `title` of the tool itself), if it has either.
fn annotations(spec: &crate::service::ToolSpec) -> Option<ToolAnnotations> {
    let hints = &spec.annotations;
    if hints.is_empty() && spec.title.is_none() {
        return None;
    }
    let mut annotations = ToolAnnotations::default();
    annotations.title = spec.title.map(str::to_owned);
    annotations.read_only_hint = hints.read_only;
    annotations.destructive_hint = hints.destructive;
    annotations.idempotent_hint = hints.idempotent;
    annotations.open_world_hint = hints.open_world;
    Some(annotations)
}

/// `tool` as the protocol revision a client speaks has it: no annotations
/// before 2025-03-26, no `title` of the tool itself before 2025-06-18
/// (the annotations carry it there). A client whose revision is not known
/// gets it all.
fn as_revision(tool: &Tool, version: Option<&ProtocolVersion>) -> Tool {
    let mut tool = tool.clone();
    if let Some(version) = version {
        if version.as_str() < ProtocolVersion::V_2025_06_18.as_str() {
            tool.title = None;
        }
        if version.as_str() < ProtocolVersion::V_2025_03_26.as_str() {
            tool.annotations = None;
        }
    }
    tool
}

/// The protocol revision a request speaks: as rmcp knows it (the
/// session's, or the request's own on 2026-07-28), else its
/// `MCP-Protocol-Version` header (stateless HTTP).
fn revision_of(context: &RequestContext<RoleServer>) -> Option<ProtocolVersion> {
    context.protocol_version().or_else(|| {
        let parts = context.extensions.get::<::http::request::Parts>()?;
        let header = parts.headers.get("mcp-protocol-version")?.to_str().ok()?;
        serde_json::from_value(Value::String(header.to_owned())).ok()
    })
}

/// How long a client may reuse the tool list (and `server/discover`'s
/// answer), in milliseconds: the tools are fixed for the process's life, and
/// after a rolling deploy clients see the new ones within a minute.
const LIST_TTL_MS: u64 = 60_000;

/// The cache hints (SEP-2549) of a list's answer, for clients on protocol
/// 2026-07-28 or later (older ones get the shape they know): fresh for
/// [`LIST_TTL_MS`]; shareable between clients (`public`) unless the request
/// carried credentials, whose answer no shared cache may hand to a caller
/// without them (`private`), as HTTP caches treat `Authorization`.
fn cache_hints(context: &RequestContext<RoleServer>) -> Option<(u64, CacheScope)> {
    let version = context.protocol_version()?;
    if version.as_str() < ProtocolVersion::V_2026_07_28.as_str() {
        return None;
    }
    let authorized = caller_of(context).is_some()
        || context
            .extensions
            .get::<::http::request::Parts>()
            .is_some_and(|parts| parts.headers.contains_key(::http::header::AUTHORIZATION));
    let scope = if authorized {
        CacheScope::Private
    } else {
        CacheScope::Public
    };
    Some((LIST_TTL_MS, scope))
}

/// The caller a token named, when the port checks tokens.
fn caller_of(context: &RequestContext<RoleServer>) -> Option<&auth::Caller> {
    context
        .extensions
        .get::<::http::request::Parts>()?
        .extensions
        .get::<auth::Caller>()
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(self.inner.info.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let result = self.list(caller_of(&context), revision_of(&context).as_ref());
        Ok(match cache_hints(&context) {
            Some((ttl, scope)) => result.with_ttl_ms(ttl).with_cache_scope(scope),
            None => result,
        })
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let result = DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        );
        let (ttl, scope) = cache_hints(&context).unwrap_or((LIST_TTL_MS, CacheScope::Private));
        Ok(result.with_ttl_ms(ttl).with_cache_scope(scope))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tool(name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let id = context.id.to_string();
        let progress = context.meta.get_progress_token().map(|token| Progress {
            peer: context.peer.clone(),
            token,
        });
        let call = self.call_named(request, &id, &context.meta, progress, caller_of(&context));
        // A call the client cancels (`notifications/cancelled`; over HTTP
        // also by going away, which rmcp turns into the same) drops the
        // handler's future, as a timeout does. The call first: one that is
        // ready at once (most are) never registers with the token.
        tokio::select! {
            biased;
            result = call => result.map(Into::into),
            () = context.ct.cancelled() => {
                tracing::debug!(request_id = %Untrusted::id(&id), "a call cancelled by the client");
                Err(ErrorData::internal_error("the call was cancelled", None))
            }
        }
    }
}

impl McpServer {
    /// The tools a caller may call, as a protocol revision has them: a
    /// caller whose token lacks a tool's scopes is not shown the tool.
    fn list(
        &self,
        caller: Option<&auth::Caller>,
        version: Option<&ProtocolVersion>,
    ) -> ListToolsResult {
        ListToolsResult::with_all_items(
            self.inner
                .tools
                .iter()
                .filter(|tool| caller.is_none_or(|caller| caller.may_call(&tool.tool.name)))
                .map(|tool| as_revision(&tool.tool, version))
                .collect(),
        )
    }

    /// Answers `tools/call` with request id `id`: the named tool called
    /// with the arguments, its span's parent from the request's `_meta`.
    ///
    /// # Errors
    /// The JSON-RPC error for a tool this server does not have.
    fn call_named<'a>(
        &'a self,
        request: CallToolRequestParams,
        id: &'a str,
        meta: &rmcp::model::RequestMetaObject,
        progress: Option<Progress>,
        caller: Option<&'a auth::Caller>,
    ) -> impl Future<Output = Result<CallToolResult, ErrorData>> + Send + 'a {
        let found = match self.find(&request.name) {
            Some(tool) => Ok((
                tool,
                // The caller's trace context, if any, is in the `_meta`.
                crate::trace::mcp_request(tool.service, &request.name, id, |key| {
                    meta.0 .0.get(key).and_then(Value::as_str)
                }),
            )),
            None => {
                tracing::debug!(
                    tool = %Untrusted::id(&request.name),
                    "a call of a tool this server does not have; answered with the tools it has"
                );
                Err(unknown_tool(&request.name, &self.inner.tools))
            }
        };
        let arguments = request.arguments.unwrap_or_default();
        async move {
            let (tool, span) = found?;
            // On the heap: rmcp moves the handler's future a few times, and
            // spawns it inside the request's own; this keeps those moves
            // small.
            let call = Box::pin(self.call(tool, id, arguments, progress, caller, &span));
            let result = span.clone().instrument(call).await;
            Ok(traced(result, &span))
        }
    }
}

/// `result`, with the span's trace context in its `_meta` (when tracing
/// is on).
fn traced(mut result: CallToolResult, span: &crate::trace::RequestSpan) -> CallToolResult {
    span.headers().for_each(|key, value| {
        result
            .meta
            .get_or_insert_with(rmcp::model::MetaObject::new)
            .0
            .insert(key.to_owned(), Value::String(value));
    });
    result
}

/// The JSON-RPC error for a tool this server does not have.
fn unknown_tool(name: &str, tools: &[McpTool]) -> ErrorData {
    let known = crate::names::list(tools.iter().map(|tool| format!("`{}`", tool.tool.name)));
    ErrorData::invalid_params(
        format!(
            "there is no tool `{}` on this server (its tools: {known})",
            Untrusted::id(name)
        ),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostOptions;
    use crate::registry::Registry;

    /// Reads a shared number.
    #[crate::tool_service(topic = "mcp-tests-stateful")]
    async fn shared_number(#[state] number: &u16) -> u16 {
        *number
    }

    static CLOSED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// Closes a ticket.
    #[crate::tool_service(topic = "mcp-tests-close", scopes = ["tickets:write"])]
    async fn close_ticket() -> &'static str {
        CLOSED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        "closed"
    }

    /// A call that reaches the server, whatever checked the request before
    /// (the port's early 403, or nothing at all), is refused when the
    /// caller's token lacks a scope the tool needs, and its handler never
    /// runs.
    #[tokio::test]
    async fn scopes_are_checked_at_the_call_itself() {
        let registry = Arc::new(Registry::collect().unwrap());
        let options = HostOptions {
            only: vec![String::from("mcp-tests-close-service")],
            ..Default::default()
        };
        let host = Host::new(registry, &options).unwrap();
        let server = McpServer::new(host, McpOptions::default());
        let required = server.required_scopes(&HashMap::new()).unwrap();
        assert_eq!(required["close-ticket"], ["tickets:write"]);
        let call = |caller: auth::Caller| {
            let server = server.clone();
            async move {
                let request = CallToolRequestParams::new("close-ticket");
                let meta = rmcp::model::RequestMetaObject::default();
                server
                    .call_named(request, "7", &meta, None, Some(&caller))
                    .await
                    .unwrap()
            }
        };
        let reader = auth::Caller::for_tests(&["tickets:read"], required.clone());
        let refused = call(reader).await;
        assert_eq!(refused.is_error, Some(true));
        assert_eq!(
            serde_json::to_value(&refused.content).unwrap()[0]["text"],
            "the caller's token lacks the scope tickets:write, which the tool close-ticket needs"
        );
        assert_eq!(CLOSED.load(std::sync::atomic::Ordering::SeqCst), 0);
        let writer = auth::Caller::for_tests(&["tickets:read", "tickets:write"], required);
        let closed = call(writer).await;
        assert_eq!(closed.is_error, Some(false), "{closed:?}");
        assert_eq!(CLOSED.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn a_server_serves_every_tool_of_its_hosts_services() {
        let registry = Arc::new(Registry::collect().unwrap());
        let options = HostOptions {
            only: vec![String::from("mcp-tests-stateful-service")],
            ..Default::default()
        };
        assert!(matches!(
            Host::new(Arc::clone(&registry), &options),
            Err(crate::registry::SelectError::MissingState(_))
        ));
        let provided = registry
            .as_ref()
            .clone()
            .with_state(crate::State::new().with(7_u16));
        let host = Host::new(Arc::new(provided), &options).unwrap();
        let server = McpServer::new(host, McpOptions::default());
        let service = registry.service("mcp-tests-stateful-service").unwrap();
        for name in service.tool_names() {
            assert!(server.tool(name).is_some(), "{name}");
        }
        assert!(server.tool("close-ticket").is_none());
    }

    #[test]
    fn text_results_are_text_only_and_never_empty() {
        let text = result("a pun".into(), Shape::Text);
        assert_eq!(text.structured_content, None);
        assert_eq!(text.is_error, Some(false));
        let empty = result(String::new(), Shape::Text);
        assert_eq!(
            serde_json::to_value(&empty.content).unwrap()[0]["text"],
            NO_OUTPUT
        );
        // Text that happens to be JSON stays text for a text tool.
        assert_eq!(
            result("{\"a\": 1}".into(), Shape::Text).structured_content,
            None
        );
    }

    #[test]
    fn objects_are_structured_and_other_json_is_text() {
        let object = result("{\"user\":\"alice\"}".into(), Shape::Structured);
        assert_eq!(
            object.structured_content,
            Some(serde_json::json!({"user": "alice"}))
        );
        assert_eq!(
            serde_json::to_value(&object.content).unwrap()[0]["text"],
            "{\"user\":\"alice\"}"
        );
        assert_eq!(
            result("[1,2]".into(), Shape::Structured).structured_content,
            None
        );
        assert_eq!(
            result("{not json".into(), Shape::Structured).structured_content,
            None
        );
        // A list or a number whose schema is wrapped: as FastMCP wraps it.
        let list = result("[1,2]".into(), Shape::Wrapped);
        assert_eq!(
            list.structured_content,
            Some(serde_json::json!({"result": [1, 2]}))
        );
        assert_eq!(
            serde_json::to_value(&list.content).unwrap()[0]["text"],
            "[1,2]"
        );
        assert_eq!(
            result("42".into(), Shape::Wrapped).structured_content,
            Some(serde_json::json!({"result": 42}))
        );
    }

    #[test]
    fn failures_carry_the_message() {
        let failed = failure("the argument `topic` is missing");
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(
            serde_json::to_value(&failed.content).unwrap()[0]["text"],
            "the argument `topic` is missing"
        );
    }
}
