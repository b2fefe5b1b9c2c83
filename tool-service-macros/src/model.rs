//! The checked model of one annotated function: its parameters by what they
//! receive (the config and the LLM arguments as two sides, each with its
//! whole-struct and single parameters; the context and stream slots), the
//! service's names and topics, and its tool presets. Expansion only ever sees
//! a model that passed every check.

use std::collections::BTreeSet;

use proc_macro2::Span;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, LitStr, Pat, Type};

use crate::attr::{ArgumentEntry, ConfigEntry, ServiceAttr, ToolAttr};
use crate::bounds::{self, ArgBounds};
use crate::ctxt::{code_list, did_you_mean, nearest, Errors};
use crate::doc::{Doc, DocArgument};
use crate::duration::parse_millis;
use crate::key::written;
use crate::scope;

/// The parameter attributes that give a parameter its role.
pub(crate) const ROLE_ATTRS: [&str; 6] = [
    "config",
    "config_param",
    "args",
    "context",
    "stream",
    "state",
];

/// The attribute that bounds a plain argument and gives it a default:
/// `#[arg(range(min = 1, max = 30), default = 7)]`.
pub(crate) const ARG_ATTR: &str = "arg";

/// Attributes Rust itself takes on parameters: never a misspelt role.
const BUILTIN_PARAMETER_ATTRS: [&str; 7] = [
    "cfg", "cfg_attr", "allow", "warn", "deny", "forbid", "expect",
];

/// The role attribute that `attr` is a near miss of (`#[conifg]` for
/// `#[config]`), if it is one. Such an attribute is reported, taken for the
/// role it resembles, and removed from the function.
pub(crate) fn misspelt_role(attr: &syn::Attribute) -> Option<&'static str> {
    let name = attr.path().get_ident()?.to_string();
    if ROLE_ATTRS.contains(&name.as_str())
        || BUILTIN_PARAMETER_ATTRS.contains(&name.as_str())
        || name == ARG_ATTR
    {
        return None;
    }
    let near = nearest(&name, ROLE_ATTRS)?;
    ROLE_ATTRS.into_iter().find(|role| *role == near)
}

/// What a parameter's attribute (or the lack of one) asks it to receive.
enum Role {
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
    /// `#[state]`: a value shared by every request.
    State,
    /// No attribute: one LLM argument.
    Argument,
}

/// A parameter that receives a whole struct: `#[config]` or `#[args]`.
pub(crate) struct Whole {
    /// Where the parameter stands in the function's signature.
    pub(crate) position: usize,
    /// The type without a leading `&`.
    pub(crate) ty: Type,
    /// Whether the parameter takes the struct by reference.
    pub(crate) by_ref: bool,
}

/// A parameter that receives one named value: `#[config_param]` or a plain
/// LLM argument.
pub(crate) struct Single {
    /// Where the parameter stands in the function's signature.
    pub(crate) position: usize,
    /// The parameter's name as written (its field name when decoding).
    pub(crate) ident: Ident,
    /// The type as written, always an owned type.
    pub(crate) ty: Type,
    /// The description from the doc comment (plain LLM arguments only).
    pub(crate) description: Option<String>,
    /// What `#[arg(…)]` states (plain LLM arguments only).
    pub(crate) bounds: ArgBounds,
}

impl Single {
    /// The name on the wire: the parameter's name without `r#`.
    fn wire_name(&self) -> String {
        self.ident.unraw().to_string()
    }

    /// Whether the value may be left out (an `Option`).
    fn is_optional(&self) -> bool {
        is_named(&self.ty, "Option")
    }
}

/// The parameters that receive parts of one JSON object: the config, or the
/// LLM arguments. Either may hold a whole-struct parameter, single
/// parameters, both, or nothing.
#[derive(Default)]
pub(crate) struct Side {
    /// The whole-struct parameter (`#[config]` / `#[args]`).
    pub(crate) whole: Option<Whole>,
    /// The single parameters (`#[config_param]` / plain arguments), in the
    /// order written.
    pub(crate) singles: Vec<Single>,
}

impl Side {
    /// The wire names of the single parameters.
    fn names(&self) -> Vec<String> {
        self.singles.iter().map(Single::wire_name).collect()
    }

