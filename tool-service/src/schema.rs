//! What a JSON schema says, read for the descriptors: an object's fields,
//! the one type word TrustGraph's `arguments` carry, and everything else
//! (allowed values, item types, nested fields, defaults, bounds) told in
//! words for the LLM.
//!
//! TrustGraph's agent puts only each argument's `name`, `type` and
//! `description` into its prompt, so the description is the only place
//! where what the decoder accepts can reach the model.

use std::collections::BTreeSet;

use serde_json::Value;

/// One property of an object schema.
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) required: bool,
    pub(crate) description: Option<String>,
    pub(crate) schema: Value,
}

/// The properties of an object schema, in declaration order; `None` when the
/// schema is not an object.
pub(crate) fn object_fields(root: &Value) -> Option<Vec<Field>> {
    let object = resolve(root, root);
    match object.get("properties") {
        Some(Value::Object(_)) => fields_of(object, root),
        Some(_) => None,
        None if type_word(object, root) == "object" => Some(Vec::new()),
        None => None,
    }
}

/// Follows a local `$ref` (`#/$defs/Name`) to the schema it names.
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..32 {
        let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
            return current;
        };
        let Some(pointer) = reference.strip_prefix('#') else {
            return current;
        };
        match root.pointer(pointer) {
            Some(target) => current = target,
            None => return current,
        }
    }
    current
}

/// The JSON type word of a schema: `string`, `integer`, `number`, `boolean`,
/// `array` or `object`. `null` alternatives (from `Option`) are ignored; a
/// schema that admits anything is `object`.
pub(crate) fn type_word<'a>(schema: &'a Value, root: &'a Value) -> &'a str {
    let schema = resolve(schema, root);
    match schema.get("type") {
        Some(Value::String(word)) => return word,
        Some(Value::Array(words)) => {
            if let Some(word) = words
                .iter()
                .filter_map(Value::as_str)
                .find(|word| *word != "null")
            {
                return word;
            }
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            let words: Vec<&str> = options
                .iter()
                .map(|option| type_word(option, root))
                .filter(|word| *word != "null")
                .collect();
            if let Some(first) = words.first() {
                if words.iter().all(|word| word == first) {
                    return first;
                }
                return "object";
            }
        }
    }
    let constant = schema
        .get("const")
        .or_else(|| schema.get("enum").and_then(|values| values.get(0)));
    match constant {
        Some(Value::String(_)) => "string",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(number)) if number.is_f64() => "number",
        Some(Value::Number(_)) => "integer",
        Some(Value::Array(_)) => "array",
        Some(Value::Null) => "null",
        _ if schema.get("properties").is_some() => "object",
        _ if schema.get("items").is_some() => "array",
        _ => "object",
    }
}

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
pub(crate) fn prose(field: &Field, root: &Value) -> String {
    let mut clauses = Vec::new();
    if !field.required {
        clauses.push(String::from("optional"));
    }
    clauses.extend(facts(&field.schema, root, 0));
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

/// The clauses that describe a schema beyond its type word.
fn facts(schema: &Value, root: &Value, depth: usize) -> Vec<String> {
    let schema = resolve(without_null(schema, root), root);
    let mut clauses = Vec::new();
    if let Some(values) = allowed_values(schema, root) {
        clauses.push(format!("one of: {values}"));
    }
    match type_word(schema, root) {
        "array" => {
            if let Some(items) = schema.get("items") {
                clauses.push(list_of(items, root, depth));
            }
            clauses.extend(range(schema, "minItems", "maxItems", " items"));
        }
        "object" => {
            if let Some(fields) = fields_of(schema, root) {
                if !fields.is_empty() {
                    clauses.push(fields_clause(&fields, root, depth));
                }
            } else if let Some(values) = schema.get("additionalProperties") {
                if values.is_object() {
                    clauses.push(format!(
                        "a map from names to {}",
                        plural(type_word(values, root))
                    ));
                }
            }
        }
        "integer" | "number" => {
            clauses.extend(number_range(schema));
        }
        "string" => {
            clauses.extend(range(schema, "minLength", "maxLength", " characters"));
            if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
                clauses.push(format!("matching `{pattern}`"));
            }
        }
        _ => {}
    }
    // A default of `null` is what "optional" says already.
    if let Some(default) = schema.get("default").filter(|default| !default.is_null()) {
        clauses.push(format!("default: {}", literal(default)));
    }
    clauses
}

