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
//! A binary's `main` hands over to [`run`], which prints the descriptors, lists
//! the services, or calls one in-process (`call`).
//!
//! * [`macro@tool_service`] — the attribute, its keys and parameter roles.
//! * [`wire`] — the request and response frames (TrustGraph's format).
//! * [`descriptor`] — the `tool-service` and `tool` config items.
//! * [`Registry`] — every service linked in, checked for mistakes.
//! * [`dispatch`] — the path from a request payload to response frames.

#![warn(missing_docs)]

extern crate self as tool_service;

pub mod broker;
pub mod cli;
pub mod client;
mod context;
pub mod descriptor;
pub mod dispatch;
mod error;
pub mod log_text;
pub mod metrics;
mod pulsar_compat;
mod registry;
mod response;
pub mod serve;
mod stream;
pub mod wire;

#[doc(hidden)]
pub mod __private;

pub use cli::run;
pub use context::Context;
pub use error::{ToolError, TypedError};
/// The Pulsar client this crate is built on, for [`broker::BrokerOptions::connect`] users.
pub use pulsar;
pub use registry::{Problem, Registry, RegistryError, Service, UnknownName};
pub use response::response_text;
pub use stream::{Chunks, StreamClosed};
pub use tool_service_macros::tool_service;
