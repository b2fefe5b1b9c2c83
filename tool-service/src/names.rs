//! How error messages list the names that would have been accepted:
//! `(known: a, b, c)`, or `(known: none)`; and how they write a name as a
//! key of the attribute's `config(…)` and `arguments(…)`, so that a
//! suggested fix is valid as written.

/// The names, comma separated, or `none` when there are none.
pub(crate) fn list<I>(names: I) -> String
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    let mut out = String::new();
    for name in names {
        if !out.is_empty() {
            out.push_str(", ");
        }
        out.push_str(name.as_ref());
    }
    if out.is_empty() {
        out.push_str("none");
    }
    out
}

/// `name` as a key of `config(…)` or `arguments(…)` in
/// `#[tool_service(tool(…))]`: bare when it reads as an identifier
/// (`style`), else as a string (`"index-url"`). The macro crate writes keys
/// in its messages by the same rule; a test includes its code and runs both
/// over its table of cases.
pub(crate) fn key(name: &str) -> String {
    let mut chars = name.chars();
    let bare = match chars.next() {
        Some(first) if first.is_ascii_alphabetic() || first == '_' => {
            name != "_" && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        _ => false,
    };
    if bare {
        name.to_owned()
    } else {
        format!("{name:?}")
    }
}

/// The macro crate's rule, for the test that both write keys alike.
#[cfg(test)]
#[path = "attribute_key.rs"]
mod attribute;

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_comma_separated_and_none_is_said() {
        assert_eq!(super::list(["a", "b"]), "a, b");
        assert_eq!(super::list(Vec::<String>::new()), "none");
    }

    #[test]
    fn keys_are_written_as_the_attribute_reads_them() {
        for &(name, expected) in super::attribute::tests::KEY_CASES {
            assert_eq!(super::key(name), expected, "{name:?}");
            assert_eq!(super::attribute::written(name), expected, "{name:?}");
        }
    }
}
