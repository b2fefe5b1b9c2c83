//! The text log's fields, written as tracing-subscriber's default format
//! writes them when it writes no colours, at a fraction of its cost.
//!
//! Every request's span has its fields formatted when it is made, and
//! tracing-subscriber's `DefaultFields` paints each name even with colours
//! off. Without colours this writes `name=value` itself, into a buffer on
//! the stack handed to the writer in one piece; a message, an error and a
//! `log.` field go to `DefaultVisitor`, and everything does when colours
//! are on, so the text is the same byte for byte (the test below compares
//! the two). What it saves, measured: CONTRIBUTING.md, *Benchmarks*.

use std::fmt::{self, Write as _};

use tracing::field::{Field, Visit};
use tracing_subscriber::field::{RecordFields, VisitOutput};
use tracing_subscriber::fmt::format::{DefaultFields, DefaultVisitor, Writer};
use tracing_subscriber::fmt::FormatFields;

/// `FormatFields` for the text layer without colours.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct PlainFields;

impl<'writer> FormatFields<'writer> for PlainFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        // With colours, or with escapes left unsanitized (neither is how
        // the text layer is built), tracing-subscriber's own.
        if writer.has_ansi_escapes() || !writer.sanitizes_ansi_escapes() {
            return DefaultFields::new().format_fields(writer, fields);
        }
        let mut text = FieldText::default();
        let mut visitor = PlainVisitor {
            writer: &mut text,
            is_empty: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result?;
        writer.write_str(text.as_str())
    }
}

/// Text written on the stack while it fits, on the heap past that.
struct FieldText {
    stack: [u8; FieldText::STACK],
    len: usize,
    /// Everything written, once it did not fit on the stack.
    heap: String,
}

impl FieldText {
    /// Enough for a request span's fields with a long id.
    const STACK: usize = 256;

    fn as_str(&self) -> &str {
        if self.heap.is_empty() {
            std::str::from_utf8(&self.stack[..self.len])
                .expect("only whole `str`s are written to the stack")
        } else {
            &self.heap
        }
    }
}

impl Default for FieldText {
    fn default() -> Self {
        Self {
            stack: [0; Self::STACK],
            len: 0,
            heap: String::new(),
        }
    }
}

impl fmt::Write for FieldText {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let end = self.len + text.len();
        if self.heap.is_empty() && end <= Self::STACK {
            self.stack[self.len..end].copy_from_slice(text.as_bytes());
            self.len = end;
        } else {
            if self.heap.is_empty() {
                let written = self.as_str().to_owned();
                self.heap = written;
            }
            self.heap.push_str(text);
        }
        Ok(())
    }
}

struct PlainVisitor<'text> {
    writer: &'text mut FieldText,
    is_empty: bool,
    result: fmt::Result,
}

impl PlainVisitor<'_> {
    /// One field as tracing-subscriber's own visitor writes it. It counts
    /// as written, padded, even when its text is empty (an empty message),
    /// unless that visitor skipped it: a `log.` field, which it leaves out
    /// when built with its `tracing-log` feature.
    fn delegate(&mut self, field: &Field, record: impl FnOnce(&mut DefaultVisitor<'_>)) {
        if self.result.is_err() {
            return;
        }
        let mut text = String::new();
        let mut visitor = DefaultVisitor::new(Writer::new(&mut text), true);
        record(&mut visitor);
        self.result = visitor.finish();
        if self.result.is_ok() && !(text.is_empty() && field.name().starts_with("log.")) {
            self.result = self.pad().and_then(|()| self.writer.write_str(&text));
        }
    }

    /// The space before every field but the first.
    fn pad(&mut self) -> fmt::Result {
        if std::mem::take(&mut self.is_empty) {
            Ok(())
        } else {
            self.writer.write_char(' ')
        }
    }
}

/// Whether tracing-subscriber writes a field otherwise than `name=value`.
fn special(name: &str) -> bool {
    name == "message" || name.starts_with("log.")
}

impl Visit for PlainVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if special(field.name()) {
            self.delegate(field, |visitor| visitor.record_str(field, value));
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.delegate(field, |visitor| visitor.record_error(field, value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_err() {
            return;
        }
        let name = field.name();
        if special(name) {
            self.delegate(field, |visitor| visitor.record_debug(field, value));
            return;
        }
        let name = name.strip_prefix("r#").unwrap_or(name);
        self.result = self
            .pad()
            .and_then(|()| self.writer.write_str(name))
            .and_then(|()| self.writer.write_char('='))
            .and_then(|()| write!(self.writer, "{value:?}"));
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    #[derive(Debug)]
    struct Outer(Inner);
    #[derive(Debug)]
    struct Inner;
    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("the request failed")
        }
    }
    impl fmt::Display for Inner {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("the broker \u{1b}[31mrefused\u{1b}[0m it")
        }
    }
    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }
    impl std::error::Error for Inner {}

    /// Events and spans with every kind of field, logged through a text
    /// layer without colours using `fields`.
    fn logged<N>(fields: N) -> String
    where
        N: for<'w> FormatFields<'w> + Send + Sync + 'static,
    {
        let out = Captured::default();
        let layer = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .without_time()
            .fmt_fields(fields)
            .with_writer(out.clone());
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let id = crate::log_text::Untrusted::id("req\n-1");
            let span = tracing::info_span!("request", service = %"joke-service", request_id = %id);
            let _entered = span.enter();
            tracing::info!("plain message");
            tracing::info!(
                count = 3,
                ratio = 0.5,
                flag = true,
                text = "quoted \"x\"",
                "with fields"
            );
            tracing::warn!(
                r#type = "timeout",
                error = &Outer(Inner) as &dyn std::error::Error,
                "typed"
            );
            tracing::info!(message = "a \u{1b}[2Jmessage field", detail = ?vec![1, 2]);
            tracing::info!(empty = "", "");
            // Past the stack buffer: the rest of the text on the heap.
            tracing::info!(long = %"x".repeat(300), after = 1, "long");
            let inner = tracing::info_span!("inner", n = 1u64);
            inner.record("n", 2u64);
            inner.in_scope(|| tracing::info!(name = "x"));
        });
        let bytes = out.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn fields_read_as_tracing_subscribers_own_without_colours() {
        let ours = logged(PlainFields);
        let theirs = logged(DefaultFields::new());
        assert_eq!(ours, theirs);
        assert!(
            ours.contains("request{service=joke-service request_id=req\\n-1}"),
            "{ours}"
        );
        assert_eq!(ours.lines().count(), 7, "{ours}");
    }
}
