//! What an argument type's JSON schema promises, compiled once per service
//! into rules that decoding applies: the coercions that turn what an LLM
//! writes into what the type takes, the bounds the descriptions state, and
//! error messages written for the model.
//!
//! The rules come from the very schema the descriptors are made of, so what
//! the LLM is told and what is checked cannot disagree.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

/// Compiled rules of one schema.
#[derive(Debug)]
pub(crate) struct Rules {
    nodes: Vec<Node>,
    /// Whether any node states a bound, so that a value that decoded must
    /// still be checked.
    checks: bool,
}

/// The root node's index.
const ROOT: usize = 0;

/// The schema keyword that turns coercion off for one argument (and what
/// it holds): `#[schemars(extend("x-tool-service-strict" = true))]`.
pub(crate) const STRICT: &str = "x-tool-service-strict";

#[derive(Debug, Default)]
struct Node {
    kind: Kind,
    /// Whether `null` is a value of this schema.
    nullable: bool,
    /// No coercion here or below ([`STRICT`]).
    strict: bool,
    bounds: Bounds,
}

#[derive(Debug, Default)]
enum Kind {
    /// No rule: anything the type takes.
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
        properties: Vec<Property>,
    },
    /// One of these strings (a unit-only enum).
    Variants(Vec<String>),
    /// An enum with these unit variants and others that carry data: a
    /// string is coerced to a unit variant, nothing is checked.
    Mixed(Vec<String>),
}

#[derive(Debug)]
struct Property {
    name: String,
    node: usize,
    required: bool,
}

#[derive(Debug, Default)]
struct Bounds {
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
    multiple_of: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    pattern: Option<(String, regex::Regex)>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    /// The range of a fixed-width integer type (which serde enforces too),
    /// said only to a value outside it.
    width: Option<(f64, f64)>,
}

impl Bounds {
    fn is_empty(&self) -> bool {
        self.minimum.is_none()
            && self.maximum.is_none()
            && self.exclusive_minimum.is_none()
            && self.exclusive_maximum.is_none()
            && self.multiple_of.is_none()
            && self.min_length.is_none()
            && self.max_length.is_none()
            && self.pattern.is_none()
            && self.min_items.is_none()
            && self.max_items.is_none()
    }
}

/// Why a value breaks the rules: where, what it must be, and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    /// The argument's path (`limit`, `filter.tags[1]`), empty for the root.
    pub(crate) path: String,
    /// What the value must be, as a phrase (`an integer from 1 to 50`).
    pub(crate) expected: String,
    /// The value as given, described (`the text "abc"`), or `None` when the
    /// argument is missing.
    pub(crate) got: Option<String>,
}

impl Violation {
    /// This violation, found in the field `name` (or the item `[n]`) of the
    /// value it was found in.
    fn within(mut self, segment: &str) -> Self {
        self.path = match (self.path.is_empty(), self.path.starts_with('[')) {
            (true, _) | (false, true) => format!("{segment}{}", self.path),
            (false, false) => format!("{segment}.{}", self.path),
        };
        self
    }

    /// The sentence for the model, quoting at most `keep` characters of a
    /// text value (none: withheld).
    pub(crate) fn message(&self) -> String {
        let name = if self.path.is_empty() {
            String::from("the arguments")
        } else {
            format!("`{}`", self.path)
        };
        match &self.got {
            Some(got) => format!("{name} must be {}; got {got}", self.expected),
            None => format!("{name} is missing; it must be {}", self.expected),
        }
    }
}

impl Rules {
    /// The rules of `schema` (a schemars root: `$defs` and `$ref`s). Parts
    /// it does not understand get no rule, so they are neither coerced nor
    /// checked beyond what the type itself does.
    pub(crate) fn compile(schema: &Value) -> Self {
        let mut compiler = Compiler {
            root: schema,
            nodes: vec![Node::default()],
            refs: HashMap::new(),
        };
        compiler.fill(ROOT, schema, 0);
        // What the type enforces itself (its variants, its integer width)
        // needs no second look at a value that decoded.
        let checks = compiler.nodes.iter().any(|node| !node.bounds.is_empty());
        Self {
            nodes: compiler.nodes,
            checks,
        }
    }

