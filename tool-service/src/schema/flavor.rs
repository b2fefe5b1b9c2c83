//! The JSON schemas an MCP client sees, in two flavours, each written so
//! that the LLM providers' own MCP client code takes it
//! ([`clients`](super::clients) checks what each path does):
//!
//! - [`SchemaFlavor::Spec`] (the default) serves JSON Schema 2020-12 as
//!   MCP has it, from the type's schema as schemars writes it, in the forms
//!   every client path takes: no `$schema` (MCP's default dialect; a
//!   draft-07 validator refuses a schema that names 2020-12), documented
//!   enum values as a plain `enum` with their docs in the description
//!   (google-genai and LangChain drop `oneOf` and `const`), `Option<T>` as
//!   `anyOf` of `T` and `null` (LangChain reads a list of types as a
//!   string), `oneOf` as `anyOf` and `const` as an `enum` of one value
//!   (google-genai drops both), a `$ref` with a description beside it
//!   inlined (google-genai
//!   replaces a `$ref` by its target), no `additionalProperties: false`
//!   (google-genai's MCP path crashes on it; unknown arguments are ignored
//!   anyway) and `{}` for a schema of `true`. A type that states `$schema`
//!   itself asks for its schema as written, and gets it (the conformance
//!   suite's fixture does). Each argument's description is the one its
//!   `tool` descriptor gives it.
//! - [`SchemaFlavor::Portable`] serves what every client path takes,
//!   strictly where it has a strict mode, and what the strict converters
//!   (google-genai's `Schema.from_json_schema`, the OpenAI Agents SDK's
//!   `ensure_strict_json_schema`, Anthropic's `transform_schema`) take
//!   too, written from the [schema model](super): no `$ref`, `$defs`,
//!   `$schema`, `const`, `oneOf`, `allOf` or lists of types; an optional
//!   argument is not `required`, and `anyOf` of its type and `null` when
//!   it has no default; documented enum values as a plain `enum` with the
//!   docs in the description; objects left open, for the converters that
//!   close them (OpenAI's strict conversion adds `additionalProperties:
//!   false`; google-genai's MCP path crashes on it); what a provider
//!   refuses (exclusive bounds, `multipleOf`, formats outside JSON
//!   Schema's common ones, extension keywords, defaults) said in the
//!   description instead. Three forms are degraded, and documented: a map
//!   is a list of `key`/`value` pairs (which decoding turns back into the
//!   map), a `serde_json::Value` is a text, number or boolean, and a
//!   recursive type is written out [`MAX_NESTING`] levels deep, below that
//!   as JSON text (which decoding reads).
//!
//! Output schemas are the same in both flavours: clients validate results
//! against them, and no LLM provider reads them.

use std::fmt;
use std::str::FromStr;

use serde_json::{json, Map, Value};

use super::COMMON_FORMATS;
use super::{phrase, prose, Additional, Field, Kind, Model, ROOT, STRICT};

/// Which JSON Schema dialect an MCP server writes its tools' input and
/// output schemas in.
///
#[cfg_attr(feature = "mcp", doc = "```")]
#[cfg_attr(not(feature = "mcp"), doc = "```ignore")]
/// use tool_service::mcp::SchemaFlavor;
///
/// let flavor: SchemaFlavor = "portable".parse()?;
/// assert_eq!(flavor, SchemaFlavor::Portable);
/// assert_eq!(SchemaFlavor::default().to_string(), "spec");
/// # Ok::<(), tool_service::mcp::ParseSchemaFlavorError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SchemaFlavor {
    /// JSON Schema 2020-12 as the MCP specification has it, in the forms
    /// the LLM providers' MCP clients take: the type's schema as schemars
    /// writes it, without `$schema` (unless the type states it), with
    /// documented enum values as a plain `enum`, `Option<T>` as `anyOf`
    /// with `null`, and the descriptors' descriptions.
    #[default]
    Spec,
    /// The subset every provider's client takes, strictly where it has a
    /// strict mode: no references, `const`, `oneOf` or lists of types;
    /// what they refuse said in the descriptions instead.
    Portable,
}

impl SchemaFlavor {
    /// Every flavour, in the order `--help` lists them.
    pub const ALL: [SchemaFlavor; 2] = [SchemaFlavor::Spec, SchemaFlavor::Portable];

