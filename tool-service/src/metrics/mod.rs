//! Prometheus metrics of a serving process, per service.
//!
//! `serve` and `mcp --listen` expose them on `http://0.0.0.0:8000/metrics`
//! by default (`--metrics-port`, `--no-metrics`; `mcp` on stdio only when
//! `--metrics` or `--metrics-port` asks), in Prometheus' text format, with
//! the probes `/livez` and `/readyz` (and `/readyz/pulsar`, `/readyz/mcp`). Names
//! follow TrustGraph's processors where one exists, so existing dashboards
//! keep working; `processor` is the service id:
//!
//! | metric | type | labels | meaning |
//! |---|---|---|---|
//! | `tg_dynamic_tool_service_invocation_total` | counter | `processor` | requests answered with a result (as TrustGraph's `DynamicToolService` counts) |
//! | `tg_consumer_processing_total` | counter | `processor`, `consumer`, `status` | requests handled, `status` `ok` or `error` |
//! | `tg_consumer_request_duration_seconds` | histogram | `processor`, `consumer` | time from taking a request to sending its last frame |
//! | `tg_consumer_state` | gauge | `processor`, `consumer`, `tg_consumer_state` | 1 for the current state: `running` while subscribed and the broker connected, else `stopped` |
//! | `tg_tool_service_broker_connected` | gauge | none | 1 while the Pulsar broker answers this process's connection, 0 while it does not (probed every 2 s; absent when nothing is served on Pulsar) |
//! | `tg_tool_service_errors_total` | counter | `processor`, `type` | error frames by error type, refusals included |
//! | `tg_tool_service_in_flight` | gauge | `processor` | requests being handled now |
//! | `tg_tool_service_concurrency_limit` | gauge | `processor` | calls the service takes in its handler at once, over every transport (`--concurrency`); `in_flight` summed over the transports reaches it, and more wait |
//! | `tg_tool_service_oversized_responses_total` | counter | `processor` | responses (or chunks) too large for the broker, answered with a `response-too-large` error instead, or not at all when even that would not fit |
//! | `tg_tool_service_send_failures_total` | counter | `processor` | response frames the broker did not take (timeout, refusal, closed producer) |
//! | `tg_tool_service_response_batches_total` | counter | `processor` | batches the response frames went to the broker in, over Pulsar (absent with `--response-batching off`, or before the first) |
//! | `tg_tool_service_batched_responses_total` | counter | `processor` | response frames sent in those batches: its rate over the batches' is the mean batch size |
//! | `tg_tool_service_resent_alone_total` | counter | `processor` | response frames of a batch the broker refused (a topic policy below the size the broker announced), sent again each alone |
//! | `tg_tool_service_mcp_connections` | gauge | none | connections open on the MCP port (absent unless MCP is served over HTTP) |
//! | `tg_tool_service_mcp_max_connections` | gauge | none | the most connections the MCP port keeps open (`--mcp-max-connections`; absent unless MCP is served over HTTP) |
//! | `tg_tool_service_mcp_connections_closed_total` | counter | `reason` | MCP connections a limit closed or refused: `over_capacity` (refused: every open one was answering), `evicted` (an idle one, closed to make room), `header_timeout`, `body_timeout` |
//! | `tg_tool_service_mcp_auth_refusals_total` | counter | `reason` | MCP requests refused by the port's bearer check, the static token's or OAuth's (absent when the port takes anyone): `missing_token`, `malformed_header`, `malformed_token`, `not_accepted` (not the static token), `token_type`, `token_too_large`, `algorithm`, `unknown_key`, `signature`, `issuer`, `audience`, `expired`, `not_yet_valid`, `inactive`, `insufficient_scope`, `issuer_unavailable` |
//! | `tg_tool_service_mcp_auth_keys_loaded` | gauge | none | 1 once the authorization server's keys are loaded (until then `/readyz/mcp` fails) |
//! | `tg_tool_service_trace_spans_dropped_total` | counter | none | with the `otel` feature, while tracing is on: spans not exported (the export queue was full, or the collector did not take their batch) |
//! | `tg_tool_service_trace_spans_exported_total` | counter | none | with `otel`: spans the collector took |
//! | `tg_tool_service_trace_contexts_ignored_total` | counter | none | with `otel`: malformed `traceparent`s ignored |
//!
//! The application's own metrics (a pool's size, a cache's hits) are
//! rendered after these, from an [`AppMetrics`] the setup hook puts in the
//! [`State`](crate::State): closures that write the text format, or a
//! `prometheus_client` registry with the `prometheus-client` feature.
//!
//! `consumer` is always `request`. Calls that come over MCP (`mcp`, `serve
//! --mcp-listen`) are counted apart, in samples that also carry
//! `transport="mcp"`; Pulsar's samples carry no `transport` label, so
//! dashboards made for TrustGraph's processors see what they always saw.
//! Recording costs a few atomic operations per request; error counts take a
//! lock, on errors only.
//!
//! # Probes
//!
//! The metrics listener answers Kubernetes' probes:
//! `/livez` (and `/healthz`) with 200 while the process answers at all, and
//! `/readyz` with 200 only while every transport it serves is ready and
//! shutdown has not begun: on Pulsar, the broker is connected and every
//! service served is subscribed; over MCP, its listener (or stdio session) is
//! up. Otherwise it answers 503 with the failing conditions, one per line:
//! `not subscribed: wait-service` while the broker cannot be reached at start
//! or while a consumer is made again, `broker not connected` during an
//! outage, `not served over mcp: joke-service` before MCP serves, `not ready:
//! REASON` while the application's own check fails, and `shutting down` from
//! the moment SIGINT or SIGTERM starts the drain, so that a rollout sends no
//! more requests to a replica that is leaving while it finishes what it has.
//! `/readyz/pulsar` and `/readyz/mcp` say the same for one transport. A
//! process that serves both (`serve --mcp-listen`) should give a load
//! balancer's MCP pool `/readyz/mcp`: a broker outage fails `/readyz` and
//! `/readyz/pulsar` only, and Pulsar needs no balancer (its replicas pull
//! from the broker). `tests/offline/ops.rs` probes all three while the broker
//! does not answer. `--no-metrics` turns the probes off
//! with the metrics; `--metrics-address 127.0.0.1` keeps both on the host.
//! `tests/broker/operations.rs` follows `/readyz` through an unreachable broker, a
//! start and a drain with a request in flight; `tests/broker/broker_restart.rs`
//! through a broker restart (gauge 1 → 0 → 1, `/readyz` 503 → 200).
//!
//! The endpoint serves at most 16 connections at once and closes the others at
//! once; a client has 2 s to ask and read, so idle connections cannot pile up
//! file descriptors (`tests/broker/security.rs`); a failing `accept` is logged at most
//! every 10 s.
//!
//! The families are recorded and written here rather than with the
//! `prometheus-client` crate, which was measured slower per request and
//! would add seven crates (the repository's CONTRIBUTING.md, *Dependencies
//! measured and not taken*).

// The process's metrics, the application's own, one service's, and the
// readiness the probes report; the text format and the endpoint.
mod app;
mod http;
mod readiness;
mod registry;
mod render;
mod service;

pub use app::{AppMetrics, Collect};
pub(crate) use http::serve_metrics;
#[cfg(feature = "mcp")]
pub(crate) use http::Throttle;
pub use http::DEFAULT_METRICS_PORT;
// Public for the broker tests only.
#[doc(hidden)]
pub use http::MAX_CONNECTIONS;
pub use readiness::ReadinessCheck;
#[cfg(feature = "mcp")]
pub(crate) use registry::CloseReason;
pub use registry::Metrics;
#[cfg(all(feature = "mcp", test))]
pub(crate) use registry::MCP_AUTH_REASONS;
pub(crate) use service::InFlight;
pub(crate) use service::ServiceMetrics;
#[cfg(feature = "mcp")]
pub(crate) use service::Via;
