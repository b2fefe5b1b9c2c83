//! Whether the broker is connected: a probe on the client's own connection
//! every few seconds, a gauge and readiness that follow it, and one log line
//! when the connection is lost and one when it is back.
//!
//! The Pulsar client reconnects its consumers and producers by itself and
//! says nothing a process can read, so the probe asks the broker to look up
//! a request topic over that connection: a lookup answered means a broker
//! that serves this client.

use std::future::Future;
use std::time::Duration;

use pulsar::{Pulsar, TokioExecutor};
use tokio::time::Instant;

use crate::metrics::Metrics;
use crate::pulsar::broker::BrokerOptions;

/// How long after an answered probe the next one starts.
pub(super) const PROBE_EVERY: Duration = Duration::from_secs(2);

/// How long a probe may wait for the broker's answer.
pub(super) const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Probes until dropped, keeping `metrics`' connectivity current and
/// logging its changes.
pub(super) async fn watch<P, Fut>(mut probe: P, metrics: &Metrics, url: &str)
where
    P: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let mut lost_since: Option<Instant> = None;
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        match (probe().await, lost_since) {
            (Ok(()), None) => {}
            (Ok(()), Some(since)) => {
                metrics.set_broker_connected(true);
                lost_since = None;
                tracing::info!(
                    %url,
                    after = %crate::duration::format(since.elapsed()),
                    "the connection to the Pulsar broker is back"
                );
            }
            (Err(reason), None) => {
                metrics.set_broker_connected(false);
                lost_since = Some(Instant::now());
                tracing::warn!(
                    %url,
                    %reason,
                    "lost the connection to the Pulsar broker; reconnecting (each attempt is logged at debug)"
                );
            }
            (Err(reason), Some(_)) => {
                tracing::debug!(%url, %reason, "the Pulsar broker is still not connected");
            }
        }
    }
}

/// A probe of `pulsar`'s connection: a lookup of `topic`, answered within
/// [`PROBE_TIMEOUT`]. When it is not, a handshake of our own says why, as
/// the reason in the log.
pub(super) fn pulsar_probe(
    pulsar: Pulsar<TokioExecutor>,
    topic: String,
    broker: BrokerOptions,
) -> impl FnMut() -> std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>> {
    move || {
        let (pulsar, topic, broker) = (pulsar.clone(), topic.clone(), broker.clone());
        Box::pin(async move {
            let error = match tokio::time::timeout(PROBE_TIMEOUT, pulsar.lookup_topic(topic)).await
            {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(error)) => crate::pulsar::broker::describe(&error),
                Err(_) => format!(
                    "a topic lookup got no answer within {}",
                    crate::duration::format(PROBE_TIMEOUT)
                ),
            };
            Err(
                match tokio::time::timeout(PROBE_TIMEOUT, broker.handshake()).await {
                    Ok(Err(refused)) => refused.to_string(),
                    _ => error,
                },
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A broker that is down for the probes `down` covers, by number.
    fn scripted(
        down: std::ops::Range<usize>,
    ) -> impl FnMut() -> std::future::Ready<Result<(), String>> {
        let mut probes = 0;
        move || {
            probes += 1;
            std::future::ready(if down.contains(&probes) {
                Err(String::from("Connection refused"))
            } else {
                Ok(())
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_gauge_and_readiness_follow_the_probes() {
        let metrics = Arc::new(Metrics::new());
        metrics.service("svc").set_running(true);
        metrics.set_broker_connected(true);
        let watching = {
            let metrics = Arc::clone(&metrics);
            tokio::spawn(async move { watch(scripted(3..6), &metrics, "pulsar://b:6650").await })
        };
        let mut seen = Vec::new();
        for _ in 0..8 {
            tokio::time::sleep(PROBE_EVERY).await;
            tokio::task::yield_now().await;
            seen.push(metrics.readiness().is_ok());
        }
        watching.abort();
        // Probes 3, 4 and 5 fail.
        assert_eq!(
            seen,
            [true, true, false, false, false, true, true, true],
            "{seen:?}"
        );
    }

    /// The log lines of a run of `watch`, at every level.
    fn logged(down: std::ops::Range<usize>, probes: u32) -> Vec<(tracing::Level, String)> {
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<(tracing::Level, String)>>>);
        struct Message<'a>(&'a mut String);
        impl tracing::field::Visit for Message<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    *self.0 = format!("{value:?}");
                }
            }
        }
        impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Lines {
            fn on_event(
                &self,
                event: &tracing::Event<'_>,
                _: tracing_subscriber::layer::Context<'_, S>,
            ) {
                let mut message = String::new();
                event.record(&mut Message(&mut message));
                self.0
                    .lock()
                    .unwrap()
                    .push((*event.metadata().level(), message));
            }
        }
        use tracing_subscriber::layer::SubscriberExt;
        let lines = Lines::default();
        let subscriber = tracing_subscriber::registry().with(lines.clone());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        tracing::subscriber::with_default(subscriber, || {
            // Another test's thread may have registered these callsites
            // while no subscriber of this thread's was there to want them.
            tracing::callsite::rebuild_interest_cache();
            runtime.block_on(async {
                let metrics = Metrics::new();
                let watching = watch(scripted(down), &metrics, "pulsar://b:6650");
                let _ =
                    tokio::time::timeout(PROBE_EVERY * probes + PROBE_EVERY / 2, watching).await;
            });
        });
        let lines = lines.0.lock().unwrap().clone();
        lines
    }

    #[test]
    fn an_outage_is_one_warning_and_one_info_line() {
        let lines = logged(2..7, 9);
        let loud: Vec<_> = lines
            .iter()
            .filter(|(level, _)| *level <= tracing::Level::INFO)
            .collect();
        assert_eq!(loud.len(), 2, "{lines:?}");
        assert_eq!(loud[0].0, tracing::Level::WARN);
        assert!(loud[0].1.starts_with("lost the connection"), "{lines:?}");
        assert_eq!(loud[1].0, tracing::Level::INFO);
        assert!(loud[1].1.contains("is back"), "{lines:?}");
        // The probes of the outage after the first: at debug.
        let quiet = lines
            .iter()
            .filter(|(level, _)| *level == tracing::Level::DEBUG)
            .count();
        assert_eq!(quiet, 4, "{lines:?}");
        assert!(logged(0..0, 5).is_empty());
    }
}
