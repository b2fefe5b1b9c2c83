//! The attribute grammar:
//!
//! ```text
//! #[tool_service(
//!     topic = "joke",                       // required
//!     id = "joke-service",                  // default "{topic}-service"
//!     request_queue = "persistent://t/n/q", // default non-persistent://tg/request/{topic}
//!     response_queue = "…",                 // default non-persistent://tg/response/{topic}
//!     subscription = "…",                   // default "{id}-request"
//!     concurrency = 8,                      // at least 1
//!     timeout = "30s",                      // per request: ms, s, m or h
//!     rate = "100/s",                       // calls per replica per s, m or h
//!     scopes = ["tickets:write"],           // OAuth scopes a caller's token must carry
//!     strict,                               // arguments decode as the type says, no coercion
//!     annotations(read_only, open_world = false), // MCP's hints, for every tool
//!     tool(                                 // repeatable
//!         name = "tell-joke",
//!         title = "Tell a joke",              // MCP's name for people
//!         annotations(idempotent),            // MCP's hints, over the service's
//!         description = "…",
//!         config(style = "pun", "max-length" = 80), // keys that are not identifiers quoted
//!         arguments(topic = "…"),             // per-tool argument descriptions
//!         group = ["ops", "billing"],         // TrustGraph's tool groups
//!         state = "after-search",             // the agent's state after the call
//!         applicable_states = ["start"],      // the states it is offered in
//!     ),
//!     crate = "::tool_service",
//! )]
//! ```

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Expr, Ident, Lit, LitInt, LitStr, Token};

use crate::annotations::{self, Annotations};
use crate::ctxt::{code_list, did_you_mean, nearest, Errors};
use crate::key::written;

/// The keys of the attribute.
const KEYS: [&str; 13] = [
    "topic",
    "id",
    "request_queue",
    "response_queue",
    "subscription",
    "concurrency",
    "timeout",
    "rate",
    "scopes",
    "strict",
    "annotations",
    "tool",
    "crate",
];
/// The keys of one `tool(…)` preset.
const TOOL_KEYS: [&str; 9] = [
    "name",
    "title",
    "description",
    "annotations",
    "config",
    "arguments",
    "group",
    "state",
    "applicable_states",
];

/// The parsed attribute, before validation.
#[derive(Default)]
pub(crate) struct ServiceAttr {
    pub(crate) topic: Option<LitStr>,
    /// `topic` was given, but not as a string literal, or misspelt (already
    /// reported either way, so not reported missing).
    pub(crate) topic_invalid: bool,
    pub(crate) id: Option<LitStr>,
    pub(crate) request_queue: Option<LitStr>,
    pub(crate) response_queue: Option<LitStr>,
    pub(crate) subscription: Option<LitStr>,
    pub(crate) concurrency: Option<LitInt>,
    pub(crate) timeout: Option<LitStr>,
    pub(crate) rate: Option<LitStr>,
    /// The OAuth scopes, checked by the model.
    pub(crate) scopes: Option<Vec<LitStr>>,
    /// `strict`: no coercion of the LLM's arguments.
    pub(crate) strict: Option<syn::Path>,
    /// MCP's hints for every tool of the service.
    pub(crate) annotations: Annotations,
    pub(crate) tools: Vec<ToolAttr>,
    pub(crate) krate: Option<syn::Path>,
}

/// One `tool(…)` preset.
pub(crate) struct ToolAttr {
    pub(crate) span: Span,
    pub(crate) name: Option<LitStr>,
    /// MCP's title: a name for people.
    pub(crate) title: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    /// MCP's hints for this tool, over the service's.
    pub(crate) annotations: Annotations,
    pub(crate) config: Vec<ConfigEntry>,
    /// Per-tool argument descriptions: `arguments(question = "…")`.
    pub(crate) arguments: Vec<ArgumentEntry>,
    /// TrustGraph's `group` list.
    pub(crate) group: Option<Vec<LitStr>>,
    /// TrustGraph's `state`: the agent's state once the tool ran.
    pub(crate) state: Option<LitStr>,
    /// TrustGraph's `applicable-states` list.
    pub(crate) applicable_states: Option<Vec<LitStr>>,
}

/// One `name = "description"` of a preset's `arguments(…)`.
#[derive(Clone)]
pub(crate) struct ArgumentEntry {
    pub(crate) name: String,
    pub(crate) span: Span,
    pub(crate) description: LitStr,
}