    /// Whether a value that decoded must still be [checked](Self::check).
    pub(crate) fn checks(&self) -> bool {
        self.checks
    }

    /// Turns what an LLM commonly writes into what the schema takes, where
    /// that loses nothing: numbers from numeric text, integers from
    /// integral floats, booleans from `"true"`/`"false"`, lists and objects
    /// from their JSON text, a single value for a list, a variant written
    /// in another case or with `-`, `_` or spaces, and `null` for an
    /// argument that may be left out. Returns whether anything changed.
    pub(crate) fn coerce(&self, value: &mut Value) -> bool {
        self.coerce_at(ROOT, value, 0)
    }

    /// The first value that breaks a bound (or is not a variant); `None`
    /// when every value keeps the rules.
    pub(crate) fn check(&self, value: &Value) -> Option<Violation> {
        self.check_at(ROOT, value, 0, false)
    }

    /// Why `value` does not decode, as far as the rules can tell: the first
    /// value of the wrong kind, a missing argument, or a broken bound.
    pub(crate) fn diagnose(&self, value: &Value) -> Option<Violation> {
        self.check_at(ROOT, value, 0, true)
    }

    fn coerce_at(&self, index: usize, value: &mut Value, depth: usize) -> bool {
        if depth > MAX_DEPTH || value.is_null() {
            return false;
        }
        let node = &self.nodes[index];
        if node.strict {
            return false;
        }
        match &node.kind {
            Kind::Any => false,
            Kind::Boolean => {
                let flag = value.as_str().and_then(boolean).map(Value::Bool);
                replace(value, flag)
            }
            Kind::Integer => {
                let number = integer(value).map(Value::Number);
                replace(value, number)
            }
            Kind::Number => {
                let number = value.as_str().and_then(number).map(Value::Number);
                replace(value, number)
            }
            Kind::String => false,
            Kind::Array { items } => {
                let mut changed = false;
                if let Value::String(text) = value {
                    if let Some(parsed @ Value::Array(_)) = json_text(text, '[') {
                        *value = parsed;
                        changed = true;
                    }
                }
                if !value.is_array() {
                    *value = Value::Array(vec![value.take()]);
                    changed = true;
                }
                if let (Some(items), Value::Array(values)) = (items, value) {
                    for item in values {
                        changed |= self.coerce_at(*items, item, depth + 1);
                    }
                }
                changed
            }
            Kind::Object { properties } => {
                let mut changed = false;
                if let Value::String(text) = value {
                    if let Some(parsed @ Value::Object(_)) = json_text(text, '{') {
                        *value = parsed;
                        changed = true;
                    }
                }
                let Value::Object(object) = value else {
                    return changed;
                };
                for property in properties {
                    let Some(field) = object.get_mut(&property.name) else {
                        continue;
                    };
                    if field.is_null() {
                        // `null` for what may be left out is left out.
                        if !property.required && !self.nodes[property.node].nullable {
                            object.remove(&property.name);
                            changed = true;
                        }
                        continue;
                    }
                    changed |= self.coerce_at(property.node, field, depth + 1);
                }
                changed
            }
            Kind::Variants(variants) | Kind::Mixed(variants) => match value {
                Value::String(text) if !variants.iter().any(|variant| variant == text) => {
                    match unique_variant(variants, text) {
                        Some(variant) => {
                            *value = Value::String(variant.to_owned());
                            true
                        }
                        None => false,
                    }
                }
                _ => false,
            },
        }
    }

