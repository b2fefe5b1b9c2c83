//! One view of a type's JSON schema, read by everything that reads schemas:
//! the rules decoding applies ([`rules`]), the prose of the
//! descriptors ([`prose`]), the schemas MCP clients see ([`flavor`]) and
//! the checks of what LLM providers' client code does with them
//! ([`clients`], [`providers`]).
//!
//! [`Model::of`] resolves a schemars root once: `$ref`s into `$defs` are
//! followed (a recursive type is a cycle of nodes), `null` alternatives
//! become [`Node::nullable`], and a unit-only enum, written as `enum` or as
//! `oneOf` of documented `const`s, is one [`Kind::Enum`] with each value's
//! doc comment. What the model does not understand is [`Kind::Any`]: no rule,
//! no prose, an open schema.

// The flavours serve MCP (and `check-schemas`), the provider checks the
// command line, the rules decoding.
// The providers' client code paths, mirrored: only `check-schemas` runs
// them.
#[cfg(feature = "cli")]
pub(crate) mod clients;
// Its two public types are the `mcp` module's.
#[cfg_attr(not(feature = "mcp"), allow(dead_code, unreachable_pub))]
pub(crate) mod flavor;
pub(crate) mod phrase;
pub(crate) mod prose;
#[cfg(feature = "cli")]
pub(crate) mod providers;
pub(crate) mod rules;

use std::collections::HashMap;

use serde_json::{Map, Value};

#[cfg(feature = "mcp")]
pub use flavor::{ParseSchemaFlavorError, SchemaFlavor};

/// The string formats Anthropic's strict tool use keeps, which Gemini and
/// OpenAI take too: the portable flavour keeps these and no others.
pub(crate) const COMMON_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// The root node's index.
pub(crate) const ROOT: usize = 0;

/// How deep the model reads nested schemas (deeper ones are [`Kind::Any`]).
const MAX_DEPTH: usize = 32;

/// The schema keyword that turns coercion off for one argument (and what
/// it holds): `#[schemars(extend("x-tool-service-strict" = true))]`.
pub(crate) const STRICT: &str = "x-tool-service-strict";

/// A schema, resolved: nodes in an arena, the root at [`ROOT`].
#[derive(Debug)]
pub(crate) struct Model {
    nodes: Vec<Node>,
}

/// One schema of the model.
#[derive(Debug, Default)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    /// Whether `null` is a value of this schema (`Option<T>`).
    pub(crate) nullable: bool,
    /// No coercion here or below ([`STRICT`]).
    pub(crate) strict: bool,
    pub(crate) bounds: Bounds,
    pub(crate) description: Option<String>,
    /// The `default` the schema states, if not `null`.
    pub(crate) default: Option<Value>,
    /// The `format` the schema states (schemars names Rust's number types:
    /// `uint32`, `double`; others are JSON Schema's: `date-time`, `uuid`).
    pub(crate) format: Option<String>,
    /// The schema's extension keywords (`x-…`), which every flavour keeps.
    pub(crate) extensions: Map<String, Value>,
}

/// What kind of value a node describes.
#[derive(Debug, Default)]
pub(crate) enum Kind {
    /// Anything the type takes (`serde_json::Value`, or a schema the model
    /// does not read).
    #[default]
    Any,
    Boolean,
    Integer,
    Number,
    String,
    Array {
        items: Option<usize>,
    },
    Object {
        fields: Vec<Field>,
        additional: Additional,
    },
    /// One of these values (a unit-only enum, a `const`).
    Enum(Vec<Variant>),
    /// One of several schemas (an enum with data, an untagged enum).
    Union(Vec<usize>),
}

/// What an object says of properties it does not list.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Additional {
    /// Nothing: other properties are allowed and ignored.
    #[default]
    Unsaid,
    /// `additionalProperties: false` (`#[serde(deny_unknown_fields)]`).
    Denied,
    /// A map: every property's value has this node's schema.
    Values(usize),
}

/// One value of an enumeration, with its doc comment.
#[derive(Debug, Clone)]
pub(crate) struct Variant {
    pub(crate) value: Value,
    pub(crate) doc: Option<String>,
}

/// One property of an object.
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) node: usize,
    pub(crate) required: bool,
    /// The property's own description, or its type's.
    pub(crate) description: Option<String>,
    /// The property's own default, or its type's.
    pub(crate) default: Option<Value>,
}