    /// The wire names of the single parameters that must be given.
    fn required_names(&self) -> Vec<String> {
        self.singles
            .iter()
            .filter(|single| !single.is_optional())
            .map(Single::wire_name)
            .collect()
    }
}

/// A parameter that receives a value the runtime supplies: `#[context]` or
/// `#[stream]`.
pub(crate) struct Slot {
    /// Where the parameter stands in the function's signature.
    pub(crate) position: usize,
    /// Whether the parameter takes the value by reference.
    pub(crate) by_ref: bool,
}

/// A parameter that receives a shared value: `#[state] db: &Db` or
/// `#[state] db: Arc<Db>`.
pub(crate) struct StateParam {
    /// Where the parameter stands in the function's signature.
    pub(crate) position: usize,
    /// The shared value's type (`Db`).
    pub(crate) ty: Type,
    /// Whether the parameter borrows the value (`&Db`) rather than sharing
    /// its `Arc`.
    pub(crate) by_ref: bool,
}

/// Every parameter of the function, by what it receives.
#[derive(Default)]
pub(crate) struct Params {
    /// What the config is decoded into.
    pub(crate) config: Side,
    /// What the LLM arguments are decoded into.
    pub(crate) arguments: Side,
    /// The `#[context]` parameter.
    pub(crate) context: Option<Slot>,
    /// The `#[stream]` parameter; with one, the service streams.
    pub(crate) stream: Option<Slot>,
    /// The `#[state]` parameters, in the order written.
    pub(crate) states: Vec<StateParam>,
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
    /// TrustGraph's `group`, `state` and `applicable-states` (empty lists
    /// and `None`: not set).
    pub(crate) group: Vec<String>,
    pub(crate) state: Option<String>,
    pub(crate) applicable_states: Vec<String>,
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
    /// Calls per replica: the count and the unit (`s`, `m` or `h`).
    pub(crate) rate: Option<(u32, char)>,
    /// The OAuth scopes a caller's token must carry (none: empty).
    pub(crate) scopes: Vec<String>,
    /// Whether the LLM's arguments decode without coercion.
    pub(crate) strict: bool,
    pub(crate) params: Params,
    pub(crate) output: Output,
    pub(crate) tools: Vec<Tool>,
    pub(crate) krate: syn::Path,
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

/// The texts of the `scopes` list, each checked as an OAuth scope and none
/// listed twice; each mistake is reported on its string.
fn check_scopes(list: &[LitStr], errors: &mut Errors) -> Vec<String> {
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
fn check_queue(lit: &LitStr, key: &str, errors: &mut Errors) -> String {
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

fn kebab_case(ident: &Ident) -> String {
    ident
        .unraw()
        .to_string()
        .trim_matches('_')
        .replace('_', "-")
}

pub(crate) fn is_named(ty: &Type, name: &str) -> bool {
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
pub(crate) fn first_type_argument(ty: &Type) -> Option<&Type> {
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
    let rate = attr
        .rate
        .as_ref()
        .and_then(|lit| match crate::duration::parse_rate(&lit.value()) {
            Ok(rate) => Some(rate),
            Err(problem) => {
                errors.spanned(lit, format_args!("`rate` {problem}"));
                None
            }
        });
    let scopes = check_scopes(attr.scopes.as_deref().unwrap_or_default(), errors);

    let doc = Doc::from_attrs(&function.attrs);
    let documented = doc.arguments();
    let params = build_params(function, &documented, errors);
    let output = build_output(&signature.output, errors);

    let tools = build_tools(&attr, function, &doc, &params, errors);

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
        rate,
        scopes,
        strict: attr.strict.is_some(),
        params,
        output,
        tools,
        krate,
    })
}

fn role_of(pat_type: &syn::PatType, errors: &mut Errors) -> Role {
    let mut role = None;
    for attr in &pat_type.attrs {
        let name = match ROLE_ATTRS
            .into_iter()
            .find(|name| attr.path().is_ident(name))
        {
            Some(name) => name,
            None => match misspelt_role(attr) {
                Some(near) => {
                    errors.spanned(
                        attr,
                        format_args!(
                            "unknown parameter attribute `#[{}]`; expected one of {}; did you mean `#[{near}]`?",
                            attr.path().to_token_stream(),
                            role_list()
                        ),
                    );
                    near
                }
                None => continue,
            },
        };
        if !matches!(attr.meta, syn::Meta::Path(_)) {
            errors.spanned(attr, format_args!("`#[{name}]` takes no arguments"));
        }
        let this = match name {
            "config" => Role::Config,
            "config_param" => Role::ConfigParam,
            "args" => Role::Args,
            "context" => Role::Context,
            "state" => Role::State,
            _ => Role::Stream,
        };
        if role.is_some() {
            errors.spanned(
                attr,
                format_args!("a parameter can have only one of {}", role_list()),
            );
        } else {
            role = Some(this);
        }
    }
    role.unwrap_or(Role::Argument)
}

/// The role attributes, as an error message lists them.
fn role_list() -> String {
    code_list(ROLE_ATTRS.iter().map(|name| format!("#[{name}]")))
}

/// Puts a parameter where only one may go (`what` names the place, `attr`
/// the attribute); a second such parameter is an error on it.
fn place_once<T>(
    place: &mut Option<T>,
    value: T,
    pat_type: &syn::PatType,
    what: &str,
    attr: &str,
    errors: &mut Errors,
) {
    if place.is_some() {
        errors.spanned(
            pat_type,
            format_args!(
                "only one {what} parameter is allowed; remove this second `{attr}` parameter"
            ),
        );
    } else {
        *place = Some(value);
    }
}

/// A whole-struct parameter.
fn whole(position: usize, pat_type: &syn::PatType) -> Whole {
    match &*pat_type.ty {
        Type::Reference(reference) => Whole {
            position,
            ty: (*reference.elem).clone(),
            by_ref: true,
        },
        ty => Whole {
            position,
            ty: ty.clone(),
            by_ref: false,
        },
    }
}

/// A state parameter: `&T` or `Arc<T>`. `None` when it is neither (the
/// error is recorded).
fn state(position: usize, pat_type: &syn::PatType, errors: &mut Errors) -> Option<StateParam> {
    match &*pat_type.ty {
        Type::Reference(reference) if reference.mutability.is_none() => Some(StateParam {
            position,
            ty: (*reference.elem).clone(),
            by_ref: true,
        }),
        ty => match arc_inner(ty) {
            Some(inner) => Some(StateParam {
                position,
                ty: inner.clone(),
                by_ref: false,
            }),
            None => {
                errors.spanned(
                    ty,
                    "a `#[state]` parameter borrows a shared value or holds its `Arc`: write `&T` or `Arc<T>`, e.g. `#[state] db: &Db`",
                );
                None
            }
        },
    }
}

/// `T` of a type written `Arc<T>` (by the last path segment's name).
fn arc_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else {
        return None;
    };
    let segment = path.path.segments.last()?;
    if segment.ident != "Arc" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(arguments) = &segment.arguments else {
        return None;
    };
    match arguments.args.iter().collect::<Vec<_>>().as_slice() {
        [syn::GenericArgument::Type(inner)] => Some(inner),
        _ => None,
    }
}

/// A context or stream parameter.
fn slot(position: usize, pat_type: &syn::PatType) -> Slot {
    Slot {
        position,
        by_ref: matches!(*pat_type.ty, Type::Reference(_)),
    }
}

/// A single parameter: named by a plain identifier (the name on the wire)
/// and of an owned, concrete type. `None` when it has no usable name (the
/// error is recorded).
fn single(position: usize, pat_type: &syn::PatType, errors: &mut Errors) -> Option<Single> {
    let ty = &*pat_type.ty;
    let ident = match &*pat_type.pat {
        Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
            Some(ident.ident.clone())
        }
        other => {
            errors.spanned(
                other,
                "name this parameter with a plain identifier: it becomes the name on the wire",
            );
            None
        }
    };
    if let Type::Reference(_) = ty {
        errors.spanned(
            ty,
            "argument and config parameters are decoded into owned values; use an owned type (e.g. `String` instead of `&str`)",
        );
    }
    if let Type::ImplTrait(_) = ty {
        errors.spanned(
            ty,
            "argument and config parameters need a concrete type, not `impl Trait`",
        );
    }
    Some(Single {
        position,
        ident: ident?,
        ty: ty.clone(),
        description: None,
        bounds: ArgBounds::default(),
    })
}

