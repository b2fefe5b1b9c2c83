//! Serving over Apache Pulsar, TrustGraph's own transport, beside
//! [`mcp`](crate::mcp): both run over the same [`host`](crate::host).
//!
//! * [`broker`] — the connection to the broker, shared by every service and
//!   client of a process.
//! * [`serve`] — consuming each service's request topic and answering on
//!   its response topic.
//! * [`announce`] — writing the descriptors into TrustGraph's config.
//! * [`client`] — calling a tool service over the broker.

// Leaves: retrying, and what the `pulsar` crate does not (yet) do.
mod backoff;
pub(crate) mod compat;

pub mod broker;

pub mod announce;
pub mod client;

pub mod serve;
