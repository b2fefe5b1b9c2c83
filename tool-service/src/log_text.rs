//! Text that arrives from the network, made safe to log.
//!
//! A request's `id`, `user`, `config` and `arguments` are chosen by whoever
//! can publish on the request topic. Logged raw, a newline in an id forges
//! a log line, an ESC sequence rewrites the operator's terminal, and a
//! 100 KB id writes a 100 KB line. [`Untrusted`] shows such text with
//! control and bidirectional-formatting characters escaped, cut to a
//! number of characters, with the original length noted.

use std::fmt;

/// Untrusted text for a log field: `%Untrusted::id(&id)`.
///
/// ```
/// use tool_service::log_text::Untrusted;
///
/// let forged = "r-1\nINFO forged: admin logged in";
/// assert_eq!(Untrusted::id(forged).to_string(), r"r-1\nINFO forged: admin logged in");
/// let long = "x".repeat(100_000);
/// let shown = Untrusted::id(&long).to_string();
/// assert!(shown.len() < 300 && shown.ends_with("… (100000 bytes)"));
/// ```
#[derive(Clone, Copy)]
pub struct Untrusted<'a> {
    text: &'a str,
    limit: usize,
}

impl<'a> Untrusted<'a> {
    /// How many characters of a request id are shown.
    pub(crate) const ID_CHARS: usize = 200;
    /// How many characters of a request's `config` or `arguments` are shown.
    pub(crate) const PAYLOAD_CHARS: usize = 2000;
    /// How many characters of any other untrusted text are shown.
    pub(crate) const TEXT_CHARS: usize = 500;

    /// `text`, showing at most `limit` characters.
    pub fn new(text: &'a str, limit: usize) -> Self {
        Self { text, limit }
    }

    /// A request id (or user).
    pub fn id(text: &'a str) -> Self {
        Self::new(text, Self::ID_CHARS)
    }

    /// A request's `config` or `arguments`.
    pub fn payload(text: &'a str) -> Self {
        Self::new(text, Self::PAYLOAD_CHARS)
    }

    /// Any other untrusted text: error messages, error types, causes.
    pub fn text(text: &'a str) -> Self {
        Self::new(text, Self::TEXT_CHARS)
    }
}

impl fmt::Display for Untrusted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A request id is logged for every request: printable ASCII within
        // the limit (what ids nearly always are) goes out as it is, and
        // otherwise runs of characters shown as they are go out in one
        // write each.
        if self.text.len() <= self.limit && self.text.bytes().all(|b| (b' '..=b'~').contains(&b)) {
            return f.write_str(self.text);
        }
        let mut run = 0;
        for (shown, (at, c)) in self.text.char_indices().enumerate() {
            if shown == self.limit {
                f.write_str(&self.text[run..at])?;
                return write!(f, "… ({} bytes)", self.text.len());
            }
            let escaped = match c {
                '\n' => "\\n",
                '\r' => "\\r",
                '\t' => "\\t",
                c if needs_escape(c) => "",
                _ => continue,
            };
            f.write_str(&self.text[run..at])?;
            if escaped.is_empty() {
                write!(f, "\\u{{{:x}}}", u32::from(c))?;
            } else {
                f.write_str(escaped)?;
            }
            run = at + c.len_utf8();
        }
        f.write_str(&self.text[run..])
    }
}

impl fmt::Debug for Untrusted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// Control characters (C0, DEL, C1) and the characters that reorder text
/// on screen (bidirectional formatting, as in "Trojan Source").
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        let cases = [
            ("a\nb", r"a\nb"),
            ("a\r\nb", r"a\r\nb"),
            ("\x1b]0;pwned\x07", r"\u{1b}]0;pwned\u{7}"),
            ("\x1b[2J", r"\u{1b}[2J"),
            ("tab\there", r"tab\there"),
            ("\u{85}next line", r"\u{85}next line"),
            ("\u{202e}evil", r"\u{202e}evil"),
            ("\0", r"\u{0}"),
            ("\x7f", r"\u{7f}"),
        ];
        for (raw, shown) in cases {
            assert_eq!(Untrusted::id(raw).to_string(), shown, "{raw:?}");
        }
    }

    #[test]
    fn ordinary_text_is_unchanged() {
        for text in ["req-1", "日本語 é 😀", "a \"quoted\" \\ path", ""] {
            assert_eq!(Untrusted::text(text).to_string(), text);
        }
    }

    #[test]
    fn long_text_is_cut_with_its_length() {
        let text = "é".repeat(300);
        let shown = Untrusted::id(&text).to_string();
        assert_eq!(shown, format!("{}… (600 bytes)", "é".repeat(200)));
        let exact = "x".repeat(Untrusted::ID_CHARS);
        assert_eq!(Untrusted::id(&exact).to_string(), exact);
    }

    #[test]
    fn escaping_never_lets_a_control_character_through() {
        let every: String = (0u32..0x3000).filter_map(char::from_u32).collect();
        let shown = Untrusted::new(&every, usize::MAX).to_string();
        assert!(!shown.chars().any(needs_escape), "{shown:?}");
        assert_eq!(format!("{:?}", Untrusted::id("a\nb")), r#""a\nb""#);
    }
}