/// The description of a plain argument, from the `# Arguments` section.
fn describe(argument: &Single, documented: &[DocArgument], errors: &mut Errors) -> Option<String> {
    let wire = argument.wire_name();
    match documented.iter().find(|entry| entry.name == wire) {
        Some(entry) if !entry.description.is_empty() => Some(entry.description.clone()),
        _ => {
            errors.spanned(
                &argument.ident,
                format_args!(
                    "argument `{wire}` is not documented; the LLM needs its description: add `/// * `{wire}` - what it is` under a `/// # Arguments` heading in the function's doc comment"
                ),
            );
            None
        }
    }
}

fn build_params(function: &ItemFn, documented: &[DocArgument], errors: &mut Errors) -> Params {
    let mut params = Params::default();
    for (position, input) in function.sig.inputs.iter().enumerate() {
        let pat_type = match input {
            FnArg::Receiver(receiver) => {
                errors.spanned(
                    receiver,
                    "`#[tool_service]` functions cannot take `self`; make it a free function and take shared values as `#[state]` parameters, e.g. `#[state] db: &Db`",
                );
                continue;
            }
            FnArg::Typed(pat_type) => pat_type,
        };
        match role_of(pat_type, errors) {
            Role::Config => place_once(
                &mut params.config.whole,
                whole(position, pat_type),
                pat_type,
                "whole-config",
                "#[config]",
                errors,
            ),
            Role::Args => place_once(
                &mut params.arguments.whole,
                whole(position, pat_type),
                pat_type,
                "whole-arguments",
                "#[args]",
                errors,
            ),
            Role::Context => place_once(
                &mut params.context,
                slot(position, pat_type),
                pat_type,
                "context",
                "#[context]",
                errors,
            ),
            Role::Stream => place_once(
                &mut params.stream,
                slot(position, pat_type),
                pat_type,
                "stream",
                "#[stream]",
                errors,
            ),
            Role::State => {
                if let Some(state) = state(position, pat_type, errors) {
                    params.states.push(state);
                }
            }
            Role::ConfigParam => {
                if let Some(config_param) = single(position, pat_type, errors) {
                    params.config.singles.push(config_param);
                }
            }
            Role::Argument => {
                if let Some(mut argument) = single(position, pat_type, errors) {
                    argument.description = describe(&argument, documented, errors);
                    argument.bounds = bounds::parse(&pat_type.attrs, &argument.ty, errors);
                    params.arguments.singles.push(argument);
                }
                continue;
            }
        }
        if let Some(attr) = pat_type
            .attrs
            .iter()
            .find(|attr| attr.path().is_ident(ARG_ATTR))
        {
            errors.spanned(
                attr,
                "`#[arg(…)]` bounds a plain LLM argument (one without a role attribute); for an `#[args]` struct put schemars attributes on its fields",
            );
        }
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
    params: &Params,
    errors: &mut Errors,
) -> Vec<Tool> {
    let summary = doc.summary();
    let default_name = kebab_case(&function.sig.ident);
    if attr.tools.is_empty() {
        let tool = default_tool(function, default_name, summary, errors);
        check_preset(&tool, attr_span(), &params.config, errors);
        return vec![tool];
    }
    let mut names = BTreeSet::new();
    let mut tools = Vec::new();
    for preset in &attr.tools {
        let Some(name) = tool_name(preset, attr.tools.len(), &default_name, &mut names, errors)
        else {
            continue;
        };
        let description = tool_description(preset, summary.as_ref(), errors);
        check_entries_once(preset, errors);
        if params.arguments.whole.is_none() {
            check_described_arguments(preset, &params.arguments.names(), errors);
        }
        let tool = Tool {
            name,
            description,
            config: preset.config.clone(),
            arguments: preset.arguments.clone(),
            group: values(preset.group.as_deref()),
            state: preset.state.as_ref().map(LitStr::value),
            applicable_states: values(preset.applicable_states.as_deref()),
        };
        check_preset(&tool, preset.span, &params.config, errors);
        tools.push(tool);
    }
    tools
}

/// The one tool of an attribute without `tool(…)`: named after the
/// function, described by its doc comment's summary.
fn default_tool(
    function: &ItemFn,
    name: String,
    summary: Option<String>,
    errors: &mut Errors,
) -> Tool {
    if summary.is_none() {
        errors.spanned(
            &function.sig.ident,
            "the tool needs a description for the LLM: add a `///` doc comment to the function, or `tool(description = \"…\")`",
        );
    }
    Tool {
        name,
        description: summary.unwrap_or_default(),
        config: Vec::new(),
        arguments: Vec::new(),
        group: Vec::new(),
        state: None,
        applicable_states: Vec::new(),
    }
}

/// A `tool(…)`'s name: its `name`, valid and not taken by another (`names`),
/// else the function's when it is the only tool; `None` (and an error) for
/// one of several tools without a name.
fn tool_name(
    preset: &ToolAttr,
    presets: usize,
    default_name: &str,
    names: &mut BTreeSet<String>,
    errors: &mut Errors,
) -> Option<String> {
    match &preset.name {
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
            Some(name)
        }
        None if presets == 1 => Some(default_name.to_owned()),
        None => {
            errors.at(
                preset.span,
                "with several tools, give each a `name = \"…\"`",
            );
            None
        }
    }
}