    /// The flavour's name on the command line: `spec` or `portable`.
    pub fn name(self) -> &'static str {
        match self {
            SchemaFlavor::Spec => "spec",
            SchemaFlavor::Portable => "portable",
        }
    }
}

impl fmt::Display for SchemaFlavor {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A schema flavour name that is neither `spec` nor `portable`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown schema flavour `{0}`: use `spec` (JSON Schema 2020-12, as MCP has it) or `portable` (what every provider's strict mode accepts)")]
pub struct ParseSchemaFlavorError(String);

impl FromStr for SchemaFlavor {
    type Err = ParseSchemaFlavorError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        SchemaFlavor::ALL
            .into_iter()
            .find(|flavor| flavor.name().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| ParseSchemaFlavorError(text.to_owned()))
    }
}

/// How many levels of a recursive type the portable flavour writes out;
/// below that, a value of the type is its JSON text.
pub(crate) const MAX_NESTING: usize = 8;

/// A tool's input schema in `flavor`, from its service's argument schema
/// and each argument's description as its `tool` descriptor gives it.
pub(crate) fn input_schema(
    flavor: SchemaFlavor,
    arguments: &Value,
    described: &[(&str, &str)],
) -> Map<String, Value> {
    let mut root = match flavor {
        SchemaFlavor::Spec => {
            let mut root = spec(arguments);
            describe_arguments(&mut root, described);
            // A type that states `$schema` asks for its schema as written.
            if !root.contains_key("$schema") {
                let mut schema = Value::Object(root);
                Rewriter::new(&schema).rewrite_root(&mut schema);
                root = match schema {
                    Value::Object(root) => root,
                    _ => Map::new(),
                };
            }
            root
        }
        SchemaFlavor::Portable => {
            let model = Model::of(arguments);
            let mut root = match Writer::new(&model).node(ROOT, 0, None) {
                Value::Object(root) => root,
                _ => Map::new(),
            };
            describe_arguments(&mut root, described);
            root
        }
    };
    // An MCP input schema is an object with properties.
    if root.get("type").and_then(Value::as_str) != Some("object") {
        root.clear();
        root.insert("type".into(), "object".into());
    }
    root.entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    root
}

/// Each argument's description, as its `tool` descriptor gives it.
fn describe_arguments(root: &mut Map<String, Value>, described: &[(&str, &str)]) {
    let Some(Value::Object(properties)) = root.get_mut("properties") else {
        return;
    };
    for (name, description) in described {
        if let (Some(Value::Object(property)), false) =
            (properties.get_mut(*name), description.is_empty())
        {
            describe(property, (*description).into());
        }
    }
}

/// Puts a description on a schema, or on the type's branch of `anyOf` of
/// a type and `null` (google-genai keeps only that branch of it, and
/// LangChain reads that branch's description first); a `$ref` branch
/// keeps it beside the `anyOf`.
fn describe(schema: &mut Map<String, Value>, description: Value) {
    if let Some(branch) = typed_branch(schema) {
        if !branch.contains_key("$ref") {
            branch.insert("description".into(), description);
            schema.remove("description");
            return;
        }
    }
    schema.insert("description".into(), description);
}

/// The branch that is not `null` of an `anyOf` of a schema and `null`.
fn typed_branch(schema: &mut Map<String, Value>) -> Option<&mut Map<String, Value>> {
    let Some(Value::Array(branches)) = schema.get_mut("anyOf") else {
        return None;
    };
    let null = |branch: &Value| branch.get("type").and_then(Value::as_str) == Some("null");
    if branches.len() != 2 || branches.iter().filter(|branch| null(branch)).count() != 1 {
        return None;
    }
    branches
        .iter_mut()
        .find(|branch| !null(branch))
        .and_then(Value::as_object_mut)
}

/// The `outputSchema` MCP declares for a result of this schema, and
/// whether the result is wrapped as `{"result": …}` to fit it: an object as
/// it is; other JSON (a list, a number, a boolean) wrapped, as FastMCP
/// wraps it, since MCP's structured content is an object; text (or
/// nothing) none: it is sent as text only.
pub(crate) fn output_schema(output: &Value) -> Option<(Map<String, Value>, bool)> {
    if is_text(output) {
        return None;
    }
    // Without `$schema`: clients that validate results (the TypeScript
    // SDK's Ajv) read the schema in their default draft.
    let mut root = spec(output);
    root.remove("$schema");
    if output.get("type").and_then(Value::as_str) == Some("object") {
        return Some((root, false));
    }
    // References stay valid: `$defs` stay at the root.
    let defs = root.remove("$defs");
    let mut wrapped = Map::new();
    wrapped.insert("type".into(), "object".into());
    wrapped.insert(
        "properties".into(),
        serde_json::json!({ RESULT_KEY: Value::Object(root) }),
    );
    wrapped.insert("required".into(), serde_json::json!([RESULT_KEY]));
    if let Some(defs) = defs {
        wrapped.insert("$defs".into(), defs);
    }
    Some((wrapped, true))
}

/// The key a wrapped result is under (FastMCP's).
pub(crate) const RESULT_KEY: &str = "result";

/// Whether a result of this schema is sent as text: a string (a `String`,
/// a unit enum), or nothing at all (`()`).
pub(crate) fn is_text(output: &Value) -> bool {
    if let Some(kind) = output.get("type").and_then(Value::as_str) {
        return kind == "string" || kind == "null";
    }
    ["oneOf", "anyOf"].iter().any(|key| {
        output
            .get(*key)
            .and_then(Value::as_array)
            .is_some_and(|branches| !branches.is_empty() && branches.iter().all(is_text))
    })
}

/// The schema as schemars wrote it, without the root's `title` (the Rust
/// type's name) and the keyword that is the decoder's own ([`STRICT`]).
fn spec(schema: &Value) -> Map<String, Value> {
    let mut schema = schema.clone();
    without_key(&mut schema, STRICT);
    let mut root = match schema {
        Value::Object(root) => root,
        _ => Map::new(),
    };
    root.remove("title");
    root
}

fn without_key(schema: &mut Value, key: &str) {
    match schema {
        Value::Object(object) => {
            object.remove(key);
            object
                .values_mut()
                .for_each(|value| without_key(value, key));
        }
        Value::Array(items) => items.iter_mut().for_each(|value| without_key(value, key)),
        _ => {}
    }
}

/// Rewrites a schema as schemars writes it into the forms every client
/// path takes (the default flavour; see the module's documentation).
struct Rewriter {
    /// The root's `$defs`, as written.
    defs: Map<String, Value>,
    /// The references whose target refers to itself, which stay references.
    recursive: Vec<String>,
}

/// The keywords of a nullable schema that stay beside its `anyOf` of the
/// type and `null`, rather than move into the type's branch.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

impl Rewriter {
    fn new(root: &Value) -> Self {
        let defs = root
            .get("$defs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let recursive = defs
            .keys()
            .map(|name| format!("#/$defs/{name}"))
            .filter(|reference| {
                let mut seen = Vec::new();
                Self::target(&defs, reference)
                    .is_some_and(|target| Self::reaches(&defs, reference, target, &mut seen))
            })
            .collect();
        Self { defs, recursive }
    }

    fn target<'d>(defs: &'d Map<String, Value>, reference: &str) -> Option<&'d Value> {
        defs.get(reference.strip_prefix("#/$defs/")?)
    }