/// One `key = value` of a preset's `config(…)`.
#[derive(Clone)]
pub(crate) struct ConfigEntry {
    pub(crate) key: String,
    pub(crate) key_span: Span,
    pub(crate) value: ConfigLit,
}

/// A literal config value.
#[derive(Clone)]
pub(crate) enum ConfigLit {
    Str(LitStr),
    Int(i64),
    Float(f64),
    Bool(bool),
}

/// Stores a key's value once; a second occurrence is an error on its key.
fn set_once<T>(slot: &mut Option<T>, value: T, key: &syn::Path, errors: &mut Errors) {
    if slot.is_some() {
        let name = key
            .get_ident()
            .map(Ident::to_string)
            .unwrap_or_else(|| String::from("crate"));
        errors.spanned(key, format_args!("duplicate `{name}` key; give it once"));
    } else {
        *slot = Some(value);
    }
}

/// Looks through the invisible groups `macro_rules!` wraps around
/// `$x:literal` and `$x:expr` fragments.
pub(crate) fn ungroup(expr: Expr) -> Expr {
    match expr {
        Expr::Group(group) => ungroup(*group.expr),
        Expr::Paren(paren) => ungroup(*paren.expr),
        other => other,
    }
}

/// Parses `= "string literal"`.
fn string_value(
    meta: &ParseNestedMeta,
    key: &str,
    example: &str,
    errors: &mut Errors,
) -> syn::Result<Option<LitStr>> {
    let expr: Expr = meta.value()?.parse()?;
    match ungroup(expr) {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(Some(lit)),
        other => {
            errors.spanned(
                &other,
                format_args!("`{key}` must be a string literal, e.g. `{key} = \"{example}\"`"),
            );
            Ok(None)
        }
    }
}

/// Skips the value of an unknown key so parsing can go on.
pub(crate) fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _content: TokenStream = meta.input.parse::<proc_macro2::Group>()?.stream();
    }
    Ok(())
}

pub(crate) fn parse(tokens: TokenStream, errors: &mut Errors) -> ServiceAttr {
    let mut attr = ServiceAttr::default();
    let parser = syn::meta::parser(|meta| {
        let path = meta.path.clone();
        if meta.input.peek(Token![-]) {
            if unknown_key(&meta, &KEYS, "", errors)?.as_deref() == Some("topic") {
                attr.topic_invalid = true;
            }
        } else if path.is_ident("topic") {
            match string_value(&meta, "topic", "joke", errors)? {
                Some(lit) => set_once(&mut attr.topic, lit, &path, errors),
                None => attr.topic_invalid = true,
            }
        } else if path.is_ident("id") {
            if let Some(lit) = string_value(&meta, "id", "joke-service", errors)? {
                set_once(&mut attr.id, lit, &path, errors);
            }
        } else if path.is_ident("request_queue") {
            if let Some(lit) = string_value(
                &meta,
                "request_queue",
                "non-persistent://tg/request/joke",
                errors,
            )? {
                set_once(&mut attr.request_queue, lit, &path, errors);
            }
        } else if path.is_ident("response_queue") {
            if let Some(lit) = string_value(
                &meta,
                "response_queue",
                "non-persistent://tg/response/joke",
                errors,
            )? {
                set_once(&mut attr.response_queue, lit, &path, errors);
            }
        } else if path.is_ident("subscription") {
            if let Some(lit) = string_value(&meta, "subscription", "joke-service-request", errors)?
            {
                set_once(&mut attr.subscription, lit, &path, errors);
            }
        } else if path.is_ident("concurrency") {
            let expr: Expr = meta.value()?.parse()?;
            match ungroup(expr) {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Int(lit), ..
                }) => set_once(&mut attr.concurrency, lit, &path, errors),
                other => errors.spanned(
                    &other,
                    "`concurrency` must be an integer literal, e.g. `concurrency = 8`",
                ),
            }
        } else if path.is_ident("timeout") {
            if let Some(lit) = string_value(&meta, "timeout", "30s", errors)? {
                set_once(&mut attr.timeout, lit, &path, errors);
            }
        } else if path.is_ident("rate") {
            if let Some(lit) = string_value(&meta, "rate", "100/s", errors)? {
                set_once(&mut attr.rate, lit, &path, errors);
            }
        } else if path.is_ident("scopes") {
            let value: Expr = meta.value()?.parse()?;
            // Checked by the model, with an element that is not a string
            // literal (already reported) left out.
            if let Some(Literals { literals, .. }) =
                string_literals(&value, "scopes", "[\"tickets:write\"]", errors)
            {
                set_once(&mut attr.scopes, literals, &path, errors);
            }
        } else if path.is_ident("strict") {
            if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
                errors.spanned(
                    &path,
                    "`strict` takes no value: write `strict` to decode the arguments exactly as their types say",
                );
                skip_value(&meta)?;
            }
            set_once(&mut attr.strict, path, &meta.path, errors);
        } else if path.is_ident("crate") {
            if let Some(lit) = string_value(&meta, "crate", "::tool_service", errors)? {
                match lit.parse::<syn::Path>() {
                    Ok(krate) => set_once(&mut attr.krate, krate, &path, errors),
                    Err(_) => errors.spanned(
                        &lit,
                        "`crate` must name a path, e.g. `crate = \"::tool_service\"`",
                    ),
                }
            }
        } else if path.is_ident("annotations") {
            annotations::parse(&meta, &mut attr.annotations, errors)?;
        } else if path.is_ident("title") {
            errors.spanned(
                &path,
                "`title` names one tool: write it in the tool's preset, e.g. `tool(title = \"Find notes\")`",
            );
            skip_value(&meta)?;
        } else if path.is_ident("tool") {
            attr.tools.push(parse_tool(&meta, errors)?);
        } else if unknown_key(&meta, &KEYS, "", errors)?.as_deref() == Some("topic") {
            attr.topic_invalid = true;
        }
        Ok(())
    });
    if let Err(error) = parser.parse2(tokens) {
        errors.push(error);
    }
    attr
}

