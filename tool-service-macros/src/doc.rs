//! Reading the function's doc comment: the tool description (first paragraph)
//! and argument descriptions (the `# Arguments` section, rustdoc's convention).

use proc_macro2::Span;
use syn::spanned::Spanned;

/// The doc comment of an item, line by line.
pub(crate) struct Doc {
    lines: Vec<(String, Span)>,
}

/// One documented argument.
pub(crate) struct DocArgument {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) span: Span,
}

impl Doc {
    pub(crate) fn from_attrs(attrs: &[syn::Attribute]) -> Self {
        let mut lines = Vec::new();
        for attr in attrs {
            if !attr.path().is_ident("doc") {
                continue;
            }
            if let syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(text),
                        ..
                    }),
                ..
            }) = &attr.meta
            {
                for line in text.value().lines() {
                    let line = line.strip_prefix(' ').unwrap_or(line);
                    lines.push((line.trim_end().to_owned(), attr.span()));
                }
            }
        }
        Self { lines }
    }

    /// The first paragraph, joined into one line; `None` when there is none.
    pub(crate) fn summary(&self) -> Option<String> {
        let text = self
            .lines
            .iter()
            .map(|(line, _)| line.trim())
            .skip_while(|line| line.is_empty())
            .take_while(|line| !line.is_empty() && !line.starts_with('#'))
            .collect::<Vec<_>>()
            .join(" ");
        (!text.is_empty()).then_some(text)
    }

    /// The entries of the `# Arguments` section.
    pub(crate) fn arguments(&self) -> Vec<DocArgument> {
        let mut entries: Vec<DocArgument> = Vec::new();
        let mut in_section = false;
        for (line, span) in &self.lines {
            let trimmed = line.trim();
            if let Some(heading) = trimmed.strip_prefix('#') {
                let title = heading.trim_start_matches('#').trim().to_ascii_lowercase();
                in_section = matches!(title.as_str(), "arguments" | "parameters" | "args");
                continue;
            }
            if !in_section || trimmed.is_empty() {
                continue;
            }
            if let Some(item) = trimmed
                .strip_prefix("* ")
                .or_else(|| trimmed.strip_prefix("- "))
            {
                if let Some((name, description)) = split_item(item) {
                    entries.push(DocArgument {
                        name,
                        description,
                        span: *span,
                    });
                    continue;
                }
            }
            // A continuation line of the previous entry.
            if let Some(last) = entries.last_mut() {
                if !last.description.is_empty() {
                    last.description.push(' ');
                }
                last.description.push_str(trimmed);
            }
        }
        entries
    }
}

/// Splits "`name` - description" (also `:` or `—` as separator, backticks
/// optional) into its parts.
fn split_item(item: &str) -> Option<(String, String)> {
    let (name, rest) = if let Some(quoted) = item.strip_prefix('`') {
        let end = quoted.find('`')?;
        (&quoted[..end], &quoted[end + 1..])
    } else {
        let end = item.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
        (&item[..end], &item[end..])
    };
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let rest = rest.trim_start();
    let description = rest
        .strip_prefix("--")
        .or_else(|| rest.strip_prefix('-'))
        .or_else(|| rest.strip_prefix('—'))
        .or_else(|| rest.strip_prefix('–'))
        .or_else(|| rest.strip_prefix(':'))
        .unwrap_or(rest);
    Some((name.to_owned(), description.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Doc {
        let attrs: Vec<syn::Attribute> = text
            .lines()
            .map(|line| {
                let line = format!(" {line}");
                syn::parse_quote!(#[doc = #line])
            })
            .collect();
        Doc::from_attrs(&attrs)
    }

    #[test]
    fn summary_is_the_first_paragraph() {
        let doc = doc("Tell a joke\non a given topic.\n\nMore detail.\n# Arguments");
        assert_eq!(
            doc.summary().as_deref(),
            Some("Tell a joke on a given topic.")
        );
        assert_eq!(Doc::from_attrs(&[]).summary(), None);
    }

    #[test]
    fn arguments_follow_rustdoc_convention() {
        let doc = doc(
            "Search.\n\n# Arguments\n\n* `query` - What to look for,\n  in plain words.\n- limit: How many hits.\n* `ratio` — A share.\n\n# Errors\n* `x` - not an argument",
        );
        let entries: Vec<(String, String)> = doc
            .arguments()
            .into_iter()
            .map(|entry| (entry.name, entry.description))
            .collect();
        assert_eq!(
            entries,
            [
                ("query".into(), "What to look for, in plain words.".into()),
                ("limit".into(), "How many hits.".into()),
                ("ratio".into(), "A share.".into()),
            ]
        );
    }
}
