//! The JSON schemas an MCP client sees: a tool's input schema, made safe for
//! strict clients, and its output schema.
//!
//! Strict clients (Gemini, Cursor) reject `["T", "null"]` unions, a `$schema`
//! key and formats JSON Schema does not define. So the input schema is the
//! service's argument schema with
//! - every `$ref` into `$defs` inlined (and `$defs` removed),
//! - `null` taken out of unions, enums and defaults (an optional argument is
//!   simply not `required`),
//! - `$schema`, the root `title` and non-standard formats (`uint8`, `int64`,
//!   `double`: schemars' names for Rust's number types, whose bounds stay)
//!   removed,
//! - each argument's description the one the `tool` descriptor gives it,
//! - a root that is an object with `properties`.
//!
//! Without `$schema`, MCP reads a tool's schema as JSON Schema 2020-12,
//! which is the dialect schemars writes: nothing is lost by removing it.

use serde_json::{Map, Value};

use crate::descriptor::Argument;

/// How deep `$ref`s are followed before a recursive type is cut off (to any
/// value).
const MAX_REF_DEPTH: usize = 8;

/// The formats JSON Schema 2020-12 defines; others are dropped.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// A tool's MCP input schema, from its service's argument schema and the
/// argument descriptions of its `tool` descriptor.
pub(crate) fn input_schema(arguments: &Value, described: &[Argument]) -> Map<String, Value> {
    let defs = arguments.get("$defs").and_then(Value::as_object);
    let mut schema = inline(arguments, defs, 0);
    strict(&mut schema);
    let mut root = match schema {
        Value::Object(root) => root,
        _ => Map::new(),
    };
    root.remove("$schema");
    root.remove("title");
    root.insert("type".into(), "object".into());
    let properties = root
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        for argument in described {
            if let Some(Value::Object(property)) = properties.get_mut(&argument.name) {
                if !argument.description.is_empty() {
                    property.insert("description".into(), argument.description.clone().into());
                }
            }
        }
    }
    root
}

/// A tool's MCP output schema: the schema of its result as it serializes,
/// when that is an object (MCP's `structuredContent` is one).
pub(crate) fn output_schema(output: &Value) -> Option<Map<String, Value>> {
    let mut root = output.as_object()?.clone();
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    root.remove("$schema");
    root.remove("title");
    Some(root)
}

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

/// `schema` with each `$ref` to `#/$defs/…` replaced by the definition
/// (the referring schema's own keys, a description say, kept over it).
fn inline(schema: &Value, defs: Option<&Map<String, Value>>, depth: usize) -> Value {
    match schema {
        Value::Object(object) => {
            let target = object
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|reference| reference.strip_prefix("#/$defs/"));
            let mut out = Map::new();
            if let Some(name) = target {
                if depth >= MAX_REF_DEPTH {
                    return Value::Object(Map::new());
                }
                if let Some(Value::Object(definition)) = defs.and_then(|defs| defs.get(name)) {
                    let definition = inline(&Value::Object(definition.clone()), defs, depth + 1);
                    if let Value::Object(definition) = definition {
                        out = definition;
                    }
                }
            }
            for (key, value) in object {
                if key == "$ref" && target.is_some() || key == "$defs" {
                    continue;
                }
                out.insert(key.clone(), inline(value, defs, depth));
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|item| inline(item, defs, depth)).collect())
        }
        other => other.clone(),
    }
}

/// Takes `null` out of every union, enum and default, and drops formats
/// JSON Schema does not define, through the whole schema.
fn strict(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            for value in object.values_mut() {
                strict(value);
            }
            without_null(object);
        }
        Value::Array(items) => items.iter_mut().for_each(strict),
        _ => {}
    }
}

