//! What an argument's schema says, in words for the LLM: whether it may
//! be left out, its allowed values, item types, nested fields, defaults and
//! bounds, read from the [schema model](super).
//!
//! TrustGraph's agent puts only each argument's `name`, `type` and
//! `description` into its prompt, so the description is the only place
//! where what the decoder accepts can reach the model. Bounds are worded
//! with the [phrases](super::phrase) the refusals quote.

use serde_json::Value;

use super::{phrase, Additional, Field, Kind, Model, Variant};

/// The most characters [`prose`] adds to one argument's description.
pub(crate) const MAX_PROSE: usize = 1000;

/// How deep nested objects are described field by field.
const MAX_DEPTH: usize = 3;

/// Characters of a value's or a field's doc comment that are kept.
const MAX_DOC: usize = 120;

/// What the schema of a top-level argument adds to its description, as
/// sentences: whether it may be left out, its allowed values, item type,
/// fields, default and bounds. Empty when the type word says it all (a
/// required plain string, number or boolean). At most [`MAX_PROSE`]
/// characters; a longer text is cut at a clause and says so.
///
/// The same words are used at every depth: a nested field gets the clauses
/// a top-level argument gets as sentences.
pub(crate) fn prose(model: &Model, field: &Field) -> String {
    let mut clauses = Vec::new();
    if !field.required {
        clauses.push(String::from("optional"));
    }
    clauses.extend(facts(model, field.node, field.default.as_ref(), 0));
    let mut text = String::new();
    for clause in clauses {
        if !text.is_empty() {
            text.push(' ');
        }
        let mut chars = clause.chars();
        if let Some(first) = chars.next() {
            text.extend(first.to_uppercase());
            text.push_str(chars.as_str());
            text.push('.');
        }
    }
    bound(text, MAX_PROSE)
}

/// `description` with `prose` after it, as one text.
pub(crate) fn join(description: &str, prose: &str) -> String {
    let description = description.trim_end();
    match (description.is_empty(), prose.is_empty()) {
        (_, true) => description.to_owned(),
        (true, false) => prose.to_owned(),
        (false, false) if description.ends_with(['.', '!', '?']) => {
            format!("{description} {prose}")
        }
        (false, false) => format!("{description}. {prose}"),
    }
}

/// The clauses that describe a node beyond its type word; `default` is the
/// one its field states, if any.
fn facts(model: &Model, index: usize, default: Option<&Value>, depth: usize) -> Vec<String> {
    let node = model.node(index);
    let bounds = &node.bounds;
    let mut clauses = Vec::new();
    match &node.kind {
        Kind::Enum(variants) => clauses.push(format!("one of: {}", values(variants))),
        Kind::Array { items } => {
            if let Some(items) = items {
                clauses.push(list_of(model, *items, depth));
            }
            clauses.extend(phrase::items(bounds));
        }
        Kind::Object { fields, additional } => {
            if !fields.is_empty() {
                clauses.push(fields_clause(model, fields, depth));
            } else if let Additional::Values(values) = additional {
                clauses.push(format!(
                    "a map from names to {}",
                    plural(model.type_word(*values))
                ));
            }
        }
        Kind::Integer | Kind::Number => {
            clauses.extend(phrase::number_range(bounds));
            clauses.extend(phrase::multiple(bounds));
        }
        Kind::String => {
            clauses.extend(phrase::length(bounds));
            clauses.extend(phrase::pattern(bounds));
        }
        Kind::Any | Kind::Boolean | Kind::Union(_) => {}
    }
    // A default of `null` is what "optional" says already.
    if let Some(default) = default.or(node.default.as_ref()) {
        clauses.push(format!("default: {}", literal(default)));
    }
    clauses
}

/// `with fields: `a` (string, required): what it is; `b` (integer, optional)`.
fn fields_clause(model: &Model, fields: &[Field], depth: usize) -> String {
    if depth + 1 >= MAX_DEPTH {
        return format!("an object with fields {}", names(fields));
    }
    let described: Vec<String> = fields
        .iter()
        .map(|field| {
            let mut notes = vec![
                model.type_word(field.node).to_owned(),
                String::from(if field.required {
                    "required"
                } else {
                    "optional"
                }),
            ];
            notes.extend(facts(model, field.node, field.default.as_ref(), depth + 1));
            let mut text = format!("`{}` ({})", field.name, notes.join(", "));
            if let Some(doc) = field.description.as_deref().map(doc_text) {
                if !doc.is_empty() {
                    text.push_str(": ");
                    text.push_str(&doc);
                }
            }
            text
        })
        .collect();
    format!("an object with fields: {}", described.join("; "))
}

/// `a list of strings`, `a list of objects, each with fields: …`.
fn list_of(model: &Model, items: usize, depth: usize) -> String {
    let word = model.type_word(items);
    let item_facts: Vec<String> = facts(model, items, None, depth + 1)
        .into_iter()
        .map(|fact| match fact.strip_prefix("an object ") {
            Some(fields) => fields.to_owned(),
            None => fact,
        })
        .collect();
    if item_facts.is_empty() {
        return format!("a list of {}", plural(word));
    }
    format!("a list of {}, each {}", plural(word), item_facts.join(", "))
}

