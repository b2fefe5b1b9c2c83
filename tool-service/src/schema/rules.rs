//! What an argument type's schema promises, applied to what an LLM sends:
//! the coercions that turn what an LLM writes into what the type takes,
//! the bounds the descriptions state, and error messages written for the
//! model.
//!
//! The rules read the [schema model](super) the descriptors are made of,
//! and word every bound with the descriptions' own
//! [phrases](super::phrase), so what the LLM is told and what is checked
//! cannot disagree.

use serde_json::{Map, Number, Value};

use super::{phrase, Additional, Bounds, Field, Kind, Model, ROOT};

/// The rules of one schema, compiled once per service.
#[derive(Debug)]
pub(crate) struct Rules {
    model: Model,
    /// For each node, whether it or a node below it states a bound the type
    /// does not enforce itself: a value that decoded is checked only there.
    bounded: Vec<bool>,
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

    /// The sentence for the model.
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
    /// the model does not understand get no rule, so they are neither
    /// coerced nor checked beyond what the type itself does.
    pub(crate) fn compile(schema: &Value) -> Self {
        let model = Model::of(schema);
        // What the type enforces itself (its variants, its integer width)
        // needs no second look at a value that decoded.
        let mut bounded: Vec<bool> = model
            .nodes()
            .iter()
            .map(|node| node.bounds.beyond_width())
            .collect();
        // Up from the bounded nodes to every node above them (a recursive
        // type is a cycle: until nothing changes).
        let mut changed = true;
        while changed {
            changed = false;
            for (index, node) in model.nodes().iter().enumerate() {
                if !bounded[index] && children(&node.kind).any(|child| bounded[child]) {
                    bounded[index] = true;
                    changed = true;
                }
            }
        }
        Self { model, bounded }
    }

