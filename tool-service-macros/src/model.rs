//! The checked model of one annotated function: what each parameter is for,
//! the service's names and topics, and its tool presets. Expansion only ever
//! sees a model that passed every check.

use std::collections::BTreeSet;

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, LitStr, Pat, Type};

use crate::attr::{ArgumentEntry, ConfigEntry, ServiceAttr};
use crate::ctxt::Errors;
use crate::doc::Doc;

/// The parameter attributes that give a parameter its role.
pub(crate) const ROLE_ATTRS: [&str; 5] = ["config", "config_param", "args", "context", "stream"];

/// What a parameter of the user's function receives.
pub(crate) enum Role {
    /// `#[config]`: the whole config struct.
    Config,
    /// `#[config_param]`: one config parameter.
    ConfigParam,
    /// `#[args]`: the whole argument struct.
    Args,
    /// `#[context]`: the request context.
    Context,
    /// `#[stream]`: the chunk sender of a streaming response.
    Stream,
    /// No attribute: one LLM argument.
    Argument,
}

/// One parameter.
pub(crate) struct Param {
    pub(crate) role: Role,
    /// The name on the wire (single config params and arguments).
    pub(crate) name: Option<Ident>,
    /// The type as written.
    pub(crate) ty: Type,
    /// The type without a leading `&`, and whether there was one.
    pub(crate) by_ref: bool,
    pub(crate) description: Option<String>,
}

impl Param {
    pub(crate) fn value_type(&self) -> &Type {
        match &self.ty {
            Type::Reference(reference) if self.by_ref => &reference.elem,
            other => other,
        }
    }
}

/// How the function's result becomes a response.
pub(crate) enum Output {
    /// `-> Result<T, E>` (by the last path segment's name).
    Result { ok: Option<Type>, span: Span },
    /// Any other type, or none (`()`).
    Value(Option<Type>),
}

/// A tool preset, with defaults applied.
pub(crate) struct Tool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) config: Vec<ConfigEntry>,
    pub(crate) arguments: Vec<ArgumentEntry>,
}

/// Milliseconds in a duration written as a whole number and a unit:
/// `"250ms"`, `"30s"`, `"5m"`, `"1h"`.
fn parse_millis(text: &str) -> Result<u64, &'static str> {
    const PROBLEM: &str =
        "must be a whole number and a unit (`ms`, `s`, `m` or `h`), e.g. `timeout = \"30s\"`";
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or(PROBLEM)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| PROBLEM)?;
    let scale = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(PROBLEM),
    };
    match number.checked_mul(scale) {
        Some(0) => Err("must be longer than zero"),
        Some(ms) => Ok(ms),
        None => Err("is too long"),
    }
}

/// The checked model.
pub(crate) struct Service {
    pub(crate) ident: Ident,
    pub(crate) id: String,
    pub(crate) topic: String,
    pub(crate) request_queue: Option<String>,
    pub(crate) response_queue: Option<String>,
    pub(crate) subscription: Option<String>,
    pub(crate) concurrency: Option<usize>,
    /// Per-request timeout in milliseconds.
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) params: Vec<Param>,
    pub(crate) output: Output,
    pub(crate) tools: Vec<Tool>,
    pub(crate) krate: syn::Path,
}

impl Service {
    pub(crate) fn has(&self, role: fn(&Role) -> bool) -> bool {
        self.params.iter().any(|param| role(&param.role))
    }
}

/// Characters Pulsar accepts in a topic's local name, tenant and namespace.
fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '=')
}

fn check_name(lit: &LitStr, what: &str, errors: &mut Errors) -> String {
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

fn check_queue(lit: &LitStr, key: &str, errors: &mut Errors) -> String {
    let value = lit.value();
    let valid = value
        .strip_prefix("persistent://")
        .or_else(|| value.strip_prefix("non-persistent://"))
        .map(|rest| {
            let parts: Vec<&str> = rest.split('/').collect();
            parts.len() == 3
                && parts
                    .iter()
                    .all(|part| !part.is_empty() && part.chars().all(is_name_char))
        })
        .unwrap_or(false);
    if !valid {
        errors.spanned(
            lit,
            format_args!(
                "`{key}` must be a full Pulsar topic name, `persistent://tenant/namespace/topic` or `non-persistent://tenant/namespace/topic`"
            ),
        );
    }
    value
}

fn kebab_case(ident: &Ident) -> String {
    ident
        .unraw()
        .to_string()
        .trim_matches('_')
        .replace('_', "-")
}

fn is_named(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(path) => {
            path.qself.is_none()
                && path
                    .path
                    .segments
                    .last()
                    .is_some_and(|segment| segment.ident == name)
        }
        Type::Group(group) => is_named(&group.elem, name),
        Type::Paren(paren) => is_named(&paren.elem, name),
        _ => false,
    }
}

