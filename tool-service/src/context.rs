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

tokio::task_local! {
    /// The scopes an MCP caller's token (or an in-process [`Caller`]'s)
    /// grants, around its call's handler.
    static GRANTED: Arc<[String]>;
}

/// Runs `call` with `scopes` as the scopes its handler's context shows.
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
    GRANTED.try_with(Arc::clone).ok()
}

/// Who an in-process call comes from ([`Registry::call_tool_as`](crate::Registry::call_tool_as)): a user,
/// and the scopes an OAuth access token would grant. A test calls a tool
/// as each kind of caller without a server or an issuer.
///
/// Scopes are held to a service's `scopes = [...]` as the MCP port holds
/// an OAuth caller's: [`Caller::with_scopes`] is such a caller, and a call
/// of a tool whose scopes it lacks is refused. A caller without scopes is
/// one of Pulsar's (or of MCP without OAuth): nothing is checked, and
/// `ctx.scopes()` is `None`.
///
/// ```
/// use serde_json::json;
/// use tool_service::{tool_service, Caller, Context, Registry, ToolError};
///
/// /// Close a ticket.
/// ///
/// /// # Arguments
/// /// * `id` - The ticket.
/// #[tool_service(topic = "caller-close", scopes = ["tickets:write"])]
/// async fn close(id: u32, #[context] ctx: &Context) -> Result<String, ToolError> {
///     let who = ctx.user().ok_or_else(|| ToolError::new("sign in to close tickets"))?;
///     Ok(format!("{who} closed #{id}"))
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let registry = Registry::collect().unwrap();
/// let args = json!({"id": 7});
/// let writer = Caller::user("alice").with_scopes(["tickets:read", "tickets:write"]);
/// assert_eq!(registry.call_tool_as("close", args.clone(), &writer).await.unwrap(), "alice closed #7");
///
/// let reader = Caller::user("bob").with_scopes(["tickets:read"]);
/// let refused = registry.call_tool_as("close", args.clone(), &reader).await.unwrap_err();
/// assert_eq!(refused.kind(), ToolError::INSUFFICIENT_SCOPE);
/// assert_eq!(refused.message(), "the caller's token lacks the scope tickets:write, which the tool close needs");
///
/// // No user (TrustGraph's agent): the handler's own answer.
/// let anonymous = registry.call_tool_as("close", args, &Caller::anonymous()).await.unwrap_err();
/// assert_eq!(anonymous.message(), "sign in to close tickets");
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    pub(crate) user: Option<String>,
    pub(crate) scopes: Option<Arc<[String]>>,
}

impl Caller {
    /// A caller with no user and no token: TrustGraph's agent, on either
    /// route.
    pub fn anonymous() -> Self {
        Self::default()
    }

    /// A caller named `user` (`ctx.user()`), with no token.
    pub fn user(user: impl Into<String>) -> Self {
        Self {
            user: Some(user.into()),
            scopes: None,
        }
    }

    /// This caller, with an OAuth access token that grants `scopes`.
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// The scopes of `needed` this caller lacks: none for a caller without
    /// a token.
    pub(crate) fn missing<'a>(&self, needed: &[&'a str]) -> Vec<&'a str> {
        match &self.scopes {
            None => Vec::new(),
            Some(granted) => needed
                .iter()
                .copied()
                .filter(|scope| !granted.iter().any(|has| has == scope))
                .collect(),
        }
    }
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
