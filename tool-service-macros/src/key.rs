//! How a config key or an argument name is written inside the attribute:
//! bare when it reads as one identifier (`style`, `max_results`, `type`),
//! else as a string (`"index-url"`), which `config(…)` and `arguments(…)`
//! accept too. Every message that suggests `config(key = …)` or
//! `arguments(key = "…")` writes the key this way, so the suggestion is
//! valid as written. The runtime's messages follow the same rule: its tests
//! include this file and run both over `KEY_CASES` below.

/// `name` as a key of `config(…)` or `arguments(…)`.
pub(crate) fn written(name: &str) -> String {
    if is_bare(name) {
        name.to_owned()
    } else {
        format!("{name:?}")
    }
}

/// Whether `name` can be written without quotes: an ASCII identifier or
/// keyword (the attribute reads keywords as keys too), but not `_`.
fn is_bare(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) if first.is_ascii_alphabetic() || first == '_' => {
            name != "_" && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        _ => false,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::written;

    /// Names and how a key is written for them. The runtime's `names::key`
    /// is tested against this table; keep the two alike.
    pub(crate) const KEY_CASES: &[(&str, &str)] = &[
        ("style", "style"),
        ("max_results", "max_results"),
        ("_private", "_private"),
        ("type", "type"),
        ("Limit2", "Limit2"),
        ("index-url", "\"index-url\""),
        ("max.ratio", "\"max.ratio\""),
        ("2fa", "\"2fa\""),
        ("with space", "\"with space\""),
        ("naïve", "\"naïve\""),
        ("say \"hi\"", "\"say \\\"hi\\\"\""),
        ("_", "\"_\""),
        ("", "\"\""),
    ];

    #[test]
    fn keys_are_bare_only_when_identifiers() {
        for &(name, expected) in KEY_CASES {
            assert_eq!(written(name), expected, "{name:?}");
        }
    }
}