fn parse_tool(meta: &ParseNestedMeta, errors: &mut Errors) -> syn::Result<ToolAttr> {
    let mut tool = ToolAttr {
        span: meta.path.span(),
        name: None,
        title: None,
        description: None,
        annotations: Annotations::default(),
        config: Vec::new(),
        arguments: Vec::new(),
        group: None,
        state: None,
        applicable_states: None,
    };
    if !meta.input.peek(syn::token::Paren) {
        errors.spanned(
            &meta.path,
            "`tool` takes a list, e.g. `tool(name = \"tell-joke\", config(style = \"pun\"))`",
        );
        return Ok(tool);
    }
    meta.parse_nested_meta(|inner| {
        let path = inner.path.clone();
        if inner.input.peek(Token![-]) {
            unknown_key(&inner, &TOOL_KEYS, " in `tool(…)`", errors)?;
        } else if path.is_ident("name") {
            if let Some(lit) = string_value(&inner, "name", "tell-joke", errors)? {
                set_once(&mut tool.name, lit, &path, errors);
            }
        } else if path.is_ident("title") {
            if let Some(lit) = string_value(&inner, "title", "Find notes", errors)? {
                if lit.value().trim().is_empty() {
                    errors.spanned(&lit, "`title` must not be empty; leave it out for no title");
                } else {
                    set_once(&mut tool.title, lit, &path, errors);
                }
            }
        } else if path.is_ident("annotations") {
            annotations::parse(&inner, &mut tool.annotations, errors)?;
        } else if path.is_ident("description") {
            if let Some(lit) = string_value(
                &inner,
                "description",
                "Tell a joke on a given topic",
                errors,
            )? {
                set_once(&mut tool.description, lit, &path, errors);
            }
        } else if path.is_ident("config") {
            parse_entries(&inner, errors, |key, value, errors| match config_lit(&value) {
                Ok(value) => tool.config.push(ConfigEntry {
                    key: key.name,
                    key_span: key.span,
                    value,
                }),
                Err(error) => errors.push(error),
            })?;
        } else if path.is_ident("group") {
            if let Some(list) = string_list(&inner, "group", "[\"ops\", \"billing\"]", errors)? {
                set_once(&mut tool.group, list, &path, errors);
            }
        } else if path.is_ident("applicable_states") {
            if let Some(list) =
                string_list(&inner, "applicable_states", "[\"start\"]", errors)?
            {
                set_once(&mut tool.applicable_states, list, &path, errors);
            }
        } else if path.is_ident("state") {
            if let Some(lit) = string_value(&inner, "state", "after-search", errors)? {
                if lit.value().trim().is_empty() {
                    errors.spanned(&lit, "`state` must not be empty; leave it out for no state change");
                } else {
                    set_once(&mut tool.state, lit, &path, errors);
                }
            }
        } else if path.is_ident("arguments") {
            parse_entries(&inner, errors, |key, value, errors| match value {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(description),
                    ..
                }) => tool.arguments.push(ArgumentEntry {
                    name: key.name,
                    span: key.span,
                    description,
                }),
                other => {
                    let key = written(&key.name);
                    errors.spanned(
                        &other,
                        format_args!(
                            "`{key}` must be a string literal, e.g. `{key} = \"what the LLM should pass\"`"
                        ),
                    );
                }
            })?;
        } else {
            unknown_key(&inner, &TOOL_KEYS, " in `tool(…)`", errors)?;
        }
        Ok(())
    })?;
    Ok(tool)
}

