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
//! | `pulsar` | yes | serving on Apache Pulsar: `broker`, `client`, `metrics`, `serve` (the `pulsar` client, rustls) |
//! | `mcp` | yes | serving every tool over the Model Context Protocol: [`mcp`], stdio and Streamable HTTP (rmcp, hyper) |
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
// above it in this list (tests/architecture.rs checks it).
//
// Leaves.
#[cfg(feature = "pulsar")]
mod backoff;
mod duration;
mod error;
mod json_text;
mod known;
pub mod log_text;
mod state;

// A request's parts and the frames of its answer.
mod context;
mod response;
mod stream;
pub mod wire;

// What argument schemas promise, as rules decoding applies.
mod rules;

// What generated code registers, and typed decoding of requests.
mod decode;
mod schema;
mod spec;

// Descriptors, the request path, and the checked set of services.
pub mod descriptor;
pub mod dispatch;
mod registry;

// The broker side.
#[cfg(feature = "pulsar")]
#[cfg_attr(docsrs, doc(cfg(feature = "pulsar")))]
pub mod announce;
#[cfg(feature = "pulsar")]
#[cfg_attr(docsrs, doc(cfg(feature = "pulsar")))]
pub mod broker;
#[cfg(feature = "pulsar")]
#[cfg_attr(docsrs, doc(cfg(feature = "pulsar")))]
pub mod client;
#[cfg(feature = "pulsar")]
#[cfg_attr(docsrs, doc(cfg(feature = "pulsar")))]
pub mod metrics;
#[cfg(feature = "pulsar")]
mod pulsar_compat;
#[cfg(feature = "pulsar")]
#[cfg_attr(docsrs, doc(cfg(feature = "pulsar")))]
pub mod serve;

// The MCP side, a sibling of `serve`.
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;

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
pub use registry::{MissingServices, MissingState, Problem, Registry, RegistryError, UnknownName};
pub use response::response_text;
pub use spec::Service;
pub use state::State;
pub use stream::{Chunks, Collected, StreamClosed};
pub use tool_service_macros::tool_service;
