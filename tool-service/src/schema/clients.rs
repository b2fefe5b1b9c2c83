//! What the LLM providers' own MCP client code does with a tool's input
//! schema, path by path: what `check-schemas` reports first.
//!
//! Each path mirrors a client library's conversion of an MCP tool, read in
//! its source and run side by side with it over every example tool and a
//! corpus of ordinary and awkward tools, in both schema flavours
//! (`interop-schemas/test_providers.py`):
//! - **google-genai** 2.34 `_mcp_utils.mcp_to_gemini_tool`: drops every
//!   keyword its `JSONSchema` model does not name in snake case
//!   (`minLength`, `maxItems`, `const`, `$schema` …), recursing into
//!   `additionalProperties` as if it were always a schema (a `true` or
//!   `false` there crashes it), then `Schema.from_json_schema`, which
//!   replaces a `$ref` with its target (the keywords beside it are lost)
//!   and drops `oneOf`.
//! - **Google ADK** 2.13 `MCPToolset`: the schema goes to Gemini unchanged
//!   as `parameters_json_schema`.
//! - **OpenAI Agents SDK** 0.24 `MCPUtil.to_function_tool`: with
//!   `convert_schemas_to_strict`, `ensure_strict_json_schema` (open
//!   objects refused); when it raises, the tool is served non-strict
//!   (logged at INFO). Without it, unchanged.
//! - **LangChain**: `langchain-mcp-adapters` 0.3 makes a tool whose
//!   `args_schema` is the input schema; `ChatGoogleGenerativeAI.bind_tools`
//!   (langchain-google-genai 4.4) keeps of each argument only its type,
//!   description, enum values, items and fields (no bounds), and
//!   `ChatOpenAI.bind_tools` (langchain-openai 1.8) inlines `$ref`s.
//! - **Anthropic SDK** 2.17 `lib.tools.mcp.mcp_tool`: the schema goes to
//!   the API unchanged.
//!
//! What the LLM reads of a schema is its facts: the bounds, the enum values
//! and their docs, and the nested descriptions, each at an argument's path
//! (`filter.tags[]`). A fact a path drops is lost unless the path still
//! says it in a description the LLM reads on the way to it (the
//! descriptors' prose states nested bounds and values at the top).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

use super::providers::{self, Provider};

/// One MCP client library's way from a tool's input schema to the LLM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientPath {
    GenaiMcp,
    AdkMcp,
    AgentsStrict,
    Agents,
    LangchainGemini,
    LangchainOpenai,
    AnthropicMcp,
}

impl ClientPath {
    pub(crate) const ALL: [ClientPath; 7] = [
        ClientPath::GenaiMcp,
        ClientPath::AdkMcp,
        ClientPath::AgentsStrict,
        ClientPath::Agents,
        ClientPath::LangchainGemini,
        ClientPath::LangchainOpenai,
        ClientPath::AnthropicMcp,
    ];

    /// The path's name in reports and in `--json`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ClientPath::GenaiMcp => "google-genai",
            ClientPath::AdkMcp => "google-adk",
            ClientPath::AgentsStrict => "openai-agents-strict",
            ClientPath::Agents => "openai-agents",
            ClientPath::LangchainGemini => "langchain-gemini",
            ClientPath::LangchainOpenai => "langchain-openai",
            ClientPath::AnthropicMcp => "anthropic",
        }
    }

    /// The client code the path mirrors, as a user would name it.
    pub(crate) fn client(self) -> &'static str {
        match self {
            ClientPath::GenaiMcp => "google-genai 2.34 MCP tools (mcp_to_gemini_tool)",
            ClientPath::AdkMcp => "Google ADK 2.13 MCPToolset",
            ClientPath::AgentsStrict => {
                "OpenAI Agents SDK 0.24 MCP server, convert_schemas_to_strict=True"
            }
            ClientPath::Agents => "OpenAI Agents SDK 0.24 MCP server (default)",
            ClientPath::LangchainGemini => {
                "langchain-mcp-adapters 0.3 into ChatGoogleGenerativeAI.bind_tools (4.4)"
            }
            ClientPath::LangchainOpenai => {
                "langchain-mcp-adapters 0.3 into ChatOpenAI.bind_tools (1.8)"
            }
            ClientPath::AnthropicMcp => "Anthropic SDK 2.17 mcp_tool",
        }
    }

    /// The LLM provider the path reaches.
    pub(crate) fn provider(self) -> Provider {
        match self {
            ClientPath::GenaiMcp | ClientPath::AdkMcp | ClientPath::LangchainGemini => {
                Provider::Gemini
            }
            ClientPath::AgentsStrict | ClientPath::Agents | ClientPath::LangchainOpenai => {
                Provider::OpenAi
            }
            ClientPath::AnthropicMcp => Provider::Anthropic,
        }
    }
}

