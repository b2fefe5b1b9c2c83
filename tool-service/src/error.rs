//! The error half of a response frame, and how handler errors become one.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// An error as it travels in a response frame: `{"type": …, "message": …}`.
///
/// ```
/// use tool_service::ToolError;
///
/// let error = ToolError::new("no joke about that");
/// assert_eq!(error.kind(), "tool-service-error");
/// assert_eq!(
///     serde_json::to_string(&error).unwrap(),
///     r#"{"type":"tool-service-error","message":"no joke about that"}"#
/// );
/// ```
///
/// TrustGraph's agent reads only `message`; `type` tells people and metrics what
/// went wrong. The framework uses these types:
///
/// | type | when |
/// |---|---|
/// | `tool-service-error` | the handler returned an error ([`ToolError::DEFAULT_TYPE`]) |
/// | `invalid-request` | the request payload is not a JSON object of the request shape |
/// | `invalid-config` | `config` is not a JSON object the service's config type accepts |
/// | `invalid-arguments` | `arguments` is not a JSON object the service's argument type accepts |
/// | `handler-panic` | the handler panicked |
/// | `overloaded` | a replica's queue was full (non-persistent request topics) |
/// | `unavailable` | the replica was shutting down before the request started |
/// | `rate-limited` | the service was called more often than its rate limit (`rate = "100/s"`, `--rate`) allows; the message says when to try again |
/// | `timeout` | the handler ran past the service's timeout and was cancelled |
/// | `response-too-large` | a frame of the response would exceed the broker's maximum message size |
/// | `send-failed` | the broker did not take a frame of the response (sent in its place when possible) |
///
/// A handler's own error type may pick its type by implementing [`TypedError`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolError {
    #[serde(rename = "type")]
    kind: Cow<'static, str>,
    message: String,
}

impl ToolError {
    /// The type TrustGraph gives every tool-service error.
    pub const DEFAULT_TYPE: &'static str = "tool-service-error";
    /// Type of a payload that is not a request.
    pub const INVALID_REQUEST: &'static str = "invalid-request";
    /// Type of a `config` the service cannot decode.
    pub const INVALID_CONFIG: &'static str = "invalid-config";
    /// Type of `arguments` the service cannot decode.
    pub const INVALID_ARGUMENTS: &'static str = "invalid-arguments";
    /// Type of a handler that panicked.
    pub const HANDLER_PANIC: &'static str = "handler-panic";
    /// Type of a request refused because the replica's queue is full.
    pub const OVERLOADED: &'static str = "overloaded";
    /// Type of a request refused because the replica is shutting down.
    pub const UNAVAILABLE: &'static str = "unavailable";
    /// Type of a request refused because its service was called more often
    /// than its rate limit allows ([`crate::Rate`]).
    pub const RATE_LIMITED: &'static str = "rate-limited";
    /// Type of a request whose handler ran past its timeout.
    pub const TIMEOUT: &'static str = "timeout";
    /// Type of a response (or streamed chunk) too large for the broker: it
    /// replaces the frame that would not fit, and ends the response.
    pub const RESPONSE_TOO_LARGE: &'static str = "response-too-large";
    /// Type of the frame that ends a response when the broker did not take
    /// one of its frames (sent only if the broker takes this one).
    pub const SEND_FAILED: &'static str = "send-failed";
    /// The handler takes a `#[state]` value the registry was not given.
    pub const MISSING_STATE: &'static str = "missing-state";
    /// A caller whose scopes lack one the tool's service needs: in process
    /// ([`Registry::call_tool_as`](crate::Registry::call_tool_as)), and over
    /// MCP at the call (the port answers most such calls
    /// `403 insufficient_scope` before they reach it).
    pub const INSUFFICIENT_SCOPE: &'static str = "insufficient-scope";

    /// The refusal of a call whose caller's token lacks `missing`, scopes
    /// `tool` needs: one sentence wherever a call is checked.
    pub(crate) fn insufficient_scope(tool: &str, missing: &[&str]) -> Self {
        Self::with_type(
            Self::INSUFFICIENT_SCOPE,
            format!(
                "the caller's token lacks the scope {}, which the tool {tool} needs",
                missing.join(" and ")
            ),
        )
    }

    /// An error of the default type `tool-service-error`.
    ///
    /// ```
    /// let error = tool_service::ToolError::new("the knowledge base is offline");
    /// assert_eq!(error.message(), "the knowledge base is offline");
    /// ```
    pub fn new(message: impl Into<String>) -> Self {
        Self::with_type(Self::DEFAULT_TYPE, message)
    }

    /// An error of the given type.
    ///
    /// ```
    /// let error = tool_service::ToolError::with_type("rate-limited", "try again in 3 s");
    /// assert_eq!(error.kind(), "rate-limited");
    /// ```
    pub fn with_type(kind: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
        }
    }

    /// The error's `type`.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The error's `message`, the text TrustGraph's agent shows.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Shows the message only, as TrustGraph's client raises it.
impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

