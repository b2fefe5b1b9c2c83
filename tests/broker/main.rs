//! The suites that need a broker, in one test binary (one link of the
//! runtime and its Pulsar and TLS stacks instead of fourteen). Each suite
//! module is what a test binary of its own used to be. The suites take
//! turns (`support::suite`), because they share the broker's topics and the
//! example binaries; the tests of one suite run side by side.
//!
//! * `announce`: `announce`, `withdraw` and `serve --announce` against
//!   scripted config services;
//! * `bad_input`: a corpus of bad requests against a live `serve`;
//! * `batching`: answers ready together, as one Pulsar batch;
//! * `broker_restart`: a restart of a broker of its own under `serve`;
//! * `client`: `ToolClient` against a raw Pulsar responder;
//! * `examples`: the example binaries as users run them;
//! * `flow`: concurrency, the receive window and shutdown;
//! * `moves`: topics unloaded (moved between brokers) under traffic;
//! * `operations`: metrics, probes and logs of a running `serve`;
//! * `oversized`: what must not silence a service;
//! * `python_peer`: our client against TrustGraph's `DynamicToolService`;
//! * `replicas`: example binaries as separate processes side by side;
//! * `secure_broker`: token authentication and TLS;
//! * `security`: untrusted input on a live `serve`;
//! * `state`: services that own resources;
//! * `transport`: `serve` driven by the Rust client and by raw Pulsar.
//!
//! Needs a broker: `scripts/pulsar.sh start`.

#[path = "../support/mod.rs"]
mod support;

mod announce;
mod bad_input;
mod batching;
mod broker_restart;
mod client;
mod examples;
mod flow;
mod moves;
mod one_host;
mod operations;
mod oversized;
mod partition;
mod python_peer;
mod replicas;
mod secure_broker;
mod security;
mod state;
mod transport;
