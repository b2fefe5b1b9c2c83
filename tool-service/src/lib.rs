//! Write TrustGraph agent tools as Apache Pulsar services with one attribute.
//!
//! ```
//! use tool_service::{tool_service, ToolError};
//!
//! /// Tell a joke on a given topic.
//! ///
//! /// # Arguments
//! /// * `topic` - The topic for the joke (e.g., programming, animals, food)
//! #[tool_service(topic = "joke", tool(name = "tell-joke", config(style = "pun")))]
//! async fn tell_joke(#[config_param] style: Option<String>, topic: String) -> Result<String, ToolError> {
//!     match style.as_deref() {
//!         Some("pun") | None => Ok(format!("A pun about {topic}.")),
//!         Some(other) => Err(ToolError::new(format!("unknown style {other}"))),
//!     }
//! }
//!
//! // The function stays callable as written.
//! # tokio_test();
//! # #[tokio::main(flavor = "current_thread")] async fn tokio_test() {
//! assert_eq!(tell_joke(None, "cats".into()).await.unwrap(), "A pun about cats.");
//! # }
//!
//! // Every annotated service in the binary, checked, with its descriptors.
//! let registry = tool_service::Registry::collect().unwrap();
//! let tool = &registry.descriptors().tool["tell-joke"];
//! assert_eq!(tool.service, "joke-service");
//! assert_eq!(tool.arguments[0].name, "topic");
//! ```
//!
//! A binary's `main` hands over to [`run!`], which prints the descriptors, lists
//! the services, calls one in-process (`call`) or serves them (`serve`), and
//! answers `-V` with the binary's own name and version.
//!
//! * [`macro@tool_service`] — the attribute, its keys and parameter roles.
//! * [`wire`] — the request and response frames (TrustGraph's format).
//! * [`descriptor`] — the `tool-service` and `tool` config items.
//! * [`Registry`] — every service linked in, checked for mistakes.
//! * [`State`] — values handlers share (`#[state] db: &Db`), built by
//!   `App`'s setup hook and closed after the drain.
//! * [`dispatch`] — the path from a request payload to response frames.
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `pulsar` | yes | serving on Apache Pulsar: [`pulsar`] (`broker`, `client`, `serve`, `announce`; the `pulsar` client, rustls) |
//! | `mcp` | yes | serving every tool over the Model Context Protocol: [`mcp`], stdio and Streamable HTTP (rmcp, hyper) |
//!
//! With either transport: [`host`] (what both share: selection, each
//! service's timeout, concurrency and rate limit, the byte budget, the
//! drain) and [`metrics`] (the families, `/metrics` and the probes).
//! | `cli` | yes | `run!()`: the command line (`descriptors`, `list`, `call`, and `serve` with `pulsar`) (clap, tracing-subscriber) |
//!
//! Without them the crate has the attribute, the [`Registry`], the
//! descriptors and in-process calls ([`Registry::call`]). A library crate
//! that only defines services, for a binary to serve, needs no more:
//!
//! ```toml
//! [dependencies]
//! tool-service = { version = "0.1", default-features = false }
//! ```

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate self as tool_service;

// The modules in layers, lowest first: each uses only modules of layers
// above it in this list (tests/offline/architecture.rs checks it).
//
// Leaves.
mod duration;
mod error;
pub mod log_text;
mod names;
mod rate;
mod state;

// A request's parts and the frames of its answer.
mod context;
mod response;
mod stream;
pub mod wire;

// One view of a type's schema (descriptions, MCP flavours, provider
// checks), then the rules decoding applies from it.
mod rules;
mod schema;

// What generated code registers, and typed decoding of requests.
mod decode;
mod spec;

// Descriptors, the request path, and the checked set of services.
pub mod descriptor;
pub mod dispatch;
mod registry;

// What serving means on every transport: selection, policy, admission,
// the drain and the metrics.
#[cfg(any(feature = "pulsar", feature = "mcp"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "pulsar", feature = "mcp"))))]
pub mod host;
#[cfg(any(feature = "pulsar", feature = "mcp"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "pulsar", feature = "mcp"))))]
pub mod metrics;

// The two transports over the host: MCP, then Pulsar, which also serves
// MCP beside it (`pulsar::serve::serve_with_mcp`).
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
#[cfg(feature = "pulsar")]
#[cfg_attr(docsrs, doc(cfg(feature = "pulsar")))]
pub mod pulsar;

// OpenTelemetry traces.
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub mod otel;
// Each request's span, and the trace context it carries in and out.
#[cfg(any(feature = "pulsar", feature = "mcp"))]
mod trace;

// The command line.
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod cli;

#[doc(hidden)]
pub mod __private;

