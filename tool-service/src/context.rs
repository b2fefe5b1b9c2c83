//! What a handler may learn about the request it serves.

use std::sync::Arc;

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
    scopes: Option<Arc<[String]>>,
}

#[cfg(feature = "mcp")]
tokio::task_local! {
    /// The scopes an MCP caller's token grants, around its call's handler.
    static GRANTED: Arc<[String]>;
}

/// Runs `call` with `scopes` as the scopes its handler's context shows.
#[cfg(feature = "mcp")]
pub(crate) async fn with_granted<F: std::future::Future>(
    scopes: Option<Arc<[String]>>,
    call: F,
) -> F::Output {
    match scopes {
        Some(scopes) => GRANTED.scope(scopes, call).await,
        None => call.await,
    }
}

/// The scopes granted to the call being made here, if any.
pub(crate) fn granted() -> Option<Arc<[String]>> {
    #[cfg(feature = "mcp")]
    return GRANTED.try_with(Arc::clone).ok();
    #[cfg(not(feature = "mcp"))]
    None
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
            scopes: None,
        }
    }

    /// This context, for a caller whose token grants `scopes`.
    ///
    /// ```
    /// let ctx = tool_service::Context::new("req-1", Some("alice".into()), "tickets-service")
    ///     .with_scopes(["tickets:read"]);
    /// assert!(ctx.has_scope("tickets:read"));
    /// assert!(!ctx.has_scope("tickets:write"));
    /// ```
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Like [`Self::with_scopes`], shared.
    pub(crate) fn with_granted(mut self, scopes: Option<Arc<[String]>>) -> Self {
        self.scopes = scopes;
        self
    }

    /// The scopes the caller's access token grants: over MCP with OAuth
    /// authorization on. `None` where no token is checked per call: over
    /// Pulsar (where the broker's permissions decide who may send), over
    /// MCP without OAuth or with the static `--mcp-token`.
    ///
    /// ```
    /// let ctx = tool_service::Context::new("req-1", None, "tickets-service");
    /// assert_eq!(ctx.scopes(), None);
    /// let ctx = ctx.with_scopes(["tickets:read", "tickets:write"]);
    /// assert_eq!(ctx.scopes().unwrap().len(), 2);
    /// ```
    pub fn scopes(&self) -> Option<&[String]> {
        self.scopes.as_deref()
    }

    /// Whether the caller's access token grants `scope`. `false` where no
    /// token is checked per call (see [`Self::scopes`]): a privilege a
    /// handler grants by scope is never granted by default. The scopes the
    /// attribute names are checked before the handler runs; this is for
    /// what the handler decides itself.
    ///
    /// ```
    /// use tool_service::{tool_service, Context, ToolError};
    ///
    /// /// Close a ticket.
    /// ///
    /// /// # Arguments
    /// /// * `id` - The ticket's number.
    /// #[tool_service(topic = "close-ticket")]
    /// async fn close_ticket(id: u64, #[context] ctx: &Context) -> Result<String, ToolError> {
    ///     // The same on Pulsar (TrustGraph's `user`) and MCP (the token's subject).
    ///     if ctx.user() != Some("alice") && !ctx.has_scope("tickets:admin") {
    ///         return Err(ToolError::new("only alice or an admin may close tickets"));
    ///     }
    ///     Ok(format!("ticket {id} closed"))
    /// }
    /// ```
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes
            .as_ref()
            .is_some_and(|granted| granted.iter().any(|has| has == scope))
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
