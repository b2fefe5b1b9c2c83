//! OAuth scopes: what one may hold. The attribute's `scopes = […]` is
//! checked when the service compiles; scopes from anywhere else (the
//! operator's `--oauth-scope`) are checked here, by the same rule: this
//! module includes the macro crate's (`attribute_scope.rs` is a link to
//! `tool-service-macros/src/scope.rs`).

#[path = "attribute_scope.rs"]
mod rule;

/// Checks that `scope` is an OAuth scope-token (RFC 6749, section 3.3):
/// one or more printable ASCII characters other than space, `"` and `\`.
/// The error is a sentence that names the scope, the character it may not
/// hold and the characters it may.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) fn check(scope: &str) -> Result<(), String> {
    rule::check(scope)
}

#[cfg(test)]
mod tests {
    use super::{check, rule};

    #[test]
    fn scopes_are_checked_as_the_attribute_checks_them() {
        for &(scope, valid) in rule::tests::SCOPE_CASES {
            assert_eq!(check(scope).is_ok(), valid, "{scope:?}");
        }
    }

    #[test]
    fn a_bad_scope_is_named_with_its_character() {
        assert_eq!(check("tickets:write"), Ok(()));
        assert_eq!(
            check("tickets write").unwrap_err(),
            "the scope \"tickets write\" contains a space; a scope takes printable ASCII characters other than space, `\"` and `\\`"
        );
        assert_eq!(check("").unwrap_err(), "a scope must not be empty");
    }
}
