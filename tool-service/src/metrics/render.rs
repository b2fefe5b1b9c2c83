//! [`Metrics::render`]: every family in Prometheus' text exposition
//! format, in a fixed order, then the application's own.

use std::fmt::{self, Write as _};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

#[cfg(feature = "mcp")]
use super::registry::MCP_AUTH_REASONS;
use super::registry::{CloseReason, Metrics, BROKER_CONNECTED, BROKER_UNKNOWN};
use super::service::{ServiceMetrics, Via};

impl Metrics {
    /// What [`Metrics::render`] returns.
    pub(super) fn exposition(&self) -> String {
        let services = self
            .services
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut out = String::new();
        per_service(
            &mut out,
            "tg_dynamic_tool_service_invocation_total",
            "counter",
            "Dynamic tool service invocation count",
            &services,
            |service| service.ok.load(Ordering::Relaxed).to_string(),
        );
        family(
            &mut out,
            "tg_consumer_processing_total",
            "counter",
            "Processing count",
            &services,
            |out, name, service| {
                for (status, count) in [
                    ("ok", service.ok.load(Ordering::Relaxed)),
                    ("error", service.failed.load(Ordering::Relaxed)),
                ] {
                    let _ = writeln!(
                        out,
                        "{name}{{{},consumer=\"request\",status=\"{status}\"}} {count}",
                        service.labels()
                    );
                }
            },
        );
        family(
            &mut out,
            "tg_consumer_request_duration_seconds",
            "histogram",
            "Request latency (seconds)",
            &services,
            |out, name, service| service.latency.render(out, name, &service.labels()),
        );
        family(
            &mut out,
            "tg_consumer_state",
            "gauge",
            "Consumer state",
            &services,
            |out, name, service| {
                let running = service.running.load(Ordering::Relaxed)
                    && !(service.transport == Via::Pulsar && self.broker_lost());
                for (state, on) in [("stopped", !running), ("running", running)] {
                    let _ = writeln!(
                        out,
                        "{name}{{{},consumer=\"request\",{name}=\"{state}\"}} {}",
                        service.labels(),
                        u8::from(on)
                    );
                }
            },
        );
        family(
            &mut out,
            "tg_tool_service_errors_total",
            "counter",
            "Error frames sent, by error type",
            &services,
            |out, name, service| {
                let errors = service
                    .errors
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                for (kind, count) in errors.iter() {
                    let _ = writeln!(
                        out,
                        "{name}{{{},type=\"{}\"}} {count}",
                        service.labels(),
                        escape(kind)
                    );
                }
            },
        );
        per_service(
            &mut out,
            "tg_tool_service_oversized_responses_total",
            "counter",
            "Responses too large for the broker's maximum message size",
            &services,
            |service| service.oversized.load(Ordering::Relaxed).to_string(),
        );
        per_service(
            &mut out,
            "tg_tool_service_send_failures_total",
            "counter",
            "Response frames the broker did not take",
            &services,
            |service| service.send_failures.load(Ordering::Relaxed).to_string(),
        );
        // Pulsar's only, and only once a batch was sent: absent with
        // batching off and over MCP.
        let batching: Vec<_> = services
            .iter()
            .filter(|service| {
                service.transport == Via::Pulsar && service.batches.load(Ordering::Relaxed) > 0
            })
            .cloned()
            .collect();
        if !batching.is_empty() {
            per_service(
                &mut out,
                "tg_tool_service_response_batches_total",
                "counter",
                "Batches the service's response frames went to the broker in",
                &batching,
                |service| service.batches.load(Ordering::Relaxed).to_string(),
            );
            per_service(
                &mut out,
                "tg_tool_service_batched_responses_total",
                "counter",
                "Response frames sent in those batches",
                &batching,
                |service| service.batched.load(Ordering::Relaxed).to_string(),
            );
            per_service(
                &mut out,
                "tg_tool_service_resent_alone_total",
                "counter",
                "Response frames of a batch the broker refused, sent again alone",
                &batching,
                |service| service.resent_alone.load(Ordering::Relaxed).to_string(),
            );
        }
        per_service(
            &mut out,
            "tg_tool_service_in_flight",
            "gauge",
            "Requests being handled",
            &services,
            |service| service.in_flight.load(Ordering::Relaxed).to_string(),
        );
        let limits = self
            .concurrency
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if !limits.is_empty() {
            let name = "tg_tool_service_concurrency_limit";
            let _ = writeln!(
                out,
                "# HELP {name} Calls a service takes in its handler at once, over every transport"
            );
            let _ = writeln!(out, "# TYPE {name} gauge");
            for (processor, limit) in limits {
                let _ = writeln!(out, "{name}{{processor=\"{processor}\"}} {limit}");
            }
        }
        if let Some(http) = self.mcp_http.get() {
            let name = "tg_tool_service_mcp_connections";
            let _ = writeln!(out, "# HELP {name} Connections open on the MCP port");
            let _ = writeln!(out, "# TYPE {name} gauge");
            let _ = writeln!(out, "{name} {}", http.open.load(Ordering::Relaxed));
            let name = "tg_tool_service_mcp_max_connections";
            let _ = writeln!(
                out,
                "# HELP {name} Connections the MCP port keeps open at most"
            );
            let _ = writeln!(out, "# TYPE {name} gauge");
            let _ = writeln!(out, "{name} {}", http.cap.load(Ordering::Relaxed));
            let name = "tg_tool_service_mcp_connections_closed_total";
            let _ = writeln!(
                out,
                "# HELP {name} MCP connections closed or refused by a limit, by reason"
            );
            let _ = writeln!(out, "# TYPE {name} counter");
            let closed = http.closed.lock().unwrap_or_else(PoisonError::into_inner);
            for reason in CloseReason::ALL.map(CloseReason::label) {
                let count = closed.get(reason).copied().unwrap_or(0);
                let _ = writeln!(out, "{name}{{reason=\"{reason}\"}} {count}");
            }
        }
        #[cfg(feature = "mcp")]
        if let Some(auth) = self.mcp_auth.get() {
            let name = "tg_tool_service_mcp_auth_refusals_total";
            let _ = writeln!(
                out,
                "# HELP {name} MCP requests refused by the port's bearer check, by reason"
            );
            let _ = writeln!(out, "# TYPE {name} counter");
            let refused = auth.refused.lock().unwrap_or_else(PoisonError::into_inner);
            for reason in MCP_AUTH_REASONS {
                let count = refused.get(reason).copied().unwrap_or(0);
                let _ = writeln!(out, "{name}{{reason=\"{reason}\"}} {count}");
            }
            if let Some(loaded) = auth.keys_loaded.get() {
                let name = "tg_tool_service_mcp_auth_keys_loaded";
                let _ = writeln!(
                    out,
                    "# HELP {name} Whether the authorization server's keys are loaded"
                );
                let _ = writeln!(out, "# TYPE {name} gauge");
                let _ = writeln!(out, "{name} {}", u8::from(loaded.load(Ordering::Relaxed)));
            }
        }
        let broker = self.broker.load(Ordering::Relaxed);
        if broker != BROKER_UNKNOWN {
            let name = "tg_tool_service_broker_connected";
            let _ = writeln!(out, "# HELP {name} Whether the Pulsar broker answers");
            let _ = writeln!(out, "# TYPE {name} gauge");
            let _ = writeln!(out, "{name} {}", u8::from(broker == BROKER_CONNECTED));
        }
        #[cfg(feature = "otel")]
        if crate::otel::enabled() {
            for (name, help, value) in [
                (
                    "tg_tool_service_trace_spans_dropped_total",
                    "Spans not exported: the export queue was full, or the collector did not take their batch",
                    crate::otel::spans_dropped(),
                ),
                (
                    "tg_tool_service_trace_spans_exported_total",
                    "Spans the collector took",
                    crate::otel::spans_exported(),
                ),
                (
                    "tg_tool_service_trace_contexts_ignored_total",
                    "Malformed traceparent values ignored (their requests started traces of their own)",
                    crate::otel::contexts_ignored(),
                ),
            ] {
                let _ = writeln!(out, "# HELP {name} {help}");
                let _ = writeln!(out, "# TYPE {name} counter");
                let _ = writeln!(out, "{name} {value}");
            }
        }
        let app = self
            .app
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(app) = app {
            app.collect(&mut out);
        }
        out
    }
}