#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub use cli::{App, HookError};
pub use context::Context;
pub use error::{ToolError, TypedError};
pub use rate::{ParseRateError, Rate};
pub use registry::{
    MissingServices, MissingState, Problem, Registry, RegistryError, SelectError, UnknownName,
};
pub use response::response_text;
pub use spec::Service;
pub use state::State;
pub use stream::{Chunks, Collected, StreamClosed};
/// Turns an `async fn` into a TrustGraph tool service.
///
/// ```
/// use tool_service::tool_service;
///
/// /// Tell a joke on a given topic.
/// ///
/// /// # Arguments
/// /// * `topic` - The topic for the joke (e.g., programming, animals, food)
/// #[tool_service(topic = "joke")]
/// async fn tell_joke(topic: String) -> String {
///     format!("Why did the {topic} cross the road?")
/// }
/// ```
///
/// This registers a service `joke-service` that consumes
/// `non-persistent://tg/request/joke` (Shared subscription
/// `joke-service-request`), answers on `non-persistent://tg/response/joke`,
/// and backs one tool `tell-joke` with one string argument `topic`. The
/// function itself is left as written and stays callable.
///
/// # Attribute keys
///
/// | key | meaning | default |
/// |---|---|---|
/// | `topic = "joke"` | the short topic name (required) | |
/// | `id = "…"` | the service id | `"{topic}-service"` |
/// | `request_queue = "…"` | full request topic | `non-persistent://tg/request/{topic}` |
/// | `response_queue = "…"` | full response topic | `non-persistent://tg/response/{topic}` |
/// | `subscription = "…"` | Shared subscription name | `"{id}-request"` |
/// | `concurrency = 8` | most requests handled at once | the `serve` default |
/// | `timeout = "30s"` | how long one request may run before it is cancelled and answered with a `timeout` error (`ms`, `s`, `m` or `h`) | `serve --timeout` (600 s) |
/// | `rate = "100/s"` | the most calls it takes per replica, over every transport, per second, minute or hour (`s`, `m` or `h`), in bursts of up to that many; more are answered `rate-limited` (see [`host`](crate::host#rate-limits)) | `--rate`, else no limit |
/// | `strict` | decode the LLM's arguments exactly as their types say: no coercion of `"5"` to `5` and the like (bounds are checked either way; see [What the LLM may send](#what-the-llm-may-send)) | tolerant |
/// | `tool(…)` | a tool backed by this service, with the keys below; repeatable | one tool named after the function in kebab-case, described by the doc comment's first paragraph |
/// | `crate = "…"` | path to the `tool_service` crate | `::tool_service` |
///
/// Inside `tool(…)`:
///
/// | key | meaning | default |
/// |---|---|---|
/// | `name = "…"` | the tool's name; required with several tools | the function's name in kebab-case |
/// | `description = "…"` | what the LLM reads about the tool | the doc comment's first paragraph |
/// | `config(key = value, …)` | config values this tool fixes: string, integer, float or bool literals | none |
/// | `arguments(name = "…", …)` | descriptions of the LLM arguments for this tool, in place of the `# Arguments` section (or the `#[args]` struct's field docs) | the doc comment's |
/// | `group = ["…", …]` | TrustGraph's tool groups: the agent offers the tool to requests of one of them (the `group` of the tool item) | TrustGraph's `["default"]` |
/// | `state = "…"` | the agent's state once the tool ran (`state`) | the state stays |
/// | `applicable_states = ["…", …]` | the states the agent offers the tool in (`applicable-states`; `undefined` is the first) | TrustGraph's `["*"]`, every state |
///
/// Lists hold distinct, non-empty strings and are not empty (an empty
/// `group` would hide the tool from every request).
///
/// A config key or argument name that is not an identifier is written as a
/// string: `config("index-url" = "https://…")`, `arguments("max-results" =
/// "…")`.
///
/// ```
/// use tool_service::tool_service;
///
/// /// Search a collection.
/// ///
/// /// # Arguments
/// /// * `question` - What to look for.
/// #[tool_service(
///     topic = "search",
///     tool(
///         name = "search-customers",
///         description = "Search the customer records.",
///         config(collection = "customers", limit = 5),
///         arguments(question = "A question about a customer"),
///     ),
///     tool(name = "search-products", config(collection = "products")),
/// )]
/// async fn search(
///     #[config_param] collection: String,
///     #[config_param] limit: Option<u32>,
///     question: String,
/// ) -> String {
///     format!("{collection} {limit:?} {question}")
/// }
/// ```
///
/// # Parameters
///
/// All optional, in any order:
///
/// | parameter | receives |
/// |---|---|
/// | `topic: String` (no attribute) | one LLM argument, named after the parameter and described by the `# Arguments` section of the doc comment |
/// | `#[args] a: MyArgs` | all LLM arguments as one struct (`Deserialize + JsonSchema`); field doc comments describe them |
/// | `#[config_param] style: Option<Style>` | one config parameter; required unless an `Option` |
/// | `#[config] c: MyConfig` | the whole config as one struct (`Deserialize + JsonSchema`); its fields are the `config-params` |
/// | `#[context] ctx: Context` (or `&Context`) | the request id, user and service id |
/// | `#[stream] out: Chunks` (or `&Chunks`) | makes the service stream: each `out.send(…)` is a frame |
/// | `#[state] db: &Db` (or `Arc<Db>`) | a value the process shares, made by the `App::setup` hook or given to `Registry::with_state` |
///
/// A plain argument states its bounds and default with `#[arg(…)]`, checked
/// against its type at compile time, and told to the LLM and enforced like
/// an `#[args]` struct's schemars attributes:
///
/// ```
/// # use tool_service::tool_service;
/// /// Forecast the weather.
/// ///
/// /// # Arguments
/// /// * `city` - Where.
/// /// * `days` - How many days ahead.
/// #[tool_service(topic = "forecast")]
/// async fn forecast(
///     #[arg(length(min = 1, max = 40))] city: String,
///     #[arg(range(min = 1, max = 30), default = 7)] days: u32,
/// ) -> String {
///     format!("{days} days in {city}")
/// }
/// ```
///
/// `days` is then optional ("Optional. From 1 to 30. Default: `7`."), `7`
/// when left out, and `40` is refused as an argument error: `` `days` must
/// be an integer from 1 to 30; got 40 ``. `range(min = …, max = …)` bounds a
/// number, `length(min = …, max = …)` a `String` or a `Vec`, and `default`
/// is a literal of the parameter's type (a number, a string, `true` or
/// `false`). A bound the type cannot hold, a default of another type or
/// outside the bounds, or a default on an `Option` is a compile error on
/// the offending token.
///
/// `#[config]`/`#[args]` parameters may be references (`&MyConfig`). Serde
/// attributes (`rename`, `default`, `Option`) mean the same in decoding and in
/// the descriptors. A tool preset whose config names an unknown param or omits
/// a required one is a compile error where the params are visible (single
/// `#[config_param]`s) and a registry error when descriptors are emitted
/// otherwise.
///
/// # What the LLM may send
///
/// The arguments decode strictly first. What the type refuses is coerced
/// where nothing is lost, then decoded again; the rules come from the same
/// JSON schema the descriptors describe, so the two cannot disagree.
///
/// | the LLM sent | for | decoded as |
/// |---|---|---|
/// | `"5"`, `5.0`, `"5.0"` | an integer | `5` |
/// | `"2.5"` | a float | `2.5` |
/// | `"true"`, `"False"` | a `bool` | `true`, `false` |
/// | `"[\"a\", \"b\"]"`, `"{\"k\": 1}"` | a list, a struct | the list, the struct |
/// | `"a"` | a list | `["a"]` |
/// | `"Keyword"`, `"in progress"` | a unit enum variant `keyword`, `in-progress` | that variant, when exactly one matches ignoring case, `-`, `_` and spaces |
/// | `null` | an argument with a default | the default |
/// | an argument the tool does not take | | ignored |
///
/// Refused: `"5.5"` or `5.5` for an integer, a number out of the type's
/// range, `"yes"`, `"1"` or `1` for a `bool`, text naming two variants.
/// Bounds that the schema states (`#[schemars(range(min = 1, max = 50))]`,
/// `length(…)`, `regex(pattern = …)`, list lengths) are checked for every
/// request, and an error names the argument, the rule and what was given:
/// `` invalid arguments: `limit` must be an integer from 1 to 50; got 500 ``.
/// With `strict`, the arguments decode only as their types say; bounds are
/// still checked. One field of an `#[args]` struct opts out with
/// `#[schemars(extend("x-tool-service-strict" = true))]`. Config values are written by people, not by the LLM: they
/// always decode strictly.
///
/// # Return types
///
/// A `String` is sent as is; any other `serde::Serialize` value as its JSON
/// text (a value whose JSON is a string is sent unquoted, `()` as ""). A
/// `Result<T, E>` sends `Err(e)` as an error frame of type
/// `tool-service-error` and message `e.to_string()`; implement
/// `tool_service::TypedError` on `E` to choose another type.
///
/// # Mistakes caught at compile time
///
/// ```compile_fail
/// use tool_service::tool_service;
///
/// /// Not async.
/// #[tool_service(topic = "joke")]
/// fn tell_joke() -> String { String::new() }
/// ```
pub use tool_service_macros::tool_service;
