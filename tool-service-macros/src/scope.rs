//! OAuth scopes as the attribute writes them (`scopes = ["tickets:write"]`):
//! each one a scope-token of RFC 6749, section 3.3, that is one or more
//! printable ASCII characters other than space, `"` and `\`. The runtime
//! checks scopes that come from elsewhere (`--oauth-scope`) with this same
//! file: `tool-service/src/attribute_scope.rs` is a link to it, and its
//! tests run over `SCOPE_CASES` below.

/// Whether `c` may stand in a scope: `%x21 / %x23-5B / %x5D-7E`.
fn is_scope_char(c: char) -> bool {
    matches!(c, '\x21' | '\x23'..='\x5B' | '\x5D'..='\x7E')
}

/// Checks that `scope` is a scope-token. The error is a sentence that names
/// the scope, the character it may not hold, and the characters it may.
pub(crate) fn check(scope: &str) -> Result<(), String> {
    if scope.is_empty() {
        return Err(String::from("a scope must not be empty"));
    }
    match scope.chars().find(|c| !is_scope_char(*c)) {
        None => Ok(()),
        Some(bad) => Err(format!(
            "the scope {scope:?} contains {}; a scope takes printable ASCII characters other than space, `\"` and `\\`",
            character(bad)
        )),
    }
}

/// A character a scope may not hold, as a message names it.
fn character(c: char) -> String {
    match c {
        ' ' => String::from("a space"),
        '"' => String::from("`\"`"),
        '\\' => String::from("`\\`"),
        c if c.is_control() => format!("the control character U+{:04X}", u32::from(c)),
        c => format!("`{c}` (U+{:04X}), which is not ASCII", u32::from(c)),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::check;

    /// Scopes and whether they are valid. The runtime's `scope::check` is
    /// tested against this table; keep the two alike.
    pub(crate) const SCOPE_CASES: &[(&str, bool)] = &[
        ("tickets:write", true),
        ("openid", true),
        ("https://example.com/auth/tickets.read", true),
        ("a", true),
        ("!", true),
        ("#", true),
        ("[", true),
        ("]", true),
        ("~", true),
        ("read+write{x}|y'z`", true),
        ("", false),
        (" ", false),
        ("tickets write", false),
        ("tickets:write ", false),
        ("say\"hi\"", false),
        ("back\\slash", false),
        ("tab\there", false),
        ("new\nline", false),
        ("\u{7f}", false),
        ("café", false),
        ("no\u{a0}break", false),
    ];

    #[test]
    fn scopes_are_checked_as_the_shared_table_says() {
        for &(scope, valid) in SCOPE_CASES {
            assert_eq!(check(scope).is_ok(), valid, "{scope:?}");
        }
    }

    #[test]
    fn every_printable_ascii_character_but_three_is_allowed() {
        for byte in 0u8..=0x7f {
            let c = char::from(byte);
            let allowed = (0x21..=0x7e).contains(&byte) && c != '"' && c != '\\';
            assert_eq!(check(&c.to_string()).is_ok(), allowed, "{c:?}");
        }
    }

    #[test]
    fn the_error_names_the_character_and_what_is_allowed() {
        const ALLOWED: &str =
            "; a scope takes printable ASCII characters other than space, `\"` and `\\`";
        assert_eq!(check(""), Err(String::from("a scope must not be empty")));
        assert_eq!(
            check("tickets write"),
            Err(format!(
                "the scope \"tickets write\" contains a space{ALLOWED}"
            ))
        );
        assert_eq!(
            check("say\"hi"),
            Err(format!("the scope \"say\\\"hi\" contains `\"`{ALLOWED}"))
        );
        assert_eq!(
            check("a\\b"),
            Err(format!("the scope \"a\\\\b\" contains `\\`{ALLOWED}"))
        );
        assert_eq!(
            check("a\tb"),
            Err(format!(
                "the scope \"a\\tb\" contains the control character U+0009{ALLOWED}"
            ))
        );
        assert_eq!(
            check("café"),
            Err(format!(
                "the scope \"café\" contains `é` (U+00E9), which is not ASCII{ALLOWED}"
            ))
        );
    }
}