/// The values of an enumeration, each with its doc comment when it has
/// one: `` `keyword` (exact words), `semantic`, `hybrid` ``.
pub(crate) fn values(variants: &[Variant]) -> String {
    let listed: Vec<String> = variants
        .iter()
        .map(|variant| {
            let value = literal(&variant.value);
            match variant.doc.as_deref().map(doc_text) {
                Some(doc) if !doc.is_empty() => format!("{value} ({doc})"),
                _ => value,
            }
        })
        .collect();
    listed.join(", ")
}

/// A JSON value as the LLM should write it: strings in backticks, bare.
fn literal(value: &Value) -> String {
    match value {
        Value::String(text) => format!("`{text}`"),
        other => format!("`{other}`"),
    }
}

/// The plural noun of a type word.
fn plural(word: &str) -> &'static str {
    match word {
        "string" => "strings",
        "integer" => "integers",
        "number" => "numbers",
        "boolean" => "booleans",
        "array" => "lists",
        _ => "objects",
    }
}

/// The field names only: `` `a`, `b` ``.
fn names(fields: &[Field]) -> String {
    let names: Vec<String> = fields
        .iter()
        .map(|field| format!("`{}`", field.name))
        .collect();
    names.join(", ")
}

/// A doc comment as a clause: one line, no final period, at most
/// [`MAX_DOC`] characters.
fn doc_text(doc: &str) -> String {
    let line = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = line.trim_end_matches('.');
    match line.char_indices().nth(MAX_DOC) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// `text` cut to at most `max` characters at a clause boundary, saying so.
fn bound(text: String, max: usize) -> String {
    const CUT: &str = " … (cut; the decoder's error names what it expects)";
    if text.chars().count() <= max {
        return text;
    }
    let room = max - CUT.chars().count();
    let end = text
        .char_indices()
        .nth(room)
        .map_or(text.len(), |(at, _)| at);
    let head = &text[..end];
    let at = head.rfind(['.', ';', ',']).unwrap_or(head.len());
    format!("{}{CUT}", &head[..at])
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;

    fn prose_of<T: JsonSchema>() -> Vec<(String, String)> {
        let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
        let model = Model::of(schema.as_value());
        model
            .root_fields()
            .unwrap()
            .iter()
            .map(|field| (field.name.clone(), prose(&model, field)))
            .collect()
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, Default)]
    struct Defaulted {
        #[serde(default)]
        note: Option<String>,
        #[serde(default)]
        count: Option<u8>,
    }

    #[test]
    fn a_null_default_reads_as_optional_only() {
        assert_eq!(
            prose_of::<Defaulted>(),
            [
                (String::from("note"), String::from("Optional.")),
                (
                    String::from("count"),
                    String::from("Optional. From 0 to 255.")
                ),
            ]
        );
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    #[serde(tag = "kind")]
    enum Tagged {
        A { x: u8 },
        B,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Deep {
        one: One,
    }
    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct One {
        two: Two,
    }
    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Two {
        three: Three,
    }
    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Three {
        four: String,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Shapes {
        plain: String,
        number: f64,
        map: std::collections::BTreeMap<String, i32>,
        tagged: Tagged,
        deep: Deep,
        #[schemars(length(min = 1, max = 3))]
        short: String,
        #[schemars(length(max = 2))]
        pair: Vec<bool>,
        anything: serde_json::Value,
    }

    #[test]
    fn plain_required_values_add_nothing_and_shapes_are_told() {
        let prose: std::collections::BTreeMap<String, String> =
            prose_of::<Shapes>().into_iter().collect();
        assert_eq!(prose["plain"], "");
        assert_eq!(prose["number"], "");
        assert_eq!(prose["anything"], "");
        assert_eq!(prose["map"], "A map from names to integers.");
        // A tagged enum is not a list of plain values: no made-up values.
        assert!(!prose["tagged"].contains("One of"), "{}", prose["tagged"]);
        assert_eq!(prose["short"], "1 to 3 characters.");
        assert_eq!(prose["pair"], "A list of booleans. At most 2 items.");
        // Nesting is told field by field down to a depth, then by name.
        assert_eq!(
            prose["deep"],
            "An object with fields: `one` (object, required, an object with fields: `two` (object, required, an object with fields `three`))."
        );
    }

    #[test]
    fn descriptions_and_prose_join_into_sentences() {
        assert_eq!(join("The topic", ""), "The topic");
        assert_eq!(join("The topic", "Optional."), "The topic. Optional.");
        assert_eq!(join("The topic.", "Optional."), "The topic. Optional.");
        assert_eq!(join("", "Optional."), "Optional.");
    }

    #[test]
    fn long_text_is_cut_at_a_clause_and_says_so() {
        let text = "word, ".repeat(400);
        let cut = bound(text, 200);
        assert!(cut.chars().count() <= 200, "{}", cut.chars().count());
        assert!(cut.ends_with("(cut; the decoder's error names what it expects)"));
        assert!(cut.starts_with("word, word"));
    }
}