    /// Whether `schema` refers to `reference`, directly or through other
    /// definitions.
    fn reaches(
        defs: &Map<String, Value>,
        reference: &str,
        schema: &Value,
        seen: &mut Vec<String>,
    ) -> bool {
        match schema {
            Value::Object(object) => object.iter().any(|(key, value)| {
                if let ("$ref", Value::String(found)) = (key.as_str(), value) {
                    if found == reference {
                        return true;
                    }
                    if seen.contains(found) {
                        return false;
                    }
                    seen.push(found.clone());
                    return Self::target(defs, found)
                        .is_some_and(|target| Self::reaches(defs, reference, target, seen));
                }
                Self::reaches(defs, reference, value, seen)
            }),
            Value::Array(values) => values
                .iter()
                .any(|value| Self::reaches(defs, reference, value, seen)),
            _ => false,
        }
    }

    fn rewrite_root(&self, root: &mut Value) {
        let Value::Object(object) = root else {
            return;
        };
        let mut defs = object.remove("$defs");
        if let Some(Value::Object(entries)) = &mut defs {
            entries.values_mut().for_each(|def| self.rewrite(def, 0));
        }
        self.rewrite(root, 0);
        // The definitions still referred to, from the root and from each
        // other.
        let Some(Value::Object(mut entries)) = defs else {
            return;
        };
        let mut used: Vec<String> = Vec::new();
        collect_refs(root, &mut used);
        let mut index = 0;
        while index < used.len() {
            if let Some(def) = Self::target(&entries, &used[index]) {
                let mut more = Vec::new();
                collect_refs(def, &mut more);
                for reference in more {
                    if !used.contains(&reference) {
                        used.push(reference);
                    }
                }
            }
            index += 1;
        }
        entries.retain(|name, _| used.contains(&format!("#/$defs/{name}")));
        if let (false, Value::Object(object)) = (entries.is_empty(), root) {
            object.insert("$defs".into(), Value::Object(entries));
        }
    }

