//! How a handler's value becomes the `response` text of a frame.
//!
//! TrustGraph sends `response if isinstance(response, str) else
//! json.dumps(response)`. Here: a value that serializes to a JSON string (a
//! `String`, `&str`, `char`, a newtype around one, a unit enum variant) is sent
//! as that string, unquoted; `()` is sent as the empty string; anything else is
//! sent as its JSON text.

use std::fmt;

use serde::ser::{self, Impossible, Serialize};

use crate::error::ToolError;

/// The `response` text for a handler's value.
///
/// ```
/// use tool_service::response_text;
///
/// assert_eq!(response_text(&"plain text").unwrap(), "plain text");
/// assert_eq!(response_text(&vec![1, 2, 3]).unwrap(), "[1,2,3]");
/// assert_eq!(response_text(&serde_json::json!({"n": 1})).unwrap(), r#"{"n":1}"#);
/// assert_eq!(response_text(&()).unwrap(), "");
/// ```
///
/// # Errors
/// A value whose `Serialize` implementation fails (for example a map with
/// non-string keys) gives a [`ToolError`] of the default type.
pub fn response_text<T: Serialize + ?Sized>(value: &T) -> Result<String, ToolError> {
    match value.serialize(TextProbe) {
        Ok(text) => Ok(text),
        Err(NotText) => serde_json::to_string(value).map_err(|error| {
            ToolError::new(format!(
                "the tool's result cannot be encoded as JSON: {error}"
            ))
        }),
    }
}

/// The `response` text of a handler's value, moving a `String` instead of
/// copying it (the common case), else as [`response_text`].
pub fn text_of<T: serde::Serialize + 'static>(value: T) -> Result<String, ToolError> {
    let mut slot = Some(value);
    if let Some(text) = (&mut slot as &mut dyn std::any::Any).downcast_mut::<Option<String>>() {
        return Ok(text.take().unwrap_or_default());
    }
    match &slot {
        Some(value) => response_text(value),
        None => Ok(String::new()),
    }
}

/// A serializer that succeeds only for values whose JSON form is a string (or
/// unit), without building any JSON.
struct TextProbe;

#[derive(Debug)]
struct NotText;

impl fmt::Display for NotText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a string")
    }
}

impl std::error::Error for NotText {}

impl ser::Error for NotText {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        NotText
    }
}

macro_rules! not_text {
    ($($method:ident($($arg:ty),*);)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<String, NotText> { Err(NotText) })*
    };
}

impl ser::Serializer for TextProbe {
    type Ok = String;
    type Error = NotText;
    type SerializeSeq = Impossible<String, NotText>;
    type SerializeTuple = Impossible<String, NotText>;
    type SerializeTupleStruct = Impossible<String, NotText>;
    type SerializeTupleVariant = Impossible<String, NotText>;
    type SerializeMap = Impossible<String, NotText>;
    type SerializeStruct = Impossible<String, NotText>;
    type SerializeStructVariant = Impossible<String, NotText>;

    fn serialize_str(self, v: &str) -> Result<String, NotText> {
        Ok(v.to_owned())
    }
    fn serialize_char(self, v: char) -> Result<String, NotText> {
        Ok(v.to_string())
    }
    fn serialize_unit(self) -> Result<String, NotText> {
        Ok(String::new())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<String, NotText> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<String, NotText> {
        value.serialize(self)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<String, NotText> {
        value.serialize(self)
    }

    not_text! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_i128(i128);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_u128(u128);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit_struct(&'static str);
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<String, NotText> {
        Err(NotText)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, NotText> {
        Err(NotText)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, NotText> {
        Err(NotText)
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, NotText> {
        Err(NotText)
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, NotText> {
        Err(NotText)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, NotText> {
        Err(NotText)
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, NotText> {
        Err(NotText)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, NotText> {
        Err(NotText)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use std::collections::BTreeMap;

    #[derive(Serialize)]
    struct Name(String);

    #[derive(Serialize)]
    #[serde(rename_all = "kebab-case")]
    enum Mood {
        DadJoke,
    }

    #[derive(Serialize)]
    struct Hit {
        title: String,
        score: f32,
    }

    #[test]
    fn strings_are_sent_as_is() {
        assert_eq!(
            response_text("a \"quoted\" pun").unwrap(),
            "a \"quoted\" pun"
        );
        assert_eq!(response_text(&String::from("x")).unwrap(), "x");
        assert_eq!(response_text(&'c').unwrap(), "c");
        assert_eq!(response_text(&Name("n".into())).unwrap(), "n");
        assert_eq!(response_text(&Some("s")).unwrap(), "s");
        assert_eq!(response_text(&Mood::DadJoke).unwrap(), "dad-joke");
        assert_eq!(response_text(&serde_json::json!("v")).unwrap(), "v");
    }

    #[test]
    fn other_values_are_sent_as_json_text() {
        assert_eq!(response_text(&42).unwrap(), "42");
        assert_eq!(response_text(&true).unwrap(), "true");
        assert_eq!(response_text(&None::<String>).unwrap(), "null");
        assert_eq!(
            response_text(&Hit {
                title: "t".into(),
                score: 0.5
            })
            .unwrap(),
            r#"{"title":"t","score":0.5}"#
        );
        assert_eq!(response_text(&vec!["a", "b"]).unwrap(), r#"["a","b"]"#);
    }

    #[test]
    fn unit_is_the_empty_response() {
        assert_eq!(response_text(&()).unwrap(), "");
    }

    #[test]
    fn text_of_moves_strings_and_serializes_the_rest() {
        assert_eq!(text_of(String::from("moved")).unwrap(), "moved");
        assert_eq!(text_of("borrowed").unwrap(), "borrowed");
        assert_eq!(text_of(vec![1, 2]).unwrap(), "[1,2]");
        assert_eq!(text_of(()).unwrap(), "");
    }

    #[test]
    fn unencodable_values_are_errors() {
        let mut map = BTreeMap::new();
        map.insert(vec![1u8], 1);
        let error = response_text(&map).unwrap_err();
        assert_eq!(error.kind(), ToolError::DEFAULT_TYPE);
        assert!(error
            .message()
            .starts_with("the tool's result cannot be encoded as JSON"));
    }
}
