//! JSON string literals, written byte for byte as `serde_json` writes them,
//! eight bytes at a time where nothing needs escaping.
//!
//! A response frame is mostly one string (the tool's output, often long
//! JSON full of quotes, or prose); this is where encoding a frame spends its
//! time. The output is identical to `serde_json`'s (same escapes, lowercase
//! `\u00xx`, `/` and DEL left alone), which the tests and the envelope fuzz
//! target check.

/// A byte repeated in every lane of a word.
const fn lanes(byte: u8) -> u64 {
    u64::from_ne_bytes([byte; 8])
}

/// The high bit of every zero byte of `value`, and maybe of bytes above the
/// first zero byte (a lane's borrow can only mark a higher lane when a lower
/// one already matched): exact for "any?" and for "which first?".
fn zero_lanes(value: u64) -> u64 {
    value.wrapping_sub(lanes(1)) & !value & lanes(0x80)
}

/// Whether any of the eight bytes of `word` must be escaped: a control
/// character, `"` or `\`.
fn any_escaped(word: u64) -> bool {
    let control = word.wrapping_sub(lanes(0x20)) & !word & lanes(0x80);
    let quote = zero_lanes(word ^ lanes(b'"'));
    let backslash = zero_lanes(word ^ lanes(b'\\'));
    (control | quote | backslash) != 0
}

/// The letter of `byte`'s two-character escape (`\n`, `\"`, …), `u` for a
/// control character written `\u00xx`, or `None` for a byte written as is.
fn escape(byte: u8) -> Option<u8> {
    match byte {
        b'"' => Some(b'"'),
        b'\\' => Some(b'\\'),
        0x08 => Some(b'b'),
        0x0c => Some(b'f'),
        b'\n' => Some(b'n'),
        b'\r' => Some(b'r'),
        b'\t' => Some(b't'),
        0x00..=0x1f => Some(b'u'),
        _ => None,
    }
}

/// Calls `each(position, letter)` for every byte of `bytes` that must be
/// escaped, in order.
fn for_each_escape(bytes: &[u8], mut each: impl FnMut(usize, u8)) {
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let value = u64::from_ne_bytes(word.try_into().expect("eight bytes"));
        if any_escaped(value) {
            for (offset, &byte) in word.iter().enumerate() {
                if let Some(letter) = escape(byte) {
                    each(at + offset, letter);
                }
            }
        }
        at += 8;
    }
    for (offset, &byte) in words.remainder().iter().enumerate() {
        if let Some(letter) = escape(byte) {
            each(at + offset, letter);
        }
    }
}

/// Appends `text` to `out` as a JSON string literal, quotes included.
pub(crate) fn write(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut copied = 0;
    for_each_escape(bytes, |at, letter| {
        out.extend_from_slice(&bytes[copied..at]);
        if letter == b'u' {
            let byte = bytes[at];
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]);
        } else {
            out.extend_from_slice(&[b'\\', letter]);
        }
        copied = at + 1;
    });
    out.extend_from_slice(&bytes[copied..]);
    out.push(b'"');
}

/// The length of [`write`]'s output for `text`.
pub(crate) fn len(text: &str) -> usize {
    let mut len = text.len() + 2;
    for_each_escape(text.as_bytes(), |_, letter| {
        len += if letter == b'u' { 5 } else { 1 };
    });
    len
}

/// The text of the JSON string literal `literal` (quotes included), which
/// `serde_json` has already checked is one; `None` if it is not a string
/// literal or holds a lone surrogate (`\ud800`), which `serde_json` then
/// reports.
///
/// The text is allocated once, at its final size: `serde_json` builds an
/// escaped string in a scratch buffer that grows from empty, and every
/// request's `config` and `arguments` are escaped JSON.
pub(crate) fn read(literal: &str) -> Option<String> {
    let mut rest = literal.strip_prefix('"')?.strip_suffix('"')?;
    let mut text = String::with_capacity(rest.len());
    while let Some(at) = find_backslash(rest.as_bytes()) {
        text.push_str(&rest[..at]);
        let letter = *rest
            .as_bytes()
            .get(at + 1)
            .filter(|letter| letter.is_ascii())?;
        rest = &rest[at + 2..];
        let unescaped = match letter {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let (unit, after) = hex_unit(rest)?;
                rest = after;
                match unit {
                    0xd800..=0xdbff => {
                        let (low, after) = hex_unit(rest.strip_prefix("\\u")?)?;
                        rest = after;
                        if !(0xdc00..=0xdfff).contains(&low) {
                            return None;
                        }
                        let pair =
                            (u32::from(unit - 0xd800) << 10 | u32::from(low - 0xdc00)) + 0x10000;
                        char::from_u32(pair)?
                    }
                    unit => char::from_u32(u32::from(unit))?,
                }
            }
            _ => return None,
        };
        text.push(unescaped);
    }
    text.push_str(rest);
    Some(text)
}

