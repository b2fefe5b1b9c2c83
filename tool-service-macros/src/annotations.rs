//! MCP's tool annotations: `annotations(read_only, open_world = false)` on
//! the attribute (every tool of the service) or in a `tool(…)` (that tool,
//! over the service's), parsed, merged per tool and checked for hints that
//! contradict each other or that MCP ignores.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Expr, Lit};

use crate::ctxt::{code_list, nearest, Errors};

/// One hint of MCP's `ToolAnnotations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hint {
    ReadOnly,
    Destructive,
    Idempotent,
    OpenWorld,
}

impl Hint {
    const ALL: [Hint; 4] = [
        Hint::ReadOnly,
        Hint::Destructive,
        Hint::Idempotent,
        Hint::OpenWorld,
    ];

    /// The key as written in the attribute.
    fn key(self) -> &'static str {
        match self {
            Hint::ReadOnly => "read_only",
            Hint::Destructive => "destructive",
            Hint::Idempotent => "idempotent",
            Hint::OpenWorld => "open_world",
        }
    }

    /// The name MCP gives it.
    fn mcp(self) -> &'static str {
        match self {
            Hint::ReadOnly => "readOnlyHint",
            Hint::Destructive => "destructiveHint",
            Hint::Idempotent => "idempotentHint",
            Hint::OpenWorld => "openWorldHint",
        }
    }

    fn keys() -> [&'static str; 4] {
        Hint::ALL.map(Hint::key)
    }

    /// The hint a key names: its own key, MCP's name, or MCP's name in
    /// snake case (`read_only_hint`).
    fn named(name: &str) -> Option<(Hint, bool)> {
        Hint::ALL.into_iter().find_map(|hint| {
            if name == hint.key() {
                Some((hint, true))
            } else if name == hint.mcp() || name == format!("{}_hint", hint.key()) {
                Some((hint, false))
            } else {
                None
            }
        })
    }
}

/// One hint as written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Written {
    pub(crate) value: bool,
    pub(crate) span: Span,
}

/// The hints of one `annotations(…)`, each at most once.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Annotations {
    slots: [Option<Written>; 4],
}

impl Annotations {
    fn slot(&self, hint: Hint) -> Option<Written> {
        self.slots[hint as usize]
    }
}

/// The hints one tool is served with, checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hints {
    pub(crate) read_only: Option<bool>,
    pub(crate) destructive: Option<bool>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) open_world: Option<bool>,
}

/// Parses `annotations(read_only, destructive = false, …)` into `into`
/// (a second `annotations(…)` in the same place adds to the first; a hint
/// given twice is an error on the second).
pub(crate) fn parse(
    meta: &ParseNestedMeta,
    into: &mut Annotations,
    errors: &mut Errors,
) -> syn::Result<()> {
    if !meta.input.peek(syn::token::Paren) {
        errors.spanned(
            &meta.path,
            "`annotations` takes a list of MCP's hints, e.g. `annotations(read_only, open_world = false)`",
        );
        crate::attr::skip_value(meta)?;
        return Ok(());
    }
    meta.parse_nested_meta(|inner| {
        let name = crate::attr::path_text(&inner.path);
        let hint = match Hint::named(&name) {
            Some((hint, true)) => hint,
            Some((hint, false)) => {
                errors.spanned(
                    &inner.path,
                    format_args!(
                        "MCP's `{}` is written `{}` here, e.g. `annotations({})`",
                        hint.mcp(),
                        hint.key(),
                        hint.key()
                    ),
                );
                hint
            }
            None => {
                let advice = if name == "title" {
                    String::from(
                        "; a tool's title goes in its preset: `tool(title = \"Find notes\")`",
                    )
                } else {
                    nearest(&name, Hint::keys())
                        .map(|key| format!("; did you mean `{key}`?"))
                        .unwrap_or_default()
                };
                errors.spanned(
                    &inner.path,
                    format_args!(
                        "unknown hint `{name}` in `annotations(…)`; expected one of {}{advice}",
                        code_list(Hint::keys())
                    ),
                );
                crate::attr::skip_value(&inner)?;
                return Ok(());
            }
        };
        let value = if inner.input.peek(syn::Token![=]) {
            let expr: Expr = inner.value()?.parse()?;
            match crate::attr::ungroup(expr) {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Bool(flag),
                    ..
                }) => Some(flag.value),
                other => {
                    errors.spanned(
                        &other,
                        format_args!(
                            "`{key}` takes `true` or `false`; written alone, as `{key}`, it means `true`",
                            key = hint.key()
                        ),
                    );
                    None
                }
            }
        } else if inner.input.peek(syn::token::Paren) {
            errors.spanned(
                &inner.path,
                format_args!(
                    "`{key}` takes no list: write `{key}` or `{key} = false`",
                    key = hint.key()
                ),
            );
            crate::attr::skip_value(&inner)?;
            None
        } else {
            Some(true)
        };
        let slot = &mut into.slots[hint as usize];
        if slot.is_some() {
            errors.spanned(
                &inner.path,
                format_args!("duplicate hint `{}`; give it once", hint.key()),
            );
        } else if let Some(value) = value {
            *slot = Some(Written {
                value,
                span: inner.path.span(),
            });
        }
        Ok(())
    })
}