impl fmt::Display for ClientPath {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Whether the path takes the tool, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Taken {
    /// Taken, in the provider's strict mode (the model's arguments match
    /// the schema).
    Strict,
    /// Taken.
    Accepted,
    /// The client code raises: the tool (with google-genai, every tool of
    /// the server) does not reach the model.
    Crashes,
}

impl Taken {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Taken::Strict => "strict",
            Taken::Accepted => "accepted",
            Taken::Crashes => "crashes",
        }
    }
}

/// What one path makes of one tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) taken: Taken,
    /// Why: the error a crash raises, or why a strict conversion fell back.
    pub(crate) sentence: Option<String>,
    /// What the LLM would have read and does not.
    pub(crate) lost: Vec<Lost>,
}

/// One fact the LLM no longer reads, at an argument's path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Lost {
    /// The argument's path: `limit`, `filter.tags[]`.
    pub(crate) at: String,
    /// What: a keyword (`maxLength`), `enum` (the values), `docs` (the
    /// values' docs) or `description`.
    pub(crate) what: String,
}

impl Lost {
    /// The loss in words: "`title`: the bound `maxLength`".
    pub(crate) fn phrase(&self) -> String {
        let what = match self.what.as_str() {
            "enum" => String::from("the allowed values"),
            "docs" => String::from("the values' docs"),
            "description" => String::from("the description"),
            keyword => format!("the bound `{keyword}`"),
        };
        format!("`{}`: {what}", self.at)
    }
}

/// What `path` makes of `schema`, a tool's input schema as served.
pub(crate) fn outcome(path: ClientPath, schema: &Value) -> Outcome {
    let converted = match path {
        ClientPath::GenaiMcp => genai_filter(schema).map(|filtered| genai_convert(&filtered)),
        ClientPath::LangchainGemini => Ok(langchain_gemini(schema)),
        ClientPath::LangchainOpenai => Ok(dereference(schema, schema, &mut Vec::new())),
        ClientPath::AdkMcp
        | ClientPath::AgentsStrict
        | ClientPath::Agents
        | ClientPath::AnthropicMcp => Ok(schema.clone()),
    };
    let converted = match converted {
        Ok(converted) => converted,
        Err(error) => {
            return Outcome {
                taken: Taken::Crashes,
                sentence: Some(error),
                lost: Vec::new(),
            }
        }
    };
    let (taken, sentence) = match path {
        ClientPath::AgentsStrict => match strict_refusal(schema) {
            None => (Taken::Strict, None),
            Some(why) => (Taken::Accepted, Some(why)),
        },
        _ => (Taken::Accepted, None),
    };
    Outcome {
        taken,
        sentence,
        lost: lost(schema, &converted),
    }
}

/// Why the OpenAI Agents SDK's strict conversion of an MCP tool raises,
/// if it does (it then serves the tool non-strict).
fn strict_refusal(schema: &Value) -> Option<String> {
    let verdict = providers::check(Provider::OpenAi, schema);
    verdict.refusals.into_iter().next()
}

// ---------------------------------------------------------------------
// The facts the LLM reads.

/// The keywords that bound a value.
const BOUNDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
    "uniqueItems",
];

/// The characters of a text fact that must be found again.
const TEXT_PREFIX: usize = 60;

/// One fact: at a path, what, and the texts that say it.
type Facts = BTreeMap<(String, String), BTreeSet<String>>;