    fn rewrite(&self, schema: &mut Value, depth: usize) {
        if depth > 64 {
            return;
        }
        if schema == &Value::Bool(true) {
            *schema = Value::Object(Map::new());
        }
        let Value::Object(object) = schema else {
            return;
        };
        // A `$ref` with keywords beside it, inlined (google-genai keeps
        // only the target's).
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            let beside = object.keys().any(|key| key != "$ref");
            if beside && !self.recursive.iter().any(|found| found == reference) {
                if let Some(Value::Object(target)) = Self::target(&self.defs, reference) {
                    let mut merged = target.clone();
                    object.remove("$ref");
                    merged.extend(std::mem::take(object));
                    *object = merged;
                }
            }
        }
        if matches!(object.get("additionalProperties"), Some(Value::Bool(_))) {
            object.remove("additionalProperties");
        }
        documented_enum(object);
        nullable_type(object);
        // google-genai drops `oneOf` and `const`: a union as `anyOf` (a
        // Rust enum's branches are told apart by their tags, so nothing is
        // widened), a constant as an `enum` of one value.
        if let Some(Value::Array(branches)) = object.remove("oneOf") {
            match object.get_mut("anyOf") {
                Some(Value::Array(existing)) => existing.extend(branches),
                _ => {
                    object.insert("anyOf".into(), Value::Array(branches));
                }
            }
        }
        if !object.contains_key("enum") {
            if let Some(constant) = object.remove("const") {
                object.insert("enum".into(), Value::Array(vec![constant]));
            }
        }
        if let Some(description) = object.get("description").cloned() {
            if let Some(branch) = typed_branch(object) {
                branch.insert("description".into(), description);
                object.remove("description");
            }
        }
        for (key, value) in object.iter_mut() {
            match key.as_str() {
                "properties" | "patternProperties" | "$defs" => {
                    if let Value::Object(entries) = value {
                        entries
                            .values_mut()
                            .for_each(|entry| self.rewrite(entry, depth + 1));
                    }
                }
                "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                    if let Value::Array(entries) = value {
                        entries
                            .iter_mut()
                            .for_each(|entry| self.rewrite(entry, depth + 1));
                    }
                }
                "items" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains" => {
                    self.rewrite(value, depth + 1)
                }
                _ => {}
            }
        }
    }
}

/// Every `$ref` in a schema.
fn collect_refs(schema: &Value, found: &mut Vec<String>) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                match (key.as_str(), value) {
                    ("$ref", Value::String(reference)) => {
                        if !found.contains(reference) {
                            found.push(reference.clone());
                        }
                    }
                    _ => collect_refs(value, found),
                }
            }
        }
        Value::Array(values) => values.iter().for_each(|value| collect_refs(value, found)),
        _ => {}
    }
}

/// `oneOf` (or `anyOf`) of documented `const`s, as schemars writes a
/// unit-only enum whose variants have doc comments, as a plain `enum` with
/// the docs in the description.
fn documented_enum(object: &mut Map<String, Value>) {
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(branches)) = object.get(key) else {
            continue;
        };
        let mut variants = Vec::new();
        for branch in branches {
            let Some(branch) = branch.as_object() else {
                return;
            };
            let constant = match branch.get("const") {
                Some(constant) if !constant.is_null() => constant,
                _ => return,
            };
            if !branch
                .keys()
                .all(|key| matches!(key.as_str(), "const" | "description" | "type" | "title"))
            {
                return;
            }
            variants.push(super::Variant {
                value: constant.clone(),
                doc: branch
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }
        if variants.is_empty() {
            return;
        }
        object.remove(key);
        let word = match &variants[0].value {
            Value::String(_) => "string",
            Value::Bool(_) => "boolean",
            Value::Number(number) if number.is_f64() => "number",
            Value::Number(_) => "integer",
            _ => return,
        };
        object.insert("type".into(), word.into());
        let values: Vec<Value> = variants
            .iter()
            .map(|variant| variant.value.clone())
            .collect();
        object.insert("enum".into(), values.into());
        if variants.iter().any(|variant| variant.doc.is_some()) {
            let description = object
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let said = sentence(&format!("one of: {}", prose::values(&variants)));
            object.insert("description".into(), prose::join(description, &said).into());
        }
        return;
    }
}

