//! The `pulsar` crate logs through the `log` crate; its warnings and
//! errors are forwarded into `tracing`. Lower levels stay off: its trace
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
        if record.level() == log::Level::Error {
            tracing::error!(client = target, "{message}");
        } else {
            tracing::warn!(client = target, "{message}");
        }
    }

    fn flush(&self) {}
}