/// A `key = ["a", "b"]` list of distinct, non-empty strings; `None` (with
/// the errors reported, each on its token) when it is not one.
fn string_list(
    meta: &ParseNestedMeta,
    key: &str,
    example: &str,
    errors: &mut Errors,
) -> syn::Result<Option<Vec<LitStr>>> {
    let value: Expr = meta.value()?.parse()?;
    let Some(Literals { literals, all }) = string_literals(&value, key, example, errors) else {
        return Ok(None);
    };
    if literals.is_empty() && all {
        errors.spanned(
            &value,
            format_args!(
                "`{key}` must not be empty: TrustGraph's agent would never offer the tool; leave `{key}` out for the default"
            ),
        );
        return Ok(None);
    }
    let mut list: Vec<LitStr> = Vec::new();
    let mut valid = all;
    for lit in literals {
        let text = lit.value();
        if text.trim().is_empty() {
            errors.spanned(&lit, format_args!("a name in `{key}` must not be empty"));
            valid = false;
        } else if list.iter().any(|seen| seen.value() == text) {
            errors.spanned(&lit, format_args!("`{text}` is listed twice in `{key}`"));
            valid = false;
        } else {
            list.push(lit);
        }
    }
    Ok(valid.then_some(list))
}

/// The string literals of a list.
struct Literals {
    /// The elements that are string literals, in order.
    literals: Vec<LitStr>,
    /// Whether every element is one.
    all: bool,
}

/// The string literals of `value`, a list (`["a", "b"]`, or `[]`) given as
/// the value of `key`; `None` when it is not a list. Each element that is
/// not a string literal, and a value that is not a list, is reported on its
/// token.
fn string_literals(
    value: &Expr,
    key: &str,
    example: &str,
    errors: &mut Errors,
) -> Option<Literals> {
    let Expr::Array(array) = value else {
        errors.spanned(
            value,
            format_args!("`{key}` takes a list of strings, e.g. `{key} = {example}`"),
        );
        return None;
    };
    let mut literals = Vec::new();
    let mut all = true;
    for element in &array.elems {
        match element {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(lit), ..
            }) => literals.push(lit.clone()),
            other => {
                errors.spanned(
                    other,
                    format_args!("`{key}` takes string literals, e.g. `{key} = {example}`"),
                );
                all = false;
            }
        }
    }
    Some(Literals { literals, all })
}

/// Reports an unknown key, suggesting the nearest known one, and skips its
/// value so parsing goes on. `place` says where the key stands (" in
/// `tool(…)`", or nothing for the attribute itself). A hyphenated key
/// (`request-queue`) is read whole. Returns the suggestion, if any.
fn unknown_key(
    meta: &ParseNestedMeta,
    keys: &[&str],
    place: &str,
    errors: &mut Errors,
) -> syn::Result<Option<String>> {
    let path = &meta.path;
    let mut name = match path.get_ident() {
        Some(ident) => ident.unraw().to_string(),
        None => path_text(path),
    };
    let mut tokens = path.to_token_stream();
    hyphenated_tail(meta.input, &mut name, &mut tokens)?;
    errors.spanned(
        &tokens,
        format_args!(
            "unknown key `{name}`{place}; expected one of {}{}",
            code_list(keys),
            did_you_mean(&name, keys)
        ),
    );
    skip_value(meta)?;
    Ok(nearest(&name, keys))
}