/// Where the first `\\` of `bytes` is, found eight bytes at a time.
fn find_backslash(bytes: &[u8]) -> Option<usize> {
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let found = zero_lanes(word ^ lanes(b'\\'));
        if found != 0 {
            // The lowest marked lane is the first backslash.
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = words.remainder().iter().position(|&byte| byte == b'\\');
    tail.map(|offset| at + offset)
}

/// The code unit written as four hex digits at the start of `text`, and
/// what follows them.
fn hex_unit(text: &str) -> Option<(u16, &str)> {
    let digits = text.get(..4)?;
    if !digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    Some((u16::from_str_radix(digits, 16).ok()?, &text[4..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(text: &str) -> Vec<u8> {
        let mut out = b"prefix".to_vec();
        write(&mut out, text);
        out.split_off(6)
    }

    /// Every byte value, at every offset within a word, alone and in runs:
    /// the same bytes as `serde_json`, and the length counted right.
    #[test]
    fn writes_what_serde_json_writes() {
        let mut texts: Vec<String> = vec![
            String::new(),
            "plain".into(),
            "a pun for you:\n\nI'd tell you a UDP joke".into(),
            "é😀 \u{7f} / \u{2028}".into(),
            r#"{"key": "value with \"quotes\" and \\ backslashes"}"#.into(),
            "\u{0}\u{1}\u{8}\u{9}\u{a}\u{b}\u{c}\u{d}\u{1f} ".repeat(5),
        ];
        for code in 0u8..=0x7f {
            let c = char::from(code);
            for offset in 0..17 {
                texts.push(format!(
                    "{}{c}{}",
                    "x".repeat(offset),
                    "y".repeat(16 - offset)
                ));
            }
            texts.push(c.to_string().repeat(19));
        }
        for text in &texts {
            let expected = serde_json::to_vec(text).unwrap();
            assert_eq!(written(text), expected, "{text:?}");
            assert_eq!(len(text), expected.len(), "{text:?}");
        }
    }

    /// Reads what `serde_json` reads, and leaves to it what it refuses.
    #[test]
    fn reads_what_serde_json_reads() {
        let mut literals: Vec<String> = [
            r#""""#,
            r#""plain""#,
            r#""{\"style\": \"pun\"}""#,
            r#""\"\\\/\b\f\n\r\t""#,
            r#""\u0000\u001f\u00e9\u20AC\uFFFF""#,
            r#""\ud83d\ude00 and \uD83D\uDE00""#,
            r#""é😀 \u2028""#,
            // Lone and misordered surrogates: serde_json refuses them.
            r#""\ud800""#,
            r#""\ud800x""#,
            r#""\ud800\u0041""#,
            r#""\udc00""#,
            r#""\udbff\udfff""#,
            r#""\ud800\ue000""#,
        ]
        .map(String::from)
        .to_vec();
        for text in ["a\"b", "\\", "\u{1}\u{7f}", "x\ny", "😀\t"] {
            literals.push(serde_json::to_string(text).unwrap());
        }
        for literal in &literals {
            let expected = serde_json::from_str::<String>(literal).ok();
            assert_eq!(read(literal), expected, "{literal}");
        }
        for not_a_string in ["null", "{}", "1", r#""open"#, "\"\\\""] {
            assert_eq!(read(not_a_string), None, "{not_a_string}");
        }
    }

    #[test]
    fn finds_the_first_backslash() {
        for len in 0..20 {
            for first in 0..=len {
                let mut bytes = vec![b'a'; len];
                for later in (first..len).step_by(3) {
                    bytes[later] = b'\\';
                }
                // Bytes that differ from a backslash by one borrow.
                for (index, byte) in bytes.iter_mut().enumerate().take(first) {
                    *byte = [b'\\' + 1, 0x5b, 0xdc, 0x00][index % 4];
                }
                let expected = bytes.iter().position(|&byte| byte == b'\\');
                assert_eq!(find_backslash(&bytes), expected, "{bytes:?}");
            }
        }
    }

    #[test]
    fn finds_every_escaped_byte_in_a_word_and_nothing_else() {
        for byte in 0u8..=255 {
            for lane in 0..8 {
                let mut word = [b'a'; 8];
                word[lane] = byte;
                assert_eq!(
                    any_escaped(u64::from_ne_bytes(word)),
                    escape(byte).is_some(),
                    "byte {byte:#x} in lane {lane}"
                );
            }
        }
        // Two bytes side by side, in every pair of neighbouring lanes: a
        // lane's borrow never hides or invents an escape.
        for first in 0u8..=255 {
            for second in 0u8..=255 {
                let expected = escape(first).is_some() || escape(second).is_some();
                for lane in 0..7 {
                    let mut word = [b'a'; 8];
                    word[lane] = first;
                    word[lane + 1] = second;
                    assert_eq!(any_escaped(u64::from_ne_bytes(word)), expected, "{word:?}");
                }
            }
        }
    }
}