/// The bounds a schema states.
#[derive(Debug, Default)]
pub(crate) struct Bounds {
    pub(crate) minimum: Option<f64>,
    pub(crate) maximum: Option<f64>,
    pub(crate) exclusive_minimum: Option<f64>,
    pub(crate) exclusive_maximum: Option<f64>,
    pub(crate) multiple_of: Option<f64>,
    pub(crate) min_length: Option<u64>,
    pub(crate) max_length: Option<u64>,
    pub(crate) pattern: Option<(String, regex::Regex)>,
    pub(crate) min_items: Option<u64>,
    pub(crate) max_items: Option<u64>,
    /// The range of a fixed-width integer type (its `format`), which serde
    /// enforces.
    pub(crate) width: Option<(f64, f64)>,
}

impl Bounds {
    /// Whether any bound is stated that the type's own width does not
    /// already enforce (schemars states an unsigned type's `minimum: 0`).
    pub(crate) fn beyond_width(&self) -> bool {
        let (low, high) = self.width.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
        self.minimum.is_some_and(|min| min > low)
            || self.maximum.is_some_and(|max| max < high)
            || self.exclusive_minimum.is_some()
            || self.exclusive_maximum.is_some()
            || self.multiple_of.is_some()
            || self.min_length.is_some()
            || self.max_length.is_some()
            || self.pattern.is_some()
            || self.min_items.is_some()
            || self.max_items.is_some()
    }
}

impl Model {
    /// The model of `schema`, a schemars root (`$defs` and `$ref`s).
    pub(crate) fn of(schema: &Value) -> Self {
        let mut reader = Reader {
            root: schema,
            nodes: vec![Node::default()],
            refs: HashMap::new(),
        };
        reader.fill(ROOT, schema, 0);
        Self {
            nodes: reader.nodes,
        }
    }

    /// The node at `index`.
    pub(crate) fn node(&self, index: usize) -> &Node {
        &self.nodes[index]
    }

    /// Every node, in the arena's order.
    pub(crate) fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The root object's fields, in declaration order: none for a root
    /// that takes any object (`serde_json::Value`, an enum of structs);
    /// `None` when the root is not an object.
    pub(crate) fn root_fields(&self) -> Option<&[Field]> {
        match &self.nodes[ROOT].kind {
            Kind::Object { fields, .. } => Some(fields),
            _ if self.type_word(ROOT) == "object" => Some(&[]),
            _ => None,
        }
    }