pub(crate) fn path_text(path: &syn::Path) -> String {
    path.to_token_stream().to_string().replace(' ', "")
}

/// Reads the rest of a hyphenated name (`-url` after `index`) onto `name`
/// and `tokens`. Rust reads `index-url` as a subtraction, so the attribute
/// only sees such a name token by token.
fn hyphenated_tail(
    input: ParseStream,
    name: &mut String,
    tokens: &mut TokenStream,
) -> syn::Result<()> {
    while input.peek(Token![-]) && !input.peek(Token![-=]) {
        let minus: Token![-] = input.parse()?;
        minus.to_tokens(tokens);
        name.push('-');
        let part = if input.peek(Ident::peek_any) {
            TokenTree::Ident(Ident::parse_any(input)?)
        } else if input.peek(LitInt) {
            TokenTree::Literal(input.parse::<proc_macro2::Literal>()?)
        } else {
            break;
        };
        name.push_str(&part.to_string());
        tokens.extend([part]);
    }
    Ok(())
}

/// A key of `config(…)` or `arguments(…)`.
struct Key {
    /// The name, without quotes or `r#`.
    name: String,
    /// Where the key starts.
    span: Span,
}

/// Parses a key: an identifier (keywords too) or a string (`"index-url"`).
/// A hyphenated key written bare is read whole, reported once with the
/// string to write instead, and kept, so no follow-on error claims it is
/// missing.
fn parse_key(input: ParseStream, errors: &mut Errors) -> syn::Result<Key> {
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        return Ok(Key {
            name: lit.value(),
            span: lit.span(),
        });
    }
    let ident = Ident::parse_any(input)?;
    let mut name = ident.unraw().to_string();
    if input.peek(Token![-]) {
        let mut tokens = ident.to_token_stream();
        hyphenated_tail(input, &mut name, &mut tokens)?;
        errors.spanned(
            &tokens,
            format_args!("write hyphenated keys as strings: `{} = …`", written(&name)),
        );
    }
    Ok(Key {
        name,
        span: ident.span(),
    })
}

/// Parses the `key = value, …` list of `config(…)` or `arguments(…)`,
/// handing each key and value to `entry`.
fn parse_entries(
    meta: &ParseNestedMeta,
    errors: &mut Errors,
    mut entry: impl FnMut(Key, Expr, &mut Errors),
) -> syn::Result<()> {
    let content;
    syn::parenthesized!(content in meta.input);
    while !content.is_empty() {
        let key = parse_key(&content, errors)?;
        content.parse::<Token![=]>()?;
        let value = ungroup(content.parse()?);
        entry(key, value, errors);
        if content.is_empty() {
            break;
        }
        content.parse::<Token![,]>()?;
    }
    Ok(())
}