/// A `tool(…)`'s description: its own, not empty, else the doc comment's
/// summary.
fn tool_description(preset: &ToolAttr, summary: Option<&String>, errors: &mut Errors) -> String {
    match (&preset.description, summary) {
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
    }
}

/// Each config param set once in a `tool(…)`, each argument described
/// once and not with empty text.
fn check_entries_once(preset: &ToolAttr, errors: &mut Errors) {
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
}

/// Every argument a `tool(…)` describes is one of the function's plain
/// arguments (checked only without an `#[args]` struct, whose fields are
/// known at run time).
fn check_described_arguments(preset: &ToolAttr, plain_arguments: &[String], errors: &mut Errors) {
    for entry in &preset.arguments {
        if !plain_arguments.contains(&entry.name) {
            errors.at(
                entry.span,
                format_args!(
                    "`{}` is not an argument of this service; expected one of {}{}",
                    entry.name,
                    argument_list(plain_arguments),
                    did_you_mean(&entry.name, plain_arguments)
                ),
            );
        }
    }
}

/// The texts of a list of string literals (none: empty).
fn values(list: Option<&[LitStr]>) -> Vec<String> {
    list.unwrap_or_default().iter().map(LitStr::value).collect()
}

/// The plain arguments, as an error message lists them.
fn argument_list(names: &[String]) -> String {
    if names.is_empty() {
        return String::from("none (this service takes no plain arguments)");
    }
    code_list(names)
}