/// The first generic type argument of the type's last segment.
fn first_type_argument(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let syn::PathArguments::AngleBracketed(arguments) = &path.path.segments.last()?.arguments
    else {
        return None;
    };
    arguments.args.iter().find_map(|argument| match argument {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}

/// Builds the model, recording every problem in `errors`.
pub(crate) fn build(attr: ServiceAttr, function: &ItemFn, errors: &mut Errors) -> Option<Service> {
    let signature = &function.sig;
    if signature.asyncness.is_none() {
        errors.spanned(
            signature.fn_token,
            "`#[tool_service]` functions must be `async fn`; add `async`",
        );
    }
    if !signature.generics.params.is_empty() || signature.generics.where_clause.is_some() {
        errors.spanned(
            &signature.generics,
            "`#[tool_service]` functions cannot be generic: the service decodes into concrete types; remove the generic parameters",
        );
    }
    if let Some(variadic) = &signature.variadic {
        errors.spanned(variadic, "`#[tool_service]` functions cannot be variadic");
    }

    let topic = match &attr.topic {
        Some(lit) => Some(check_name(lit, "topic", errors)),
        None if attr.topic_invalid => None,
        None => {
            errors.at(
                Span::call_site(),
                "missing `topic`: name the service's topic, e.g. `#[tool_service(topic = \"joke\")]`",
            );
            None
        }
    };
    let id = attr.id.as_ref().map(|lit| check_name(lit, "id", errors));
    let request_queue = attr
        .request_queue
        .as_ref()
        .map(|lit| check_queue(lit, "request_queue", errors));
    let response_queue = attr
        .response_queue
        .as_ref()
        .map(|lit| check_queue(lit, "response_queue", errors));
    let subscription = attr
        .subscription
        .as_ref()
        .map(|lit| check_name(lit, "subscription", errors));
    let concurrency = attr
        .concurrency
        .as_ref()
        .and_then(|lit| match lit.base10_parse::<usize>() {
            Ok(0) | Err(_) => {
                errors.spanned(lit, "`concurrency` must be at least 1");
                None
            }
            Ok(n) => Some(n),
        });
    let timeout_ms = attr
        .timeout
        .as_ref()
        .and_then(|lit| match parse_millis(&lit.value()) {
            Ok(ms) => Some(ms),
            Err(problem) => {
                errors.spanned(lit, format_args!("`timeout` {problem}"));
                None
            }
        });

    let doc = Doc::from_attrs(&function.attrs);
    let documented = doc.arguments();
    let params = build_params(function, &documented, errors);
    let output = build_output(&signature.output, errors);

    let visible = VisibleParams::of(&params);
    let tools = build_tools(&attr, function, &doc, &visible, errors);

    let krate = attr
        .krate
        .unwrap_or_else(|| syn::parse_quote!(::tool_service));
    let topic = topic?;
    Some(Service {
        ident: signature.ident.clone(),
        id: id.unwrap_or_else(|| format!("{topic}-service")),
        topic,
        request_queue,
        response_queue,
        subscription,
        concurrency,
        timeout_ms,
        params,
        output,
        tools,
        krate,
    })
}

fn role_of(pat_type: &syn::PatType, errors: &mut Errors) -> Role {
    let mut role = None;
    for attr in &pat_type.attrs {
        let Some(name) = ROLE_ATTRS.iter().find(|name| attr.path().is_ident(name)) else {
            continue;
        };
        if !matches!(attr.meta, syn::Meta::Path(_)) {
            errors.spanned(attr, format_args!("`#[{name}]` takes no arguments"));
        }
        let this = match *name {
            "config" => Role::Config,
            "config_param" => Role::ConfigParam,
            "args" => Role::Args,
            "context" => Role::Context,
            _ => Role::Stream,
        };
        if role.is_some() {
            errors.spanned(attr, "a parameter can have only one of `#[config]`, `#[config_param]`, `#[args]`, `#[context]`, `#[stream]`");
        } else {
            role = Some(this);
        }
    }
    role.unwrap_or(Role::Argument)
}

fn build_params(
    function: &ItemFn,
    documented: &[crate::doc::DocArgument],
    errors: &mut Errors,
) -> Vec<Param> {
    let mut params = Vec::new();
    let mut seen: [Option<Span>; 4] = [None; 4];
    for input in &function.sig.inputs {
        let pat_type = match input {
            FnArg::Receiver(receiver) => {
                errors.spanned(
                    receiver,
                    "`#[tool_service]` functions cannot take `self`; make it a free function and pass state through config or a static",
                );
                continue;
            }
            FnArg::Typed(pat_type) => pat_type,
        };
        let role = role_of(pat_type, errors);
        let once = match role {
            Role::Config => Some((0, "#[config]", "whole-config")),
            Role::Args => Some((1, "#[args]", "whole-arguments")),
            Role::Context => Some((2, "#[context]", "context")),
            Role::Stream => Some((3, "#[stream]", "stream")),
            _ => None,
        };
        if let Some((slot, attr, what)) = once {
            if seen[slot].is_some() {
                errors.spanned(
                    pat_type,
                    format_args!("only one {what} parameter is allowed; remove this second `{attr}` parameter"),
                );
                continue;
            }
            seen[slot] = Some(pat_type.span());
        }
        let ty = (*pat_type.ty).clone();
        let by_ref = matches!(ty, Type::Reference(_));
        let named = matches!(role, Role::Argument | Role::ConfigParam);
        let mut name = None;
        if named {
            match &*pat_type.pat {
                Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
                    name = Some(ident.ident.clone())
                }
                other => errors.spanned(
                    other,
                    "name this parameter with a plain identifier: it becomes the name on the wire",
                ),
            }
            if by_ref {
                errors.spanned(
                    &ty,
                    "argument and config parameters are decoded into owned values; use an owned type (e.g. `String` instead of `&str`)",
                );
            }
            if let Type::ImplTrait(_) = ty {
                errors.spanned(
                    &ty,
                    "argument and config parameters need a concrete type, not `impl Trait`",
                );
            }
        }
        let description = match (&role, &name) {
            (Role::Argument, Some(ident)) => {
                let wire = ident.unraw().to_string();
                match documented.iter().find(|entry| entry.name == wire) {
                    Some(entry) if !entry.description.is_empty() => Some(entry.description.clone()),
                    _ => {
                        errors.spanned(
                            ident,
                            format_args!(
                                "argument `{wire}` is not documented; the LLM needs its description: add `/// * `{wire}` - what it is` under a `/// # Arguments` heading in the function's doc comment"
                            ),
                        );
                        None
                    }
                }
            }
            _ => None,
        };
        params.push(Param {
            role,
            name,
            ty,
            by_ref: by_ref && !named,
            description,
        });
    }
    let names: BTreeSet<String> = function
        .sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(pat_type) => match &*pat_type.pat {
                Pat::Ident(ident) => Some(ident.ident.unraw().to_string()),
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .collect();
    for entry in documented {
        if !names.contains(&entry.name) {
            errors.at(
                entry.span,
                format_args!("the `# Arguments` section documents `{}`, which is not a parameter of this function", entry.name),
            );
        }
    }
    params
}

fn build_output(output: &syn::ReturnType, errors: &mut Errors) -> Output {
    let ty = match output {
        syn::ReturnType::Default => return Output::Value(None),
        syn::ReturnType::Type(_, ty) => &**ty,
    };
    match ty {
        Type::ImplTrait(_)
        | Type::TraitObject(_)
        | Type::Infer(_)
        | Type::Never(_)
        | Type::BareFn(_)
        | Type::Ptr(_) => {
            errors.spanned(
                ty,
                "unsupported return type: return a `String`, a value that implements `serde::Serialize`, or `Result<T, E>` of those with `E: Display`",
            );
            Output::Value(None)
        }
        _ if is_named(ty, "Result") => Output::Result {
            ok: first_type_argument(ty).cloned(),
            span: ty.span(),
        },
        _ => Output::Value(Some(ty.clone())),
    }
}

fn build_tools(
    attr: &ServiceAttr,
    function: &ItemFn,
    doc: &Doc,
    visible: &VisibleParams,
    errors: &mut Errors,
) -> Vec<Tool> {
    let has_whole_args = visible.has_whole_args;
    let plain_arguments = &visible.plain_arguments;
    let summary = doc.summary();
    let default_name = kebab_case(&function.sig.ident);
    if attr.tools.is_empty() {
        if summary.is_none() {
            errors.spanned(
                &function.sig.ident,
                "the tool needs a description for the LLM: add a `///` doc comment to the function, or `tool(description = \"…\")`",
            );
        }
        let tool = Tool {
            name: default_name,
            description: summary.unwrap_or_default(),
            config: Vec::new(),
            arguments: Vec::new(),
        };
        check_preset(&tool, attr_span(), visible, errors);
        return vec![tool];
    }
    let mut names = BTreeSet::new();
    let mut tools = Vec::new();
    for preset in &attr.tools {
        let name = match &preset.name {
            Some(lit) => {
                let name = lit.value();
                if name.is_empty()
                    || !name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
                {
                    errors.spanned(
                        lit,
                        "tool names use letters, digits, `-` and `_`, e.g. `tell-joke`",
                    );
                }
                if !names.insert(name.clone()) {
                    errors.spanned(lit, format_args!("duplicate tool name `{name}`"));
                }
                name
            }
            None if attr.tools.len() == 1 => default_name.clone(),
            None => {
                errors.at(
                    preset.span,
                    "with several tools, give each a `name = \"…\"`",
                );
                continue;
            }
        };
        let description = match (&preset.description, &summary) {
            (Some(lit), _) if lit.value().trim().is_empty() => {
                errors.spanned(lit, "the tool description must not be empty");
                String::new()
            }
            (Some(lit), _) => lit.value(),
            (None, Some(summary)) => summary.clone(),
            (None, None) => {
                errors.at(
                    preset.span,
                    "the tool needs a description for the LLM: add `description = \"…\"` or a `///` doc comment to the function",
                );
                String::new()
            }
        };
        let mut keys = BTreeSet::new();
        for entry in &preset.config {
            if !keys.insert(entry.key.clone()) {
                errors.at(
                    entry.key_span,
                    format_args!("config param `{}` is set twice in this tool", entry.key),
                );
            }
        }
        let mut argument_names = BTreeSet::new();
        for entry in &preset.arguments {
            if !argument_names.insert(entry.name.clone()) {
                errors.at(
                    entry.span,
                    format_args!("argument `{}` is described twice in this tool", entry.name),
                );
            } else if entry.description.value().trim().is_empty() {
                errors.spanned(
                    &entry.description,
                    "an argument description must not be empty",
                );
            }
        }
        if !has_whole_args {
            for entry in &preset.arguments {
                if !plain_arguments.contains(&entry.name) {
                    errors.at(
                        entry.span,
                        format_args!(
                            "`{}` is not an argument of this service; expected one of {}",
                            entry.name,
                            quoted_list(plain_arguments)
                        ),
                    );
                }
            }
        }
        let tool = Tool {
            name,
            description,
            config: preset.config.clone(),
            arguments: preset.arguments.clone(),
        };
        check_preset(&tool, preset.span, visible, errors);
        tools.push(tool);
    }
    tools
}

/// What the macro can see of the config params and arguments.
struct VisibleParams {
    has_whole_config: bool,
    has_whole_args: bool,
    config_names: Vec<String>,
    required_config: Vec<String>,
    plain_arguments: Vec<String>,
}

impl VisibleParams {
    fn of(params: &[Param]) -> Self {
        let names = |role: fn(&Param) -> bool| -> Vec<String> {
            params
                .iter()
                .filter(|param| role(param))
                .filter_map(|param| param.name.as_ref().map(|ident| ident.unraw().to_string()))
                .collect()
        };
        Self {
            has_whole_config: params
                .iter()
                .any(|param| matches!(param.role, Role::Config)),
            has_whole_args: params.iter().any(|param| matches!(param.role, Role::Args)),
            config_names: names(|param| matches!(param.role, Role::ConfigParam)),
            required_config: names(|param| {
                matches!(param.role, Role::ConfigParam) && !is_named(&param.ty, "Option")
            }),
            plain_arguments: names(|param| matches!(param.role, Role::Argument)),
        }
    }
}

fn quoted_list(names: &[String]) -> String {
    if names.is_empty() {
        return String::from("none (this service takes no plain arguments)");
    }
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn attr_span() -> Span {
    Span::call_site()
}

/// Checks a preset against the config params the macro can see. With a whole
/// config struct, its fields are only known at run time: the registry checks
/// them when descriptors are emitted.
fn check_preset(tool: &Tool, span: Span, visible: &VisibleParams, errors: &mut Errors) {
    if visible.has_whole_config {
        return;
    }
    let known = &visible.config_names;
    for entry in &tool.config {
        if !known.contains(&entry.key) {
            let hint = if known.is_empty() {
                String::from("this service takes no config; add a `#[config_param]` or `#[config]` parameter")
            } else {
                format!(
                    "expected one of {}",
                    known
                        .iter()
                        .map(|name| format!("`{name}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            errors.at(
                entry.key_span,
                format_args!(
                    "`{}` is not a config param of this service; {hint}",
                    entry.key
                ),
            );
        }
    }
    for name in &visible.required_config {
        if !tool.config.iter().any(|entry| &entry.key == name) {
            errors.at(
                span,
                format_args!(
                    "tool `{}` does not set required config param `{name}`; add `config({name} = …)` or make the parameter an `Option`",
                    tool.name
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_millis;

    #[test]
    fn timeouts_are_a_number_and_a_unit() {
        assert_eq!(parse_millis("250ms"), Ok(250));
        assert_eq!(parse_millis("30s"), Ok(30_000));
        assert_eq!(parse_millis("5m"), Ok(300_000));
        assert_eq!(parse_millis("1h"), Ok(3_600_000));
        for bad in ["", "30", "s", "1.5s", "30 s", "-1s", "30sec", "ms"] {
            assert!(parse_millis(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(parse_millis("0s"), Err("must be longer than zero"));
        assert_eq!(parse_millis("99999999999999999h"), Err("is too long"));
    }
}