    /// `kinds`: also report values of the wrong kind and missing arguments
    /// (what the type refused), not only broken bounds. A violation's path
    /// is relative to `value`, and made only when there is one.
    fn check_at(
        &self,
        index: usize,
        value: &Value,
        depth: usize,
        kinds: bool,
    ) -> Option<Violation> {
        if depth > MAX_DEPTH {
            return None;
        }
        let node = &self.nodes[index];
        if value.is_null() {
            return (kinds && !node.nullable && !matches!(node.kind, Kind::Any))
                .then(|| self.violation(index, Some(value)));
        }
        let broken = || Some(self.violation(index, Some(value)));
        let bounds = &node.bounds;
        match (&node.kind, value) {
            (Kind::Any | Kind::Mixed(_), _) => None,
            (Kind::Boolean, Value::Bool(_)) => None,
            (Kind::Integer, Value::Number(number)) if is_integer(number) => {
                if let Some((min, max)) = bounds.width.filter(|&(min, max)| {
                    number
                        .as_f64()
                        .is_some_and(|value| value < min || value > max)
                }) {
                    return Some(Violation {
                        path: String::new(),
                        expected: format!("an integer from {} to {}", figure(min), figure(max)),
                        got: Some(described(value)),
                    });
                }
                number_in(bounds, number).then(broken).flatten()
            }
            (Kind::Number, Value::Number(number)) => {
                number_in(bounds, number).then(broken).flatten()
            }
            (Kind::String, Value::String(text)) => text_in(bounds, text).then(broken).flatten(),
            (Kind::Variants(variants), Value::String(text)) => {
                (!variants.contains(text)).then(broken).flatten()
            }
            (Kind::Array { items }, Value::Array(values)) => {
                let count = values.len() as u64;
                if bounds.min_items.is_some_and(|min| count < min)
                    || bounds.max_items.is_some_and(|max| count > max)
                {
                    return broken();
                }
                let items = (*items)?;
                values.iter().enumerate().find_map(|(at, item)| {
                    let found = self.check_at(items, item, depth + 1, kinds)?;
                    Some(found.within(&format!("[{at}]")))
                })
            }
            (Kind::Object { properties }, Value::Object(object)) => {
                self.check_object(properties, object, depth, kinds)
            }
            _ if kinds => broken(),
            _ => None,
        }
    }

    fn check_object(
        &self,
        properties: &[Property],
        object: &Map<String, Value>,
        depth: usize,
        kinds: bool,
    ) -> Option<Violation> {
        properties.iter().find_map(|property| {
            let found = match object.get(&property.name) {
                Some(field) => self.check_at(property.node, field, depth + 1, kinds),
                None if kinds && property.required => Some(self.violation(property.node, None)),
                None => None,
            }?;
            Some(found.within(&property.name))
        })
    }

    fn violation(&self, index: usize, got: Option<&Value>) -> Violation {
        Violation {
            path: String::new(),
            expected: self.expected(index),
            got: got.map(described),
        }
    }

    /// What a node's values are, as a phrase.
    fn expected(&self, index: usize) -> String {
        let node = &self.nodes[index];
        let bounds = &node.bounds;
        match &node.kind {
            Kind::Any | Kind::Mixed(_) => String::from("a value of another form"),
            Kind::Boolean => String::from("true or false"),
            Kind::Integer => format!("an integer{}", range(bounds)),
            Kind::Number => format!("a number{}", range(bounds)),
            Kind::String => {
                let mut phrase = String::from("a text");
                phrase.push_str(&count_range(
                    bounds.min_length,
                    bounds.max_length,
                    "character",
                ));
                if let Some((pattern, _)) = &bounds.pattern {
                    let _ = write!(phrase, " matching the pattern `{pattern}`");
                }
                phrase
            }
            Kind::Array { items } => {
                let mut phrase = String::from("a list");
                phrase.push_str(&count_range(bounds.min_items, bounds.max_items, "item"));
                if let Some(items) = items {
                    if !matches!(self.nodes[*items].kind, Kind::Any) {
                        let _ = write!(phrase, ", each {}", self.expected(*items));
                    }
                }
                phrase
            }
            Kind::Object { .. } => String::from("an object"),
            Kind::Variants(variants) => {
                let listed: Vec<String> = variants
                    .iter()
                    .map(|variant| format!("`{variant}`"))
                    .collect();
                match listed.as_slice() {
                    [one] => one.clone(),
                    _ => format!("one of {}", listed.join(", ")),
                }
            }
        }
    }
}

/// How deep rules reach into nested values (deeper ones get no rule).
const MAX_DEPTH: usize = 32;

struct Compiler<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    /// Nodes of `$ref`s already compiled (or being compiled).
    refs: HashMap<&'a str, usize>,
}