    /// Whether a value that decoded must still be [checked](Self::check).
    pub(crate) fn checks(&self) -> bool {
        self.bounded[ROOT]
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
        let node = self.model.node(index);
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
            Kind::Object { fields, additional } => {
                let mut changed = false;
                if let Value::String(text) = value {
                    if let Some(parsed @ Value::Object(_)) = json_text(text, '{') {
                        *value = parsed;
                        changed = true;
                    }
                }
                // A map written as `key`/`value` pairs (the portable schema
                // flavour's form of a map).
                if let Additional::Values(values) = additional {
                    if let Some(map) = value.as_array().and_then(|pairs| pairs_map(pairs)) {
                        *value = Value::Object(map);
                        changed = true;
                    }
                    if let Value::Object(map) = value {
                        for entry in map.values_mut() {
                            changed |= self.coerce_at(*values, entry, depth + 1);
                        }
                    }
                    return changed;
                }
                let Value::Object(object) = value else {
                    return changed;
                };
                for field in fields {
                    let Some(given) = object.get_mut(&field.name) else {
                        continue;
                    };
                    if given.is_null() {
                        // `null` for what may be left out is left out.
                        if !field.required && !self.model.node(field.node).nullable {
                            object.remove(&field.name);
                            changed = true;
                        }
                        continue;
                    }
                    changed |= self.coerce_at(field.node, given, depth + 1);
                }
                changed
            }
            Kind::Enum(_) | Kind::Union(_) => match value {
                Value::String(text) => {
                    let names = self.model.unit_names(index);
                    if names.contains(&text.as_str()) {
                        return false;
                    }
                    match unique_variant(&names, text) {
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
        // Only a bound can break a value that decoded.
        if depth > MAX_DEPTH || !(kinds || self.bounded[index]) {
            return None;
        }
        let node = self.model.node(index);
        if value.is_null() {
            return (kinds && !node.nullable && !matches!(node.kind, Kind::Any))
                .then(|| self.violation(index, Some(value)));
        }
        let broken = || Some(self.violation(index, Some(value)));
        let bounds = &node.bounds;
        match (&node.kind, value) {
            (Kind::Any | Kind::Union(_), _) => None,
            (Kind::Boolean, Value::Bool(_)) => None,
            (Kind::Integer, Value::Number(number)) if is_integer(number) => {
                if number_in(bounds, number) {
                    return broken();
                }
                // Outside the type's width, within what the schema states
                // (a value that decoded is within it).
                if !kinds {
                    return None;
                }
                let (min, max) = bounds.width?;
                let wide = number.as_f64()?;
                (wide < min || wide > max).then(|| Violation {
                    path: String::new(),
                    expected: format!("an integer {}", phrase::width((min, max))),
                    got: Some(described(value)),
                })
            }
            (Kind::Number, Value::Number(number)) => {
                number_in(bounds, number).then(broken).flatten()
            }
            (Kind::String, Value::String(text)) => text_in(bounds, text).then(broken).flatten(),
            (Kind::Enum(variants), Value::String(text)) => (!variants
                .iter()
                .any(|variant| variant.value.as_str() == Some(text)))
            .then(broken)
            .flatten(),
            (Kind::Enum(variants), _) => {
                (!variants.iter().any(|variant| same(&variant.value, value)))
                    .then(broken)
                    .flatten()
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
            (Kind::Object { fields, .. }, Value::Object(object)) => {
                self.check_object(fields, object, depth, kinds)
            }
            _ if kinds => broken(),
            _ => None,
        }
    }

    fn check_object(
        &self,
        fields: &[Field],
        object: &Map<String, Value>,
        depth: usize,
        kinds: bool,
    ) -> Option<Violation> {
        fields.iter().find_map(|field| {
            let found = match object.get(&field.name) {
                Some(given) => self.check_at(field.node, given, depth + 1, kinds),
                None if kinds && field.required => Some(self.violation(field.node, None)),
                None => None,
            }?;
            Some(found.within(&field.name))
        })
    }

    fn violation(&self, index: usize, got: Option<&Value>) -> Violation {
        Violation {
            path: String::new(),
            expected: self.expected(index),
            got: got.map(described),
        }
    }

    /// What a node's values are, as a phrase: a noun and the bounds'
    /// phrases, as the descriptions word them.
    fn expected(&self, index: usize) -> String {
        let node = self.model.node(index);
        let bounds = &node.bounds;
        match &node.kind {
            Kind::Any | Kind::Union(_) => String::from("a value of another form"),
            Kind::Boolean => String::from("true or false"),
            Kind::Integer => numeric("an integer", bounds),
            Kind::Number => numeric("a number", bounds),
            Kind::String => {
                let mut phrase = String::from("a text");
                if let Some(length) = phrase::length(bounds) {
                    phrase.push_str(" of ");
                    phrase.push_str(&length);
                }
                if let Some(pattern) = phrase::pattern(bounds) {
                    phrase.push(' ');
                    phrase.push_str(&pattern);
                }
                phrase
            }
            Kind::Array { items } => {
                let mut phrase = String::from("a list");
                if let Some(count) = phrase::items(bounds) {
                    phrase.push_str(" of ");
                    phrase.push_str(&count);
                }
                if let Some(items) = items {
                    if !matches!(self.model.node(*items).kind, Kind::Any) {
                        phrase.push_str(", each ");
                        phrase.push_str(&self.expected(*items));
                    }
                }
                phrase
            }
            Kind::Object { .. } => String::from("an object"),
            Kind::Enum(variants) => {
                let listed: Vec<String> = variants
                    .iter()
                    .map(|variant| match &variant.value {
                        Value::String(text) => format!("`{text}`"),
                        other => format!("`{other}`"),
                    })
                    .collect();
                match listed.as_slice() {
                    [one] => one.clone(),
                    _ => format!("one of: {}", listed.join(", ")),
                }
            }
        }
    }
}

/// The nodes right below a node of this kind.
fn children(kind: &Kind) -> impl Iterator<Item = usize> + '_ {
    let (items, fields, additional, branches): (Option<usize>, &[Field], Option<usize>, &[usize]) =
        match kind {
            Kind::Array { items } => (*items, &[], None, &[]),
            Kind::Object { fields, additional } => (
                None,
                fields,
                match additional {
                    Additional::Values(values) => Some(*values),
                    _ => None,
                },
                &[],
            ),
            Kind::Union(branches) => (None, &[], None, branches),
            _ => (None, &[], None, &[]),
        };
    items
        .into_iter()
        .chain(fields.iter().map(|field| field.node))
        .chain(additional)
        .chain(branches.iter().copied())
}

/// `an integer from 1 to 50`, `a number of at least 0`, `an integer
/// greater than 0, a multiple of 5`.
fn numeric(noun: &str, bounds: &Bounds) -> String {
    let mut phrase = noun.to_owned();
    if let Some(range) = phrase::number_range(bounds) {
        phrase.push_str(if range.starts_with("at ") {
            " of "
        } else {
            " "
        });
        phrase.push_str(&range);
    }
    if let Some(multiple) = phrase::multiple(bounds) {
        phrase.push_str(", ");
        phrase.push_str(&multiple);
    }
    phrase
}

/// The map a list of `{"key": …, "value": …}` pairs writes; `None` unless
/// every item is such a pair with a text key, each key once.
fn pairs_map(pairs: &[Value]) -> Option<Map<String, Value>> {
    let mut map = Map::new();
    for pair in pairs {
        let pair = pair.as_object().filter(|pair| pair.len() == 2)?;
        let key = pair.get("key")?.as_str()?;
        let value = pair.get("value")?;
        if map.insert(key.to_owned(), value.clone()).is_some() {
            return None;
        }
    }
    Some(map)
}

/// Whether two JSON values are the same value (`1` and `1.0` are).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(a), Value::Number(b)) => a == b || a.as_f64() == b.as_f64(),
        _ => a == b,
    }
}

/// How deep rules reach into nested values (deeper ones get no rule).
const MAX_DEPTH: usize = 32;

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
fn unique_variant<'v>(variants: &[&'v str], text: &str) -> Option<&'v str> {
    let wanted = normalized(text);
    let mut matching = variants
        .iter()
        .filter(|variant| normalized(variant) == wanted);
    let first = matching.next()?;
    matching.next().is_none().then_some(*first)
}

