//! The function's parameters by role: the attribute on each (`#[config]`,
//! `#[config_param]`, `#[args]`, `#[context]`, `#[stream]`, `#[state]`, or
//! none for a plain LLM argument), near misses of them (`#[conifg]`), and
//! the shape each role requires. Expansion strips the same attributes, so
//! the list of roles is shared with it.

use std::collections::BTreeSet;

use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{FnArg, ItemFn, Pat, Type};

use crate::bounds::{self, ArgBounds};
use crate::ctxt::{code_list, nearest, Errors};
use crate::doc::DocArgument;

use super::{Params, Single, Slot, StateParam, Whole};

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

/// Every parameter by its role, each checked for the shape its role needs.
pub(super) fn build_params(
    function: &ItemFn,
    documented: &[DocArgument],
    errors: &mut Errors,
) -> Params {
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

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use super::*;
    use crate::doc::Doc;

    /// The role attributes as the messages list them.
    const ROLES: &str =
        "`#[config]`, `#[config_param]`, `#[args]`, `#[context]`, `#[stream]`, `#[state]`";

    /// The parameters of `function` (its `# Arguments` section read as the
    /// macro reads it), and every message their checks recorded.
    fn params(function: ItemFn) -> (Params, Vec<String>) {
        let documented = Doc::from_attrs(&function.attrs).arguments();
        let mut errors = Errors::default();
        let params = build_params(&function, &documented, &mut errors);
        (params, errors.messages())
    }

    fn text(ty: &Type) -> String {
        ty.to_token_stream().to_string()
    }

    #[test]
    fn near_misses_of_a_role_are_taken_for_it() {
        let cases: [(syn::Attribute, Option<&str>); 11] = [
            (parse_quote!(#[conifg]), Some("config")),
            (parse_quote!(#[contxt]), Some("context")),
            (parse_quote!(#[config_parm]), Some("config_param")),
            (parse_quote!(#[sate]), Some("state")),
            (parse_quote!(#[Stream]), Some("stream")),
            // The roles, `#[arg]` and Rust's own attributes are no misses.
            (parse_quote!(#[config]), None),
            (parse_quote!(#[arg(default = 1)]), None),
            (parse_quote!(#[cfg(test)]), None),
            (parse_quote!(#[allow(unused)]), None),
            // Far misses and paths belong to someone else.
            (parse_quote!(#[serde(default)]), None),
            (parse_quote!(#[my::config]), None),
        ];
        for (attr, role) in cases {
            assert_eq!(misspelt_role(&attr), role, "{}", attr.to_token_stream());
        }
    }

    #[test]
    fn each_role_puts_its_parameter_in_its_place() {
        let (params, messages) = params(parse_quote! {
            /// Answer.
            ///
            /// # Arguments
            /// * `question` - What to ask.
            /// * `type` - Which kind of answer.
            async fn answer(
                #[config] config: &Config,
                #[config_param] style: String,
                #[context] context: &Context,
                #[state] db: &Db,
                #[state] cache: std::sync::Arc<Cache>,
                #[stream] stream: Stream,
                question: String,
                r#type: Option<Kind>,
            ) {}
        });
        assert_eq!(messages, Vec::<String>::new());

        let config = params
            .config
            .whole
            .as_ref()
            .expect("the #[config] parameter");
        assert_eq!(
            (config.position, text(&config.ty), config.by_ref),
            (0, "Config".into(), true)
        );
        assert_eq!(params.config.names(), ["style"]);
        assert_eq!(params.config.singles[0].position, 1);

        let context = params.context.expect("the #[context] parameter");
        assert_eq!((context.position, context.by_ref), (2, true));
        let states: Vec<(usize, String, bool)> = params
            .states
            .iter()
            .map(|state| (state.position, text(&state.ty), state.by_ref))
            .collect();
        assert_eq!(states, [(3, "Db".into(), true), (4, "Cache".into(), false)]);
        let stream = params.stream.expect("the #[stream] parameter");
        assert_eq!((stream.position, stream.by_ref), (5, false));

        assert!(params.arguments.whole.is_none());
        let arguments: Vec<(usize, String, Option<String>)> = params
            .arguments
            .singles
            .iter()
            .map(|single| {
                (
                    single.position,
                    single.wire_name(),
                    single.description.clone(),
                )
            })
            .collect();
        assert_eq!(
            arguments,
            [
                (6, "question".into(), Some("What to ask.".into())),
                (7, "type".into(), Some("Which kind of answer.".into())),
            ]
        );
        assert_eq!(params.arguments.required_names(), ["question"]);
    }

    #[test]
    fn a_misspelt_role_is_reported_and_taken_for_the_role() {
        let (params, messages) = params(parse_quote! {
            async fn answer(#[conifg] config: Config) {}
        });
        assert_eq!(
            messages,
            [format!(
                "unknown parameter attribute `#[conifg]`; expected one of {ROLES}; did you mean `#[config]`?"
            )]
        );
        assert!(params.config.whole.is_some());
        assert!(params.arguments.singles.is_empty());
    }

    #[test]
    fn other_attributes_leave_a_plain_argument() {
        let (params, messages) = params(parse_quote! {
            /// # Arguments
            /// * `limit` - How many.
            async fn search(#[serde(default)] #[allow(unused)] limit: u32) {}
        });
        assert_eq!(messages, Vec::<String>::new());
        assert_eq!(params.arguments.names(), ["limit"]);
    }

    #[test]
    fn a_role_takes_no_arguments_and_a_parameter_one_role() {
        let (params, messages) = params(parse_quote! {
            async fn answer(#[config] #[args] both: Config, #[context(x)] context: &Context) {}
        });
        assert_eq!(
            messages,
            [
                format!("a parameter can have only one of {ROLES}"),
                String::from("`#[context]` takes no arguments"),
            ]
        );
        assert!(params.config.whole.is_some());
        assert!(params.arguments.whole.is_none());
        assert!(params.context.is_some());
    }

    #[test]
    fn a_second_parameter_of_a_one_only_role_is_reported() {
        let (params, messages) = params(parse_quote! {
            async fn answer(
                #[args] first: Args,
                #[context] context: Context,
                #[args] second: &Args,
                #[context] again: &Context,
            ) {}
        });
        assert_eq!(
            messages,
            [
                "only one whole-arguments parameter is allowed; remove this second `#[args]` parameter",
                "only one context parameter is allowed; remove this second `#[context]` parameter",
            ]
        );
        let arguments = params.arguments.whole.expect("the first #[args]");
        assert_eq!((arguments.position, arguments.by_ref), (0, false));
        let context = params.context.expect("the first #[context]");
        assert_eq!((context.position, context.by_ref), (1, false));
    }

    #[test]
    fn state_is_borrowed_or_held_in_an_arc() {
        let (params, messages) = params(parse_quote! {
            async fn answer(
                #[state] owned: Db,
                #[state] exclusive: &mut Db,
                #[state] boxed: Box<Db>,
                #[state] shared: Arc<Db>,
            ) {}
        });
        let wrong = "a `#[state]` parameter borrows a shared value or holds its `Arc`: write `&T` or `Arc<T>`, e.g. `#[state] db: &Db`";
        assert_eq!(messages, [wrong, wrong, wrong]);
        assert_eq!(params.states.len(), 1);
        assert_eq!(
            (params.states[0].position, params.states[0].by_ref),
            (3, false)
        );
    }

    #[test]
    fn single_parameters_are_named_and_owned() {
        let (params, messages) = params(parse_quote! {
            async fn answer(
                #[config_param] style: &str,
                #[config_param] shape: impl Shape,
                (a, b): (u8, u8),
                ref c: u8,
            ) {}
        });
        assert_eq!(
            messages,
            [
                "argument and config parameters are decoded into owned values; use an owned type (e.g. `String` instead of `&str`)",
                "argument and config parameters need a concrete type, not `impl Trait`",
                "name this parameter with a plain identifier: it becomes the name on the wire",
                "name this parameter with a plain identifier: it becomes the name on the wire",
            ]
        );
        assert_eq!(params.config.names(), ["style", "shape"]);
        assert!(params.arguments.singles.is_empty());
    }

    #[test]
    fn every_plain_argument_is_documented_and_every_documented_one_exists() {
        let (params, messages) = params(parse_quote! {
            /// # Arguments
            /// * `topic` - What the joke is about.
            /// * `length` -
            /// * `colour` - Not a parameter.
            async fn tell_joke(topic: String, length: u32, style: String) {}
        });
        assert_eq!(
            messages,
            [
                "argument `length` is not documented; the LLM needs its description: add `/// * `length` - what it is` under a `/// # Arguments` heading in the function's doc comment",
                "argument `style` is not documented; the LLM needs its description: add `/// * `style` - what it is` under a `/// # Arguments` heading in the function's doc comment",
                "the `# Arguments` section documents `colour`, which is not a parameter of this function",
            ]
        );
        let descriptions: Vec<Option<String>> = params
            .arguments
            .singles
            .iter()
            .map(|single| single.description.clone())
            .collect();
        assert_eq!(
            descriptions,
            [Some("What the joke is about.".into()), None, None]
        );
    }

    #[test]
    fn a_receiver_is_reported() {
        let (params, messages) = params(parse_quote! {
            async fn answer(&self) {}
        });
        assert_eq!(
            messages,
            ["`#[tool_service]` functions cannot take `self`; make it a free function and take shared values as `#[state]` parameters, e.g. `#[state] db: &Db`"]
        );
        assert!(params.arguments.singles.is_empty());
    }

    #[test]
    fn bounds_go_on_plain_arguments_only() {
        let (params, messages) = params(parse_quote! {
            /// # Arguments
            /// * `days` - How many days.
            async fn forecast(
                #[arg(range(min = 1, max = 30))] days: u32,
                #[config_param] #[arg(default = 7)] horizon: u32,
            ) {}
        });
        assert_eq!(
            messages,
            ["`#[arg(…)]` bounds a plain LLM argument (one without a role attribute); for an `#[args]` struct put schemars attributes on its fields"]
        );
        assert!(!params.arguments.singles[0].bounds.is_empty());
        assert!(params.config.singles[0].bounds.is_empty());
    }
}