    /// The one JSON type word of a node, as TrustGraph's `arguments` carry
    /// it: `string`, `integer`, `number`, `boolean`, `array` or `object`
    /// (`null` alternatives ignored; anything else is `object`).
    pub(crate) fn type_word(&self, index: usize) -> &'static str {
        self.word(index, 0)
    }

    fn word(&self, index: usize, depth: usize) -> &'static str {
        match &self.nodes[index].kind {
            Kind::Any | Kind::Object { .. } => "object",
            Kind::Boolean => "boolean",
            Kind::Integer => "integer",
            Kind::Number => "number",
            Kind::String => "string",
            Kind::Array { .. } => "array",
            Kind::Enum(variants) => {
                variants
                    .first()
                    .map_or("object", |variant| match &variant.value {
                        Value::String(_) => "string",
                        Value::Bool(_) => "boolean",
                        Value::Number(number) if number.is_f64() => "number",
                        Value::Number(_) => "integer",
                        Value::Array(_) => "array",
                        Value::Null => "null",
                        Value::Object(_) => "object",
                    })
            }
            Kind::Union(branches) if depth < MAX_DEPTH => {
                let mut words = branches.iter().map(|&branch| self.word(branch, depth + 1));
                let first = words.next().unwrap_or("object");
                if words.all(|word| word == first) {
                    first
                } else {
                    "object"
                }
            }
            Kind::Union(_) => "object",
        }
    }

    /// The string values a node takes as unit variants: those of an
    /// enumeration, or the unit variants of an enum with data. Empty for
    /// other nodes.
    pub(crate) fn unit_names(&self, index: usize) -> Vec<&str> {
        match &self.nodes[index].kind {
            Kind::Enum(variants) => variants
                .iter()
                .filter_map(|variant| variant.value.as_str())
                .collect(),
            Kind::Union(branches) => branches
                .iter()
                .filter_map(|&branch| match &self.nodes[branch].kind {
                    Kind::Enum(variants) if variants.len() == 1 => variants[0].value.as_str(),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

struct Reader<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    /// Nodes of `$ref`s already read (or being read).
    refs: HashMap<&'a str, usize>,
}

impl<'a> Reader<'a> {
    /// A node for `schema`; a bare `$ref` (with at most a description, a
    /// title or a default beside it) shares its target's node.
    fn add(&mut self, schema: &'a Value, depth: usize) -> usize {
        if let Some(reference) = bare_ref(schema) {
            if let Some(&index) = self.refs.get(reference) {
                return index;
            }
            let index = self.push();
            self.refs.insert(reference, index);
            if let Some(target) = self.resolve(reference) {
                self.fill(index, target, depth + 1);
            }
            return index;
        }
        let index = self.push();
        self.fill(index, schema, depth + 1);
        index
    }

    fn push(&mut self) -> usize {
        self.nodes.push(Node::default());
        self.nodes.len() - 1
    }

    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }

    /// Reads `schema` into the node at `index`. A wrapper (a `$ref` with
    /// keywords beside it, `Option<T>`'s `anyOf`) states its own
    /// description and default, and its target the rest.
    fn fill(&mut self, index: usize, schema: &'a Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let Some(object) = schema.as_object() else {
            return;
        };
        self.annotate(index, object);
        if let Some(target) = object
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| self.resolve(reference))
        {
            self.fill(index, target, depth + 1);
            return;
        }
        // Composition beside a type of its own (`allOf`, `if`/`then`
        // constraining an object) adds conditions the model leaves to the
        // type: only a schema that is nothing but a composition is one.
        let typed = object.contains_key("type") || object.contains_key("properties");
        if let (false, Some(Value::Array(branches))) = (typed, object.get("allOf")) {
            if let [one] = branches.as_slice() {
                self.fill(index, one, depth + 1);
                return;
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let (false, Some(Value::Array(branches))) = (typed, object.get(key)) {
                self.fill_union(index, branches, depth);
                return;
            }
        }
        let (word, nullable) = match object.get("type") {
            Some(Value::String(word)) => (Some(word.as_str()), false),
            Some(Value::Array(words)) => {
                let named: Vec<&str> = words
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|word| *word != "null")
                    .collect();
                let nullable = named.len() < words.len();
                match named.as_slice() {
                    [one] => (Some(*one), nullable),
                    _ => (None, nullable),
                }
            }
            _ => (None, false),
        };
        self.nodes[index].nullable |= nullable;
        if let Some(Value::Array(values)) = object.get("enum") {
            let variants: Vec<Variant> = values
                .iter()
                .filter(|value| !value.is_null())
                .map(|value| Variant {
                    value: value.clone(),
                    doc: None,
                })
                .collect();
            if !variants.is_empty() {
                self.nodes[index].kind = Kind::Enum(variants);
                self.nodes[index].nullable |= values.iter().any(Value::is_null);
                return;
            }
        }
        if let Some(constant) = object.get("const").filter(|value| !value.is_null()) {
            self.nodes[index].kind = Kind::Enum(vec![Variant {
                value: constant.clone(),
                doc: None,
            }]);
            return;
        }
        let word = word.or_else(|| {
            if object.contains_key("properties") {
                Some("object")
            } else if object.contains_key("items") {
                Some("array")
            } else {
                None
            }
        });
        let bounds = bounds(object, word);
        let kind = match word {
            Some("boolean") => Kind::Boolean,
            Some("integer") => Kind::Integer,
            Some("number") => Kind::Number,
            Some("string") => Kind::String,
            Some("array") => Kind::Array {
                items: object
                    .get("items")
                    .filter(|items| items.is_object())
                    .map(|items| self.add(items, depth)),
            },
            Some("object") => self.object(object, depth),
            _ => Kind::Any,
        };
        let node = &mut self.nodes[index];
        node.kind = kind;
        node.bounds = bounds;
    }

    /// The description, default, format, strictness and extensions a
    /// schema states itself; a wrapper's win over its target's.
    fn annotate(&mut self, index: usize, object: &Map<String, Value>) {
        let node = &mut self.nodes[index];
        if node.description.is_none() {
            node.description = object
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        if node.default.is_none() {
            node.default = object
                .get("default")
                .filter(|value| !value.is_null())
                .cloned();
        }
        if node.format.is_none() {
            node.format = object
                .get("format")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        if object.get(STRICT) == Some(&Value::Bool(true)) {
            node.strict = true;
        }
        for (key, value) in object {
            if key.starts_with("x-") && !node.extensions.contains_key(key) {
                node.extensions.insert(key.clone(), value.clone());
            }
        }
    }

    /// `anyOf` / `oneOf`: `Option<T>` (one branch and `null`), a unit-only
    /// enum (documented constants), or a union.
    fn fill_union(&mut self, index: usize, branches: &'a [Value], depth: usize) {
        let (nulls, others): (Vec<&Value>, Vec<&Value>) =
            branches.iter().partition(|branch| self.is_null(branch));
        self.nodes[index].nullable |= !nulls.is_empty();
        if let Some(variants) = self.variants(&others) {
            self.nodes[index].kind = Kind::Enum(variants);
            return;
        }
        match others.as_slice() {
            [] => {}
            [one] => self.fill(index, one, depth + 1),
            _ => {
                let branches = others
                    .into_iter()
                    .map(|branch| self.add(branch, depth))
                    .collect();
                self.nodes[index].kind = Kind::Union(branches);
            }
        }
    }

    /// Whether a branch admits only `null`.
    fn is_null(&self, schema: &Value) -> bool {
        let schema = match bare_ref(schema).and_then(|reference| self.resolve(reference)) {
            Some(target) => target,
            None => schema,
        };
        schema.get("type").and_then(Value::as_str) == Some("null")
    }

    /// The values of branches that are each constants or enumerations (a
    /// unit-only enum whose variants have doc comments); `None` otherwise.
    fn variants(&self, branches: &[&'a Value]) -> Option<Vec<Variant>> {
        if branches.is_empty() {
            return None;
        }
        let mut variants = Vec::new();
        for branch in branches {
            let branch = match bare_ref(branch).and_then(|reference| self.resolve(reference)) {
                Some(target) => target,
                None => branch,
            };
            let doc = branch
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            match (branch.get("const"), branch.get("enum")) {
                (Some(constant), _) if !constant.is_null() => variants.push(Variant {
                    value: constant.clone(),
                    doc,
                }),
                (None, Some(Value::Array(values))) => {
                    let one = values.len() == 1;
                    variants.extend(values.iter().filter(|value| !value.is_null()).map(|value| {
                        Variant {
                            value: value.clone(),
                            doc: if one { doc.clone() } else { None },
                        }
                    }));
                }
                _ => return None,
            }
        }
        Some(variants)
    }

    fn object(&mut self, object: &'a Map<String, Value>, depth: usize) -> Kind {
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields = Vec::new();
        if let Some(properties) = object.get("properties").and_then(Value::as_object) {
            for (name, schema) in properties {
                let node = self.add(schema, depth);
                let own = |key: &str| schema.get(key).filter(|value| !value.is_null());
                fields.push(Field {
                    name: name.clone(),
                    node,
                    required: required.contains(&name.as_str()),
                    description: own("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .or_else(|| self.nodes[node].description.clone()),
                    default: own("default")
                        .cloned()
                        .or_else(|| self.nodes[node].default.clone()),
                });
            }
        }
        let additional = match object.get("additionalProperties") {
            Some(Value::Bool(false)) => Additional::Denied,
            Some(values @ Value::Object(_)) if !values.as_object().is_some_and(Map::is_empty) => {
                Additional::Values(self.add(values, depth))
            }
            _ => Additional::Unsaid,
        };
        Kind::Object { fields, additional }
    }
}

/// The target of a `$ref` with at most a description, a title or a default
/// beside it.
fn bare_ref(schema: &Value) -> Option<&str> {
    let object = schema.as_object()?;
    let reference = object.get("$ref")?.as_str()?;
    object
        .keys()
        .all(|key| matches!(key.as_str(), "$ref" | "description" | "title" | "default"))
        .then_some(reference)
}

fn bounds(object: &Map<String, Value>, word: Option<&str>) -> Bounds {
    let float = |key: &str| object.get(key).and_then(Value::as_f64);
    let count = |key: &str| object.get(key).and_then(Value::as_u64);
    Bounds {
        minimum: float("minimum"),
        maximum: float("maximum"),
        exclusive_minimum: float("exclusiveMinimum"),
        exclusive_maximum: float("exclusiveMaximum"),
        multiple_of: float("multipleOf").filter(|step| *step > 0.0),
        min_length: count("minLength"),
        max_length: count("maxLength"),
        pattern: object
            .get("pattern")
            .and_then(Value::as_str)
            .and_then(|pattern| Some((pattern.to_owned(), regex::Regex::new(pattern).ok()?))),
        min_items: count("minItems"),
        max_items: count("maxItems"),
        width: (word == Some("integer"))
            .then(|| object.get("format").and_then(Value::as_str))
            .flatten()
            .and_then(format_range),
    }
}

/// The range of schemars' integer formats.
fn format_range(format: &str) -> Option<(f64, f64)> {
    Some(match format {
        "uint8" => (0.0, f64::from(u8::MAX)),
        "uint16" => (0.0, f64::from(u16::MAX)),
        "uint32" => (0.0, f64::from(u32::MAX)),
        "int8" => (f64::from(i8::MIN), f64::from(i8::MAX)),
        "int16" => (f64::from(i16::MIN), f64::from(i16::MAX)),
        "int32" => (f64::from(i32::MIN), f64::from(i32::MAX)),
        "uint64" | "uint" => (0.0, u64::MAX as f64),
        "int64" | "int" => (i64::MIN as f64, i64::MAX as f64),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn options_refs_and_documented_enums_resolve_into_one_view() {
        let model = Model::of(&json!({
            "type": "object",
            "properties": {
                "status": {"anyOf": [{"$ref": "#/$defs/Status"}, {"type": "null"}],
                           "description": "The status.", "default": "open"},
                "limit": {"type": ["integer", "null"], "format": "uint32", "minimum": 1},
                "tree": {"$ref": "#/$defs/Tree"},
                "map": {"type": "object", "additionalProperties": {"type": "integer"}},
                "either": {"oneOf": [{"type": "string", "const": "fast"}, {"type": "object"}]},
            },
            "required": ["tree"],
            "$defs": {
                "Status": {"oneOf": [
                    {"const": "open", "description": "Open."},
                    {"const": "closed", "description": "Done."},
                ]},
                "Tree": {"type": "object", "description": "A tree.",
                         "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}},
            },
        }));
        let fields = model.root_fields().unwrap();
        let field = |name: &str| fields.iter().find(|field| field.name == name).unwrap();
        let status = model.node(field("status").node);
        assert!(status.nullable);
        let Kind::Enum(variants) = &status.kind else {
            panic!("{status:?}")
        };
        assert_eq!(variants[1].value, "closed");
        assert_eq!(variants[1].doc.as_deref(), Some("Done."));
        assert_eq!(field("status").description.as_deref(), Some("The status."));
        assert_eq!(field("status").default, Some(json!("open")));
        let limit = model.node(field("limit").node);
        assert!(limit.nullable && matches!(limit.kind, Kind::Integer));
        assert_eq!(limit.bounds.width, Some((0.0, f64::from(u32::MAX))));
        assert!(limit.bounds.beyond_width());
        // A recursive type is a cycle.
        let tree = field("tree");
        assert!(tree.required);
        assert_eq!(tree.description.as_deref(), Some("A tree."));
        let Kind::Object { fields, .. } = &model.node(tree.node).kind else {
            panic!()
        };
        let Kind::Array { items } = model.node(fields[0].node).kind else {
            panic!()
        };
        assert_eq!(items, Some(tree.node));
        let map = model.node(field("map").node);
        assert!(matches!(
            map.kind,
            Kind::Object {
                additional: Additional::Values(_),
                ..
            }
        ));
        let either = field("either").node;
        assert!(matches!(model.node(either).kind, Kind::Union(_)));
        assert_eq!(model.unit_names(either), ["fast"]);
        assert_eq!(model.type_word(either), "object");
        assert_eq!(model.type_word(field("status").node), "string");
    }
}
