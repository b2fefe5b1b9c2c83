//! Durations as people write them in flags and attributes: a whole number
//! and a unit, `250ms`, `30s`, `5m` or `1h`.
//!
//! The `timeout = "…"` attribute is checked at compile time by the macro
//! crate; the runtime reads flags with the same parser, the macro crate's
//! file included here.

use std::time::Duration;

/// Parses a duration written as a whole number and a unit (`ms`, `s`, `m`,
/// `h`). Zero and durations too long to represent are refused.
// Read by the `serve` command only.
#[cfg_attr(not(all(feature = "cli", feature = "pulsar")), allow(dead_code))]
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    crate::attribute::parse_millis(text)
        .map(Duration::from_millis)
        .map_err(|problem| match problem {
            Problem::Form => format!(
            "`{text}` is not a duration; write a whole number and a unit (ms, s, m or h), e.g. 30s"
        ),
            Problem::Zero => format!("`{text}`: a timeout must be longer than zero"),
            Problem::TooLong => format!("`{text}` is too long for a timeout"),
        })
}

/// Shows a duration the way [`parse`] reads it.
pub(crate) fn format(limit: Duration) -> String {
    let ms = limit.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

use crate::attribute::DurationProblem as Problem;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribute;

    #[test]
    fn flags_and_the_attribute_read_durations_alike() {
        for &(text, expected) in attribute::tests::DURATION_CASES {
            let flag = parse(text).ok().map(|limit| limit.as_millis() as u64);
            assert_eq!(flag, expected, "{text:?}");
            assert_eq!(attribute::parse_millis(text).ok(), expected, "{text:?}");
        }
    }

    #[test]
    fn durations_read_and_show_alike() {
        for (text, limit) in [
            ("250ms", Duration::from_millis(250)),
            ("30s", Duration::from_secs(30)),
            ("5m", Duration::from_secs(300)),
            ("1h", Duration::from_secs(3600)),
        ] {
            assert_eq!(parse(text), Ok(limit));
            assert_eq!(parse(&format(limit)), Ok(limit));
        }
        assert_eq!(format(Duration::from_millis(1500)), "1500ms");
        assert_eq!(format(Duration::from_secs(600)), "600s");
        for bad in ["", "30", "1.5s", "30 s", "-1s", "s", "9x"] {
            let error = parse(bad).unwrap_err();
            assert!(error.contains("e.g. 30s"), "{bad:?}: {error}");
        }
        assert!(parse("0s").unwrap_err().contains("longer than zero"));
        assert!(parse("18446744073709551615h")
            .unwrap_err()
            .contains("too long"));
    }
}