/// The facts of a schema, and each path's descriptions.
#[derive(Default)]
struct Reading {
    facts: Facts,
    descriptions: BTreeMap<String, Vec<String>>,
}

/// What the LLM reads in `original` and not in `converted`.
fn lost(original: &Value, converted: &Value) -> Vec<Lost> {
    let before = read(original);
    let after = read(converted);
    let mut lost = BTreeSet::new();
    for ((at, what), texts) in &before.facts {
        let kept = after
            .facts
            .get(&(at.clone(), what.clone()))
            .is_some_and(|found| texts.is_subset(found));
        if kept || said_on_the_way(&after.descriptions, at, texts) {
            continue;
        }
        lost.insert(Lost {
            at: at.clone(),
            what: what.clone(),
        });
    }
    lost.into_iter().collect()
}

/// Whether every text is in a description of the path or of a path above
/// it (what the LLM reads on the way to the argument).
fn said_on_the_way(
    descriptions: &BTreeMap<String, Vec<String>>,
    at: &str,
    texts: &BTreeSet<String>,
) -> bool {
    let said: Vec<&String> = ancestors(at)
        .iter()
        .filter_map(|path| descriptions.get(path))
        .flatten()
        .collect();
    texts
        .iter()
        .all(|text| said.iter().any(|description| description.contains(text)))
}

/// The path and every path above it: `a.b[]` → ``, `a`, `a.b`, `a.b[]`.
fn ancestors(at: &str) -> Vec<String> {
    let mut paths = vec![String::new()];
    for (index, character) in at.char_indices() {
        if character == '.' || character == '[' {
            paths.push(at[..index].to_owned());
        }
    }
    if !at.is_empty() {
        paths.push(at.to_owned());
    }
    paths
}

/// A text as facts compare it: words joined by single spaces, without a
/// final full stop, in lower case, its first [`TEXT_PREFIX`] characters.
pub(crate) fn normal_text(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = line.trim_end_matches('.').to_lowercase();
    line.chars().take(TEXT_PREFIX).collect()
}

/// A value as facts compare it: a number without a needless `.0`, a
/// string as it is, anything else as JSON.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.to_lowercase(),
        Value::Number(number) => match number.as_f64() {
            Some(float) if float.fract() == 0.0 && float.abs() < 1e15 => {
                format!("{}", float as i64)
            }
            _ => number.to_string(),
        },
        other => other.to_string().to_lowercase(),
    }
}

fn read(schema: &Value) -> Reading {
    let mut reading = Reading::default();
    walk(schema, schema, "", 0, &mut Vec::new(), &mut reading);
    reading
}

fn walk<'a>(
    root: &'a Value,
    schema: &'a Value,
    at: &str,
    depth: usize,
    refs: &mut Vec<&'a str>,
    reading: &mut Reading,
) {
    let Some(object) = schema.as_object() else {
        return;
    };
    if depth > 64 {
        return;
    }
    let mut fact = |what: &str, texts: BTreeSet<String>| {
        if !texts.is_empty() {
            reading
                .facts
                .entry((at.to_owned(), what.to_owned()))
                .or_default()
                .extend(texts);
        }
    };
    if let Some(text) = object.get("description").and_then(Value::as_str) {
        if !at.is_empty() {
            fact("description", BTreeSet::from([normal_text(text)]));
        }
        reading.descriptions.entry(at.to_owned()).or_default().push(
            text.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase(),
        );
    }
    for keyword in BOUNDS {
        if let Some(value) = object.get(*keyword) {
            fact(keyword, BTreeSet::from([value_text(value)]));
        }
    }
    if let Some(Value::Array(values)) = object.get("enum") {
        fact(
            "enum",
            values
                .iter()
                .filter(|value| !value.is_null())
                .map(value_text)
                .collect(),
        );
    }
    if let Some(value) = object.get("const").filter(|value| !value.is_null()) {
        fact("enum", BTreeSet::from([value_text(value)]));
        if let Some(doc) = object.get("description").and_then(Value::as_str) {
            fact("docs", BTreeSet::from([normal_text(doc)]));
        }
    }
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        if !refs.contains(&reference) {
            if let Some(target) = reference.strip_prefix('#').and_then(|p| root.pointer(p)) {
                refs.push(reference);
                walk(root, target, at, depth + 1, refs, reading);
                refs.pop();
            }
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = object.get(key) {
            for branch in branches {
                walk(root, branch, at, depth + 1, refs, reading);
            }
        }
    }
    if let Some(items) = object.get("items") {
        walk(root, items, &format!("{at}[]"), depth + 1, refs, reading);
    }
    if let Some(Value::Object(properties)) = object.get("properties") {
        for (name, property) in properties {
            let inner = if at.is_empty() {
                name.clone()
            } else {
                format!("{at}.{name}")
            };
            walk(root, property, &inner, depth + 1, refs, reading);
        }
    }
}

