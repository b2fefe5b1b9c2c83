//! How error messages list the names that would have been accepted:
//! `(known: a, b, c)`, or `(known: none)`.

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

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_comma_separated_and_none_is_said() {
        assert_eq!(super::list(["a", "b"]), "a, b");
        assert_eq!(super::list(Vec::<String>::new()), "none");
    }
}