fn family(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    services: &[Arc<ServiceMetrics>],
    mut samples: impl FnMut(&mut String, &str, &ServiceMetrics),
) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for service in services {
        samples(out, name, service);
    }
}

/// A family of one sample per service, labelled with the service only.
fn per_service(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    services: &[Arc<ServiceMetrics>],
    value: impl Fn(&ServiceMetrics) -> String,
) {
    family(out, name, kind, help, services, |out, name, service| {
        per_processor(out, name, service, value(service));
    });
}

/// One sample labelled with the service (and transport) only.
fn per_processor(out: &mut String, name: &str, service: &ServiceMetrics, value: impl fmt::Display) {
    let _ = writeln!(out, "{name}{{{}}} {value}", service.labels());
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn renders_counters_histogram_and_gauges() {
        let metrics = Metrics::new();
        let joke = metrics.service("joke-service");
        joke.set_running(true);
        joke.start().finish(None, Duration::from_micros(300));
        joke.start().finish(None, Duration::from_millis(40));
        joke.start()
            .finish(Some("tool-service-error"), Duration::from_secs(200));
        joke.refused("overloaded");
        let running = joke.start();
        assert!(Arc::ptr_eq(&joke, &metrics.service("joke-service")));
        let text = metrics.render();
        for line in [
            "# TYPE tg_dynamic_tool_service_invocation_total counter",
            "tg_dynamic_tool_service_invocation_total{processor=\"joke-service\"} 2",
            "tg_consumer_processing_total{processor=\"joke-service\",consumer=\"request\",status=\"ok\"} 2",
            "tg_consumer_processing_total{processor=\"joke-service\",consumer=\"request\",status=\"error\"} 1",
            "# TYPE tg_consumer_request_duration_seconds histogram",
            "tg_consumer_request_duration_seconds_bucket{processor=\"joke-service\",consumer=\"request\",le=\"0.0005\"} 1",
            "tg_consumer_request_duration_seconds_bucket{processor=\"joke-service\",consumer=\"request\",le=\"0.05\"} 2",
            "tg_consumer_request_duration_seconds_bucket{processor=\"joke-service\",consumer=\"request\",le=\"120\"} 2",
            "tg_consumer_request_duration_seconds_bucket{processor=\"joke-service\",consumer=\"request\",le=\"+Inf\"} 3",
            "tg_consumer_request_duration_seconds_count{processor=\"joke-service\",consumer=\"request\"} 3",
            "tg_consumer_request_duration_seconds_sum{processor=\"joke-service\",consumer=\"request\"} 200.0403",
            "tg_consumer_state{processor=\"joke-service\",consumer=\"request\",tg_consumer_state=\"running\"} 1",
            "tg_consumer_state{processor=\"joke-service\",consumer=\"request\",tg_consumer_state=\"stopped\"} 0",
            "tg_tool_service_errors_total{processor=\"joke-service\",type=\"tool-service-error\"} 1",
            "tg_tool_service_errors_total{processor=\"joke-service\",type=\"overloaded\"} 1",
            "tg_tool_service_in_flight{processor=\"joke-service\"} 1",
        ] {
            assert!(
                text.lines().any(|candidate| candidate == line),
                "missing {line:?} in\n{text}"
            );
        }
        drop(running);
        assert!(metrics
            .render()
            .contains("tg_tool_service_in_flight{processor=\"joke-service\"} 0\n"));
    }

    #[test]
    fn the_limits_each_replica_runs_with_are_gauges() {
        let metrics = Metrics::new();
        assert!(!metrics.render().contains("concurrency_limit"));
        metrics.set_concurrency_limit("joke-service", 8);
        metrics.set_concurrency_limit("echo-service", 64);
        metrics.set_concurrency_limit("joke-service", 4);
        let text = metrics.render();
        assert!(text.contains("# TYPE tg_tool_service_concurrency_limit gauge\n"));
        assert!(text.contains("tg_tool_service_concurrency_limit{processor=\"joke-service\"} 4\n"));
        assert!(text.contains("tg_tool_service_concurrency_limit{processor=\"echo-service\"} 64\n"));
        assert!(!text.contains("mcp_max_connections"));
        #[cfg(feature = "mcp")]
        {
            metrics.mcp_max_connections(512);
            let text = metrics.render();
            assert!(text.contains("tg_tool_service_mcp_max_connections 512\n"));
            assert!(text.contains("tg_tool_service_mcp_connections 0\n"));
        }
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