/// `"type": ["T", "null"]` as `anyOf` of the type's schema and `null`.
fn nullable_type(object: &mut Map<String, Value>) {
    let Some(Value::Array(words)) = object.get("type") else {
        return;
    };
    let named: Vec<&Value> = words.iter().filter(|word| *word != "null").collect();
    let ([word], true) = (named.as_slice(), named.len() < words.len()) else {
        return;
    };
    let mut branch = Map::new();
    branch.insert("type".into(), (*word).clone());
    let keys: Vec<String> = object
        .keys()
        .filter(|key| {
            *key != "type" && !ANNOTATIONS.contains(&key.as_str()) && !key.starts_with("x-")
        })
        .cloned()
        .collect();
    for key in keys {
        if let Some(mut value) = object.remove(&key) {
            if let (true, Value::Array(values)) = (key == "enum", &mut value) {
                values.retain(|value| !value.is_null());
            }
            branch.insert(key, value);
        }
    }
    object.remove("type");
    object.insert(
        "anyOf".into(),
        json!([Value::Object(branch), {"type": "null"}]),
    );
}

/// Writes the portable flavour from the model.
struct Writer<'m> {
    model: &'m Model,
}

impl<'m> Writer<'m> {
    fn new(model: &'m Model) -> Self {
        Self { model }
    }

    /// The portable schema of a node, described by `description` (a
    /// field's own) or else its own description, with what the flavour
    /// cannot state added to it.
    fn node(&self, index: usize, depth: usize, description: Option<&str>) -> Value {
        let node = self.model.node(index);
        let (mut schema, moved) = self.shape(index, depth);
        let mut description = description
            .or(node.description.as_deref())
            .unwrap_or_default()
            .to_owned();
        for clause in moved {
            description = prose::join(&description, &sentence(&clause));
        }
        if !description.is_empty() {
            schema.insert("description".into(), description.into());
        }
        Value::Object(schema)
    }

