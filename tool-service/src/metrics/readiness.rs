//! Readiness, as `/readyz` and the per-transport probes report it: the
//! drain, the broker, the application's own check, and every service
//! served.

use std::fmt::{self, Write as _};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use super::registry::Metrics;
use super::service::Via;

/// A readiness condition of the application's own (its database answers,
/// its cache is warm), which `GET /readyz` checks beside tool-service's:
/// put one in the [`State`](crate::State) the setup hook returns.
///
/// The check runs on every probe and must not block: for a condition that
/// takes I/O to learn, let a task of the setup hook's keep a flag current,
/// and read the flag here.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use tool_service::metrics::{Metrics, ReadinessCheck};
/// use tool_service::State;
///
/// let db_up = Arc::new(AtomicBool::new(false));
/// let seen = Arc::clone(&db_up);
/// let state = State::new().with(ReadinessCheck::new(move || {
///     if seen.load(Ordering::Relaxed) { Ok(()) } else { Err("the database does not answer".into()) }
/// }));
///
/// // What `serve` does with it: `/readyz` fails while the check does.
/// let metrics = Metrics::new();
/// metrics.add_state(&state);
/// assert!(metrics.readiness().unwrap_err().contains("not ready: the database does not answer\n"));
/// db_up.store(true, Ordering::Relaxed);
/// assert!(!metrics.readiness().unwrap_err().contains("database"));
/// ```
#[derive(Clone)]
pub struct ReadinessCheck(Arc<dyn Fn() -> Result<(), String> + Send + Sync>);

impl ReadinessCheck {
    /// A check that says why the application is not ready, or `Ok(())`.
    pub fn new(check: impl Fn() -> Result<(), String> + Send + Sync + 'static) -> Self {
        Self(Arc::new(check))
    }
}

impl fmt::Debug for ReadinessCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReadinessCheck")
    }
}

impl Metrics {
    /// The failing conditions of every transport (`None`) or one
    /// (`Some(None)` is Pulsar).
    pub(super) fn check(&self, only: Option<Via>) -> Result<(), String> {
        let mut failing = String::new();
        if self.draining.load(Ordering::Relaxed) {
            failing.push_str("shutting down\n");
        }
        let pulsar = only.is_none_or(|transport| transport == Via::Pulsar);
        if pulsar && self.broker_lost() {
            failing.push_str("broker not connected\n");
        }
        let check = self
            .app_ready
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(Err(reason)) = check.map(|check| (check.0)()) {
            let _ = writeln!(failing, "not ready: {}", reason.trim_end());
        }
        let mcp = only.is_none_or(|transport| transport == Via::Mcp);
        if mcp
            && self
                .mcp_auth
                .get()
                .and_then(|auth| auth.keys_loaded.get())
                .is_some_and(|loaded| !loaded.load(Ordering::Relaxed))
        {
            failing.push_str("the authorization server's keys are not loaded\n");
        }
        let services = self.services.lock().unwrap_or_else(PoisonError::into_inner);
        let mut served = 0;
        for service in services
            .iter()
            .filter(|service| only.is_none_or(|transport| transport == service.transport))
        {
            served += 1;
            if !service.running.load(Ordering::Relaxed) {
                let _ = match service.transport {
                    Via::Pulsar => writeln!(failing, "not subscribed: {}", service.processor),
                    Via::Mcp => writeln!(
                        failing,
                        "not served over {}: {}",
                        service.transport.name(),
                        service.processor
                    ),
                };
            }
        }
        if served == 0 && failing.is_empty() {
            match only {
                None => failing.push_str("no service subscribed yet\n"),
                Some(transport) => {
                    let _ = writeln!(failing, "nothing is served over {}", transport.name());
                }
            }
        }
        if failing.is_empty() {
            Ok(())
        } else {
            Err(failing)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    #[test]
    fn an_application_check_holds_readiness_back_until_it_passes() {
        let db_up = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&db_up);
        let state = crate::state::State::new().with(ReadinessCheck::new(move || {
            if seen.load(Ordering::Relaxed) {
                Ok(())
            } else {
                Err("the database does not answer".into())
            }
        }));
        let metrics = Metrics::new();
        metrics.add_state(&state);
        metrics.service("tickets-service").set_running(true);
        assert_eq!(
            metrics.readiness().unwrap_err(),
            "not ready: the database does not answer\n"
        );
        db_up.store(true, Ordering::Relaxed);
        assert!(metrics.readiness().is_ok());
    }

    #[test]
    fn a_lost_broker_fails_readiness_until_it_answers_again() {
        let metrics = Metrics::new();
        metrics.service("joke-service").set_running(true);
        metrics.set_broker_connected(false);
        assert_eq!(metrics.readiness().unwrap_err(), "broker not connected\n");
        assert!(metrics
            .render()
            .contains("tg_tool_service_broker_connected 0\n"));
        metrics.set_broker_connected(true);
        assert!(metrics.readiness().is_ok());
    }

    #[test]
    fn readiness_waits_for_every_subscription_and_ends_with_the_drain() {
        let metrics = Metrics::new();
        assert!(metrics.readiness().is_err());
        let joke = metrics.service("joke-service");
        assert_eq!(
            metrics.readiness().unwrap_err(),
            "not subscribed: joke-service\n"
        );
        joke.set_running(true);
        assert!(metrics.readiness().is_ok());
        metrics.set_draining();
        assert_eq!(metrics.readiness().unwrap_err(), "shutting down\n");
    }

    #[test]
    fn a_broker_outage_fails_pulsar_readiness_not_mcp() {
        let metrics = Metrics::new();
        metrics.service("joke-service").set_running(true);
        metrics
            .service_on("joke-service", Via::Mcp)
            .set_running(true);
        metrics.set_broker_connected(false);
        assert!(metrics.readiness_of("mcp").is_ok());
        assert_eq!(
            metrics.readiness_of("pulsar").unwrap_err(),
            "broker not connected\n"
        );
        assert_eq!(metrics.readiness().unwrap_err(), "broker not connected\n");
        assert_eq!(
            metrics.readiness_of("grpc").unwrap_err(),
            "nothing is served over grpc\n"
        );
    }
}