/// The hints a tool is served with: its own over its service's, checked.
///
/// A read-only tool neither destroys nor needs to say it is idempotent (MCP
/// reads `destructiveHint` and `idempotentHint` only of tools that write),
/// so either beside `read_only` is an error, unless the service wrote it
/// and the tool made itself read-only (the tool's word wins: the service's
/// write hints are left out).
pub(crate) fn merge(service: &Annotations, tool: &Annotations, errors: &mut Errors) -> Hints {
    // Each hint with the level it was written at: 0 the service, 1 the tool.
    let effective = |hint: Hint| -> Option<(Written, u8)> {
        tool.slot(hint)
            .map(|written| (written, 1))
            .or_else(|| service.slot(hint).map(|written| (written, 0)))
    };
    let read_only = effective(Hint::ReadOnly);
    let mut write_hint = |hint: Hint| -> Option<bool> {
        let (written, level) = effective(hint)?;
        match read_only {
            Some((read_only, read_only_level)) if read_only.value => {
                if level < read_only_level {
                    // The service's hint, for a tool that made itself
                    // read-only.
                    return None;
                }
                let message = match (hint, written.value) {
                    (Hint::Destructive, true) => String::from(
                        "a read-only tool cannot be destructive: remove `destructive`, or `read_only`",
                    ),
                    (Hint::Destructive, false) => String::from(
                        "`destructive = false` says nothing of a read-only tool (MCP reads it only of tools that write); remove it",
                    ),
                    _ => String::from(
                        "`idempotent` says nothing of a read-only tool (MCP reads it only of tools that write, and reading is idempotent); remove it",
                    ),
                };
                errors.at(written.span, message);
                None
            }
            _ => Some(written.value),
        }
    };
    let destructive = write_hint(Hint::Destructive);
    let idempotent = write_hint(Hint::Idempotent);
    Hints {
        read_only: read_only.map(|(written, _)| written.value),
        destructive,
        idempotent,
        open_world: effective(Hint::OpenWorld).map(|(written, _)| written.value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::TokenStream;
    use syn::parse::Parser;

    fn parsed(text: &str) -> (Annotations, Vec<String>) {
        let mut errors = Errors::default();
        let mut annotations = Annotations::default();
        let tokens: TokenStream = text.parse().unwrap();
        syn::meta::parser(|meta| parse(&meta, &mut annotations, &mut errors))
            .parse2(tokens)
            .unwrap();
        (annotations, errors.messages())
    }

    fn merged(service: &str, tool: &str) -> (Hints, Vec<String>) {
        let (service, mut messages) = parsed(service);
        let (tool, more) = parsed(tool);
        messages.extend(more);
        let mut errors = Errors::default();
        let hints = merge(&service, &tool, &mut errors);
        messages.extend(errors.messages());
        (hints, messages)
    }

    #[test]
    fn hints_are_read_bare_or_with_a_boolean() {
        let (hints, messages) = merged(
            "annotations(destructive = false, idempotent, open_world = false)",
            "",
        );
        assert!(messages.is_empty(), "{messages:?}");
        assert_eq!(
            hints,
            Hints {
                read_only: None,
                destructive: Some(false),
                idempotent: Some(true),
                open_world: Some(false),
            }
        );
    }

    #[test]
    fn a_tool_overrides_its_service_hint_by_hint() {
        let (hints, messages) = merged(
            "annotations(destructive, open_world = false)",
            "annotations(read_only)",
        );
        assert!(messages.is_empty(), "{messages:?}");
        assert_eq!(
            hints,
            Hints {
                read_only: Some(true),
                destructive: None,
                idempotent: None,
                open_world: Some(false),
            }
        );
        let (hints, _) = merged(
            "annotations(read_only)",
            "annotations(read_only = false, destructive)",
        );
        assert_eq!(
            (hints.read_only, hints.destructive),
            (Some(false), Some(true))
        );
    }

    #[test]
    fn contradictions_and_hints_mcp_ignores_are_errors() {
        let (_, messages) = merged("annotations(read_only, destructive)", "");
        assert_eq!(
            messages,
            ["a read-only tool cannot be destructive: remove `destructive`, or `read_only`"]
        );
        let (_, messages) = merged("annotations(read_only)", "annotations(idempotent)");
        assert!(messages[0].starts_with("`idempotent` says nothing of a read-only tool"));
        let (_, messages) = merged("", "annotations(read_only, destructive = false)");
        assert!(messages[0].starts_with("`destructive = false` says nothing"));
    }

    #[test]
    fn misspellings_and_mcp_names_are_named() {
        let (annotations, messages) = parsed(
            "annotations(readOnlyHint, open_world_hint = false, idempotnt, title = \"x\", destructive = 1, read_only)",
        );
        assert_eq!(
            messages,
            [
                "MCP's `readOnlyHint` is written `read_only` here, e.g. `annotations(read_only)`",
                "MCP's `openWorldHint` is written `open_world` here, e.g. `annotations(open_world)`",
                "unknown hint `idempotnt` in `annotations(…)`; expected one of `read_only`, `destructive`, `idempotent`, `open_world`; did you mean `idempotent`?",
                "unknown hint `title` in `annotations(…)`; expected one of `read_only`, `destructive`, `idempotent`, `open_world`; a tool's title goes in its preset: `tool(title = \"Find notes\")`",
                "`destructive` takes `true` or `false`; written alone, as `destructive`, it means `true`",
                "duplicate hint `read_only`; give it once",
            ]
        );
        assert_eq!(
            annotations
                .slot(Hint::ReadOnly)
                .map(|written| written.value),
            Some(true)
        );
        let (_, messages) = parsed("annotations");
        assert_eq!(
            messages,
            ["`annotations` takes a list of MCP's hints, e.g. `annotations(read_only, open_world = false)`"]
        );
    }
}
