//! The attribute's strings that name things outside the function: the
//! topic, id and subscription (Pulsar names), the request and response
//! queues (full topic names or TrustGraph's `class:topicspace:topic`), the
//! OAuth scopes, and the tool name derived from the function's. Each is
//! checked where it is written, so a mistake is reported on its string.

use syn::ext::IdentExt;
use syn::{Ident, LitStr};

use crate::ctxt::Errors;
use crate::scope;

/// Characters Pulsar accepts in a topic's local name, tenant and namespace.
fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '=')
}

/// The text of a Pulsar name (`what`: the key it is the value of).
pub(super) fn check_name(lit: &LitStr, what: &str, errors: &mut Errors) -> String {
    let value = lit.value();
    if value.is_empty() {
        errors.spanned(lit, format_args!("`{what}` must not be empty"));
    } else if let Some(bad) = value.chars().find(|c| !is_name_char(*c)) {
        errors.spanned(
            lit,
            format_args!(
                "`{what}` contains {bad:?}, which Pulsar does not accept in a name; use letters, digits, `-`, `_`, `.`, `:` or `=`"
            ),
        );
    }
    value
}

/// The texts of the `scopes` list, each checked as an OAuth scope and none
/// listed twice; each mistake is reported on its string.
pub(super) fn check_scopes(list: &[LitStr], errors: &mut Errors) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    for lit in list {
        let text = lit.value();
        if let Err(problem) = scope::check(&text) {
            errors.spanned(lit, problem);
        } else if scopes.contains(&text) {
            errors.spanned(lit, format_args!("`{text}` is listed twice in `scopes`"));
        } else {
            scopes.push(text);
        }
    }
    scopes
}

/// A queue name as the attribute takes it: a full Pulsar topic name, or
/// TrustGraph's `class:topicspace:topic`, which becomes the topic name
/// TrustGraph's backend maps it to (`request:tg:joke` →
/// `non-persistent://tg/request/joke`; `flow` is persistent).
pub(super) fn check_queue(lit: &LitStr, key: &str, errors: &mut Errors) -> String {
    let value = lit.value();
    let valid_parts = |parts: &[&str]| {
        parts
            .iter()
            .all(|part| !part.is_empty() && part.chars().all(is_name_char))
    };
    if let Some(rest) = value
        .strip_prefix("persistent://")
        .or_else(|| value.strip_prefix("non-persistent://"))
    {
        let parts: Vec<&str> = rest.split('/').collect();
        if parts.len() == 3 && valid_parts(&parts) {
            return value;
        }
    } else if !value.contains("://") {
        let parts: Vec<&str> = value.splitn(3, ':').collect();
        if let [class, topicspace, topic] = parts.as_slice() {
            let persistence = match *class {
                "flow" => Some("persistent"),
                "request" | "response" | "notify" => Some("non-persistent"),
                _ => None,
            };
            match persistence {
                Some(persistence) if valid_parts(&[topicspace, topic]) => {
                    return format!("{persistence}://{topicspace}/{class}/{topic}");
                }
                None => {
                    errors.spanned(
                        lit,
                        format_args!(
                            "`{key}`: `{class}` is not a TrustGraph queue class; write `request:…`, `response:…`, `notify:…` or `flow:…`, or a full Pulsar topic name"
                        ),
                    );
                    return value;
                }
                Some(_) => {}
            }
        }
    }
    errors.spanned(
        lit,
        format_args!(
            "`{key}` must be a full Pulsar topic name, `persistent://tenant/namespace/topic` or `non-persistent://tenant/namespace/topic`, or TrustGraph's `class:topicspace:topic`, e.g. `request:tg:joke`"
        ),
    );
    value
}

/// A tool name from a function name: `tell_joke` → `tell-joke`.
pub(super) fn kebab_case(ident: &Ident) -> String {
    ident
        .unraw()
        .to_string()
        .trim_matches('_')
        .replace('_', "-")
}

#[cfg(test)]
mod tests {
    use proc_macro2::Span;
    use syn::parse_quote;

    use super::*;

    fn lit(text: &str) -> LitStr {
        LitStr::new(text, Span::call_site())
    }

    /// What `check_name` keeps of `text` as a `topic`, and its messages.
    fn name(text: &str) -> (String, Vec<String>) {
        let mut errors = Errors::default();
        let kept = check_name(&lit(text), "topic", &mut errors);
        (kept, errors.messages())
    }

    /// What `check_queue` makes of `text` as a `request_queue`, and its
    /// messages.
    fn queue(text: &str) -> (String, Vec<String>) {
        let mut errors = Errors::default();
        let topic = check_queue(&lit(text), "request_queue", &mut errors);
        (topic, errors.messages())
    }