/// The schema of a nullable value (`Option<T>`) without its `null`
/// alternative.
fn without_null<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            let rest: Vec<&Value> = options
                .iter()
                .filter(|option| resolve(option, root).get("type") != Some(&Value::from("null")))
                .collect();
            if let [only] = rest.as_slice() {
                if rest.len() < options.len() {
                    return only;
                }
            }
        }
    }
    schema
}

/// The properties of an object schema (already resolved), reading their
/// references against `root`; `None` without properties.
fn fields_of(schema: &Value, root: &Value) -> Option<Vec<Field>> {
    let properties = schema.get("properties")?.as_object()?;
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Some(
        properties
            .iter()
            .map(|(name, field)| Field {
                name: name.clone(),
                required: required.contains(name.as_str()),
                description: field
                    .get("description")
                    .or_else(|| resolve(field, root).get("description"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                schema: field.clone(),
            })
            .collect(),
    )
}

/// `with fields: `a` (string, required): what it is; `b` (integer, optional)`.
fn fields_clause(fields: &[Field], root: &Value, depth: usize) -> String {
    if depth + 1 >= MAX_DEPTH {
        return format!("an object with fields {}", names(fields));
    }
    let described: Vec<String> = fields
        .iter()
        .map(|field| {
            let mut notes = vec![
                type_word(&field.schema, root).to_owned(),
                String::from(if field.required {
                    "required"
                } else {
                    "optional"
                }),
            ];
            notes.extend(facts(&field.schema, root, depth + 1));
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
fn list_of(items: &Value, root: &Value, depth: usize) -> String {
    let word = type_word(items, root);
    let item_facts: Vec<String> = facts(items, root, depth + 1)
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
/// one: `` `keyword` (exact words), `semantic`, `hybrid` ``. `None` when the
/// schema is not an enumeration.
fn allowed_values(schema: &Value, root: &Value) -> Option<String> {
    let mut values: Vec<String> = Vec::new();
    if let Some(Value::Array(listed)) = schema.get("enum") {
        values.extend(listed.iter().map(literal));
        return (!values.is_empty()).then(|| values.join(", "));
    }
    if let Some(constant) = schema.get("const") {
        return Some(literal(constant));
    }
    let options = ["oneOf", "anyOf"]
        .iter()
        .find_map(|key| schema.get(*key).and_then(Value::as_array))?;
    for option in options {
        let option = resolve(option, root);
        let doc = option
            .get("description")
            .and_then(Value::as_str)
            .map(doc_text)
            .filter(|doc| !doc.is_empty());
        let listed: Vec<String> = match (option.get("const"), option.get("enum")) {
            (Some(constant), _) => vec![literal(constant)],
            (None, Some(Value::Array(listed))) => listed.iter().map(literal).collect(),
            // Not an enumeration of plain values (a tagged enum, a union).
            _ => return None,
        };
        match (doc, listed.as_slice()) {
            (Some(doc), [one]) => values.push(format!("{one} ({doc})")),
            _ => values.extend(listed),
        }
    }
    (!values.is_empty()).then(|| values.join(", "))
}

/// A bound pair in words: `from 1 to 5`, `at least 1`, `at most 5`.
fn range(schema: &Value, min: &str, max: &str, unit: &str) -> Option<String> {
    let low = schema.get(min).map(Value::to_string);
    let high = schema.get(max).map(Value::to_string);
    match (low, high) {
        (Some(low), Some(high)) => Some(format!("from {low} to {high}{unit}")),
        (Some(low), None) => Some(format!("at least {low}{unit}")),
        (None, Some(high)) => Some(format!("at most {high}{unit}")),
        (None, None) => None,
    }
}

/// A number's bounds, inclusive or exclusive.
fn number_range(schema: &Value) -> Vec<String> {
    let mut clauses: Vec<String> = range(schema, "minimum", "maximum", "")
        .into_iter()
        .collect();
    if let Some(low) = schema.get("exclusiveMinimum") {
        clauses.push(format!("above {low}"));
    }
    if let Some(high) = schema.get("exclusiveMaximum") {
        clauses.push(format!("below {high}"));
    }
    if let Some(step) = schema.get("multipleOf") {
        clauses.push(format!("a multiple of {step}"));
    }
    clauses
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
        let root = schema.as_value();
        object_fields(root)
            .unwrap()
            .iter()
            .map(|field| (field.name.clone(), prose(field, root)))
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
        assert_eq!(prose["short"], "From 1 to 3 characters.");
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
