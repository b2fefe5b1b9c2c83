//! The `pulsar` crate logs through the `log` crate; its warnings and
//! errors are forwarded into `tracing` (its connection attempts at debug). Lower levels stay off: its trace
//! output includes the `CONNECT` frame, token and all (see
//! `docs/upstream-reports.md`).

/// Installs the forwarding logger, unless the process has a `log` logger
/// already.
pub(crate) fn forward() {
    if log::set_logger(&ClientLog).is_ok() {
        log::set_max_level(log::LevelFilter::Warn);
    }
}

struct ClientLog;

impl log::Log for ClientLog {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let message = record.args().to_string();
        let target = record.target();
        match level_of(record.level(), target, &message) {
            tracing::Level::ERROR => tracing::error!(client = target, "{message}"),
            tracing::Level::WARN => tracing::warn!(client = target, "{message}"),
            _ => tracing::debug!(client = target, "{message}"),
        }
    }

    fn flush(&self) {}
}

/// The level a client line is logged at.
///
/// - The client says `Retry #0 -> connecting consumer …` at WARN for every
///   first attempt, so a healthy start would log a warning per topic.
/// - While the broker is away, the connection, its manager, topic lookups
///   and retries log a line or two per attempt, at WARN and ERROR; a clean
///   shutdown after a broker restart logs an ERROR per producer
///   (`could not close producer …: Disconnected`), and a consumer whose
///   connection closed first logs one too (`could not close consumer …`).
///
/// `serve` probes the connection itself and logs one WARN line when it is
/// lost and one INFO line when it is back (`serve/broker_health.rs`), so all
/// of those go at debug. The rest keeps its level.
fn level_of(level: log::Level, target: &str, message: &str) -> tracing::Level {
    let reconnecting = matches!(
        target,
        "pulsar::connection"
            | "pulsar::connection_manager"
            | "pulsar::service_discovery"
            | "pulsar::retry_op"
    ) || (target == "pulsar::consumer::engine"
        && message.starts_with("Broker notification of closed consumer"))
        // Producers and consumers moving to the new connection.
        || (target.starts_with("pulsar::producer") || target.starts_with("pulsar::consumer"))
            && message.starts_with("reconnecting ")
        // At shutdown, a producer or consumer whose connection is gone (a
        // broker restart replaced it, or it closed first): nothing is left
        // to close. `serve` logs the close's error itself, at debug.
        || (target == "pulsar::producer" && message.starts_with("could not close producer"))
        || (target == "pulsar::consumer::engine" && message.starts_with("could not close consumer"));
    match level {
        _ if reconnecting => tracing::Level::DEBUG,
        log::Level::Error => tracing::Level::ERROR,
        _ => tracing::Level::WARN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_attempts_go_at_debug_and_the_rest_keeps_its_level() {
        let attempt = "Retry #0 -> connecting consumer 0 using connection c to broker b to topic t";
        for (level, target, message) in [
            (log::Level::Warn, "pulsar::retry_op", attempt),
            (log::Level::Error, "pulsar::retry_op", attempt),
            (
                log::Level::Warn,
                "pulsar::connection",
                "retry establish connection on: [Io(..)]",
            ),
            (
                log::Level::Error,
                "pulsar::connection_manager",
                "connection error, retrying connection to pulsar://b after 300ms",
            ),
            (
                log::Level::Error,
                "pulsar::service_discovery",
                "tried to lookup a topic but connection was closed, reconnecting...",
            ),
            (
                log::Level::Error,
                "pulsar::consumer::engine",
                "Broker notification of closed consumer 0: [..]",
            ),
            (
                log::Level::Error,
                "pulsar::consumer::engine",
                "could not close consumer Some(\"consumer_x\")(0) for topic t: Disconnected",
            ),
        ] {
            assert_eq!(
                level_of(level, target, message),
                tracing::Level::DEBUG,
                "{message}"
            );
        }
        assert_eq!(
            level_of(
                log::Level::Error,
                "pulsar::consumer::engine",
                "could not send ack"
            ),
            tracing::Level::ERROR
        );
        assert_eq!(
            level_of(log::Level::Warn, "pulsar::producer", "giving up"),
            tracing::Level::WARN
        );
    }
}
