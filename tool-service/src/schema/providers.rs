//! Which strict converters take a tool's schema as served, and why not:
//! the second opinion `check-schemas` gives after what each client path
//! does ([`clients`](super::clients)).
//!
//! Each check mirrors a provider's converter, read in its source and run
//! side by side with it over the example tools and a corpus of awkward
//! types (`interop-schemas/test_providers.py`):
//! - **Gemini**: google-genai 2.34 (the same code in 3.6.1),
//!   `types.Schema.from_json_schema` with
//!   `raise_error_on_unsupported_field=True`. Its `JSONSchema` model
//!   forbids every keyword it does not list (`const`, `allOf`,
//!   `exclusiveMinimum`, `multipleOf`, `$schema`, extension keywords …),
//!   and the converter refuses `oneOf` and `uniqueItems`.
//! - **OpenAI** (strict mode): the OpenAI Agents SDK 0.24, as its MCP
//!   support converts a tool's input schema (`ensure_strict_json_schema`,
//!   open objects refused): no `additionalProperties` other than `false`,
//!   no object without `properties` that is not closed, a root that is a
//!   plain object, no `$ref` with constraints beside it.
//! - **Anthropic**: the Anthropic SDK 2.17's `transform_schema` (strict
//!   tool use): every schema has a `type` (one name), `anyOf`, `oneOf`,
//!   `allOf`, `enum`, `const` or `$ref`; what it does not support is moved
//!   into the description (a note, not a refusal).

use std::fmt;

use serde_json::{Map, Value};

/// An LLM provider whose acceptance of tool schemas is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Provider {
    Gemini,
    OpenAi,
    Anthropic,
}

impl Provider {
    pub(crate) const ALL: [Provider; 3] = [Provider::Gemini, Provider::OpenAi, Provider::Anthropic];

    /// The provider's name on the command line and in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Provider::Gemini => "gemini",
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The client code the check mirrors.
    pub(crate) fn client(self) -> &'static str {
        match self {
            Provider::Gemini => "google-genai 2.34 Schema.from_json_schema",
            Provider::OpenAi => "openai-agents 0.24 strict conversion of MCP tools",
            Provider::Anthropic => "anthropic 2.17 transform_schema",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// What a provider makes of one schema.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// Why the provider refuses the schema, one sentence per place; empty
    /// when it accepts it.
    pub(crate) refusals: Vec<String>,
    /// What it changes while accepting it (moved into a description,
    /// dropped), one sentence per kind of change.
    pub(crate) notes: Vec<String>,
}

impl Verdict {
    pub(crate) fn accepts(&self) -> bool {
        self.refusals.is_empty()
    }
}

/// The keywords google-genai's `JSONSchema` model lists (camelCase).
const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "default",
    "items",
    "minItems",
    "maxItems",
    "enum",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "additionalProperties",
    "anyOf",
    "uniqueItems",
    "$ref",
    "$defs",
    "oneOf",
];

/// The type names JSON Schema has.
const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "integer", "string",
];

/// Keywords whose values are schemas, or maps or lists of schemas.
enum Sub {
    One,
    Map,
    List,
}

fn subschemas(key: &str) -> Option<Sub> {
    Some(match key {
        "items" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains" => Sub::One,
        "properties" | "$defs" | "definitions" | "patternProperties" => Sub::Map,
        "anyOf" | "oneOf" | "allOf" | "prefixItems" => Sub::List,
        _ => return None,
    })
}

/// What `provider` makes of `schema`, a tool's input schema as served.
pub(crate) fn check(provider: Provider, schema: &Value) -> Verdict {
    let mut verdict = Verdict::default();
    let mut moved = Vec::new();
    let mut checker = Checker {
        provider,
        root: schema,
        verdict: &mut verdict,
        moved: &mut moved,
    };
    checker.root();
    checker.walk(schema, "", 0);
    if !moved.is_empty() {
        moved.sort();
        moved.dedup();
        let keys: Vec<String> = moved.iter().map(|key| format!("`{key}`")).collect();
        verdict
            .notes
            .push(format!("moves {} into the description", keys.join(", ")));
    }
    verdict.notes.sort();
    verdict.notes.dedup();
    verdict
}

struct Checker<'a> {
    provider: Provider,
    root: &'a Value,
    verdict: &'a mut Verdict,
    moved: &'a mut Vec<String>,
}