impl<'a> Compiler<'a> {
    fn add(&mut self, schema: &'a Value, depth: usize) -> usize {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            if schema.as_object().is_some_and(|object| {
                object
                    .keys()
                    .all(|key| matches!(key.as_str(), "$ref" | "description" | "title" | "default"))
            }) {
                if let Some(&index) = self.refs.get(reference) {
                    return index;
                }
                let index = self.nodes.len();
                self.nodes.push(Node::default());
                self.refs.insert(reference, index);
                if let Some(target) = self.resolve(reference) {
                    self.fill(index, target, depth + 1);
                }
                return index;
            }
        }
        let index = self.nodes.len();
        self.nodes.push(Node::default());
        self.fill(index, schema, depth + 1);
        index
    }

    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }

    fn fill(&mut self, index: usize, schema: &'a Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let Some(object) = schema.as_object() else {
            return;
        };
        if object.get(STRICT) == Some(&Value::Bool(true)) {
            self.nodes[index].strict = true;
        }
        // A `$ref` beside other keywords: the target's rules.
        if let Some(target) = object
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| self.resolve(reference))
        {
            self.fill(index, target, depth + 1);
            return;
        }
        // `Option<T>`: `anyOf: [T, {"type": "null"}]` (or `oneOf`).
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(alternatives)) = object.get(key) else {
                continue;
            };
            let (nulls, others): (Vec<&Value>, Vec<&Value>) = alternatives
                .iter()
                .partition(|alternative| alternative.get("type") == Some(&Value::from("null")));
            if let Some(variants) = variant_list(&others) {
                self.nodes[index].kind = Kind::Variants(variants);
                self.nodes[index].nullable = !nulls.is_empty();
                return;
            }
            if let ([one], false) = (others.as_slice(), nulls.is_empty()) {
                self.fill(index, one, depth + 1);
                self.nodes[index].nullable = true;
                return;
            }
            let units: Vec<String> = others
                .iter()
                .filter_map(|alternative| alternative.get("const")?.as_str().map(str::to_owned))
                .collect();
            if !units.is_empty() {
                self.nodes[index].kind = Kind::Mixed(units);
                self.nodes[index].nullable = !nulls.is_empty();
            }
            return;
        }
        let (kind_name, nullable) = match object.get("type") {
            Some(Value::String(kind)) => (Some(kind.as_str()), false),
            Some(Value::Array(kinds)) => {
                let named: Vec<&str> = kinds
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|kind| *kind != "null")
                    .collect();
                let nullable = named.len() < kinds.len();
                match named.as_slice() {
                    [one] => (Some(*one), nullable),
                    _ => (None, nullable),
                }
            }
            _ => (None, false),
        };
        self.nodes[index].nullable = nullable;
        if let Some(Value::Array(values)) = object.get("enum") {
            let strings: Option<Vec<String>> = values
                .iter()
                .filter(|value| !value.is_null())
                .map(|value| value.as_str().map(str::to_owned))
                .collect();
            if let Some(strings) = strings.filter(|strings| !strings.is_empty()) {
                self.nodes[index].kind = Kind::Variants(strings);
                self.nodes[index].nullable |= values.iter().any(Value::is_null);
                return;
            }
        }
        if let Some(Value::String(constant)) = object.get("const") {
            self.nodes[index].kind = Kind::Variants(vec![constant.clone()]);
            return;
        }
        let bounds = bounds(object, kind_name);
        let kind = match kind_name {
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
            Some("object") => {
                let required: Vec<&str> = object
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|names| names.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let properties = object
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|properties| {
                        properties
                            .iter()
                            .map(|(name, schema)| Property {
                                name: name.clone(),
                                node: self.add(schema, depth),
                                required: required.contains(&name.as_str()),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                Kind::Object { properties }
            }
            _ => Kind::Any,
        };
        let node = &mut self.nodes[index];
        node.kind = kind;
        node.bounds = bounds;
    }
}

/// The strings of alternatives that are each one string constant (a
/// unit-only enum with documented variants).
fn variant_list(alternatives: &[&Value]) -> Option<Vec<String>> {
    if alternatives.is_empty() {
        return None;
    }
    let mut variants = Vec::new();
    for alternative in alternatives {
        match (alternative.get("const"), alternative.get("enum")) {
            (Some(Value::String(constant)), _) => variants.push(constant.clone()),
            (None, Some(Value::Array(values))) => {
                for value in values {
                    variants.push(value.as_str()?.to_owned());
                }
            }
            _ => return None,
        }
    }
    Some(variants)
}

fn bounds(object: &Map<String, Value>, kind: Option<&str>) -> Bounds {
    let float = |key: &str| object.get(key).and_then(Value::as_f64);
    let count = |key: &str| object.get(key).and_then(Value::as_u64);
    let mut bounds = Bounds {
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
        width: None,
    };
    if kind == Some("integer") {
        bounds.width = object
            .get("format")
            .and_then(Value::as_str)
            .and_then(format_range);
        // schemars states an unsigned type's `minimum: 0`: the width says it.
        if let Some((min, max)) = bounds.width {
            bounds.minimum = bounds.minimum.filter(|&given| given > min);
            bounds.maximum = bounds.maximum.filter(|&given| given < max);
        }
    }
    bounds
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

/// Whether `number` is outside `bounds` (the check is on `f64`, which holds
/// every bound the schema can state).
fn number_in(bounds: &Bounds, number: &Number) -> bool {
    let Some(value) = number.as_f64() else {
        return false;
    };
    bounds.minimum.is_some_and(|min| value < min)
        || bounds.maximum.is_some_and(|max| value > max)
        || bounds.exclusive_minimum.is_some_and(|min| value <= min)
        || bounds.exclusive_maximum.is_some_and(|max| value >= max)
        || bounds.multiple_of.is_some_and(|step| {
            let quotient = value / step;
            (quotient - quotient.round()).abs() > 1e-9
        })
}

/// Whether `text` is outside `bounds`.
fn text_in(bounds: &Bounds, text: &str) -> bool {
    let needs_count = bounds.min_length.is_some() || bounds.max_length.is_some();
    let count = if needs_count {
        text.chars().count() as u64
    } else {
        0
    };
    bounds.min_length.is_some_and(|min| count < min)
        || bounds.max_length.is_some_and(|max| count > max)
        || bounds
            .pattern
            .as_ref()
            .is_some_and(|(_, pattern)| !pattern.is_match(text))
}

fn is_integer(number: &Number) -> bool {
    number.is_i64() || number.is_u64()
}

/// Puts `coerced` in place of `value`, if there is one; whether it did.
fn replace(value: &mut Value, coerced: Option<Value>) -> bool {
    match coerced {
        Some(coerced) => {
            *value = coerced;
            true
        }
        None => false,
    }
}

/// An integer from numeric text or an integral float; `None` when that
/// would lose something (a fraction, a value out of range).
fn integer(value: &Value) -> Option<Number> {
    match value {
        Value::Number(number) if !is_integer(number) => integral(number.as_f64()?),
        Value::String(text) => {
            let text = text.trim();
            if let Ok(integer) = text.parse::<i64>() {
                return Some(integer.into());
            }
            if let Ok(integer) = text.parse::<u64>() {
                return Some(integer.into());
            }
            integral(text.parse::<f64>().ok()?)
        }
        _ => None,
    }
}

/// `float` as an integer, if it is one that `i64` or `u64` holds exactly.
fn integral(float: f64) -> Option<Number> {
    const TWO_TO_63: f64 = 9_223_372_036_854_775_808.0;
    if !float.is_finite() || float.fract() != 0.0 {
        return None;
    }
    if (-TWO_TO_63..TWO_TO_63).contains(&float) {
        Some((float as i64).into())
    } else if (0.0..2.0 * TWO_TO_63).contains(&float) {
        Some((float as u64).into())
    } else {
        None
    }
}

/// A finite number from numeric text.
fn number(text: &str) -> Option<Number> {
    let text = text.trim();
    if let Ok(integer) = text.parse::<i64>() {
        return Some(integer.into());
    }
    Number::from_f64(text.parse::<f64>().ok().filter(|float| float.is_finite())?)
}

/// `true`/`false` written as text, in any case.
fn boolean(text: &str) -> Option<bool> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("true") {
        Some(true)
    } else if text.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// The JSON value `text` holds, when it starts with `opening`.
fn json_text(text: &str, opening: char) -> Option<Value> {
    if !text.trim_start().starts_with(opening) {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// The one variant `text` names when case and `-`, `_` and spaces are
/// ignored; `None` when none or several do.
fn unique_variant<'v>(variants: &'v [String], text: &str) -> Option<&'v str> {
    let wanted = normalized(text);
    let mut matching = variants
        .iter()
        .filter(|variant| normalized(variant) == wanted);
    let first = matching.next()?;
    matching.next().is_none().then_some(first.as_str())
}

fn normalized(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '-' | '_' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// ` from 1 to 50`, ` of at least 0`, ` greater than 0`, …; empty
/// without bounds.
fn range(bounds: &Bounds) -> String {
    let low = bounds
        .minimum
        .map(|min| (min, false))
        .or(bounds.exclusive_minimum.map(|min| (min, true)));
    let high = bounds
        .maximum
        .map(|max| (max, false))
        .or(bounds.exclusive_maximum.map(|max| (max, true)));
    let mut phrase = match (low, high) {
        (Some((min, false)), Some((max, false))) => {
            format!(" from {} to {}", figure(min), figure(max))
        }
        (low, high) => {
            let mut parts = Vec::new();
            match low {
                Some((min, false)) => parts.push(format!("at least {}", figure(min))),
                Some((min, true)) => parts.push(format!("greater than {}", figure(min))),
                None => {}
            }
            match high {
                Some((max, false)) => parts.push(format!("at most {}", figure(max))),
                Some((max, true)) => parts.push(format!("less than {}", figure(max))),
                None => {}
            }
            match parts.first() {
                None => String::new(),
                Some(first) if first.starts_with("at ") => format!(" of {}", parts.join(" and ")),
                Some(_) => format!(" {}", parts.join(" and ")),
            }
        }
    };
    if let Some(step) = bounds.multiple_of {
        let _ = write!(phrase, ", a multiple of {}", figure(step));
    }
    phrase
}

/// ` of 1 to 5 items`, ` of at most 80 characters`, …; empty without bounds.
fn count_range(min: Option<u64>, max: Option<u64>, unit: &str) -> String {
    let units = |n: u64| {
        if n == 1 {
            unit.to_owned()
        } else {
            format!("{unit}s")
        }
    };
    match (min, max) {
        (Some(min), Some(max)) if min == max => format!(" of exactly {min} {}", units(max)),
        (Some(min), Some(max)) => format!(" of {min} to {max} {}", units(max)),
        (Some(min), None) => format!(" of at least {min} {}", units(min)),
        (None, Some(max)) => format!(" of at most {max} {}", units(max)),
        (None, None) => String::new(),
    }
}

/// A bound as people write it: `50`, not `50.0`.
fn figure(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// Characters of a text value an error message quotes.
const QUOTED: usize = 40;

/// A value as an error message describes what was given.
fn described(value: &Value) -> String {
    match value {
        Value::Null => String::from("null"),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        Value::String(text) => {
            let shown: String = text.chars().take(QUOTED).collect();
            let cut = if shown.len() < text.len() { "…" } else { "" };
            format!("the text {:?}", format!("{shown}{cut}"))
        }
        Value::Array(values) => match values.len() {
            1 => String::from("a list of 1 item"),
            count => format!("a list of {count} items"),
        },
        Value::Object(_) => String::from("an object"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Arguments like an LLM-facing search tool's.
    fn search() -> Rules {
        Rules::compile(&json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 80},
                "limit": {"type": "integer", "format": "uint32", "minimum": 1, "maximum": 50},
                "offset": {"type": "integer", "format": "uint32", "minimum": 0, "default": 0},
                "exact": {"type": ["boolean", "null"]},
                "score": {"type": "number", "exclusiveMinimum": 0},
                "tags": {"type": ["array", "null"], "items": {"type": "string"}, "maxItems": 3},
                "mode": {"$ref": "#/$defs/Mode"},
                "status": {"anyOf": [{"$ref": "#/$defs/Status"}, {"type": "null"}]},
                "filter": {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}},
            },
            "required": ["query", "limit", "mode"],
            "$defs": {
                "Mode": {"type": "string", "enum": ["keyword", "semantic", "keyword_semantic"]},
                "Status": {"oneOf": [
                    {"const": "open", "description": "Open."},
                    {"const": "in-progress", "description": "Being worked on."},
                    {"const": "closed", "description": "Done."},
                ]},
            },
        }))
    }

    fn coerced(rules: &Rules, mut value: Value) -> Value {
        rules.coerce(&mut value);
        value
    }

    #[test]
    fn what_llms_write_is_turned_into_what_the_schema_takes() {
        let rules = search();
        let value = coerced(
            &rules,
            json!({
                "query": "rust",
                "limit": "5",
                "offset": 10.0,
                "exact": "True",
                "score": " 0.5 ",
                "tags": "[\"a\", \"b\"]",
                "mode": "Keyword-Semantic",
                "status": "IN PROGRESS",
                "filter": "{\"code\": \"ABC\"}",
            }),
        );
        assert_eq!(
            value,
            json!({
                "query": "rust",
                "limit": 5,
                "offset": 10,
                "exact": true,
                "score": 0.5,
                "tags": ["a", "b"],
                "mode": "keyword_semantic",
                "status": "in-progress",
                "filter": {"code": "ABC"},
            })
        );
        assert_eq!(rules.check(&value), None);
        let value = coerced(&rules, json!({"tags": "a", "offset": null, "exact": null}));
        assert_eq!(value, json!({"tags": ["a"], "exact": null}));
        assert_eq!(
            coerced(&rules, json!({"limit": "-7"})),
            json!({"limit": -7})
        );
        assert_eq!(
            coerced(&rules, json!({"limit": "5.0"})),
            json!({"limit": 5})
        );
        assert_eq!(
            coerced(&rules, json!({"limit": "18446744073709551615"})),
            json!({"limit": u64::MAX})
        );
    }

    #[test]
    fn nothing_lossy_is_coerced() {
        let rules = search();
        for lossy in [
            json!({"limit": "5.5"}),
            json!({"limit": 5.5}),
            json!({"limit": "five"}),
            json!({"limit": "1e400"}),
            json!({"limit": true}),
            json!({"exact": "yes"}),
            json!({"exact": 1}),
            json!({"score": "NaN"}),
            json!({"score": "inf"}),
            json!({"mode": "key"}),
            json!({"query": 5}),
            json!({"filter": "{not json"}),
        ] {
            assert_eq!(coerced(&rules, lossy.clone()), lossy);
        }
        // Two variants that differ only in case are told apart exactly.
        let rules = Rules::compile(&json!({"type": "string", "enum": ["a_b", "A-B", "c"]}));
        assert_eq!(coerced(&rules, json!("ab")), json!("ab"));
        assert_eq!(coerced(&rules, json!("C")), json!("c"));
        assert_eq!(coerced(&rules, json!("A-B")), json!("A-B"));
    }

    #[test]
    fn bounds_the_schema_states_are_checked() {
        let rules = search();
        let ok = json!({"query": "q", "limit": 50, "mode": "keyword"});
        assert_eq!(rules.check(&ok), None);
        for (value, message) in [
            (
                json!({"query": "q", "limit": 500, "mode": "keyword"}),
                "`limit` must be an integer from 1 to 50; got 500",
            ),
            (
                json!({"query": "", "limit": 1, "mode": "keyword"}),
                "`query` must be a text of 1 to 80 characters; got the text \"\"",
            ),
            (
                json!({"query": "q", "limit": 1, "score": 0}),
                "`score` must be a number greater than 0; got 0",
            ),
            (
                json!({"query": "q", "limit": 1, "tags": ["a", "b", "c", "d"]}),
                "`tags` must be a list of at most 3 items, each a text; got a list of 4 items",
            ),
            (
                json!({"query": "q", "limit": 1, "filter": {"code": "abcd"}}),
                "`filter.code` must be a text matching the pattern `^[A-Z]{3}$`; got the text \"abcd\"",
            ),
            (
                json!({"query": "q", "limit": 1, "status": "Opened"}),
                "`status` must be one of `open`, `in-progress`, `closed`; got the text \"Opened\"",
            ),
        ] {
            assert_eq!(rules.check(&value).map(|v| v.message()).as_deref(), Some(message));
        }
        let width = Rules::compile(&json!({"type": "integer", "format": "uint8", "minimum": 0}));
        assert_eq!(
            width.check(&json!(300)).map(|v| v.message()).as_deref(),
            Some("the arguments must be an integer from 0 to 255; got 300")
        );
        assert_eq!(
            width.check(&json!(-1)).map(|v| v.message()).as_deref(),
            Some("the arguments must be an integer from 0 to 255; got -1")
        );
        assert_eq!(width.check(&json!(255)), None);
        assert!(rules.checks());
        assert!(!width.checks(), "the type enforces its own width");
        assert!(!Rules::compile(
            &json!({"type": "object", "properties": {"a": {"type": "string"}}})
        )
        .checks());
    }

    #[test]
    fn diagnosis_names_the_argument_the_rule_and_what_was_given() {
        let rules = search();
        for (value, message) in [
            (
                json!({"query": "q", "limit": "abc", "mode": "keyword"}),
                "`limit` must be an integer from 1 to 50; got the text \"abc\"",
            ),
            (
                json!({"query": "q", "limit": 5.5, "mode": "keyword"}),
                "`limit` must be an integer from 1 to 50; got 5.5",
            ),
            (
                json!({"query": "q", "mode": "keyword"}),
                "`limit` is missing; it must be an integer from 1 to 50",
            ),
            (
                json!({"query": "q", "limit": 1, "mode": "fuzzy"}),
                "`mode` must be one of `keyword`, `semantic`, `keyword_semantic`; got the text \"fuzzy\"",
            ),
            (
                json!({"query": "q", "limit": 1, "mode": "keyword", "tags": [1]}),
                "`tags[0]` must be a text; got 1",
            ),
            (
                json!({"query": "q", "limit": 1, "mode": "keyword", "exact": "yes"}),
                "`exact` must be true or false; got the text \"yes\"",
            ),
            (json!([1]), "the arguments must be an object; got a list of 1 item"),
        ] {
            assert_eq!(rules.diagnose(&value).map(|v| v.message()).as_deref(), Some(message));
        }
        let long = "x".repeat(100);
        let message = rules
            .diagnose(&json!({"query": "q", "limit": long}))
            .unwrap()
            .message();
        assert!(
            message.ends_with(&format!("got the text \"{}…\"", "x".repeat(40))),
            "{message}"
        );
    }

    #[test]
    fn one_argument_can_be_strict() {
        let rules = Rules::compile(&json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer", STRICT: true},
                "count": {"type": "integer"},
                "ids": {"type": "array", "items": {"type": "integer"}, STRICT: true},
            },
        }));
        assert_eq!(
            coerced(&rules, json!({"id": "7", "count": "7", "ids": "7"})),
            json!({"id": "7", "count": 7, "ids": "7"})
        );
    }

    #[test]
    fn recursive_and_unknown_schemas_compile() {
        let rules = Rules::compile(&json!({
            "$ref": "#/$defs/Tree",
            "$defs": {"Tree": {"type": "object", "properties": {
                "depth": {"type": "integer", "maximum": 3},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
            }}},
        }));
        let mut value = json!({"children": [{"depth": "2", "children": "{\"depth\": 9}"}]});
        rules.coerce(&mut value);
        assert_eq!(
            value,
            json!({"children": [{"depth": 2, "children": [{"depth": 9}]}]})
        );
        assert_eq!(
            rules.check(&value).map(|v| v.message()).as_deref(),
            Some("`children[0].children[0].depth` must be an integer of at most 3; got 9")
        );
        // An enum with unit and data variants: a unit variant's name is
        // coerced, nothing is checked.
        let rules = Rules::compile(&json!({"oneOf": [
            {"type": "string", "const": "fast"},
            {"type": "object", "properties": {"deep": {"type": "integer"}}, "required": ["deep"]},
        ]}));
        assert_eq!(coerced(&rules, json!("FAST")), json!("fast"));
        assert_eq!(coerced(&rules, json!({"deep": 1})), json!({"deep": 1}));
        assert_eq!(rules.diagnose(&json!("slow")), None);
        let rules = Rules::compile(&json!({"oneOf": [{"type": "object"}, {"type": "string"}]}));
        let mut value = json!("x");
        assert!(!rules.coerce(&mut value));
        assert_eq!(rules.diagnose(&value), None);
        let rules = Rules::compile(&json!(true));
        assert_eq!(rules.diagnose(&json!(5)), None);
    }
}