    /// The keywords of a node, and the clauses said in words instead.
    fn shape(&self, index: usize, depth: usize) -> (Map<String, Value>, Vec<String>) {
        let node = self.model.node(index);
        let bounds = &node.bounds;
        let mut schema = Map::new();
        let mut moved = Vec::new();
        let mut put = |key: &str, value: Value| {
            schema.insert(key.to_owned(), value);
        };
        if depth > MAX_NESTING {
            put("type", "string".into());
            moved.push(String::from(
                "nested deeper than the schema is written out: the value as JSON text",
            ));
            return (schema, moved);
        }
        match &node.kind {
            Kind::Any => {
                put(
                    "anyOf",
                    json!([{"type": "string"}, {"type": "number"}, {"type": "boolean"}]),
                );
            }
            Kind::Boolean => put("type", "boolean".into()),
            Kind::Integer | Kind::Number => {
                let word = self.model.type_word(index);
                put("type", word.into());
                if let Some(min) = bounds.minimum {
                    put("minimum", number(min, word));
                }
                if let Some(max) = bounds.maximum {
                    put("maximum", number(max, word));
                }
                // Gemini refuses exclusive bounds: the whole range is said
                // instead, in the words the refusals use.
                if bounds.exclusive_minimum.is_some() || bounds.exclusive_maximum.is_some() {
                    moved.extend(phrase::number_range(bounds));
                }
                moved.extend(phrase::multiple(bounds));
            }
            Kind::String => {
                put("type", "string".into());
                if let Some(min) = bounds.min_length {
                    put("minLength", min.into());
                }
                if let Some(max) = bounds.max_length {
                    put("maxLength", max.into());
                }
                if let Some((pattern, _)) = &bounds.pattern {
                    put("pattern", pattern.clone().into());
                }
                if let Some(format) = node
                    .format
                    .as_deref()
                    .filter(|format| COMMON_FORMATS.contains(format))
                {
                    put("format", format.into());
                }
            }
            Kind::Array { items } => {
                put("type", "array".into());
                if let Some(items) = items {
                    put("items", self.node(*items, depth + 1, None));
                }
                if let Some(min) = bounds.min_items {
                    put("minItems", min.into());
                }
                if let Some(max) = bounds.max_items {
                    put("maxItems", max.into());
                }
            }
            Kind::Object { fields, additional } => {
                if let (true, Additional::Values(values)) = (fields.is_empty(), additional) {
                    // A map, as a list of pairs (decoding takes both).
                    put("type", "array".into());
                    put(
                        "items",
                        json!({
                            "type": "object",
                            "properties": {
                                "key": {"type": "string"},
                                "value": self.node(*values, depth + 1, None),
                            },
                            "required": ["key", "value"],
                        }),
                    );
                    moved.push(String::from(
                        "a map, written as a list of `key` and `value` pairs",
                    ));
                } else {
                    put("type", "object".into());
                    put("properties", self.fields(fields, depth));
                    let required: Vec<Value> = fields
                        .iter()
                        .filter(|field| field.required)
                        .map(|field| field.name.clone().into())
                        .collect();
                    if !required.is_empty() {
                        put("required", required.into());
                    }
                }
            }
            Kind::Enum(variants) => {
                let word = self.model.type_word(index);
                put("type", word.into());
                if word == "string" {
                    let values = variants.iter().map(|variant| variant.value.clone());
                    put("enum", values.collect::<Vec<_>>().into());
                    if variants.iter().any(|variant| variant.doc.is_some()) {
                        moved.push(format!("one of: {}", prose::values(variants)));
                    }
                } else {
                    // Gemini takes only text values in an `enum`.
                    moved.push(format!("one of: {}", prose::values(variants)));
                }
            }
            Kind::Union(branches) => {
                let branches: Vec<Value> = branches
                    .iter()
                    .map(|&branch| self.node(branch, depth + 1, None))
                    .collect();
                put("anyOf", branches.into());
            }
        }
        (schema, moved)
    }

    /// Each field's schema; one that may be left out and may be `null`
    /// (an `Option` without a default) is `anyOf` of its type and `null`,
    /// so that a strict conversion that makes it required keeps it
    /// optional in effect.
    fn fields(&self, fields: &[Field], depth: usize) -> Value {
        let properties = fields.iter().map(|field| {
            let mut schema = self.node(field.node, depth + 1, field.description.as_deref());
            if !field.required && self.model.node(field.node).nullable {
                if let Value::Object(object) = &mut schema {
                    let mut wrapper = Map::new();
                    wrapper.insert(
                        "anyOf".into(),
                        json!([Value::Object(std::mem::take(object)), {"type": "null"}]),
                    );
                    schema = Value::Object(wrapper);
                }
            }
            (field.name.clone(), schema)
        });
        Value::Object(properties.collect())
    }
}

/// A bound as JSON, an integer for an integer schema.
fn number(value: f64, word: &str) -> Value {
    if word == "integer" && value.fract() == 0.0 && value.abs() < 9.0e15 {
        Value::from(value as i64)
    } else {
        Value::from(value)
    }
}