impl Checker<'_> {
    fn refuse(&mut self, at: &str, why: String) {
        let place = if at.is_empty() {
            String::from("the arguments")
        } else {
            format!("`{at}`")
        };
        self.verdict.refusals.push(format!("{place}: {why}"));
    }

    fn note(&mut self, note: &str) {
        self.verdict.notes.push(note.to_owned());
    }

    fn root(&mut self) {
        if self.provider != Provider::OpenAi {
            return;
        }
        let Some(object) = self.root.as_object() else {
            return;
        };
        // A single `allOf` entry is merged into the root first.
        let merged_any_of = match object.get("allOf") {
            Some(Value::Array(all)) if all.len() == 1 => all[0].get("anyOf").is_some(),
            _ => false,
        };
        if object.contains_key("anyOf") || merged_any_of {
            self.refuse(
                "",
                String::from("the root of a strict schema cannot be `anyOf`"),
            );
        }
        if let Some(Value::Array(types)) = object.get("type") {
            self.refuse(
                "",
                format!(
                    "the root of a strict schema must be a plain object, not of type {}",
                    Value::Array(types.clone())
                ),
            );
        }
    }

    fn walk(&mut self, schema: &Value, at: &str, depth: usize) {
        if depth > 64 {
            return;
        }
        let Some(object) = schema.as_object() else {
            if schema.is_boolean() {
                match self.provider {
                    Provider::Gemini | Provider::Anthropic => {
                        self.refuse(at, format!("a schema of `{schema}` alone is not taken"));
                    }
                    Provider::OpenAi => {}
                }
            }
            return;
        };
        match self.provider {
            Provider::Gemini => self.gemini(object, at, depth),
            Provider::OpenAi => self.openai(object, at),
            Provider::Anthropic => self.anthropic(object, at),
        }
        for (key, value) in object {
            let path = |name: &str| {
                if at.is_empty() {
                    name.to_owned()
                } else {
                    format!("{at}.{name}")
                }
            };
            match (subschemas(key), value) {
                (Some(Sub::One), Value::Object(_)) => self.walk(value, &path(key), depth + 1),
                (Some(Sub::Map), Value::Object(entries)) => {
                    for (name, value) in entries {
                        let inner = if key == "properties" {
                            path(name)
                        } else {
                            path(&format!("{key}.{name}"))
                        };
                        self.walk(value, &inner, depth + 1);
                    }
                }
                (Some(Sub::List), Value::Array(values)) => {
                    for (index, value) in values.iter().enumerate() {
                        self.walk(value, &format!("{}[{index}]", path(key)), depth + 1);
                    }
                }
                _ => {}
            }
        }
    }

    fn gemini(&mut self, object: &Map<String, Value>, at: &str, depth: usize) {
        for key in object.keys() {
            if !GEMINI_KEYWORDS.contains(&key.as_str()) {
                self.refuse(at, format!("Gemini does not take the keyword `{key}`"));
            }
        }
        for key in ["oneOf", "uniqueItems"] {
            if object.contains_key(key) {
                self.refuse(at, format!("Gemini's converter refuses `{key}`"));
            }
        }
        match object.get("type") {
            Some(Value::String(word)) if !TYPES.contains(&word.as_str()) => {
                self.refuse(at, format!("`{word}` is not a JSON type"));
            }
            _ => {}
        }
        if depth > 0 && object.contains_key("$defs") {
            self.refuse(at, String::from("Gemini reads `$defs` only at the root"));
        }
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            let found = reference.strip_prefix("#/$defs/").is_some_and(|name| {
                self.root
                    .get("$defs")
                    .and_then(|defs| defs.get(name))
                    .is_some()
            });
            if !found {
                self.refuse(at, format!("Gemini cannot resolve `$ref` {reference}"));
            }
        }
        if object
            .get("additionalProperties")
            .is_some_and(|value| value != &Value::Bool(false))
        {
            self.note("drops `additionalProperties`: a map is sent as an object with no fields");
        }
        if let Some(Value::Array(values)) = object.get("enum") {
            if values.iter().any(|value| !value.is_string()) {
                self.note("takes only text values in `enum`");
            }
        }
    }

    fn openai(&mut self, object: &Map<String, Value>, at: &str) {
        let closed = object.get("additionalProperties") == Some(&Value::Bool(false));
        let is_object = match object.get("type") {
            Some(Value::String(word)) => word == "object",
            Some(Value::Array(words)) => words.iter().any(|word| word == "object"),
            _ => object.contains_key("properties"),
        };
        if object.contains_key("additionalProperties") && !closed {
            self.refuse(
                at,
                String::from("strict mode takes no `additionalProperties` but `false` (a map)"),
            );
        } else if is_object
            && !closed
            && object
                .get("properties")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty)
        {
            self.refuse(
                at,
                String::from("strict mode takes no object without properties that is not closed"),
            );
        }
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            if !reference.starts_with("#/") {
                self.refuse(at, format!("`$ref` {reference} is not within the schema"));
            }
            let constraints: Vec<&str> = object
                .keys()
                .map(String::as_str)
                .filter(|key| {
                    !matches!(
                        *key,
                        "$ref"
                            | "$anchor"
                            | "$comment"
                            | "$defs"
                            | "$schema"
                            | "default"
                            | "definitions"
                            | "deprecated"
                            | "description"
                            | "examples"
                            | "readOnly"
                            | "title"
                            | "writeOnly"
                    )
                })
                .collect();
            if !constraints.is_empty() {
                self.refuse(
                    at,
                    format!(
                        "a `$ref` has constraints beside it ({})",
                        constraints.join(", ")
                    ),
                );
            } else if object.len() == 1 {
                self.refuse(
                    at,
                    format!("the strict conversion does not follow a `$ref` alone ({reference})"),
                );
            }
        }
        if let Some(Value::Object(properties)) = object.get("properties") {
            let required = object
                .get("required")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            if required < properties.len() {
                self.note("makes every property required: an optional one must then be given");
            }
        }
    }

    fn anthropic(&mut self, object: &Map<String, Value>, at: &str) {
        match object.get("type") {
            Some(Value::String(word)) if !TYPES.contains(&word.as_str()) => {
                self.refuse(at, format!("`{word}` is not a JSON type"));
            }
            Some(Value::Array(words)) => {
                self.refuse(
                    at,
                    format!(
                        "a list of types ({}) is not taken",
                        Value::Array(words.clone())
                    ),
                );
            }
            Some(_) => {}
            None => {
                let typed = ["anyOf", "oneOf", "allOf", "const", "$ref"]
                    .iter()
                    .any(|key| object.contains_key(*key))
                    || object
                        .get("enum")
                        .and_then(Value::as_array)
                        .is_some_and(|values| !values.is_empty());
                if !typed {
                    self.refuse(
                        at,
                        String::from(
                            "a schema needs a `type`, `anyOf`, `oneOf`, `allOf`, `const` or `enum`",
                        ),
                    );
                }
            }
        }
        for (key, value) in object {
            let kept = match key.as_str() {
                "type"
                | "description"
                | "title"
                | "properties"
                | "required"
                | "items"
                | "anyOf"
                | "oneOf"
                | "allOf"
                | "enum"
                | "const"
                | "$ref"
                | "$defs"
                | "additionalProperties"
                | "$schema" => true,
                "minItems" => value.as_u64().is_some_and(|min| min <= 1),
                "format" => value
                    .as_str()
                    .is_some_and(|format| super::COMMON_FORMATS.contains(&format)),
                _ => false,
            };
            if !kept {
                self.moved.push(key.clone());
            }
        }
        if matches!(
            object.get("additionalProperties"),
            Some(Value::Object(_)) | Some(Value::Bool(true))
        ) {
            self.note("closes every object: a map is sent as an object with no fields");
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn documented_enums_as_consts_are_refused_by_gemini_only() {
        let schema = json!({
            "type": "object",
            "properties": {"status": {"oneOf": [
                {"const": "open", "description": "Open."},
                {"const": "closed", "description": "Done."},
            ]}},
            "additionalProperties": false,
        });
        let gemini = check(Provider::Gemini, &schema);
        assert!(!gemini.accepts());
        assert!(
            gemini.refusals.contains(&String::from(
                "`status[0]`: Gemini does not take the keyword `const`"
            )) || gemini
                .refusals
                .iter()
                .any(|refusal| refusal.contains("`const`")),
            "{gemini:?}"
        );
        assert!(gemini
            .refusals
            .iter()
            .any(|refusal| refusal.contains("`oneOf`")));
        assert!(check(Provider::OpenAi, &schema).accepts());
        assert!(check(Provider::Anthropic, &schema).accepts());
    }

    #[test]
    fn maps_open_objects_and_type_lists_are_refused_where_the_clients_refuse_them() {
        let map = json!({"type": "object", "properties": {
            "m": {"type": "object", "additionalProperties": {"type": "integer"}},
        }});
        assert!(check(Provider::Gemini, &map).accepts());
        assert!(!check(Provider::OpenAi, &map).accepts());
        let anthropic = check(Provider::Anthropic, &map);
        assert!(anthropic.accepts());
        assert!(anthropic.notes.iter().any(|note| note.contains("map")));
        let nullable = json!({"type": "object", "properties": {"n": {"type": ["string", "null"]}}});
        assert!(check(Provider::Gemini, &nullable).accepts());
        assert!(check(Provider::OpenAi, &nullable).accepts());
        let refused = check(Provider::Anthropic, &nullable);
        assert_eq!(
            refused.refusals,
            ["`n`: a list of types ([\"string\",\"null\"]) is not taken"]
        );
        let open = json!({"type": "object", "properties": {"o": {"type": "object"}, "v": {}}});
        assert!(!check(Provider::OpenAi, &open).accepts());
        let bare = json!({"type": "object", "properties": {"r": {"anyOf": [{"$ref": "#/$defs/R"}, {"type": "null"}]}},
                          "$defs": {"R": {"type": "string"}}});
        assert!(!check(Provider::OpenAi, &bare).accepts());
        assert_eq!(
            check(Provider::Anthropic, &open).refusals,
            ["`v`: a schema needs a `type`, `anyOf`, `oneOf`, `allOf`, `const` or `enum`"]
        );
    }
}
