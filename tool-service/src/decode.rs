//! Typed decoding of a request's `config` and `arguments` text, with error
//! messages that name the offending field and never repeat a secret.
//!
//! serde's messages quote values from the input. A config often holds
//! credentials, so its quoted values are withheld; an argument's are
//! shortened. What the message may show is decided by [`Part`], not by the
//! caller.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;
use crate::schema::rules::{Rules, Violation};

/// Which part of a request is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// The tool's `config`: preset by the operator, often with credentials.
    Config,
    /// The LLM's `arguments`.
    Arguments,
}

impl Part {
    /// The field's name on the wire, as messages say it.
    fn name(self) -> &'static str {
        match self {
            Part::Config => "config",
            Part::Arguments => "arguments",
        }
    }

    /// The error type of a value that does not decode.
    fn error_type(self) -> &'static str {
        match self {
            Part::Config => ToolError::INVALID_CONFIG,
            Part::Arguments => ToolError::INVALID_ARGUMENTS,
        }
    }

    /// How much of a quoted value an error message shows, for requests.
    fn quoted(self) -> Quoted {
        match self {
            Part::Config => Quoted::Withheld,
            Part::Arguments => Quoted::Shortened,
        }
    }
}

/// How much of each value serde quotes from the input an error message keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quoted {
    /// None of it (`…`).
    Withheld,
    /// Its first [`QUOTED_ARGUMENT`] characters.
    Shortened,
}

impl Quoted {
    fn keep(self) -> usize {
        match self {
            Quoted::Withheld => 0,
            Quoted::Shortened => QUOTED_ARGUMENT,
        }
    }
}

/// Decodes `config` or `arguments` text of a request into the handler's
/// type. The error names the offending field. Values quoted by the decoder
/// are withheld for `config` (it often holds credentials) and shortened for
/// `arguments`.
pub(crate) fn decode<T: DeserializeOwned>(text: &str, part: Part) -> Result<T, ToolError> {
    decode_showing::<T>(text, part, part.quoted())
}

/// [`decode`], showing quoted values as `quoted` says.
pub(crate) fn decode_showing<T: DeserializeOwned>(
    text: &str,
    part: Part,
    quoted: Quoted,
) -> Result<T, ToolError> {
    // A JSON object's text starts with `{` (after whitespace, rarely).
    if !(text.starts_with('{') || text.trim_start().starts_with('{')) {
        return Err(not_an_object(part, quoted));
    }
    // The hot path decodes without tracking the path; only a failure is
    // decoded again, with tracking, to name the offending field.
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(error) => Err(explain::<T>(text, part, quoted, &error)),
    }
}

/// Decodes the LLM's `arguments` text into the handler's type under
/// `rules`: strictly first (the hot path); a text the type refuses is
/// coerced as the rules allow (when `tolerant`) and decoded again. A value
/// that breaks a bound the schema states is refused too. Errors name the
/// argument, the rule and what was given, in words for the model.
pub(crate) fn decode_arguments<T: DeserializeOwned>(
    text: &str,
    rules: &Rules,
    tolerant: bool,
) -> Result<T, ToolError> {
    let part = Part::Arguments;
    if !(text.starts_with('{') || text.trim_start().starts_with('{')) {
        return Err(not_an_object(part, part.quoted()));
    }
    match serde_json::from_str::<T>(text) {
        Ok(typed) if !rules.checks() => Ok(typed),
        Ok(typed) => match serde_json::from_str::<Value>(text) {
            Ok(value) => match rules.check(&value) {
                None => Ok(typed),
                Some(violation) => Err(violated(&violation)),
            },
            // Not reached: text the type took is JSON.
            Err(error) => Err(invalid(part, part.quoted(), error.to_string())),
        },
        Err(error) => second_look::<T>(text, rules, tolerant, &error),
    }
}

/// What the strict decoder refused: coerced and decoded again, or
/// explained.
#[cold]
#[inline(never)]
fn second_look<T: DeserializeOwned>(
    text: &str,
    rules: &Rules,
    tolerant: bool,
    error: &serde_json::Error,
) -> Result<T, ToolError> {
    let part = Part::Arguments;
    if !error.is_data() {
        return Err(invalid(part, part.quoted(), error.to_string()));
    }
    let Ok(mut value) = serde_json::from_str::<Value>(text) else {
        return Err(explain::<T>(text, part, part.quoted(), error));
    };
    if tolerant && rules.coerce(&mut value) {
        if let Ok(typed) = T::deserialize(&value) {
            return match rules.check(&value) {
                None => Ok(typed),
                Some(violation) => Err(violated(&violation)),
            };
        }
    }
    Err(match rules.diagnose(&value) {
        Some(violation) => violated(&violation),
        None => explain::<T>(text, part, part.quoted(), error),
    })
}

