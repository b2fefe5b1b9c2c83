//! The words for what a schema bounds, one phrase per bound: the
//! descriptions say them as sentences ([`prose`](super::prose)) and the
//! refusals quote them ([`rules`](super::rules)), so that what the LLM is
//! told and what it is told back agree word for word.

use super::Bounds;

/// A number's range as one phrase: `from 1 to 50`, `at least 1`,
/// `at most 5`, `greater than 0`, `less than 5`, `greater than 0 and at
/// most 5`; `None` without bounds.
pub(crate) fn number_range(bounds: &Bounds) -> Option<String> {
    range(
        bounds.minimum,
        bounds.maximum,
        bounds.exclusive_minimum,
        bounds.exclusive_maximum,
    )
}

/// The range of a fixed-width integer type: `from 0 to 255`.
pub(crate) fn width((min, max): (f64, f64)) -> String {
    format!("from {} to {}", figure(min), figure(max))
}

fn range(
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
) -> Option<String> {
    // Of an inclusive and an exclusive bound, the tighter one.
    let low = match (minimum, exclusive_minimum) {
        (Some(min), Some(exclusive)) if exclusive >= min => Some((exclusive, true)),
        (Some(min), _) => Some((min, false)),
        (None, exclusive) => exclusive.map(|min| (min, true)),
    };
    let high = match (maximum, exclusive_maximum) {
        (Some(max), Some(exclusive)) if exclusive <= max => Some((exclusive, true)),
        (Some(max), _) => Some((max, false)),
        (None, exclusive) => exclusive.map(|max| (max, true)),
    };
    if let (Some((min, false)), Some((max, false))) = (low, high) {
        return Some(format!("from {} to {}", figure(min), figure(max)));
    }
    let mut parts = Vec::new();
    match low {
        Some((min, false)) => parts.push(format!("at least {}", figure(min))),
        Some((min, true)) => parts.push(format!("greater than {}", figure(min))),
        None => {}
    }
    match high {
        Some((max, false)) => parts.push(format!("at most {}", figure(max))),
        Some((max, true)) => parts.push(format!("less than {}", figure(max))),
        None => {}
    }
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// `a multiple of 5`; `None` without one.
pub(crate) fn multiple(bounds: &Bounds) -> Option<String> {
    bounds
        .multiple_of
        .map(|step| format!("a multiple of {}", figure(step)))
}

/// A text's length: `1 to 80 characters`, `at least 1 character`,
/// `at most 80 characters`, `exactly 3 characters`.
pub(crate) fn length(bounds: &Bounds) -> Option<String> {
    count(bounds.min_length, bounds.max_length, "character")
}

/// A list's length: `1 to 5 items`, `at most 3 items`.
pub(crate) fn items(bounds: &Bounds) -> Option<String> {
    count(bounds.min_items, bounds.max_items, "item")
}

/// `matching the pattern `^[A-Z]{3}$``; `None` without one.
pub(crate) fn pattern(bounds: &Bounds) -> Option<String> {
    let (pattern, _) = bounds.pattern.as_ref()?;
    Some(format!("matching the pattern `{pattern}`"))
}

fn count(min: Option<u64>, max: Option<u64>, unit: &str) -> Option<String> {
    let units = |n: u64| {
        if n == 1 {
            unit.to_owned()
        } else {
            format!("{unit}s")
        }
    };
    Some(match (min, max) {
        (Some(min), Some(max)) if min == max => format!("exactly {min} {}", units(max)),
        (Some(min), Some(max)) => format!("{min} to {max} {}", units(max)),
        (Some(min), None) => format!("at least {min} {}", units(min)),
        (None, Some(max)) => format!("at most {max} {}", units(max)),
        (None, None) => return None,
    })
}

/// A bound as people write it: `50`, not `50.0`.
pub(crate) fn figure(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}
