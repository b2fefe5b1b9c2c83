//! The tool presets: each `tool(…)` of the attribute (or the one default
//! tool named after the function) with its name, description, config and
//! argument descriptions checked against the function's parameters that the
//! macro can see.

use std::collections::BTreeSet;

use proc_macro2::Span;
use syn::{ItemFn, LitStr};

use crate::annotations::{self, Annotations, Hints};
use crate::attr::{ServiceAttr, ToolAttr};
use crate::ctxt::{code_list, did_you_mean, Errors};
use crate::doc::Doc;
use crate::key::written;

use super::names::kebab_case;
use super::{Params, Side, Tool};

/// The tools the service offers, checked.
pub(super) fn build_tools(
    attr: &ServiceAttr,
    function: &ItemFn,
    doc: &Doc,
    params: &Params,
    errors: &mut Errors,
) -> Vec<Tool> {
    let summary = doc.summary();
    let default_name = kebab_case(&function.sig.ident);
    if attr.tools.is_empty() {
        let mut tool = default_tool(function, default_name, summary, errors);
        tool.hints = annotations::merge(&attr.annotations, &Annotations::default(), errors);
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
            title: preset.title.as_ref().map(LitStr::value),
            description,
            hints: annotations::merge(&attr.annotations, &preset.annotations, errors),
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
        title: None,
        description: summary.unwrap_or_default(),
        hints: Hints::default(),
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
    use proc_macro2::TokenStream;
    use quote::quote;
    use syn::parse_quote;

    use super::*;
    use crate::attr;
    use crate::model::params::build_params;

    /// The tools `#[tool_service(attr)]` on `function` offers, and every
    /// message recorded on the way.
    fn offered(attr: TokenStream, function: ItemFn) -> (Vec<Tool>, Vec<String>) {
        let mut errors = Errors::default();
        let attr = attr::parse(attr, &mut errors);
        let doc = Doc::from_attrs(&function.attrs);
        let params = build_params(&function, &doc.arguments(), &mut errors);
        let tools = build_tools(&attr, &function, &doc, &params, &mut errors);
        (tools, errors.messages())
    }

    /// Each tool's name and description.
    fn named(tools: &[Tool]) -> Vec<(&str, &str)> {
        tools
            .iter()
            .map(|tool| (tool.name.as_str(), tool.description.as_str()))
            .collect()
    }

    fn config_keys(tool: &Tool) -> Vec<&str> {
        tool.config.iter().map(|entry| entry.key.as_str()).collect()
    }

    #[test]
    fn without_presets_one_tool_is_named_and_described_after_the_function() {
        let (tools, messages) = offered(
            quote!(topic = "joke"),
            parse_quote! {
                /// Tell a joke
                /// on a topic.
                ///
                /// # Arguments
                /// * `topic` - What the joke is about.
                async fn tell_joke(topic: String) -> String {}
            },
        );
        assert_eq!(messages, Vec::<String>::new());
        assert_eq!(named(&tools), [("tell-joke", "Tell a joke on a topic.")]);
        let tool = &tools[0];
        assert!(tool.config.is_empty() && tool.arguments.is_empty());
        assert!(tool.group.is_empty() && tool.applicable_states.is_empty());
        assert_eq!(tool.state, None);
    }

    #[test]
    fn a_tool_needs_a_description() {
        let (tools, messages) = offered(
            quote!(topic = "joke"),
            parse_quote!(
                async fn tell_joke() {}
            ),
        );
        assert_eq!(
            messages,
            ["the tool needs a description for the LLM: add a `///` doc comment to the function, or `tool(description = \"…\")`"]
        );
        assert_eq!(named(&tools), [("tell-joke", "")]);

        let (_, messages) = offered(
            quote!(
                topic = "joke",
                tool(name = "a", description = " "),
                tool(name = "b")
            ),
            parse_quote!(
                async fn tell_joke() {}
            ),
        );
        assert_eq!(
            messages,
            [
                "the tool description must not be empty",
                "the tool needs a description for the LLM: add `description = \"…\"` or a `///` doc comment to the function",
            ]
        );
    }

    #[test]
    fn presets_carry_their_own_settings_over_the_defaults() {
        let (tools, messages) = offered(
            quote!(
                topic = "joke",
                tool(
                    name = "pun",
                    description = "Tell a pun.",
                    config(style = "pun"),
                    arguments(topic = "What the pun plays on."),
                    group = ["fun"],
                    state = "told",
                    applicable_states = ["start", "told"],
                ),
                tool(name = "limerick", config(style = "limerick")),
            ),
            parse_quote! {
                /// Tell a joke.
                ///
                /// # Arguments
                /// * `topic` - What the joke is about.
                async fn tell_joke(#[config_param] style: String, topic: String) {}
            },
        );
        assert_eq!(messages, Vec::<String>::new());
        assert_eq!(
            named(&tools),
            [("pun", "Tell a pun."), ("limerick", "Tell a joke.")]
        );
        let (pun, limerick) = (&tools[0], &tools[1]);
        assert_eq!(config_keys(pun), ["style"]);
        assert_eq!(pun.arguments[0].name, "topic");
        assert_eq!(pun.group, ["fun"]);
        assert_eq!(pun.state.as_deref(), Some("told"));
        assert_eq!(pun.applicable_states, ["start", "told"]);
        assert_eq!(config_keys(limerick), ["style"]);
        assert!(limerick.group.is_empty() && limerick.state.is_none());
    }

    #[test]
    fn the_only_preset_may_take_the_function_name() {
        let (tools, messages) = offered(
            quote!(topic = "joke", tool(description = "Tell a pun.")),
            parse_quote!(
                async fn tell_joke() {}
            ),
        );
        assert_eq!(messages, Vec::<String>::new());
        assert_eq!(named(&tools), [("tell-joke", "Tell a pun.")]);
    }

    #[test]
    fn tool_names_are_valid_distinct_and_given_for_several_tools() {
        let (tools, messages) = offered(
            quote!(
                topic = "joke",
                tool(name = "tell joke"),
                tool(name = ""),
                tool(name = "pun"),
                tool(name = "pun"),
                tool(description = "Nameless."),
            ),
            parse_quote!(
                /// Tell a joke.
                async fn tell_joke() {}
            ),
        );
        let invalid = "tool names use letters, digits, `-` and `_`, e.g. `tell-joke`";
        assert_eq!(
            messages,
            [
                invalid,
                invalid,
                "duplicate tool name `pun`",
                "with several tools, give each a `name = \"…\"`",
            ]
        );
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        assert_eq!(names, ["tell joke", "", "pun", "pun"]);
    }

    #[test]
    fn entries_are_given_once_and_descriptions_are_not_empty() {
        let (_, messages) = offered(
            quote!(
                topic = "joke",
                tool(
                    config(style = "pun", style = "limerick"),
                    arguments(topic = "One.", topic = "Two.", length = " "),
                ),
            ),
            parse_quote! {
                /// Tell a joke.
                ///
                /// # Arguments
                /// * `topic` - What the joke is about.
                /// * `length` - How long.
                async fn tell_joke(#[config_param] style: String, topic: String, length: u32) {}
            },
        );
        assert_eq!(
            messages,
            [
                "config param `style` is set twice in this tool",
                "argument `topic` is described twice in this tool",
                "an argument description must not be empty",
            ]
        );
    }

    #[test]
    fn described_arguments_are_plain_arguments_unless_an_args_struct_takes_them() {
        let function: ItemFn = parse_quote! {
            /// Tell a joke.
            ///
            /// # Arguments
            /// * `topic` - What the joke is about.
            async fn tell_joke(topic: String) {}
        };
        let (_, messages) = offered(
            quote!(topic = "joke", tool(arguments(topc = "A typo."))),
            function,
        );
        assert_eq!(
            messages,
            ["`topc` is not an argument of this service; expected one of `topic`; did you mean `topic`?"]
        );

        let (_, messages) = offered(
            quote!(topic = "joke", tool(arguments(topic = "None taken."))),
            parse_quote!(
                /// Tell a joke.
                async fn tell_joke() {}
            ),
        );
        assert_eq!(
            messages,
            ["`topic` is not an argument of this service; expected one of none (this service takes no plain arguments)"]
        );

        let (_, messages) = offered(
            quote!(
                topic = "joke",
                tool(arguments(anything = "Checked at run time."))
            ),
            parse_quote!(
                /// Tell a joke.
                async fn tell_joke(#[args] arguments: Arguments) {}
            ),
        );
        assert_eq!(messages, Vec::<String>::new());
    }

    #[test]
    fn preset_config_matches_the_config_params() {
        let (_, messages) = offered(
            quote!(
                topic = "joke",
                tool(name = "pun", config(colour = "red", "max-length" = 80))
            ),
            parse_quote!(
                /// Tell a joke.
                async fn tell_joke(
                    #[config_param] color: Option<String>,
                    #[config_param] max_length: u32,
                    #[config_param] r#type: String,
                ) {
                }
            ),
        );
        assert_eq!(
            messages,
            [
                "`colour` is not a config param of this service; expected one of `color`, `max_length`, `type`; did you mean `color`?",
                "`max-length` is not a config param of this service; expected one of `color`, `max_length`, `type`; did you mean `max_length`?",
                "tool `pun` does not set required config param `max_length`; add `config(max_length = …)` or make the parameter an `Option`",
                "tool `pun` does not set required config param `type`; add `config(type = …)` or make the parameter an `Option`",
            ]
        );
    }

    #[test]
    fn the_default_tool_sets_no_config_so_every_config_param_is_optional() {
        let (_, messages) = offered(
            quote!(topic = "joke"),
            parse_quote!(
                /// Tell a joke.
                async fn tell_joke(
                    #[config_param] style: String,
                    #[config_param] length: Option<u32>,
                ) {
                }
            ),
        );
        assert_eq!(
            messages,
            ["tool `tell-joke` does not set required config param `style`; add `config(style = …)` or make the parameter an `Option`"]
        );
    }

    #[test]
    fn preset_config_without_config_params_or_with_a_config_struct() {
        let (_, messages) = offered(
            quote!(topic = "joke", tool(config(style = "pun"))),
            parse_quote!(
                /// Tell a joke.
                async fn tell_joke() {}
            ),
        );
        assert_eq!(
            messages,
            ["`style` is not a config param of this service; this service takes no config; add a `#[config_param]` or `#[config]` parameter"]
        );

        let (_, messages) = offered(
            quote!(topic = "joke", tool(config(anything = 1))),
            parse_quote!(
                /// Tell a joke.
                async fn tell_joke(#[config] config: Config) {}
            ),
        );
        assert_eq!(messages, Vec::<String>::new());
    }
}