// ---------------------------------------------------------------------
// google-genai's MCP path.

/// The keywords google-genai's MCP filter keeps: its `JSONSchema` model's
/// field names (snake case) and five camel-case ones.
const GENAI_KEPT: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "default",
    "items",
    "min_items",
    "max_items",
    "enum",
    "properties",
    "required",
    "min_properties",
    "max_properties",
    "minimum",
    "maximum",
    "min_length",
    "max_length",
    "pattern",
    "additional_properties",
    "any_of",
    "unique_items",
    "ref",
    "defs",
    "one_of",
    "additionalProperties",
    "anyOf",
    "oneOf",
    "$defs",
    "$ref",
];

/// Python's name for a JSON value's type, as its errors say it.
fn python_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(number) if number.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// `_mcp_utils._filter_to_supported_schema`.
fn genai_filter(schema: &Value) -> Result<Value, String> {
    let Some(object) = schema.as_object() else {
        return Err(format!(
            "AttributeError: '{}' object has no attribute 'items'",
            python_type(schema)
        ));
    };
    let mut filtered = Map::new();
    for (key, value) in object {
        let kept = match key.as_str() {
            "items" | "additionalProperties" | "additional_properties" => genai_filter(value)?,
            "anyOf" | "any_of" | "oneOf" | "one_of" => match value {
                Value::Array(branches) => Value::Array(
                    branches
                        .iter()
                        .map(genai_filter)
                        .collect::<Result<_, _>>()?,
                ),
                other => {
                    return Err(format!(
                        "TypeError: '{}' object is not iterable",
                        python_type(other)
                    ))
                }
            },
            "properties" | "defs" | "$defs" => match value {
                Value::Object(entries) => {
                    let mut map = Map::new();
                    for (name, entry) in entries {
                        map.insert(name.clone(), genai_filter(entry)?);
                    }
                    Value::Object(map)
                }
                other => {
                    return Err(format!(
                        "AttributeError: '{}' object has no attribute 'items'",
                        python_type(other)
                    ))
                }
            },
            _ if GENAI_KEPT.contains(&key.as_str()) => value.clone(),
            _ => continue,
        };
        filtered.insert(key.clone(), kept);
    }
    Ok(Value::Object(filtered))
}

/// `Schema.from_json_schema` (errors not raised), written back as JSON
/// Schema: a `$ref` replaced by its target, a cycle by an empty schema,
/// `oneOf`, `additionalProperties` and `$defs` dropped.
fn genai_convert(root: &Value) -> Value {
    genai_node(root, root, &mut Vec::new())
}