/// A clause as a sentence: capitalised, with a full stop.
fn sentence(clause: &str) -> String {
    let mut chars = clause.chars();
    match chars.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde_json::json;

    use super::*;

    fn schema_of<T: JsonSchema>() -> Value {
        schemars::SchemaGenerator::default()
            .into_root_schema_for::<T>()
            .to_value()
    }

    /// The schema of `T` as services' argument schemas are generated:
    /// without `$schema` unless the type states it.
    fn arguments_of<T: JsonSchema>() -> Value {
        let mut settings = schemars::generate::SchemaSettings::default();
        settings.meta_schema = None;
        schemars::SchemaGenerator::new(settings)
            .into_root_schema_for::<T>()
            .to_value()
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    enum Colour {
        Red,
        Green,
    }

    /// A status.
    #[allow(dead_code)]
    #[derive(JsonSchema)]
    #[serde(rename_all = "kebab-case")]
    enum Status {
        /// Waiting.
        Open,
        /// Done.
        Closed,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Inner {
        /// How deep.
        depth: u8,
        /// A ratio above zero.
        #[schemars(range(min = 0.0))]
        #[schemars(extend("exclusiveMinimum" = 0))]
        ratio: f64,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Arguments {
        /// The topic.
        topic: String,
        /// How many.
        count: Option<u32>,
        colour: Option<Colour>,
        status: Status,
        inner: Inner,
        tags: Vec<String>,
        weights: std::collections::BTreeMap<String, u8>,
        anything: Value,
    }

    fn walk(value: &Value, visit: &mut dyn FnMut(&Map<String, Value>)) {
        match value {
            Value::Object(object) => {
                visit(object);
                object.values().for_each(|value| walk(value, visit));
            }
            Value::Array(items) => items.iter().for_each(|value| walk(value, visit)),
            _ => {}
        }
    }

    #[test]
    fn the_spec_flavour_writes_what_every_client_path_takes() {
        let arguments = arguments_of::<Arguments>();
        let schema = Value::Object(input_schema(
            SchemaFlavor::Spec,
            &arguments,
            &[("topic", "The topic for the joke"), ("count", "How many.")],
        ));
        walk(&schema, &mut |object| {
            for key in ["$schema", "const", "oneOf", "additionalProperties"] {
                if key == "additionalProperties" {
                    assert!(
                        !object.get(key).is_some_and(Value::is_boolean),
                        "{object:?}"
                    );
                } else {
                    assert!(!object.contains_key(key), "{key}: {object:?}");
                }
            }
            assert!(
                !object.get("type").is_some_and(Value::is_array),
                "{object:?}"
            );
        });
        assert!(schema.get("title").is_none());
        let properties = &schema["properties"];
        assert_eq!(properties["topic"]["description"], "The topic for the joke");
        // `Option<u32>`: `anyOf` of the type and `null`, described on the
        // type's branch (google-genai keeps only that branch).
        assert_eq!(
            properties["count"],
            json!({"anyOf": [
                {"type": "integer", "format": "uint32", "minimum": 0, "description": "How many."},
                {"type": "null"},
            ]})
        );
        // A documented enum: a plain `enum`, its docs in the description.
        let status = &schema["$defs"]["Status"];
        assert_eq!(status["enum"], json!(["open", "closed"]));
        assert_eq!(
            status["description"],
            "A status. One of: `open` (Waiting), `closed` (Done)."
        );
        // A map keeps its values' schema.
        assert_eq!(
            properties["weights"]["additionalProperties"]["type"],
            "integer"
        );
        assert_eq!(properties["anything"], json!({}));
    }

    #[test]
    fn a_type_that_states_its_dialect_is_served_as_written() {
        let mut arguments = arguments_of::<Arguments>();
        arguments["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
        arguments["additionalProperties"] = json!(false);
        let schema = Value::Object(input_schema(SchemaFlavor::Spec, &arguments, &[]));
        assert_eq!(schema["additionalProperties"], false);
        assert!(schema["$defs"]["Status"]["oneOf"].is_array());
        assert_eq!(
            schema["properties"]["count"]["type"],
            json!(["integer", "null"])
        );
    }

    #[test]
    fn the_portable_flavour_has_no_refs_nulls_consts_or_open_objects() {
        let arguments = schema_of::<Arguments>();
        let schema = Value::Object(input_schema(
            SchemaFlavor::Portable,
            &arguments,
            &[("topic", "The topic for the joke")],
        ));
        walk(&schema, &mut |object| {
            for key in [
                "$ref",
                "$defs",
                "$schema",
                "const",
                "oneOf",
                "allOf",
                "default",
                "title",
                "exclusiveMinimum",
                "multipleOf",
            ] {
                assert!(!object.contains_key(key), "{key}: {object:?}");
            }
            assert!(
                !object.get("type").is_some_and(Value::is_array),
                "{object:?}"
            );
            // Left open, for the converters that close them.
            assert!(!object.contains_key("additionalProperties"), "{object:?}");
            if object.get("type") == Some(&json!("object")) {
                assert!(object.contains_key("properties"), "{object:?}");
            }
            if let Some(format) = object.get("format").and_then(Value::as_str) {
                assert!(COMMON_FORMATS.contains(&format), "{format}");
            }
        });
        let properties = &schema["properties"];
        assert_eq!(properties["topic"]["description"], "The topic for the joke");
        // An `Option` without a default: `anyOf` with `null`.
        assert_eq!(properties["count"]["anyOf"][0]["type"], "integer");
        assert_eq!(properties["count"]["anyOf"][0]["minimum"], 0);
        assert_eq!(properties["count"]["anyOf"][1], json!({"type": "null"}));
        assert_eq!(
            properties["colour"]["anyOf"][0]["enum"],
            json!(["Red", "Green"])
        );
        assert_eq!(properties["status"]["enum"], json!(["open", "closed"]));
        assert_eq!(
            properties["status"]["description"],
            "A status. One of: `open` (Waiting), `closed` (Done)."
        );
        // Gemini refuses `exclusiveMinimum`: the range is said instead, in
        // the words a refusal would use.
        let ratio = &properties["inner"]["properties"]["ratio"];
        assert_eq!(ratio["minimum"], 0.0);
        assert_eq!(ratio["description"], "A ratio above zero. Greater than 0.");
        assert_eq!(properties["weights"]["type"], "array");
        assert_eq!(
            properties["weights"]["items"]["properties"]["value"]["maximum"],
            255
        );
        assert!(properties["anything"]["anyOf"].is_array());
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|name| name.as_str().unwrap())
            .collect();
        assert_eq!(
            required,
            ["topic", "status", "inner", "tags", "weights", "anything"]
        );
    }

    #[test]
    fn an_empty_argument_list_is_an_object_with_no_properties() {
        let arguments = json!({"$schema": "x", "title": "None", "type": "object"});
        assert_eq!(
            Value::Object(input_schema(SchemaFlavor::Spec, &arguments, &[])),
            json!({"$schema": "x", "type": "object", "properties": {}})
        );
        assert_eq!(
            Value::Object(input_schema(SchemaFlavor::Portable, &arguments, &[])),
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn recursive_types_stop_at_a_depth_in_the_portable_flavour() {
        let schema = json!({
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}
        });
        let schema = Value::Object(input_schema(SchemaFlavor::Portable, &schema, &[]));
        let mut node = &schema["properties"]["node"];
        let mut levels = 0;
        while node["properties"]["next"].get("properties").is_some() {
            node = &node["properties"]["next"];
            levels += 1;
        }
        assert_eq!(levels, MAX_NESTING - 1);
        let below = &node["properties"]["next"];
        assert_eq!(below["type"], "string");
        assert!(below["description"].as_str().unwrap().contains("JSON text"));
    }

    #[test]
    fn text_and_structured_results_are_told_apart() {
        assert!(is_text(&schema_of::<String>()));
        assert!(is_text(&schema_of::<()>()));
        assert!(is_text(&schema_of::<Colour>()));
        assert!(!is_text(&schema_of::<Inner>()));
        assert!(!is_text(&schema_of::<Vec<String>>()));
        assert!(matches!(
            output_schema(&schema_of::<Inner>()),
            Some((_, false))
        ));
        assert!(output_schema(&schema_of::<String>()).is_none());
        // Other JSON is wrapped as `{"result": …}`, its `$defs` at the root.
        let (wrapped, true) = output_schema(&schema_of::<Vec<Colour>>()).unwrap() else {
            panic!("a list is wrapped");
        };
        assert_eq!(wrapped["type"], "object");
        assert_eq!(wrapped["required"], serde_json::json!(["result"]));
        assert_eq!(wrapped["properties"]["result"]["type"], "array");
        assert!(wrapped.get("$schema").is_none());
        if let Some(reference) = wrapped["properties"]["result"]["items"].get("$ref") {
            let name = reference.as_str().unwrap().trim_start_matches("#/$defs/");
            assert!(wrapped["$defs"].get(name).is_some(), "{wrapped:?}");
        }
        let (number, true) = output_schema(&schema_of::<u32>()).unwrap() else {
            panic!("a number is wrapped");
        };
        assert_eq!(number["properties"]["result"]["type"], "integer");
    }

    #[test]
    fn flavours_parse_by_name() {
        assert_eq!("spec".parse(), Ok(SchemaFlavor::Spec));
        assert_eq!(" Portable ".parse(), Ok(SchemaFlavor::Portable));
        let error = "gemini".parse::<SchemaFlavor>().unwrap_err().to_string();
        assert!(
            error.starts_with("unknown schema flavour `gemini`: use `spec`"),
            "{error}"
        );
    }
}