/// An error type that chooses the `type` of its error frames.
///
/// Any `E: Display` returned as `Err(E)` by a handler becomes an error of type
/// `tool-service-error` with `E`'s text as message. Implement this trait to
/// choose another type:
///
/// ```
/// use std::borrow::Cow;
///
/// #[derive(Debug, thiserror::Error)]
/// enum SearchError {
///     #[error("the index is being rebuilt")]
///     Unavailable,
///     #[error("no collection named {0}")]
///     UnknownCollection(String),
/// }
///
/// impl tool_service::TypedError for SearchError {
///     fn error_type(&self) -> Cow<'static, str> {
///         match self {
///             SearchError::Unavailable => "unavailable".into(),
///             SearchError::UnknownCollection(_) => "not-found".into(),
///         }
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be sent as a tool-service error",
    label = "this error type does not implement `Display`",
    note = "implement `std::fmt::Display` for `{Self}` (e.g. derive `thiserror::Error`), or return `tool_service::ToolError`"
)]
pub trait TypedError: fmt::Display {
    /// The `type` of the error frame for this error.
    fn error_type(&self) -> Cow<'static, str>;
}

impl TypedError for ToolError {
    fn error_type(&self) -> Cow<'static, str> {
        self.kind.clone()
    }
}

/// A boxed error keeps the type of a [`ToolError`] inside it, so a handler
/// that returns `Result<_, Box<dyn Error + Send + Sync>>` uses `?` on any
/// error and still answers `not-found` where it returned
/// `Err(ToolError::with_type("not-found", …).into())`; any other error is
/// `tool-service-error`.
impl TypedError for Box<dyn std::error::Error + Send + Sync> {
    fn error_type(&self) -> Cow<'static, str> {
        boxed_error_type(self.downcast_ref())
    }
}

/// As for `Box<dyn Error + Send + Sync>`.
impl TypedError for Box<dyn std::error::Error + Send> {
    fn error_type(&self) -> Cow<'static, str> {
        boxed_error_type(self.downcast_ref())
    }
}

/// As for `Box<dyn Error + Send + Sync>`.
impl TypedError for Box<dyn std::error::Error> {
    fn error_type(&self) -> Cow<'static, str> {
        boxed_error_type(self.downcast_ref())
    }
}

fn boxed_error_type(inner: Option<&ToolError>) -> Cow<'static, str> {
    inner.map_or(Cow::Borrowed(ToolError::DEFAULT_TYPE), |error| {
        error.kind.clone()
    })
}

impl<T: TypedError + ?Sized> TypedError for &T {
    fn error_type(&self) -> Cow<'static, str> {
        (**self).error_type()
    }
}

/// Turns a handler's `Err` value into a [`ToolError`], preferring
/// [`TypedError`] over plain `Display`. Resolved at the concrete type in
/// generated code by method probing on `&&&ErrorProbe(&error)`: the first
/// level that applies wins.
#[doc(hidden)]
pub struct ErrorProbe<'a, E: ?Sized>(pub &'a E);

impl<E: ?Sized> std::fmt::Debug for ErrorProbe<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ErrorProbe")
    }
}

#[doc(hidden)]
pub trait ViaTypedError {
    fn __tool_service_error(&self) -> ToolError;
}

impl<E: TypedError + ?Sized> ViaTypedError for &&ErrorProbe<'_, E> {
    fn __tool_service_error(&self) -> ToolError {
        ToolError::with_type(self.0.error_type(), self.0.to_string())
    }
}

#[doc(hidden)]
pub trait ViaDisplay {
    fn __tool_service_error(&self) -> ToolError;
}

impl<E: fmt::Display + ?Sized> ViaDisplay for &ErrorProbe<'_, E> {
    fn __tool_service_error(&self) -> ToolError {
        ToolError::new(self.0.to_string())
    }
}

/// Never used by a program that compiles: generated code also requires
/// `E: Display`, with the error on the user's return type. This level only
/// keeps the compiler from reporting the same mistake twice.
#[doc(hidden)]
pub trait ViaUnsupported {
    fn __tool_service_error(&self) -> ToolError;
}

impl<E: ?Sized> ViaUnsupported for ErrorProbe<'_, E> {
    fn __tool_service_error(&self) -> ToolError {
        ToolError::new("the tool failed")
    }
}

#[cfg(test)]
// The borrows choose the probing level; they are not needless.
#[allow(clippy::needless_borrow)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Plain;
    impl fmt::Display for Plain {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("plain failure")
        }
    }

    #[derive(Debug)]
    struct Typed;
    impl fmt::Display for Typed {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("typed failure")
        }
    }
    impl TypedError for Typed {
        fn error_type(&self) -> Cow<'static, str> {
            "my-type".into()
        }
    }

    #[test]
    fn display_errors_get_the_default_type() {
        let error = (&&&ErrorProbe(&Plain)).__tool_service_error();
        assert_eq!(error, ToolError::new("plain failure"));
        let error = (&&&ErrorProbe(&String::from("text"))).__tool_service_error();
        assert_eq!(error.kind(), "tool-service-error");
        assert_eq!(error.message(), "text");
    }

    #[test]
    fn typed_errors_choose_their_type() {
        let error = (&&&ErrorProbe(&Typed)).__tool_service_error();
        assert_eq!(error, ToolError::with_type("my-type", "typed failure"));
    }

    #[test]
    fn tool_errors_pass_through_unchanged() {
        let original = ToolError::with_type("rate-limited", "slow down");
        let error = (&&&ErrorProbe(&original)).__tool_service_error();
        assert_eq!(error, original);
    }

    #[test]
    fn serializes_in_trustgraph_shape() {
        let json = serde_json::to_value(ToolError::new("boom")).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "tool-service-error", "message": "boom"})
        );
    }
}