fn config_lit(expr: &Expr) -> syn::Result<ConfigLit> {
    let unsupported = || {
        syn::Error::new_spanned(
            expr,
            "config values must be literals: a string, an integer, a float or a bool",
        )
    };
    match expr {
        Expr::Lit(syn::ExprLit { lit, .. }) => match lit {
            Lit::Str(text) => Ok(ConfigLit::Str(text.clone())),
            Lit::Int(int) => Ok(ConfigLit::Int(int.base10_parse()?)),
            Lit::Float(float) => Ok(ConfigLit::Float(float.base10_parse()?)),
            Lit::Bool(flag) => Ok(ConfigLit::Bool(flag.value)),
            _ => Err(unsupported()),
        },
        Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr: inner,
            ..
        }) => match config_lit(inner)? {
            ConfigLit::Int(value) => Ok(ConfigLit::Int(-value)),
            ConfigLit::Float(value) => Ok(ConfigLit::Float(-value)),
            _ => Err(unsupported()),
        },
        _ => Err(unsupported()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn tokens(text: &str) -> TokenStream {
        text.parse().unwrap()
    }

    fn parse_ok(tokens: TokenStream) -> ServiceAttr {
        let mut errors = Errors::default();
        let attr = parse(tokens, &mut errors);
        errors.finish().unwrap();
        attr
    }

    fn parse_err(tokens: TokenStream) -> Vec<String> {
        let mut errors = Errors::default();
        parse(tokens, &mut errors);
        errors
            .finish()
            .unwrap_err()
            .into_iter()
            .map(|error| error.to_string())
            .collect()
    }

    #[test]
    fn parses_every_key() {
        let attr = parse_ok(quote!(
            topic = "rag",
            id = "custom-rag",
            request_queue = "persistent://a/b/c",
            response_queue = "persistent://a/b/d",
            subscription = "s",
            concurrency = 4,
            tool(
                name = "query-customers",
                description = "Query",
                config(
                    collection = "customers",
                    limit = -5,
                    "max-ratio" = 0.5,
                    strict = true
                )
            ),
            tool(
                name = "query-products",
                config(collection = "products"),
                arguments(question = "About products")
            ),
            crate = "::my::tool_service",
        ));
        assert_eq!(attr.topic.unwrap().value(), "rag");
        assert_eq!(
            attr.concurrency.unwrap().base10_parse::<usize>().unwrap(),
            4
        );
        assert_eq!(attr.tools.len(), 2);
        let keys: Vec<&str> = attr.tools[0]
            .config
            .iter()
            .map(|entry| entry.key.as_str())
            .collect();
        assert_eq!(keys, ["collection", "limit", "max-ratio", "strict"]);
        assert!(matches!(attr.tools[0].config[1].value, ConfigLit::Int(-5)));
        assert_eq!(attr.tools[1].arguments[0].name, "question");
        assert_eq!(
            attr.tools[1].arguments[0].description.value(),
            "About products"
        );
        assert!(attr.krate.is_some());
    }

    #[test]
    fn reports_every_mistake_at_once() {
        let errors = parse_err(quote!(
            topic = "a",
            topic = "b",
            colour = 1,
            id = some_const,
            tool(nme = "x")
        ));
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(errors[0].contains("duplicate `topic`"));
        assert!(errors[1].starts_with("unknown key `colour`; expected one of `topic`"));
        assert!(errors[2].contains("`id` must be a string literal"));
        assert!(errors[3].contains("unknown key `nme` in `tool(…)`"));
    }

    #[test]
    fn literals_from_macro_rules_fragments_are_accepted() {
        use proc_macro2::{Delimiter, Group, Literal, TokenTree};
        let grouped = |literal: Literal| {
            TokenTree::Group(Group::new(
                Delimiter::None,
                TokenTree::Literal(literal).into(),
            ))
        };
        let topic = grouped(Literal::string("joke"));
        let concurrency = grouped(Literal::usize_unsuffixed(4));
        let style = grouped(Literal::string("pun"));
        let attr = parse_ok(
            quote!(topic = #topic, concurrency = #concurrency, tool(config(style = #style))),
        );
        assert_eq!(attr.topic.unwrap().value(), "joke");
        assert_eq!(attr.concurrency.unwrap().base10_parse::<u8>().unwrap(), 4);
        assert!(
            matches!(&attr.tools[0].config[0].value, ConfigLit::Str(text) if text.value() == "pun")
        );
    }

    #[test]
    fn near_misses_are_named() {
        // As text: rustfmt would space out `request-queue` inside `quote!`.
        let errors = parse_err(tokens(
            r#"topc = "a", request-queue = "persistent://a/b/c",
               tool(nme = "x", descripton = "y", config-x = 1)"#,
        ));
        assert_eq!(errors.len(), 5, "{errors:?}");
        assert!(errors[0].starts_with("unknown key `topc`; expected one of `topic`, `id`"));
        assert!(
            errors[0].ends_with("`crate`; did you mean `topic`?"),
            "{}",
            errors[0]
        );
        assert!(errors[1].starts_with("unknown key `request-queue`; expected one of"));
        assert!(
            errors[1].ends_with("; did you mean `request_queue`?"),
            "{}",
            errors[1]
        );
        assert_eq!(
            errors[2],
            "unknown key `nme` in `tool(…)`; expected one of `name`, `title`, `description`, `annotations`, `config`, `arguments`, `group`, `state`, `applicable_states`; did you mean `name`?"
        );
        assert!(
            errors[3].ends_with("; did you mean `description`?"),
            "{}",
            errors[3]
        );
        assert!(errors[4].starts_with("unknown key `config-x` in `tool(…)`"));
    }

    #[test]
    fn a_misspelt_topic_is_not_also_missing() {
        let mut errors = Errors::default();
        let attr = parse(quote!(topc = "joke"), &mut errors);
        assert!(attr.topic.is_none() && attr.topic_invalid);
        assert_eq!(errors.finish().unwrap_err().into_iter().count(), 1);
    }

    #[test]
    fn a_hyphenated_key_written_bare_is_one_error_and_still_read() {
        let mut errors = Errors::default();
        let attr = parse(
            tokens(
                r#"topic = "a", tool(
                    config(index-url = "https://x", max-2-hits = 3, plain = true),
                    arguments(top-k = "How many")
                )"#,
            ),
            &mut errors,
        );
        let errors: Vec<String> = errors
            .finish()
            .unwrap_err()
            .into_iter()
            .map(|error| error.to_string())
            .collect();
        assert_eq!(
            errors,
            [
                "write hyphenated keys as strings: `\"index-url\" = …`",
                "write hyphenated keys as strings: `\"max-2-hits\" = …`",
                "write hyphenated keys as strings: `\"top-k\" = …`",
            ]
        );
        let keys: Vec<&str> = attr.tools[0]
            .config
            .iter()
            .map(|entry| entry.key.as_str())
            .collect();
        assert_eq!(keys, ["index-url", "max-2-hits", "plain"]);
        assert_eq!(attr.tools[0].arguments[0].name, "top-k");
    }

    #[test]
    fn keys_written_as_messages_write_them_read_back() {
        for &(name, _) in crate::key::tests::KEY_CASES {
            let key: TokenStream = crate::key::written(name).parse().unwrap();
            let attr = parse_ok(quote!(
                topic = "a",
                tool(config(#key = 1), arguments(#key = "described"))
            ));
            assert_eq!(attr.tools[0].config[0].key, name);
            assert_eq!(attr.tools[0].arguments[0].name, name);
        }
    }

    #[test]
    fn argument_descriptions_must_be_strings() {
        let errors = parse_err(quote!(topic = "a", tool(arguments("max-hits" = 5))));
        assert_eq!(
            errors,
            ["`\"max-hits\"` must be a string literal, e.g. `\"max-hits\" = \"what the LLM should pass\"`"]
        );
    }

    #[test]
    fn scopes_are_a_list_of_strings_in_any_place() {
        let texts = |attr: ServiceAttr| -> Option<Vec<String>> {
            attr.scopes
                .map(|list| list.iter().map(LitStr::value).collect())
        };
        let attr = parse_ok(quote!(
            scopes = ["tickets:write", "a b"],
            topic = "tickets",
            strict
        ));
        assert_eq!(
            texts(attr),
            Some(vec![String::from("tickets:write"), String::from("a b")])
        );
        let attr = parse_ok(quote!(topic = "tickets", scopes = [], tool(name = "t")));
        assert_eq!(texts(attr), Some(Vec::new()));
        assert_eq!(texts(parse_ok(quote!(topic = "tickets"))), None);
    }

    #[test]
    fn scopes_that_are_not_a_list_of_strings_are_reported() {
        assert_eq!(
            parse_err(quote!(topic = "a", scopes = "tickets:write")),
            ["`scopes` takes a list of strings, e.g. `scopes = [\"tickets:write\"]`"]
        );
        let mut errors = Errors::default();
        let attr = parse(quote!(topic = "a", scopes = [read, "ok", 5]), &mut errors);
        let messages: Vec<String> = errors
            .finish()
            .unwrap_err()
            .into_iter()
            .map(|error| error.to_string())
            .collect();
        assert_eq!(
            messages,
            [
                "`scopes` takes string literals, e.g. `scopes = [\"tickets:write\"]`",
                "`scopes` takes string literals, e.g. `scopes = [\"tickets:write\"]`",
            ]
        );
        // The strings are kept, for the model to check them too.
        assert_eq!(attr.scopes.unwrap()[0].value(), "ok");
        assert_eq!(
            parse_err(quote!(topic = "a", scopes = ["x"], scopes = ["y"])),
            ["duplicate `scopes` key; give it once"]
        );
    }

    #[test]
    fn config_values_must_be_literals() {
        let errors = parse_err(quote!(topic = "a", tool(config(x = some::path, y = "ok"))));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("config values must be literals"));
    }
}
