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

/// The level a client line is logged at. The client says `Retry #0 ->
/// connecting consumer …` at WARN for every first attempt, so a healthy
/// start would log a warning per topic: its attempts go at debug, and what
/// the worker and the connection logic say of an outage stays.
fn level_of(level: log::Level, target: &str, message: &str) -> tracing::Level {
    match level {
        log::Level::Error => tracing::Level::ERROR,
        _ if target == "pulsar::retry_op" && message.starts_with("Retry #") => {
            tracing::Level::DEBUG
        }
        _ => tracing::Level::WARN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_attempts_go_at_debug_and_the_rest_keeps_its_level() {
        let attempt = "Retry #0 -> connecting consumer 0 using connection c to broker b to topic t";
        assert_eq!(
            level_of(log::Level::Warn, "pulsar::retry_op", attempt),
            tracing::Level::DEBUG
        );
        assert_eq!(
            level_of(log::Level::Warn, "pulsar::connection", attempt),
            tracing::Level::WARN
        );
        assert_eq!(
            level_of(log::Level::Warn, "pulsar::retry_op", "giving up"),
            tracing::Level::WARN
        );
        assert_eq!(
            level_of(log::Level::Error, "pulsar::retry_op", attempt),
            tracing::Level::ERROR
        );
    }
}
