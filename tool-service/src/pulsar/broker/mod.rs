//! The connection to Apache Pulsar, shared by every service and client of a
//! process.

mod connect;
mod messages;

pub(crate) use connect::describe;
pub use connect::{BrokerOptions, ConnectError};
// Pulsar workarounds and the request–response plumbing of the client,
// public for the broker tests and the benchmarks only.
#[doc(hidden)]
pub use connect::{keep_nodelay, NoDelay};
#[doc(hidden)]
pub use messages::{message_id, subscribe_own};
pub(crate) use messages::{producer, property, publish, response};

/// The Pulsar client the broker side is built on: [`BrokerOptions::connect`]
/// returns its client, and [`ToolClient`](crate::pulsar::client::ToolClient) takes
/// it. Its types are part of this crate's `pulsar`
/// feature, so a major release of `pulsar` is a major release of that
/// feature; nothing else in this crate names them.
pub use pulsar;

/// The default broker: a local standalone Pulsar.
pub const DEFAULT_PULSAR_URL: &str = "pulsar://127.0.0.1:6650";