fn normalized(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '-' | '_' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
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
            if shown.len() == text.len() {
                return format!("the text {shown:?}");
            }
            // Cut: its length, so that a model can tell how much to cut.
            let length = text.chars().count();
            format!("a text of {length} characters, {:?}", format!("{shown}…"))
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
    use crate::schema::STRICT;
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
        ] {
            assert_eq!(rules.check(&value).map(|v| v.message()).as_deref(), Some(message));
        }
        // A value that decoded is one of its variants: only a diagnosis
        // looks.
        let opened = json!({"query": "q", "limit": 1, "status": "Opened", "mode": "keyword"});
        assert_eq!(rules.check(&opened), None);
        assert_eq!(
            rules.diagnose(&opened).map(|v| v.message()).as_deref(),
            Some(
                "`status` must be one of: `open`, `in-progress`, `closed`; got the text \"Opened\""
            )
        );
        let width = Rules::compile(&json!({"type": "integer", "format": "uint8", "minimum": 0}));
        assert_eq!(
            width.diagnose(&json!(300)).map(|v| v.message()).as_deref(),
            Some("the arguments must be an integer from 0 to 255; got 300")
        );
        assert_eq!(
            width.diagnose(&json!(-1)).map(|v| v.message()).as_deref(),
            Some("the arguments must be an integer of at least 0; got -1")
        );
        assert_eq!(width.diagnose(&json!(255)), None);
        // What decoded is within the type's width: `check` looks no further.
        assert_eq!(width.check(&json!(300)), None);
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
                "`mode` must be one of: `keyword`, `semantic`, `keyword_semantic`; got the text \"fuzzy\"",
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
            message.ends_with(&format!(
                "got a text of 100 characters, \"{}…\"",
                "x".repeat(40)
            )),
            "{message}"
        );
        // Characters, not bytes.
        let message = rules
            .diagnose(&json!({"query": "é".repeat(81)}))
            .unwrap()
            .message();
        assert_eq!(
            message,
            format!(
                "`query` must be a text of 1 to 80 characters; got a text of 81 characters, \"{}…\"",
                "é".repeat(40)
            )
        );
    }

    /// For every bound a schema can state, the words the description uses
    /// are in the refusal of a value that breaks it.
    #[test]
    fn descriptions_and_refusals_word_every_bound_alike() {
        for (schema, broken) in [
            (json!({"type": "integer", "minimum": 1}), json!(0)),
            (json!({"type": "integer", "maximum": 5}), json!(6)),
            (
                json!({"type": "integer", "minimum": 1, "maximum": 5}),
                json!(9),
            ),
            (json!({"type": "number", "exclusiveMinimum": 0}), json!(0)),
            (json!({"type": "number", "exclusiveMaximum": 5}), json!(5)),
            (
                json!({"type": "number", "minimum": 0, "exclusiveMaximum": 1}),
                json!(1),
            ),
            (
                json!({"type": "number", "exclusiveMinimum": 0, "maximum": 1}),
                json!(0),
            ),
            (json!({"type": "integer", "multipleOf": 5}), json!(7)),
            (
                json!({"type": "number", "minimum": 0.5, "multipleOf": 0.25}),
                json!(0.6),
            ),
            (
                json!({"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255}),
                json!(300),
            ),
            (json!({"type": "string", "minLength": 2}), json!("a")),
            (json!({"type": "string", "maxLength": 1}), json!("ab")),
            (
                json!({"type": "string", "minLength": 1, "maxLength": 3}),
                json!(""),
            ),
            (
                json!({"type": "string", "minLength": 2, "maxLength": 2}),
                json!("a"),
            ),
            (json!({"type": "string", "pattern": "^[a-z]+$"}), json!("A")),
            (
                json!({"type": "array", "items": {"type": "string"}, "minItems": 1}),
                json!([]),
            ),
            (
                json!({"type": "array", "items": {"type": "string"}, "maxItems": 2}),
                json!(["a", "b", "c"]),
            ),
            (
                json!({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2}),
                json!([]),
            ),
            (
                json!({"type": "array", "items": {"type": "integer", "maximum": 3}}),
                json!([4]),
            ),
            (json!({"type": "string", "enum": ["a", "b"]}), json!("c")),
        ] {
            let root = json!({"type": "object", "properties": {"x": schema}, "required": ["x"]});
            let model = crate::schema::Model::of(&root);
            let field = &model.root_fields().unwrap()[0];
            let described = crate::schema::prose::prose(&model, field);
            let refusal = Rules::compile(&root)
                .diagnose(&json!({"x": broken}))
                .unwrap_or_else(|| panic!("{schema} takes {broken}"))
                .message();
            assert!(!described.is_empty(), "{schema}");
            for sentence in described.split(". ") {
                let clause = sentence.trim_end_matches('.');
                let mut chars = clause.chars();
                let clause: String = chars
                    .next()
                    .map(|first| first.to_lowercase().chain(chars).collect())
                    .unwrap_or_default();
                // The item type is a noun, not a bound (`a list of
                // strings`); an item's bounds follow it (`…, each at most
                // 3`) and are refused as the item is.
                let clause = match clause.split_once(", each ") {
                    Some((_, bounds)) => bounds.to_owned(),
                    None if clause.starts_with("a list of ") => continue,
                    None => clause,
                };
                assert!(
                    refusal.contains(&clause),
                    "{schema}: the description says {clause:?}, the refusal {refusal:?}"
                );
            }
        }
    }

    #[test]
    fn a_map_may_come_as_key_value_pairs() {
        let rules = Rules::compile(&json!({"type": "object", "properties": {
            "weights": {"type": "object", "additionalProperties": {"type": "integer", "maximum": 9}},
        }}));
        assert_eq!(
            coerced(
                &rules,
                json!({"weights": [{"key": "a", "value": "1"}, {"key": "b", "value": 2}]})
            ),
            json!({"weights": {"a": 1, "b": 2}})
        );
        // Not pairs, or a key twice: left as given.
        for given in [
            json!({"weights": [{"key": "a"}]}),
            json!({"weights": [{"key": "a", "value": 1}, {"key": "a", "value": 2}]}),
        ] {
            assert_eq!(coerced(&rules, given.clone()), given);
        }
        assert_eq!(
            coerced(&rules, json!({"weights": {"a": "3"}})),
            json!({"weights": {"a": 3}})
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