fn attr_span() -> Span {
    Span::call_site()
}

/// Checks a preset against the config params the macro can see. With a whole
/// config struct, its fields are only known at run time: the registry checks
/// them when descriptors are emitted.
fn check_preset(tool: &Tool, span: Span, config: &Side, errors: &mut Errors) {
    if config.whole.is_some() {
        return;
    }
    let known = config.names();
    for entry in &tool.config {
        if !known.contains(&entry.key) {
            let hint = if known.is_empty() {
                String::from("this service takes no config; add a `#[config_param]` or `#[config]` parameter")
            } else {
                format!(
                    "expected one of {}{}",
                    code_list(&known),
                    did_you_mean(&entry.key, &known)
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
    for name in &config.required_names() {
        if !tool.config.iter().any(|entry| &entry.key == name) {
            errors.at(
                span,
                format_args!(
                    "tool `{}` does not set required config param `{name}`; add `config({} = …)` or make the parameter an `Option`",
                    tool.name,
                    written(name)
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scopes(texts: &[&str]) -> (Vec<String>, Vec<String>) {
        let list: Vec<LitStr> = texts
            .iter()
            .map(|text| LitStr::new(text, Span::call_site()))
            .collect();
        let mut errors = Errors::default();
        let checked = check_scopes(&list, &mut errors);
        let messages = match errors.finish() {
            Ok(()) => Vec::new(),
            Err(error) => error.into_iter().map(|error| error.to_string()).collect(),
        };
        (checked, messages)
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
}