fn without_null(object: &mut Map<String, Value>) {
    if let Some(Value::Array(kinds)) = object.get_mut("type") {
        kinds.retain(|kind| kind != "null");
        if kinds.len() == 1 {
            let only = kinds.remove(0);
            object.insert("type".into(), only);
        } else if kinds.is_empty() {
            object.remove("type");
        }
    }
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
    if object.get("default").is_some_and(Value::is_null) {
        object.remove("default");
    }
    if object.get("const").is_some_and(Value::is_null) {
        object.remove("const");
    }
    if let Some(format) = object.get("format").and_then(Value::as_str) {
        if !STANDARD_FORMATS.contains(&format) {
            object.remove("format");
        }
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = object.get_mut(key) else {
            continue;
        };
        branches.retain(|branch| !is_null_schema(branch));
        if branches.len() == 1 {
            // The one branch left stands for the union: its keys join the
            // union's own (a description, a default), which win.
            if let Some(Value::Object(branch)) = branches.pop() {
                object.remove(key);
                for (name, value) in branch {
                    object.entry(name).or_insert(value);
                }
            }
        }
    }
}

/// `{"type": "null"}`: a branch that admits only `null`.
fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
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

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    enum Colour {
        Red,
        Green,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Inner {
        /// How deep.
        depth: u8,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Arguments {
        /// The topic.
        topic: String,
        /// How many.
        count: Option<u32>,
        colour: Option<Colour>,
        inner: Inner,
        tags: Vec<String>,
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
    fn the_input_schema_has_no_null_unions_refs_or_dialect() {
        let described = [Argument {
            name: "topic".into(),
            kind: "string".into(),
            description: "The topic for the joke".into(),
        }];
        let schema = Value::Object(input_schema(&schema_of::<Arguments>(), &described));
        walk(&schema, &mut |object| {
            assert!(!object.contains_key("$ref"), "{object:?}");
            assert!(!object.contains_key("$defs"), "{object:?}");
            assert!(!object.contains_key("$schema"), "{object:?}");
            assert!(
                !object.get("type").is_some_and(Value::is_array),
                "{object:?}"
            );
            assert!(!object.contains_key("format"), "{object:?}");
            for key in ["anyOf", "oneOf"] {
                if let Some(branches) = object.get(key).and_then(Value::as_array) {
                    assert!(branches.iter().all(|branch| !is_null_schema(branch)));
                }
            }
        });
        assert_eq!(schema["type"], "object");
        assert!(schema.get("title").is_none());
        let properties = &schema["properties"];
        assert_eq!(properties["topic"]["description"], "The topic for the joke");
        assert_eq!(properties["count"]["type"], "integer");
        assert_eq!(properties["count"]["minimum"], 0);
        assert_eq!(properties["colour"]["enum"], json!(["Red", "Green"]));
        assert_eq!(properties["colour"]["type"], "string");
        assert_eq!(properties["inner"]["type"], "object");
        assert_eq!(properties["inner"]["properties"]["depth"]["maximum"], 255);
        assert_eq!(properties["tags"]["items"]["type"], "string");
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|name| name.as_str().unwrap())
            .collect();
        assert_eq!(required, ["topic", "inner", "tags"]);
    }

    #[test]
    fn an_empty_argument_list_is_an_object_with_no_properties() {
        let schema = input_schema(
            &json!({"$schema": "x", "title": "None", "type": "object"}),
            &[],
        );
        assert_eq!(
            Value::Object(schema),
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn recursive_types_are_cut_off() {
        let schema = json!({
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}
        });
        let schema = Value::Object(input_schema(&schema, &[]));
        let mut node = &schema["properties"]["node"];
        for _ in 0..MAX_REF_DEPTH - 1 {
            assert_eq!(node["type"], "object");
            node = &node["properties"]["next"];
        }
        assert_eq!(node["properties"]["next"], json!({}));
    }

    #[test]
    fn text_and_structured_results_are_told_apart() {
        assert!(is_text(&schema_of::<String>()));
        assert!(is_text(&schema_of::<()>()));
        assert!(is_text(&schema_of::<Colour>()));
        assert!(!is_text(&schema_of::<Inner>()));
        assert!(!is_text(&schema_of::<Vec<String>>()));
        assert!(output_schema(&schema_of::<Inner>()).is_some());
        assert!(output_schema(&schema_of::<Vec<String>>()).is_none());
        assert!(output_schema(&schema_of::<String>()).is_none());
    }
}