/// The error of arguments that break a rule.
fn violated(violation: &Violation) -> ToolError {
    ToolError::with_type(
        ToolError::INVALID_ARGUMENTS,
        format!("invalid arguments: {}", violation.message()),
    )
}

/// The error of a `config` or `arguments` text that is not a JSON object.
#[cold]
fn not_an_object(part: Part, quoted: Quoted) -> ToolError {
    let what = part.name();
    invalid(part, quoted, format!("`{what}` must hold a JSON object"))
}

/// The error of a text that did not decode as a `T`: a syntax error as
/// serde_json reports it, a data error with the path of the offending field
/// (found by decoding again, tracking the path).
#[cold]
#[inline(never)]
fn explain<T: DeserializeOwned>(
    text: &str,
    part: Part,
    quoted: Quoted,
    error: &serde_json::Error,
) -> ToolError {
    if !error.is_data() {
        return invalid(part, quoted, error.to_string());
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    match serde_path_to_error::deserialize::<_, T>(&mut deserializer) {
        Err(error) => {
            let path = error.path().to_string();
            let inner = error.into_inner();
            if path == "." {
                invalid(part, quoted, inner.to_string())
            } else {
                let path = shorten(&path, MAX_PATH);
                invalid(part, quoted, format!("field `{path}`: {inner}"))
            }
        }
        // Not reached: what the plain decoder refused as data, the tracking
        // one refuses too.
        Ok(_) => invalid(part, quoted, error.to_string()),
    }
}

/// An error of `part` with serde's `message`, its quoted values cut as
/// `quoted` says.
fn invalid(part: Part, quoted: Quoted, message: String) -> ToolError {
    // A position in the text means nothing to the model that wrote it.
    let message = match part {
        Part::Arguments => without_position(&message),
        Part::Config => &message,
    };
    ToolError::with_type(
        part.error_type(),
        format!(
            "invalid {}: {}",
            part.name(),
            withhold_values(message, quoted.keep())
        ),
    )
}

/// `message` without serde_json's ` at line L column C` at its end.
fn without_position(message: &str) -> &str {
    let Some((before, position)) = message.rsplit_once(" at line ") else {
        return message;
    };
    let numbers = position
        .split_once(" column ")
        .is_some_and(|(line, column)| {
            [line, column]
                .iter()
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
    if numbers {
        before
    } else {
        message
    }
}

/// Characters of a quoted argument value an error message keeps.
const QUOTED_ARGUMENT: usize = 40;
/// Characters of a field path an error message keeps.
const MAX_PATH: usize = 120;
/// Characters of a decode error message, at most.
const MAX_MESSAGE: usize = 600;

/// The phrases in which serde quotes a value from the input, and the text
/// that ends the value.
const QUOTING: [(&str, &str); 7] = [
    ("string \"", "\""),
    ("integer `", "`"),
    ("floating point `", "`"),
    ("boolean `", "`"),
    ("character `", "`"),
    ("unknown variant `", "`, expected"),
    ("unknown field `", "`, expected"),
];

/// `message` with every value serde quoted from the input cut to `keep`
/// characters (`…` marks a cut), and the whole cut to [`MAX_MESSAGE`].
fn withhold_values(message: &str, keep: usize) -> String {
    let mut out = String::with_capacity(message.len().min(MAX_MESSAGE));
    let mut rest = message;
    while let Some((start, (opening, closing))) = QUOTING
        .iter()
        .filter_map(|quote| rest.find(quote.0).map(|at| (at, *quote)))
        .min_by_key(|(at, _)| *at)
    {
        let value_at = start + opening.len();
        out.push_str(&rest[..value_at]);
        let value_and_more = &rest[value_at..];
        // The value ends at the last closing mark before the next quoted
        // phrase (a value may itself contain the mark).
        let end = match closing {
            "\"" => find_string_end(value_and_more),
            _ => value_and_more.find(closing),
        }
        .unwrap_or(value_and_more.len());
        out.push_str(&shorten(&value_and_more[..end], keep));
        rest = &value_and_more[end..];
    }
    out.push_str(rest);
    shorten(&out, MAX_MESSAGE)
}

/// The index of the quote that ends a Rust-`Debug`-escaped string.
fn find_string_end(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(at),
            _ => {}
        }
    }
    None
}

/// The first `keep` characters of `text`, with `…` when cut.
fn shorten(text: &str, keep: usize) -> String {
    match text.char_indices().nth(keep) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Args {
        topic: String,
        #[serde(default)]
        count: Option<u32>,
        nested: Option<Inner>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        depth: u8,
    }

    fn args_error(text: &str) -> String {
        let error = decode::<Args>(text, Part::Arguments).unwrap_err();
        assert_eq!(error.kind(), ToolError::INVALID_ARGUMENTS);
        error.message().to_owned()
    }

    #[test]
    fn decodes_objects() {
        let args: Args = decode(r#"{"topic": "food", "extra": 1}"#, Part::Arguments).unwrap();
        assert_eq!(args.topic, "food");
        assert_eq!(args.count, None);
    }

    #[test]
    fn errors_name_the_field() {
        let message = args_error(r#"{"topic": 5}"#);
        assert!(
            message.starts_with("invalid arguments: field `topic`: invalid type: integer `5`"),
            "{message}"
        );
        let message = args_error(r#"{"topic": "x", "nested": {"depth": 300}}"#);
        assert!(message.contains("field `nested.depth`"), "{message}");
        let message = args_error(r#"{}"#);
        assert!(message.contains("missing field `topic`"), "{message}");
    }

    #[test]
    fn rejects_non_objects_and_trailing_text() {
        assert!(args_error(r#"["food"]"#).contains("must hold a JSON object"));
        assert!(args_error("not json").contains("must hold a JSON object"));
        assert!(args_error(r#"{"topic": "x"} trailing"#).contains("trailing characters"));
        assert!(args_error(r#"{"topic": "#).contains("EOF"));
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Config {
        api_key: String,
        retries: Option<u8>,
        mode: Option<Mode>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Fast,
    }

    fn config_error(text: &str) -> String {
        let error = decode::<Config>(text, Part::Config).unwrap_err();
        error.message().to_owned()
    }

    #[test]
    fn config_values_never_reach_the_message() {
        let secret = "sk-live-0123456789abcdef";
        for (config, expected) in [
            (
                format!(r#"{{"api_key": 12345, "x": "{secret}"}}"#),
                "invalid config: field `api_key`: invalid type: integer `…`, expected a string at line 1 column 17",
            ),
            (
                format!(r#"{{"api_key": "k", "retries": "{secret}"}}"#),
                "invalid config: field `retries`: invalid type: string \"…\", expected u8 at line 1 column 54",
            ),
            (
                format!(r#"{{"api_key": "k", "mode": "{secret}"}}"#),
                "invalid config: field `mode`: unknown variant `…`, expected `fast` at line 1 column 51",
            ),
            (
                String::from(r#"{"api_key": "k", "retries": 300}"#),
                "invalid config: field `retries`: invalid value: integer `…`, expected u8 at line 1 column 31",
            ),
            (
                format!(r#"{{"retries": 1, "other": "{secret}"}}"#),
                "invalid config: missing field `api_key` at line 1 column 51",
            ),
        ] {
            let message = config_error(&config);
            assert_eq!(message, expected);
            assert!(!message.contains(secret));
        }
    }

    #[test]
    fn quoted_argument_values_are_shortened() {
        let long = "S".repeat(2_000);
        let message = args_error(&format!(r#"{{"topic": "{long}", "count": "{long}"}}"#));
        assert!(message.len() < 200, "{message}");
        assert!(
            message.starts_with(&format!(
                "invalid arguments: field `count`: invalid type: string \"{}…\", expected u32",
                "S".repeat(40)
            )),
            "{message}"
        );
        // Short values stay whole, and so do escaped quotes inside them.
        let message = args_error(r#"{"topic": "x", "count": "a\"b"}"#);
        assert!(
            message.contains(r#"invalid type: string "a\"b", expected u32"#),
            "{message}"
        );
    }

    #[test]
    fn withholding_leaves_other_text_alone() {
        assert_eq!(
            withhold_values("missing field `topic`", 0),
            "missing field `topic`"
        );
        assert_eq!(
            withhold_values("invalid type: boolean `true`, expected a string", 0),
            "invalid type: boolean `…`, expected a string"
        );
        assert_eq!(
            withhold_values("unknown field `é`, expected `a`", 5),
            "unknown field `é`, expected `a`"
        );
        assert_eq!(shorten("ééé", 2), "éé…");
        assert_eq!(
            withhold_values(&"x".repeat(1_000), 0).chars().count(),
            MAX_MESSAGE + 1
        );
    }
}

/// What LLMs send, through a generated handler: the path Pulsar, MCP and
/// `call` share.
#[cfg(test)]
mod what_llms_send {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use crate::wire::Request;
    use crate::{error::ToolError, registry::Registry};

    /// How a search matches.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        /// Words as written.
        Keyword,
        /// Words and their meaning.
        KeywordSemantic,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    struct Search {
        /// How many results.
        #[schemars(range(min = 1, max = 50))]
        limit: u32,
        /// Whole words only.
        exact: Option<bool>,
        /// Only results with these tags.
        tags: Option<Vec<String>>,
        /// How to match.
        #[serde(default)]
        mode: Option<Mode>,
        /// A ticket code.
        #[schemars(regex(pattern = r"^[A-Z]{3}-\d+$"))]
        code: Option<String>,
        /// An account number, which must arrive as a number.
        #[schemars(extend("x-tool-service-strict" = true))]
        account: Option<u64>,
    }

    /// Searches.
    #[crate::tool_service(topic = "decode-tests-search")]
    async fn search(#[args] search: Search) -> String {
        let _account = search.account;
        format!(
            "{} {:?} {:?} {:?} {:?}",
            search.limit, search.exact, search.tags, search.mode, search.code
        )
    }

    /// Searches, taking the arguments only as their types say.
    #[crate::tool_service(topic = "decode-tests-strict", strict)]
    async fn strict_search(#[args] search: Search) -> String {
        format!("{}", search.limit)
    }

    async fn call(tool: &str, arguments: serde_json::Value) -> Result<String, ToolError> {
        let registry = Registry::collect().unwrap();
        let frames = registry
            .call(tool, "id", Request::new(json!({}), arguments))
            .await
            .unwrap();
        let last = frames.into_iter().last().unwrap();
        match last.error {
            None => Ok(last.response),
            Some(error) => Err(error),
        }
    }

    #[tokio::test]
    async fn the_everyday_variants_are_answered() {
        for (arguments, expected) in [
            (json!({"limit": "5"}), "5 None None None None"),
            (json!({"limit": 5.0}), "5 None None None None"),
            (
                json!({"limit": 5, "exact": "true"}),
                "5 Some(true) None None None",
            ),
            (
                json!({"limit": 5, "tags": "[\"a\", \"b\"]"}),
                r#"5 None Some(["a", "b"]) None None"#,
            ),
            (
                json!({"limit": 5, "tags": "a"}),
                r#"5 None Some(["a"]) None None"#,
            ),
            (
                json!({"limit": 5, "mode": "Keyword-Semantic"}),
                "5 None None Some(KeywordSemantic) None",
            ),
            (
                json!({"limit": 5, "mode": null, "exact": null}),
                "5 None None None None",
            ),
            (json!({"limit": 5, "unknown": 1}), "5 None None None None"),
        ] {
            assert_eq!(
                call("search", arguments.clone()).await.as_deref(),
                Ok(expected),
                "{arguments}"
            );
        }
    }

    #[tokio::test]
    async fn lossy_variants_and_broken_bounds_are_refused_in_words() {
        for (arguments, message) in [
            (json!({"limit": "5.5"}), "`limit` must be an integer from 1 to 50; got the text \"5.5\""),
            (json!({"limit": 500}), "`limit` must be an integer from 1 to 50; got 500"),
            (json!({"limit": "500"}), "`limit` must be an integer from 1 to 50; got 500"),
            (json!({"limit": 0}), "`limit` must be an integer from 1 to 50; got 0"),
            (
                json!({"limit": 5, "mode": "fuzzy"}),
                "`mode` must be one of: `keyword`, `keyword_semantic`; got the text \"fuzzy\"",
            ),
            (json!({"limit": 5, "exact": "yes"}), "`exact` must be true or false; got the text \"yes\""),
            (
                json!({"limit": 5, "code": "abc-1"}),
                "`code` must be a text matching the pattern `^[A-Z]{3}-\\d+$`; got the text \"abc-1\"",
            ),
            (json!({}), "`limit` is missing; it must be an integer from 1 to 50"),
        ] {
            let error = call("search", arguments.clone()).await.unwrap_err();
            assert_eq!(error.kind(), ToolError::INVALID_ARGUMENTS);
            assert_eq!(error.message(), format!("invalid arguments: {message}"), "{arguments}");
        }
        assert_eq!(
            call("search", json!({"limit": 5, "code": "ABC-12"}))
                .await
                .as_deref(),
            Ok("5 None None None Some(\"ABC-12\")")
        );
    }

    #[tokio::test]
    async fn a_strict_argument_is_not_coerced() {
        assert!(call("search", json!({"limit": 5, "account": 7}))
            .await
            .is_ok());
        let error = call("search", json!({"limit": "5", "account": "7"}))
            .await
            .unwrap_err();
        assert_eq!(
            error.message(),
            "invalid arguments: `account` must be an integer of at least 0; got the text \"7\""
        );
    }

    #[tokio::test]
    async fn a_strict_service_takes_only_what_its_types_say_and_still_checks_bounds() {
        assert_eq!(
            call("strict-search", json!({"limit": 5})).await.as_deref(),
            Ok("5")
        );
        let error = call("strict-search", json!({"limit": "5"}))
            .await
            .unwrap_err();
        assert_eq!(
            error.message(),
            "invalid arguments: `limit` must be an integer from 1 to 50; got the text \"5\""
        );
        let error = call("strict-search", json!({"limit": 51}))
            .await
            .unwrap_err();
        assert_eq!(
            error.message(),
            "invalid arguments: `limit` must be an integer from 1 to 50; got 51"
        );
    }
}
