//! Durations as the attribute writes them (`timeout = "30s"`): a whole number
//! and a unit, `ms`, `s`, `m` or `h`. Zero is rejected, and so is a duration
//! whose milliseconds do not fit in a `u64`. The runtime includes this file
//! and reads `serve --timeout`, `--rate` and `Rate` with it.

/// Why a text is not a duration. Shown, it completes a sentence that starts
/// with the key, e.g. "`timeout` is too long".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DurationProblem {
    /// Not a whole number and a unit.
    Form,
    /// Zero.
    Zero,
    /// Its milliseconds do not fit in a `u64`.
    TooLong,
}

impl std::fmt::Display for DurationProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Form => {
                "must be a whole number and a unit (`ms`, `s`, `m` or `h`), e.g. `timeout = \"30s\"`"
            }
            Self::Zero => "must be longer than zero",
            Self::TooLong => "is too long",
        })
    }
}

/// Milliseconds in a duration written as a whole number and a unit:
/// `"250ms"`, `"30s"`, `"5m"`, `"1h"`.
pub(crate) fn parse_millis(text: &str) -> Result<u64, DurationProblem> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or(DurationProblem::Form)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| DurationProblem::Form)?;
    let scale = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(DurationProblem::Form),
    };
    match number.checked_mul(scale) {
        Some(0) => Err(DurationProblem::Zero),
        Some(ms) => Ok(ms),
        None => Err(DurationProblem::TooLong),
    }
}

/// A rate as the attribute writes it (`rate = "100/s"`): a whole number of
/// calls, `/`, and `s`, `m` or `h`; the count and the unit. The error
/// completes a sentence that starts with the key. `--rate` and `Rate`'s
/// `FromStr` in the runtime read rates by the same rules (`RATE_CASES`).
pub(crate) fn parse_rate(text: &str) -> Result<(u32, char), &'static str> {
    const PROBLEM: &str = "must be a whole number of calls per `s`, `m` or `h`, e.g. `100/s`";
    let (calls, unit) = text.split_once('/').ok_or(PROBLEM)?;
    if calls.is_empty() || !calls.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(PROBLEM);
    }
    let unit = match unit {
        "s" => 's',
        "m" => 'm',
        "h" => 'h',
        _ => return Err(PROBLEM),
    };
    match calls.parse::<u32>() {
        Ok(0) => Err("must allow at least one call, e.g. `100/s`"),
        Ok(calls) => Ok((calls, unit)),
        Err(_) => Err("is too high: at most 4294967295 calls per period"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{parse_millis, parse_rate, DurationProblem};

    /// Rate texts and what they read as: `Some((calls, unit))`, or `None`
    /// when rejected. The runtime's `Rate` is tested against this table.
    pub(crate) const RATE_CASES: &[(&str, Option<(u32, char)>)] = &[
        ("100/s", Some((100, 's'))),
        ("1/s", Some((1, 's'))),
        ("30/m", Some((30, 'm'))),
        ("5000/h", Some((5000, 'h'))),
        ("007/s", Some((7, 's'))),
        ("4294967295/h", Some((u32::MAX, 'h'))),
        ("0/s", None),
        ("", None),
        ("100", None),
        ("100/", None),
        ("/s", None),
        ("100/d", None),
        ("100/sec", None),
        ("100/S", None),
        ("-1/s", None),
        ("+1/s", None),
        ("1.5/s", None),
        (" 1/s", None),
        ("1 /s", None),
        ("1/ s", None),
        ("4294967296/s", None),
    ];

    #[test]
    fn rates_read_as_the_shared_table_says() {
        for &(text, expected) in RATE_CASES {
            assert_eq!(parse_rate(text).ok(), expected, "{text:?}");
        }
        assert_eq!(
            parse_rate("0/m"),
            Err("must allow at least one call, e.g. `100/s`")
        );
        assert_eq!(
            parse_rate("100 per second"),
            Err("must be a whole number of calls per `s`, `m` or `h`, e.g. `100/s`")
        );
    }

    /// Duration texts and what they read as: `Some(milliseconds)`, or `None`
    /// when rejected. The runtime's duration parser is tested against a copy
    /// of this table; keep the two the same.
    pub(crate) const DURATION_CASES: &[(&str, Option<u64>)] = &[
        ("250ms", Some(250)),
        ("30s", Some(30_000)),
        ("5m", Some(300_000)),
        ("1h", Some(3_600_000)),
        ("007s", Some(7_000)),
        ("18446744073709551615ms", Some(u64::MAX)),
        ("0s", None),
        ("0ms", None),
        ("", None),
        ("30", None),
        ("s", None),
        ("ms", None),
        ("1.5s", None),
        ("30 s", None),
        (" 30s", None),
        ("30s ", None),
        ("-1s", None),
        ("+1s", None),
        ("30S", None),
        ("30sec", None),
        ("1d", None),
        ("18446744073709551615h", None),
        ("18446744073709551615s", None),
        ("18446744073709551616ms", None),
    ];

    #[test]
    fn durations_read_as_the_shared_table_says() {
        for &(text, expected) in DURATION_CASES {
            assert_eq!(parse_millis(text).ok(), expected, "{text:?}");
        }
    }

    #[test]
    fn timeouts_are_a_number_and_a_unit() {
        assert_eq!(parse_millis("250ms"), Ok(250));
        assert_eq!(parse_millis("30s"), Ok(30_000));
        assert_eq!(parse_millis("5m"), Ok(300_000));
        assert_eq!(parse_millis("1h"), Ok(3_600_000));
        for bad in ["", "30", "s", "1.5s", "30 s", "-1s", "30sec", "ms"] {
            assert!(parse_millis(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(parse_millis("0s"), Err(DurationProblem::Zero));
        assert_eq!(
            parse_millis("99999999999999999h"),
            Err(DurationProblem::TooLong)
        );
    }

    #[test]
    fn a_malformed_duration_is_told_how_to_write_one() {
        for bad in ["", "30", "s", "1.5s", "30 s", "-1s", "30sec", "ms", "1d"] {
            assert_eq!(
                parse_millis(bad).map_err(|problem| problem.to_string()),
                Err("must be a whole number and a unit (`ms`, `s`, `m` or `h`), e.g. `timeout = \"30s\"`".to_owned()),
                "{bad:?}"
            );
        }
    }
}