    fn scopes(texts: &[&str]) -> (Vec<String>, Vec<String>) {
        let list: Vec<LitStr> = texts.iter().map(|text| lit(text)).collect();
        let mut errors = Errors::default();
        let checked = check_scopes(&list, &mut errors);
        (checked, errors.messages())
    }

    #[test]
    fn names_take_letters_digits_and_five_marks() {
        for valid in ["joke", "tell-joke_v2", "tg.request:joke=1", "0"] {
            assert_eq!(name(valid), (valid.to_owned(), Vec::new()), "{valid}");
        }
    }

    #[test]
    fn a_bad_name_is_reported_by_its_first_bad_character_and_kept() {
        assert_eq!(
            name(""),
            (
                String::new(),
                vec![String::from("`topic` must not be empty")]
            )
        );
        for (text, bad) in [("tg/joke", "'/'"), ("tell joke", "' '"), ("café", "'é'")] {
            assert_eq!(
                name(text),
                (
                    text.to_owned(),
                    vec![format!(
                        "`topic` contains {bad}, which Pulsar does not accept in a name; use letters, digits, `-`, `_`, `.`, `:` or `=`"
                    )]
                )
            );
        }
    }

    #[test]
    fn tool_names_are_function_names_in_kebab_case() {
        let cases: [(Ident, &str); 5] = [
            (parse_quote!(tell_joke), "tell-joke"),
            (parse_quote!(search), "search"),
            (parse_quote!(r#type), "type"),
            (parse_quote!(__private_), "private"),
            (parse_quote!(look__up), "look--up"),
        ];
        for (ident, expected) in cases {
            assert_eq!(kebab_case(&ident), expected);
        }
    }

    #[test]
    fn full_topic_names_are_kept() {
        for full in [
            "persistent://tg/flow/joke",
            "non-persistent://tg/request/joke",
            "persistent://my-tenant/ns.1/topic:a=b",
        ] {
            assert_eq!(queue(full), (full.to_owned(), Vec::new()), "{full}");
        }
    }

    #[test]
    fn trustgraph_queues_become_the_topics_its_backend_maps_them_to() {
        let cases = [
            ("request:tg:joke", "non-persistent://tg/request/joke"),
            ("response:tg:joke", "non-persistent://tg/response/joke"),
            ("notify:tg:config", "non-persistent://tg/notify/config"),
            ("flow:tg:joke", "persistent://tg/flow/joke"),
        ];
        for (queue_text, topic) in cases {
            assert_eq!(queue(queue_text), (topic.to_owned(), Vec::new()));
        }
    }

    #[test]
    fn an_unknown_queue_class_is_named() {
        assert_eq!(
            queue("reqest:tg:joke"),
            (
                String::from("reqest:tg:joke"),
                vec![String::from(
                    "`request_queue`: `reqest` is not a TrustGraph queue class; write `request:…`, `response:…`, `notify:…` or `flow:…`, or a full Pulsar topic name"
                )]
            )
        );
    }

    #[test]
    fn anything_else_is_not_a_queue() {
        let not_a_queue = "`request_queue` must be a full Pulsar topic name, `persistent://tenant/namespace/topic` or `non-persistent://tenant/namespace/topic`, or TrustGraph's `class:topicspace:topic`, e.g. `request:tg:joke`";
        for bad in [
            "joke",
            "tg:joke",
            "request::joke",
            "request:tg:",
            "request:tg:a joke",
            "persistent://tg/joke",
            "persistent://tg//joke",
            "persistent://tg/request/joke/extra",
            "non-persistent://tg/request/a joke",
            "pulsar://tg/request/joke",
        ] {
            assert_eq!(
                queue(bad),
                (bad.to_owned(), vec![String::from(not_a_queue)]),
                "{bad}"
            );
        }
    }

    #[test]
    fn scopes_are_kept_in_order() {
        assert_eq!(
            scopes(&["tickets:write", "openid"]),
            (
                vec![String::from("tickets:write"), String::from("openid")],
                Vec::new()
            )
        );
        assert_eq!(scopes(&[]), (Vec::new(), Vec::new()));
    }

    #[test]
    fn every_bad_or_repeated_scope_is_reported() {
        let (_, messages) = scopes(&["a b", "ok", "", "ok", "x\\y", "ok"]);
        assert_eq!(
            messages,
            [
                "the scope \"a b\" contains a space; a scope takes printable ASCII characters other than space, `\"` and `\\`",
                "a scope must not be empty",
                "`ok` is listed twice in `scopes`",
                "the scope \"x\\\\y\" contains `\\`; a scope takes printable ASCII characters other than space, `\"` and `\\`",
                "`ok` is listed twice in `scopes`",
            ]
        );
    }

    #[test]
    fn only_valid_scopes_are_kept_each_once() {
        let (checked, _) = scopes(&["b", "a b", "a", "b"]);
        assert_eq!(checked, ["b", "a"]);
    }
}
