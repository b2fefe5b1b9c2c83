//! The checked model of one annotated function: its parameters by what they
//! receive (the config and the LLM arguments as two sides, each with its
//! whole-struct and single parameters; the context and stream slots), the
//! service's names and topics, and its tool presets. Expansion only ever sees
//! a model that passed every check.
//!
//! This file holds the model's types and `build`, which runs the checks; each
//! check lives beside what it checks: [`names`] (Pulsar names, queues,
//! scopes), [`params`] (parameter roles), [`output`] (the return type),
//! [`presets`] (the tools), with [`shape`] reading types by name.

mod names;
mod output;
pub(crate) mod params;
mod presets;
pub(crate) mod shape;

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::{Ident, ItemFn, Type};

use crate::attr::{ArgumentEntry, ConfigEntry, ServiceAttr};
use crate::bounds::ArgBounds;
use crate::ctxt::Errors;
use crate::doc::Doc;
use crate::duration::parse_millis;

use self::names::{check_name, check_queue, check_scopes};
use self::output::build_output;
use self::params::build_params;
use self::presets::build_tools;
use self::shape::is_named;

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
    /// MCP's title, for people.
    pub(crate) title: Option<String>,
    pub(crate) description: String,
    /// MCP's hints: the tool's own over its service's.
    pub(crate) hints: crate::annotations::Hints,
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
    /// A plain `fn`: run on the blocking pool.
    pub(crate) blocking: bool,
    pub(crate) params: Params,
    pub(crate) output: Output,
    pub(crate) tools: Vec<Tool>,
    pub(crate) krate: syn::Path,
}

/// Builds the model, recording every problem in `errors`.
pub(crate) fn build(attr: ServiceAttr, function: &ItemFn, errors: &mut Errors) -> Option<Service> {
    let signature = &function.sig;
    if let Some(constness) = &signature.constness {
        errors.spanned(
            constness,
            "`#[tool_service]` functions cannot be `const`: a tool runs when it is called; remove `const`",
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
        blocking: signature.asyncness.is_none(),
        params,
        output,
        tools,
        krate,
    })
}
