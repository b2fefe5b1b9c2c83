//! How often a service may be called: [`Rate`], as the attribute
//! (`rate = "100/s"`) and `--rate` write it.

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

/// A number of calls per second, minute or hour: the most a service takes
/// on one replica, with bursts of up to that many at once.
///
/// ```
/// use std::time::Duration;
/// use tool_service::Rate;
///
/// let rate: Rate = "100/s".parse().unwrap();
/// assert_eq!(rate, Rate::per_second(100));
/// assert_eq!(rate.calls(), 100);
/// assert_eq!(rate.period(), Duration::from_secs(1));
/// assert_eq!(rate.to_string(), "100/s");
/// assert_eq!("30/m".parse::<Rate>().unwrap().period(), Duration::from_secs(60));
/// assert_eq!(
///     "0/s".parse::<Rate>().unwrap_err().to_string(),
///     "a rate must allow at least one call, e.g. `100/s`"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    calls: NonZeroU32,
    unit: Unit,
}

/// The period a [`Rate`] counts calls over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Unit {
    Second,
    Minute,
    Hour,
}

impl Unit {
    fn period(self) -> Duration {
        Duration::from_secs(match self {
            Self::Second => 1,
            Self::Minute => 60,
            Self::Hour => 3600,
        })
    }

    fn suffix(self) -> &'static str {
        match self {
            Self::Second => "s",
            Self::Minute => "m",
            Self::Hour => "h",
        }
    }

    // For the refusal, which only the transports make.
    #[cfg_attr(not(any(feature = "pulsar", feature = "mcp")), allow(dead_code))]
    fn word(self) -> &'static str {
        match self {
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
        }
    }
}

impl Rate {
    /// `calls` per second.
    ///
    /// # Panics
    /// When `calls` is 0: a rate allows at least one call.
    pub const fn per_second(calls: u32) -> Self {
        Self::of(calls, Unit::Second)
    }

    /// `calls` per minute.
    ///
    /// # Panics
    /// When `calls` is 0.
    pub const fn per_minute(calls: u32) -> Self {
        Self::of(calls, Unit::Minute)
    }

    /// `calls` per hour.
    ///
    /// # Panics
    /// When `calls` is 0.
    pub const fn per_hour(calls: u32) -> Self {
        Self::of(calls, Unit::Hour)
    }

    const fn of(calls: u32, unit: Unit) -> Self {
        let Some(calls) = NonZeroU32::new(calls) else {
            panic!("a rate allows at least one call");
        };
        Self { calls, unit }
    }

    /// The calls allowed per [`Self::period`], and at once.
    pub fn calls(&self) -> u32 {
        self.calls.get()
    }

    /// The period the calls are counted over: a second, a minute or an hour.
    pub fn period(&self) -> Duration {
        self.unit.period()
    }

    /// The rate in words, for a sentence: "100 calls per second".
    #[cfg_attr(not(any(feature = "pulsar", feature = "mcp")), allow(dead_code))]
    pub(crate) fn in_words(&self) -> String {
        let calls = self.calls.get();
        let noun = if calls == 1 { "call" } else { "calls" };
        format!("{calls} {noun} per {}", self.unit.word())
    }

    /// Read as the attribute writes it; the error completes a sentence that
    /// starts with what was read ("`rate` must …").
    fn parse(text: &str) -> Result<Self, &'static str> {
        let (calls, unit) = crate::attribute::parse_rate(text)?;
        let unit = match unit {
            's' => Unit::Second,
            'm' => Unit::Minute,
            _ => Unit::Hour,
        };
        let calls = NonZeroU32::new(calls).ok_or("must allow at least one call, e.g. `100/s`")?;
        Ok(Self { calls, unit })
    }
}

impl FromStr for Rate {
    type Err = ParseRateError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text).map_err(ParseRateError)
    }
}

/// Why a text is not a [`Rate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseRateError(&'static str);

impl ParseRateError {
    /// What is wrong, completing a sentence that names the text: "must
    /// allow at least one call, e.g. `100/s`" (for `--rate`'s message).
    #[cfg_attr(
        not(all(feature = "cli", any(feature = "pulsar", feature = "mcp"))),
        allow(dead_code)
    )]
    pub(crate) fn problem(&self) -> &'static str {
        self.0
    }
}

impl fmt::Display for ParseRateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a rate {}", self.0)
    }
}

impl std::error::Error for ParseRateError {}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.calls, self.unit.suffix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "a rate allows at least one call")]
    fn a_rate_of_no_calls_is_refused() {
        let _ = Rate::per_minute(0);
    }

    use crate::attribute;

    #[test]
    fn flags_and_the_attribute_read_rates_alike() {
        for &(text, expected) in attribute::tests::RATE_CASES {
            let read = text.parse::<Rate>().ok().map(|rate| {
                let unit = match rate.period().as_secs() {
                    1 => 's',
                    60 => 'm',
                    _ => 'h',
                };
                (rate.calls(), unit)
            });
            assert_eq!(read, expected, "{text:?}");
            assert_eq!(attribute::parse_rate(text).ok(), expected, "{text:?}");
            assert_eq!(
                text.parse::<Rate>().err().map(|error| error.problem()),
                attribute::parse_rate(text).err(),
                "{text:?}"
            );
            if let Ok(rate) = text.parse::<Rate>() {
                assert_eq!(rate.to_string().parse::<Rate>(), Ok(rate));
            }
        }
    }

    #[test]
    fn rates_show_as_they_are_written() {
        assert_eq!(Rate::per_minute(30).to_string(), "30/m");
        assert_eq!(Rate::per_second(1).in_words(), "1 call per second");
        assert_eq!(Rate::per_hour(20).in_words(), "20 calls per hour");
    }
}
