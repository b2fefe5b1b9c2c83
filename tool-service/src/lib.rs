//! Write TrustGraph agent tools in Rust with one attribute, and serve each
//! one over Apache Pulsar and over the Model Context Protocol (MCP).
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
//! A binary's `main` hands over to [`run!`], which gives it the commands
//! `descriptors`, `list`, `check-schemas`, `call`, `serve` (Pulsar), `mcp`,
//! `announce` and `withdraw`, and answers `-V` with the binary's own name
//! and version.
//!
//! # Guides
//!
//! * [The attribute](macro@tool_service): its keys, the parameter roles,
//!   TrustGraph's groups and states, what the LLM may send and what it
//!   sees, return types.
//! * [Serving on Pulsar](pulsar::serve): scaling out, load and memory, rate
//!   limits, timeouts, shutdown, broker outages, authentication and TLS.
//! * [Serving over MCP](mcp): stdio and Streamable HTTP, replicas behind a
//!   balancer, what a client sees, schemas every LLM provider accepts.
//! * [Announcing to TrustGraph](pulsar::announce): both routes to its agents, the
//!   releases and agents each was run with, queue names, calling a tool
//!   from Python.
//! * [Operations](cli): commands, every flag and variable, logs, a
//!   deployment recipe; [metrics and probes](metrics).
//! * [Services that own resources](State): a database or a client built
//!   once, the setup and shutdown hooks, the binary's own flags.
//! * [Testing your tools](Registry#testing-your-tools).
//! * Tracing: the `otel` module (feature `otel`), OpenTelemetry through
//!   Pulsar and MCP.
//!
//! # The crate
//!
//! One core that every transport shares, and two transports over it:
//!
//! * [`Registry`]: every service linked in, checked for mistakes, with
//!   [`descriptor`]s (the `tool-service` and `tool` config items) and
//!   in-process calls; [`dispatch`]: the path from a request payload to
//!   response frames; [`wire`]: the frames (TrustGraph's format);
//!   [`State`]: values handlers share.
//! * [`host`]: a call's way on every transport (selection, each service's
//!   timeout, concurrency and rate limit, the byte budget, admission, the
//!   drain), [`Transports`](host::Transports) to run several in one
//!   process, and [`metrics`] (the families, `/metrics` and the probes).
//! * The two transports, siblings: [`pulsar`] ([`serve`](pulsar::serve),
//!   [`broker`](pulsar::broker), [`client`](pulsar::client),
//!   [`announce`](pulsar::announce)) and [`mcp`].
//! * The command line: [`cli`], [`App`], [`run!`].
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `pulsar` | yes | serving on Apache Pulsar: [`pulsar`] (`serve`, `broker`, `client`, `announce`; the `pulsar` client, rustls) |
//! | `mcp` | yes | serving every tool over the Model Context Protocol: `mcp`, stdio and Streamable HTTP (rmcp, hyper) |
//! | `cli` | yes | `run!()` and `App`: the command line (clap, tracing-subscriber) |
//! | `otel` | no | OpenTelemetry traces: trace context through Pulsar and MCP, messaging spans, OTLP/HTTP export (`otel`) |
//! | `prometheus-client` | no | `metrics::Collect` for a `prometheus_client` registry (the application's own metrics) |
//!
//! With either transport the crate has `host` and `metrics`. Without
//! any feature it has the attribute, the [`Registry`], the descriptors and
//! in-process calls ([`Registry::call`]). A library crate that only
//! defines services, for a binary to serve, needs no more:
//!
//! ```toml
//! [dependencies]
//! tool-service = { version = "0.1", default-features = false }
//! ```

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate self as tool_service;

// The modules, grouped by what they do. Which may use which is
// tests/offline/architecture.rs's layer list, and only there.
//
// The attribute's parsers (the macro crate's file).
mod attribute;
// Leaves.
mod duration;
mod error;
pub mod log_text;
mod names;
mod rate;
#[cfg(any(feature = "pulsar", feature = "mcp"))]
mod roots;
mod scope;
mod state;

// A request's parts and the frames of its answer.
mod context;
mod response;
mod stream;
pub mod wire;

// One view of a type's schema (descriptions, MCP flavours, provider
// checks, and the rules decoding applies from it).
mod schema;

// What generated code registers, and typed decoding of requests.
mod decode;
mod service;

// What generated code calls: a handler's typed invocation, and the
// compile-time probes of the user's types.
mod invoke;
mod probe;

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

// The transports, siblings over the host, which runs any set of them
// (`host::Transports`).
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
pub use context::{Caller, Context};
pub use error::{ToolError, TypedError};
pub use rate::{ParseRateError, Rate};
pub use registry::{
    MissingServices, MissingState, Problem, Registry, RegistryError, SelectError, UnknownName,
};
pub use response::response_text;
pub use service::Service;
pub use state::State;
pub use stream::{Chunks, Collected, StreamClosed};
// The guide below links other guides as files (for GitHub and a
// checkout). A label's first definition wins, so these, read first, send
// its labels to the items and sections of the rustdoc pages instead.
/// [rate-limits]: crate::host#rate-limits
/// [who-is-calling]: crate::pulsar::announce#who-is-calling
/// [`Service::scopes`]: crate::Service::scopes
/// [`Chunks::send_blocking`]: crate::Chunks::send_blocking
///
#[doc = include_str!("../docs/attribute.md")]
pub use tool_service_macros::tool_service;