fn genai_node(root: &Value, schema: &Value, refs: &mut Vec<String>) -> Value {
    let mut node = schema;
    let reference = schema
        .get("$ref")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(reference) = &reference {
        if refs.contains(reference) {
            return Value::Object(Map::new());
        }
        match reference.strip_prefix('#').and_then(|p| root.pointer(p)) {
            Some(target) => node = target,
            None => return Value::Object(Map::new()),
        }
        refs.push(reference.clone());
    }
    let mut out = Map::new();
    if let Some(object) = node.as_object() {
        for (key, value) in object {
            match key.as_str() {
                "items" if value.as_object().is_some_and(|items| !items.is_empty()) => {
                    out.insert(key.clone(), genai_node(root, value, refs));
                }
                "anyOf" | "any_of" => {
                    let branches = value.as_array().map_or_else(Vec::new, |branches| {
                        branches
                            .iter()
                            .map(|branch| genai_node(root, branch, refs))
                            .collect()
                    });
                    out.insert("anyOf".into(), Value::Array(branches));
                }
                "properties" => {
                    let properties = value.as_object().map_or_else(Map::new, |entries| {
                        entries
                            .iter()
                            .map(|(name, entry)| (name.clone(), genai_node(root, entry, refs)))
                            .collect()
                    });
                    out.insert(key.clone(), Value::Object(properties));
                }
                "type" | "format" | "title" | "description" | "default" | "enum" | "required"
                | "minimum" | "maximum" | "pattern" => {
                    out.insert(key.clone(), value.clone());
                }
                _ => {}
            }
        }
    }
    if reference.is_some() {
        refs.pop();
    }
    Value::Object(out)
}

// ---------------------------------------------------------------------
// LangChain's paths.

