//! What a handler may learn about the request it serves.

/// The request context, given to a handler that asks for it with `#[context]`.
///
/// ```
/// use tool_service::{tool_service, Context};
///
/// /// Say who is asking.
/// #[tool_service(topic = "whoami")]
/// async fn whoami(#[context] ctx: &Context) -> String {
///     format!("{} asked {} (request {})", ctx.user().unwrap_or("someone"), ctx.service_id(), ctx.request_id())
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    request_id: String,
    user: Option<String>,
    service_id: &'static str,
}

impl Context {
    /// A context for calling a handler directly, e.g. in a unit test.
    ///
    /// ```
    /// let ctx = tool_service::Context::new("req-1", Some("alice".into()), "joke-service");
    /// assert_eq!(ctx.user(), Some("alice"));
    /// ```
    pub fn new(
        request_id: impl Into<String>,
        user: Option<String>,
        service_id: &'static str,
    ) -> Self {
        Self {
            request_id: request_id.into(),
            user,
            service_id,
        }
    }

    /// The correlation id of the request (`unknown` when the caller sent none).
    pub fn request_id(&self) -> &str {
        &self.request_id
    }

    /// The calling user, when the request carried a non-empty `user`.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// The id of the service handling the request.
    pub fn service_id(&self) -> &'static str {
        self.service_id
    }
}