/// `langchain_core.utils.json_schema.dereference_refs`: every `$ref`
/// replaced by its target, the keywords beside it winning; a `$ref` met
/// again below itself keeps only those keywords.
fn dereference<'a>(root: &'a Value, schema: &'a Value, refs: &mut Vec<&'a str>) -> Value {
    match schema {
        Value::Object(object) => {
            if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
                let beside: Map<String, Value> = object
                    .iter()
                    .filter(|(key, _)| *key != "$ref")
                    .map(|(key, value)| (key.clone(), dereference(root, value, refs)))
                    .collect();
                if refs.contains(&reference) {
                    return Value::Object(beside);
                }
                let Some(target) = reference.strip_prefix('#').and_then(|p| root.pointer(p)) else {
                    return Value::Object(beside);
                };
                refs.push(reference);
                let mut resolved = dereference(root, target, refs);
                refs.pop();
                if let Value::Object(resolved) = &mut resolved {
                    resolved.extend(beside);
                }
                return resolved;
            }
            Value::Object(
                object
                    .iter()
                    .map(|(key, value)| {
                        let value = if key == "$defs" {
                            value.clone()
                        } else {
                            dereference(root, value, refs)
                        };
                        (key.clone(), value)
                    })
                    .collect(),
            )
        }
        Value::Array(values) => Value::Array(
            values
                .iter()
                .map(|value| dereference(root, value, refs))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `_function_utils._dict_to_genai_schema` of a tool whose `args_schema`
/// is the input schema, written back as JSON Schema.
fn langchain_gemini(schema: &Value) -> Value {
    let mut resolved = dereference(schema, schema, &mut Vec::new());
    // `_format_json_schema_to_gapic` takes the first `allOf` entry for the
    // whole schema.
    if let Some(first) = resolved
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|all| all.first())
    {
        resolved = first.clone();
    }
    let Some(object) = resolved.as_object() else {
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    if let Some(description) = object.get("description") {
        out.insert("description".into(), description.clone());
    }
    if let Some(Value::Object(properties)) = object.get("properties") {
        out.insert(
            "properties".into(),
            Value::Object(gapic_properties(properties)),
        );
    }
    Value::Object(out)
}

/// `_get_properties_from_schema`: of each property, its type's keywords
/// only (enum values, description, items, fields).
fn gapic_properties(properties: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (name, property) in properties {
        let Some(original) = property.as_object() else {
            continue;
        };
        let mut item = Map::new();
        let mut chosen = original.clone();
        let branches = original.get("anyOf").and_then(Value::as_array);
        let has_null = |branches: &Vec<Value>| {
            branches
                .iter()
                .any(|branch| branch.get("type").and_then(Value::as_str) == Some("null"))
        };
        let mut word = None;
        match branches {
            Some(branches) if !branches.is_empty() && !has_null(branches) => {
                let formatted: Vec<Value> = branches.iter().map(gapic_format).collect();
                item.insert("anyOf".into(), Value::Array(formatted));
            }
            _ if truthy(original.get("type")) || truthy(original.get("anyOf")) => {
                word = gapic_type(property);
                if let Some(branches) = branches {
                    let wanted = match word {
                        Some("array") => Some("array"),
                        Some("object") => Some("object"),
                        _ => None,
                    };
                    let pick = branches.iter().rfind(|branch| match wanted {
                        Some(wanted) => branch.get("type").and_then(Value::as_str) == Some(wanted),
                        None => branch.get("type").and_then(Value::as_str) != Some("null"),
                    });
                    if let Some(Value::Object(pick)) = pick {
                        let mut picked = pick.clone();
                        for key in ["enum", "items"] {
                            if let (Some(value), false) =
                                (original.get(key), truthy(picked.get(key)))
                            {
                                picked.insert(key.into(), value.clone());
                            }
                        }
                        chosen = picked;
                    }
                }
                item.insert("type".into(), word.unwrap_or("string").into());
            }
            _ => {}
        }
        if let Some(values) = chosen.get("enum").filter(|values| truthy(Some(values))) {
            item.insert("enum".into(), values.clone());
        }
        let description = chosen
            .get("description")
            .filter(|text| truthy(Some(text)))
            .or_else(|| original.get("description"));
        if let Some(description @ Value::String(_)) = description {
            item.insert("description".into(), description.clone());
        }
        let word = word.unwrap_or("");
        if word == "array" {
            if let Some(items) = chosen.get("items").filter(|items| !items.is_null()) {
                item.insert("items".into(), gapic_items(items));
            }
        }
        if word == "object" {
            let source = match chosen.get("anyOf").and_then(Value::as_array) {
                Some(branches) if branches.first().is_some_and(Value::is_object) => {
                    branches[0].clone()
                }
                _ => Value::Object(chosen.clone()),
            };
            match source.get("properties").and_then(Value::as_object) {
                Some(fields) if !fields.is_empty() => {
                    item.insert("properties".into(), Value::Object(gapic_properties(fields)));
                }
                _ => {}
            }
        }
        out.insert(name.clone(), Value::Object(item));
    }
    out
}

/// `_get_items_from_schema`.
fn gapic_items(items: &Value) -> Value {
    let Some(object) = items.as_object() else {
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    let word = gapic_type(items).unwrap_or("string");
    out.insert("type".into(), word.into());
    if word == "object" {
        if let Some(Value::Object(fields)) = object.get("properties") {
            out.insert("properties".into(), Value::Object(gapic_properties(fields)));
        }
    }
    if word == "array" {
        if let Some(inner) = object.get("items") {
            out.insert("items".into(), gapic_format(inner));
        }
    }
    let description = object
        .get("description")
        .filter(|text| truthy(Some(text)))
        .or_else(|| object.get("title"));
    if let Some(description) = description {
        out.insert("description".into(), description.clone());
    }
    if let Some(values) = object.get("enum") {
        out.insert("enum".into(), values.clone());
    }
    Value::Object(out)
}

/// `_format_json_schema_to_gapic`, then what `_dict_to_genai_schema`
/// keeps of it (type, description, fields, items, enum values, `anyOf`).
fn gapic_format(schema: &Value) -> Value {
    let Some(object) = schema.as_object() else {
        return Value::Object(Map::new());
    };
    if let Some(Value::Array(all)) = object.get("allOf") {
        if let Some(first) = all.first() {
            return gapic_format(first);
        }
    }
    let mut out = Map::new();
    for (key, value) in object {
        match key.as_str() {
            "items" if !value.is_null() => {
                out.insert(key.clone(), gapic_format(value));
            }
            "properties" => {
                if let Value::Object(fields) = value {
                    out.insert(key.clone(), Value::Object(gapic_properties(fields)));
                }
            }
            "anyOf" => {
                if let Value::Array(branches) = value {
                    let branches = branches.iter().map(gapic_format).collect();
                    out.insert(key.clone(), Value::Array(branches));
                }
            }
            "type" | "description" | "enum" | "required" | "title" => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// Python's truth of an optional JSON value.
fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::String(text)) => !text.is_empty(),
        Some(Value::Array(values)) => !values.is_empty(),
        Some(Value::Object(map)) => !map.is_empty(),
        Some(Value::Number(number)) => number.as_f64() != Some(0.0),
        Some(Value::Bool(true)) => true,
    }
}

/// `_get_nullable_type_from_schema`: the last typed `anyOf` branch's type,
/// or a single `type`; `None` for `null` and for a list of types.
fn gapic_type(schema: &Value) -> Option<&str> {
    if let Some(Value::Array(branches)) = schema.get("anyOf") {
        return branches.iter().filter_map(gapic_type).next_back();
    }
    match schema.get("type") {
        Some(Value::String(word)) if word != "null" => Some(word.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn google_genai_crashes_on_a_closed_object_and_drops_lengths() {
        let closed = json!({"type": "object", "properties": {}, "additionalProperties": false});
        let crashed = outcome(ClientPath::GenaiMcp, &closed);
        assert_eq!(crashed.taken, Taken::Crashes);
        assert_eq!(
            crashed.sentence.as_deref(),
            Some("AttributeError: 'bool' object has no attribute 'items'")
        );
        let schema = json!({"type": "object", "properties": {
            "title": {"type": "string", "maxLength": 80, "description": "The title."},
            "body": {"type": "string", "maxLength": 9, "description": "At most 9 characters."},
            "tag": {"$ref": "#/$defs/Tag", "description": "The tag."},
        }, "$defs": {"Tag": {"oneOf": [
            {"const": "work", "description": "For work."},
            {"const": "home", "description": "At home."},
        ]}}});
        let taken = outcome(ClientPath::GenaiMcp, &schema);
        assert_eq!(taken.taken, Taken::Accepted);
        let phrases: Vec<String> = taken.lost.iter().map(Lost::phrase).collect();
        assert_eq!(
            phrases,
            [
                "`tag`: the description",
                "`tag`: the values' docs",
                "`tag`: the allowed values",
                "`title`: the bound `maxLength`",
            ]
        );
        // Everything reaches the model unchanged through ADK.
        assert!(outcome(ClientPath::AdkMcp, &schema).lost.is_empty());
    }

    #[test]
    fn langchain_into_gemini_keeps_types_values_and_descriptions_only() {
        let schema = json!({"type": "object", "properties": {
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many."},
            "tags": {"type": "array", "maxItems": 3,
                     "items": {"type": "string", "enum": ["a", "b"]}},
        }});
        let taken = outcome(ClientPath::LangchainGemini, &schema);
        let phrases: Vec<String> = taken.lost.iter().map(Lost::phrase).collect();
        assert_eq!(
            phrases,
            [
                "`limit`: the bound `maximum`",
                "`limit`: the bound `minimum`",
                "`tags`: the bound `maxItems`"
            ]
        );
        // Said in the description, a bound is not lost.
        let said = json!({"type": "object", "properties": {
            "limit": {"type": "integer", "minimum": 1, "maximum": 50,
                      "description": "How many. From 1 to 50."},
        }});
        assert!(outcome(ClientPath::LangchainGemini, &said).lost.is_empty());
    }

    #[test]
    fn the_agents_sdk_is_strict_or_falls_back() {
        let open = json!({"type": "object", "properties": {"o": {"type": "object"}}});
        let fallback = outcome(ClientPath::AgentsStrict, &open);
        assert_eq!(fallback.taken, Taken::Accepted);
        assert!(fallback.sentence.is_some());
        let plain = json!({"type": "object", "properties": {"s": {"type": "string"}}});
        assert_eq!(
            outcome(ClientPath::AgentsStrict, &plain).taken,
            Taken::Strict
        );
        assert_eq!(outcome(ClientPath::Agents, &plain).taken, Taken::Accepted);
    }

    #[test]
    fn paths_nest_and_texts_compare_loosely() {
        assert_eq!(ancestors("a.b[].c"), ["", "a", "a.b", "a.b[]", "a.b[].c"]);
        assert_eq!(normal_text("  Like   blood. "), "like blood");
    }
}
