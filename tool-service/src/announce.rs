//! Announcing services to TrustGraph's config service, and withdrawing
//! them: the agent then offers their tools with no hand-edited config and
//! no restart.
//!
//! Two routes reach the agent. By default the `tool` items name our
//! `tool-service` items, and the agent calls the services over Pulsar.
//! [`Announcement::over_mcp`] announces `mcp-tool` tools instead, each with
//! an `mcp` item that points TrustGraph's `mcp-tool` processor at our MCP
//! server (`serve --mcp-listen`, `mcp --listen`): the route that works with
//! TrustGraph 2.11.1's agent as released, on any of its pub/sub backends.
//!
//! ```no_run
//! use tool_service::announce::{self, Announcement, OnClash};
//! use tool_service::broker::BrokerOptions;
//!
//! # async fn demo(registry: tool_service::Registry) -> Result<(), Box<dyn std::error::Error>> {
//! let pulsar = BrokerOptions::new("pulsar://127.0.0.1:6650").connect().await?;
//! let announcement = Announcement::new(&registry, &[])?;
//! let announced = announce::announce(&pulsar, &announcement, announce::DEFAULT_TIMEOUT, OnClash::Refuse).await?;
//! println!("{announced}");
//! # Ok(()) }
//! ```
//!
//! TrustGraph's agent reloads its tools when the config service pushes a
//! change, fetching only the item types the push names. A `tool` without its
//! `tool-service` is rejected, and a `tool-service` without its tools leaves
//! the agent with none of them; so every item goes in **one** `put` (and
//! out in one `delete`), on the workspace's own queue,
//! `non-persistent://tg/request/config:<workspace>`.
//!
//! Before it puts anything, [`announce`] reads the workspace's tools and
//! services. A tool of the same name that belongs to another service, or a
//! service of the same id on other queues, is a clash: refused (nothing is
//! written) unless [`OnClash::Replace`] is asked for. Items that are in the
//! config already, exactly as announced, are not put again, so replicas
//! starting together do not make every agent reload. [`withdraw`] deletes
//! this binary's services, and only those tools whose `service` is one of
//! them.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use futures_util::StreamExt;
use pulsar::{Consumer, Producer, Pulsar, TokioExecutor};
use serde_json::{json, Value};

use crate::descriptor::ConfigTree;
use crate::registry::Registry;

/// TrustGraph's default workspace.
pub const DEFAULT_WORKSPACE: &str = "default";

/// How long to wait for each of the config service's replies.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The config service's system queue, which takes the workspace in the
/// request body; read only to explain a workspace queue that is silent.
const SYSTEM_REQUEST_QUEUE: &str = "non-persistent://tg/request/config";
const SYSTEM_RESPONSE_QUEUE: &str = "non-persistent://tg/response/config";

/// Where workspaces are registered, and under which type.
const WORKSPACES: &str = "__workspaces__";
const WORKSPACE_TYPE: &str = "workspace";

/// The config request queue of `workspace`.
///
/// ```
/// assert_eq!(
///     tool_service::announce::request_queue("default"),
///     "non-persistent://tg/request/config:default"
/// );
/// ```
pub fn request_queue(workspace: &str) -> String {
    format!("{SYSTEM_REQUEST_QUEUE}:{workspace}")
}

/// The config response queue of `workspace`.
///
/// ```
/// assert_eq!(
///     tool_service::announce::response_queue("default"),
///     "non-persistent://tg/response/config:default"
/// );
/// ```
pub fn response_queue(workspace: &str) -> String {
    format!("{SYSTEM_RESPONSE_QUEUE}:{workspace}")
}

/// The `tool-service` and `tool` items of some services, and the workspace
/// they go to.
///
/// ```
/// use tool_service::announce::Announcement;
///
/// # fn demo(registry: &tool_service::Registry) -> Result<(), tool_service::UnknownName> {
/// let announcement = Announcement::new(registry, &["joke-service".into()])?.in_workspace("team-a");
/// println!("{}", announcement.put_request());
/// # Ok(()) }
/// ```
#[derive(Clone, PartialEq)]
pub struct Announcement {
    workspace: String,
    tree: ConfigTree,
    route: Route,
}

impl fmt::Debug for Announcement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let route = match &self.route {
            Route::ToolService => String::from("tool-service"),
            Route::Mcp { url, token } => format!(
                "mcp {url}{}",
                if token.is_some() {
                    " (with a token)"
                } else {
                    ""
                }
            ),
        };
        f.debug_struct("Announcement")
            .field("workspace", &self.workspace)
            .field("tree", &self.tree)
            .field("route", &route)
            .finish()
    }
}

/// An MCP server to announce tools at: its URL, and the bearer token
/// TrustGraph's client is to send (never shown by `Debug`).
///
/// ```
/// let target = tool_service::announce::McpTarget::new("http://joke-tools:8900/mcp")
///     .with_token("s3cret");
/// assert!(!format!("{target:?}").contains("s3cret"));
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpTarget {
    /// The server's URL, e.g. `http://joke-tools:8900/mcp`.
    pub url: String,
    /// The bearer token, if the server requires one.
    pub token: Option<String>,
}

impl McpTarget {
    /// The server at `url`, with no token.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            token: None,
        }
    }

    /// The same server, with a bearer token.
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }
}

impl fmt::Debug for McpTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpTarget")
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// How the announced tools reach the agent.
#[derive(Clone, PartialEq, Eq)]
enum Route {
    /// `tool` items that name our `tool-service` items: over Pulsar.
    ToolService,
    /// `mcp-tool` tools, each with an `mcp` item of the same key: over MCP
    /// at `url`, with `Authorization: Bearer <token>` when there is one.
    Mcp { url: String, token: Option<String> },
}

impl Announcement {
    /// The items of the services named in `only` (every service when it is
    /// empty), for the [`DEFAULT_WORKSPACE`].
    ///
    /// # Errors
    /// A name in `only` that is not a service of `registry`.
    pub fn new(registry: &Registry, only: &[String]) -> Result<Self, crate::registry::UnknownName> {
        let all = registry.descriptors();
        let mut tree = ConfigTree::default();
        for service in registry.services() {
            let id = service.id();
            if !only.is_empty() && !only.iter().any(|name| name == id) {
                continue;
            }
            if let Some(descriptor) = all.tool_service.get(id) {
                tree.tool_service.insert(id.to_owned(), descriptor.clone());
            }
            for (name, tool) in &all.tool {
                if tool.service == id {
                    tree.tool.insert(name.clone(), tool.clone());
                }
            }
        }
        if let Some(name) = only
            .iter()
            .find(|name| !tree.tool_service.contains_key(name.as_str()))
        {
            return Err(crate::registry::UnknownName {
                name: name.clone(),
                known: registry
                    .services()
                    .iter()
                    .map(|service| service.id().to_owned())
                    .collect(),
            });
        }
        Ok(Self {
            workspace: DEFAULT_WORKSPACE.to_owned(),
            tree,
            route: Route::ToolService,
        })
    }

    /// The same tools as `mcp-tool` tools served by the MCP server at
    /// `url` (e.g. `http://joke-tools:8900/mcp`): for each tool, an `mcp`
    /// item of the tool's name, `{"url", "remote-name", "auth-token"}`, and
    /// a `tool` item `{"type": "mcp-tool", "mcp-tool": <that key>, …}` with
    /// the arguments the `tool-service` route gives. `token` is what
    /// TrustGraph's client sends as `Authorization: Bearer`.
    ///
    /// ```
    /// use tool_service::{announce::Announcement, tool_service, Registry};
    ///
    /// /// Tell a joke.
    /// ///
    /// /// # Arguments
    /// /// * `topic` - What about.
    /// #[tool_service(topic = "joke", tool(name = "tell-joke"))]
    /// async fn joke(topic: String) -> String { topic }
    ///
    /// let registry = Registry::collect().unwrap();
    /// let announcement = Announcement::new(&registry, &[]).unwrap()
    ///     .over_mcp("http://joke-tools:8900/mcp", None);
    /// let values = &announcement.put_request()["values"];
    /// assert_eq!(values[0]["type"], "mcp");
    /// assert_eq!(values[1]["type"], "tool");
    /// let tool: serde_json::Value = serde_json::from_str(values[1]["value"].as_str().unwrap()).unwrap();
    /// assert_eq!(tool["type"], "mcp-tool");
    /// assert_eq!(tool["mcp-tool"], "tell-joke");
    /// ```
    #[must_use]
    pub fn over_mcp(mut self, url: impl Into<String>, token: Option<String>) -> Self {
        self.route = Route::Mcp {
            url: url.into(),
            token,
        };
        self
    }

    /// The MCP server's URL, when the tools are announced over MCP.
    pub fn mcp_url(&self) -> Option<&str> {
        match &self.route {
            Route::Mcp { url, .. } => Some(url),
            Route::ToolService => None,
        }
    }

    /// The type of the items beside the `tool` items: `tool-service`, or
    /// `mcp`.
    fn servers(&self) -> &'static str {
        match self.route {
            Route::ToolService => TOOL_SERVICE,
            Route::Mcp { .. } => MCP,
        }
    }

    /// The same items, for `workspace`.
    #[must_use]
    pub fn in_workspace(mut self, workspace: impl Into<String>) -> Self {
        self.workspace = workspace.into();
        self
    }

    /// The workspace the items go to.
    pub fn workspace(&self) -> &str {
        &self.workspace
    }

    /// The items.
    pub fn tree(&self) -> &ConfigTree {
        &self.tree
    }

    /// The one config request that puts every item.
    pub fn put_request(&self) -> Value {
        put_request(&self.workspace, &self.items())
    }

    /// The one config request that deletes every item (what [`withdraw`]
    /// sends when all of them are in the config).
    pub fn delete_request(&self) -> Value {
        let items = self.items();
        let keys: Vec<(&str, &str)> = items
            .iter()
            .map(|(kind, key, _)| (*kind, key.as_str()))
            .collect();
        delete_request(&self.workspace, &keys)
    }

    /// Each item as `(type, key, value)`: servers (`tool-service` or `mcp`)
    /// first.
    fn items(&self) -> Vec<(&'static str, String, Value)> {
        let encode =
            |item: Result<Value, serde_json::Error>| item.expect("descriptors always encode");
        let tools = self.tree.tool.iter();
        match &self.route {
            Route::ToolService => {
                let services = self.tree.tool_service.iter().map(|(id, item)| {
                    (TOOL_SERVICE, id.clone(), encode(serde_json::to_value(item)))
                });
                let tools = tools
                    .map(|(name, item)| (TOOL, name.clone(), encode(serde_json::to_value(item))));
                services.chain(tools).collect()
            }
            Route::Mcp { url, token } => {
                let servers = tools.clone().map(|(name, _)| {
                    let mut server = json!({"url": url, "remote-name": name});
                    if let Some(token) = token {
                        server["auth-token"] = token.as_str().into();
                    }
                    (MCP, name.clone(), server)
                });
                let tools = tools.map(|(name, item)| {
                    let mut tool = json!({
                        "type": "mcp-tool",
                        "name": name,
                        "description": item.description,
                        "mcp-tool": name,
                    });
                    // The agent's filters, as on the tool-service route.
                    if let Some(group) = &item.group {
                        tool["group"] = json!(group);
                    }
                    if let Some(state) = &item.state {
                        tool["state"] = json!(state);
                    }
                    if let Some(states) = &item.applicable_states {
                        tool["applicable-states"] = json!(states);
                    }
                    tool["arguments"] = encode(serde_json::to_value(&item.arguments));
                    (TOOL, name.clone(), tool)
                });
                servers.chain(tools).collect()
            }
        }
    }

    /// Whether the live `tool` item `tool` is ours: one of our services'
    /// (over either route), or, over MCP, one whose `mcp` item (in
    /// `servers`) points at our URL.
    fn owns_tool(&self, tool: &Value, servers: &BTreeMap<String, Value>) -> bool {
        if tool["service"].as_str().is_some_and(|id| self.owns(id)) {
            return true;
        }
        match &self.route {
            Route::Mcp { url, .. } => {
                tool["type"] == "mcp-tool"
                    && tool["mcp-tool"]
                        .as_str()
                        .and_then(|key| servers.get(key))
                        .is_some_and(|server| server["url"] == url.as_str())
            }
            Route::ToolService => false,
        }
    }

    /// Whose the live `tool` item is, for a clash: its service, or the MCP
    /// server its `mcp` item points at.
    fn tool_owner(tool: &Value, servers: &BTreeMap<String, Value>) -> String {
        if let Some(service) = tool["service"].as_str() {
            return service.to_owned();
        }
        let key = tool["mcp-tool"].as_str().unwrap_or("?");
        match servers.get(key).and_then(|server| server["url"].as_str()) {
            Some(url) => url.to_owned(),
            None => format!("mcp:{key}"),
        }
    }

    fn owns(&self, service: &str) -> bool {
        self.tree.tool_service.contains_key(service)
    }
}

const TOOL_SERVICE: &str = "tool-service";
const TOOL: &str = "tool";
const MCP: &str = "mcp";

fn put_request(workspace: &str, items: &[(&str, String, Value)]) -> Value {
    let values: Vec<Value> = items
        .iter()
        .map(|(kind, key, value)| json!({"type": kind, "key": key, "value": value.to_string()}))
        .collect();
    json!({"operation": "put", "workspace": workspace, "values": values})
}

fn delete_request(workspace: &str, keys: &[(&str, &str)]) -> Value {
    let keys: Vec<Value> = keys
        .iter()
        .map(|(kind, key)| json!({"type": kind, "key": key}))
        .collect();
    json!({"operation": "delete", "workspace": workspace, "keys": keys})
}

/// What [`announce`] does with a clash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnClash {
    /// Writes nothing and fails with [`AnnounceError::Clash`].
    Refuse,
    /// Overwrites the other items, and reports them in [`Announced::replaced`].
    Replace,
}

/// An item of the same type and key as one announced, that belongs to
/// someone else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    /// `tool`, `tool-service` or `mcp`.
    pub kind: &'static str,
    /// The tool name, service id or MCP server key.
    pub key: String,
    /// Whose it is: for a tool, its service (or the URL of the MCP server
    /// it is served by); for a service, its request queue; for an MCP
    /// server, its URL.
    pub owner: String,
}

impl fmt::Display for Clash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            TOOL if self.owner.contains("://") || self.owner.starts_with("mcp:") => write!(
                f,
                "tool `{}` is served over MCP by `{}`",
                self.key, self.owner
            ),
            TOOL => write!(f, "tool `{}` belongs to service `{}`", self.key, self.owner),
            MCP => write!(f, "MCP server `{}` points at `{}`", self.key, self.owner),
            _ => write!(f, "service `{}` is served on `{}`", self.key, self.owner),
        }
    }
}

/// What [`announce`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Announced {
    /// The workspace.
    pub workspace: String,
    /// The service ids announced.
    pub services: Vec<String>,
    /// The tool names announced.
    pub tools: Vec<String>,
    /// Whether anything was written (false: every item was in the config
    /// already, exactly as announced).
    pub written: bool,
    /// The clashes overwritten under [`OnClash::Replace`].
    pub replaced: Vec<Clash>,
    /// The MCP server the tools were announced at (none: over Pulsar, as
    /// `tool-service` tools).
    pub mcp_url: Option<String>,
}

impl fmt::Display for Announced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.written {
            "announced"
        } else {
            "already announced"
        };
        match &self.mcp_url {
            Some(url) => write!(
                f,
                "{how} in workspace `{}` over MCP at {url}: tools {}",
                self.workspace,
                names(&self.tools)
            )?,
            None => write!(
                f,
                "{how} in workspace `{}`: services {}; tools {}",
                self.workspace,
                names(&self.services),
                names(&self.tools)
            )?,
        }
        for clash in &self.replaced {
            write!(f, "; replaced: {clash}")?;
        }
        Ok(())
    }
}

/// What [`withdraw`] deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Withdrawn {
    /// The workspace.
    pub workspace: String,
    /// The service ids deleted (the `mcp` item keys, over MCP).
    pub services: Vec<String>,
    /// The tool names deleted.
    pub tools: Vec<String>,
    /// The MCP server whose tools were withdrawn (none: `tool-service`
    /// tools).
    pub mcp_url: Option<String>,
}

impl fmt::Display for Withdrawn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.services.is_empty() && self.tools.is_empty() {
            return write!(f, "nothing to withdraw in workspace `{}`", self.workspace);
        }
        match &self.mcp_url {
            Some(url) => write!(
                f,
                "withdrawn from workspace `{}` over MCP at {url}: tools {}",
                self.workspace,
                names(&self.tools)
            ),
            None => write!(
                f,
                "withdrawn from workspace `{}`: services {}; tools {}",
                self.workspace,
                names(&self.services),
                names(&self.tools)
            ),
        }
    }
}

/// `a, b`, or `none`.
fn names(names: &[String]) -> String {
    if names.is_empty() {
        String::from("none")
    } else {
        names.join(", ")
    }
}

/// Why announcing or withdrawing failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnnounceError {
    /// The broker could not be reached, or the config topics not opened.
    #[error("Pulsar: {}", crate::broker::describe(.0))]
    Pulsar(Box<pulsar::Error>),
    /// Nothing answered on the workspace's queue nor on the system queue.
    #[error("no TrustGraph config service answered on `{queue}` within {}; is the config service (config-svc) running on this broker?", crate::duration::format(*.timeout))]
    NoConfigService {
        /// The workspace's request queue.
        queue: String,
        /// How long each request waited.
        timeout: Duration,
    },
    /// The config topics could not be opened in time.
    #[error("cannot open `{queue}` and its response topic within {}; is the broker reachable?", crate::duration::format(*.timeout))]
    Unreachable {
        /// The workspace's request queue.
        queue: String,
        /// How long it waited.
        timeout: Duration,
    },
    /// The config service answers, but has no such workspace.
    #[error("workspace `{workspace}` does not exist: the config service has no `{WORKSPACES}` / `{WORKSPACE_TYPE}` / `{workspace}` item, so nothing serves `{queue}`; create the workspace in TrustGraph, or announce to one that exists")]
    NoWorkspace {
        /// The workspace.
        workspace: String,
        /// The workspace's request queue.
        queue: String,
    },
    /// The workspace exists, but its queue did not answer in time.
    #[error("the config service did not answer on `{queue}` within {}", crate::duration::format(*.timeout))]
    Timeout {
        /// The workspace's request queue.
        queue: String,
        /// How long the request waited.
        timeout: Duration,
    },
    /// The config service answered with an error.
    #[error("the config service refused the request: {kind}: {message}")]
    Refused {
        /// Its error type, e.g. `config-error`.
        kind: String,
        /// Its message.
        message: String,
    },
    /// A reply that is not a config response.
    #[error("the config service sent a reply that is not a config response: {0}")]
    InvalidReply(String),
    /// Items of someone else have the names announced; nothing was written.
    #[error("{}; nothing was announced", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Clash(Vec<Clash>),
}

impl AnnounceError {
    /// Whether trying again later may succeed without anyone changing
    /// anything (every error but a clash).
    pub fn is_transient(&self) -> bool {
        !matches!(self, AnnounceError::Clash(_))
    }
}

impl From<pulsar::Error> for AnnounceError {
    fn from(error: pulsar::Error) -> Self {
        AnnounceError::Pulsar(Box::new(error))
    }
}

/// One request, one reply, on a config queue pair.
struct Exchange {
    producer: Producer<TokioExecutor>,
    replies: Consumer<Vec<u8>, TokioExecutor>,
    queue: String,
    timeout: Duration,
}

/// A reply that did not come.
struct Silent;

impl Exchange {
    async fn open(
        pulsar: &Pulsar<TokioExecutor>,
        request: &str,
        response: &str,
        timeout: Duration,
    ) -> Result<Self, AnnounceError> {
        // Subscribed first: a reply on a non-persistent topic before the
        // subscription would be lost.
        let replies = crate::broker::subscribe_own(pulsar, response).await?;
        let producer = crate::broker::producer(pulsar, request).await?;
        Ok(Self {
            producer,
            replies,
            queue: request.to_owned(),
            timeout,
        })
    }

    /// Sends `body` and waits for the reply with its id; the reply's error,
    /// if any, becomes [`AnnounceError::Refused`].
    async fn request(&mut self, body: &Value) -> Result<Result<Value, Silent>, AnnounceError> {
        let id = uuid::Uuid::new_v4().to_string();
        let message = crate::broker::response(&id, body.to_string().into_bytes());
        self.producer.send_non_blocking(message).await?.await?;
        let reply = tokio::time::timeout(self.timeout, async {
            while let Some(next) = self.replies.next().await {
                let message = next?;
                let _ = self.replies.ack(&message).await;
                if crate::broker::message_id(&message) == Some(id.as_str()) {
                    return Ok(Some(message.payload.data));
                }
            }
            Ok::<_, AnnounceError>(None)
        })
        .await;
        let data = match reply {
            Ok(Ok(Some(data))) => data,
            Ok(Ok(None)) | Err(_) => return Ok(Err(Silent)),
            Ok(Err(error)) => return Err(error),
        };
        let reply: Value = serde_json::from_slice(&data).map_err(|error| {
            AnnounceError::InvalidReply(format!(
                "{error}: {}",
                crate::log_text::Untrusted::text(&String::from_utf8_lossy(
                    &data[..data.len().min(200)]
                ))
            ))
        })?;
        match reply.get("error") {
            None | Some(Value::Null) => Ok(Ok(reply)),
            Some(error) => Err(AnnounceError::Refused {
                kind: error["type"].as_str().unwrap_or("unknown").to_owned(),
                message: error["message"]
                    .as_str()
                    .map_or_else(|| error.to_string(), str::to_owned),
            }),
        }
    }
}

/// A client of one workspace's config queue.
struct Workspace<'a> {
    pulsar: &'a Pulsar<TokioExecutor>,
    name: &'a str,
    exchange: Exchange,
    /// Whether a reply came on the workspace's queue yet.
    answered: bool,
}

impl<'a> Workspace<'a> {
    async fn open(
        pulsar: &'a Pulsar<TokioExecutor>,
        name: &'a str,
        timeout: Duration,
    ) -> Result<Self, AnnounceError> {
        let exchange =
            Exchange::open(pulsar, &request_queue(name), &response_queue(name), timeout).await?;
        Ok(Self {
            pulsar,
            name,
            exchange,
            answered: false,
        })
    }

    /// Sends `body` and waits for its reply. Until the workspace's queue has
    /// answered once, the system queue is asked at the same time whether
    /// the workspace exists, so a silent queue is explained within the same
    /// timeout: no config service, no such workspace, or a slow one.
    async fn request(&mut self, body: &Value) -> Result<Value, AnnounceError> {
        let queue = self.exchange.queue.clone();
        let timeout = self.exchange.timeout;
        if self.answered {
            return match self.exchange.request(body).await? {
                Ok(reply) => Ok(reply),
                Err(Silent) => Err(AnnounceError::Timeout { queue, timeout }),
            };
        }
        // Boxed: the client's futures are large, and two side by side would
        // crowd a worker thread's stack.
        let mut reply = Box::pin(self.exchange.request(body));
        let mut probe = Box::pin(registered(self.pulsar, self.name, timeout));
        // The probe runs while the reply is awaited, and is dropped as soon
        // as the reply comes.
        let mut probed = None;
        let reply = loop {
            tokio::select! {
                reply = &mut reply => break reply,
                result = &mut probe, if probed.is_none() => probed = Some(result),
            }
        };
        match reply? {
            Ok(reply) => {
                self.answered = true;
                Ok(reply)
            }
            Err(Silent) => {
                let registered = match probed {
                    Some(result) => result,
                    None => probe.await,
                };
                Err(match registered? {
                    Some(true) => AnnounceError::Timeout { queue, timeout },
                    Some(false) => AnnounceError::NoWorkspace {
                        workspace: self.name.to_owned(),
                        queue,
                    },
                    None => AnnounceError::NoConfigService { queue, timeout },
                })
            }
        }
    }

    /// The items of one type, by key, each value parsed.
    async fn values(&mut self, kind: &str) -> Result<BTreeMap<String, Value>, AnnounceError> {
        let reply = self
            .request(&json!({"operation": "getvalues", "workspace": self.name, "type": kind}))
            .await?;
        let Some(values) = reply["values"].as_array() else {
            return Ok(BTreeMap::new());
        };
        Ok(values
            .iter()
            .filter_map(|value| {
                let key = value["key"].as_str()?.to_owned();
                // An item that is not JSON is somebody's, and never equal to ours.
                let parsed = value["value"]
                    .as_str()
                    .and_then(|text| serde_json::from_str(text).ok())
                    .unwrap_or(Value::Null);
                Some((key, parsed))
            })
            .collect())
    }
}

/// Whether `workspace` is registered with the config service, asked on its
/// system queue; `None` when nothing answers there either.
async fn registered(
    pulsar: &Pulsar<TokioExecutor>,
    workspace: &str,
    timeout: Duration,
) -> Result<Option<bool>, AnnounceError> {
    let mut system =
        Exchange::open(pulsar, SYSTEM_REQUEST_QUEUE, SYSTEM_RESPONSE_QUEUE, timeout).await?;
    let reply = system
        .request(&json!({
            "operation": "get",
            "workspace": WORKSPACES,
            "keys": [{"type": WORKSPACE_TYPE, "key": workspace}],
        }))
        .await?;
    Ok(reply.ok().map(|reply| {
        reply["values"]
            .as_array()
            .is_some_and(|values| values.iter().any(|value| !value["value"].is_null()))
    }))
}

/// Connects the lookups' time to the first request: a broker that cannot
/// be reached fails within `timeout` too.
async fn open<'a>(
    pulsar: &'a Pulsar<TokioExecutor>,
    workspace: &'a str,
    timeout: Duration,
) -> Result<Workspace<'a>, AnnounceError> {
    match tokio::time::timeout(timeout, Workspace::open(pulsar, workspace, timeout)).await {
        Ok(opened) => opened,
        Err(_) => Err(AnnounceError::Unreachable {
            queue: request_queue(workspace),
            timeout,
        }),
    }
}

/// Puts every item of `announcement` in one config request, after checking
/// for clashes; each reply is awaited for at most `timeout`.
///
/// # Errors
/// See [`AnnounceError`]; on [`AnnounceError::Clash`] nothing is written.
pub async fn announce(
    pulsar: &Pulsar<TokioExecutor>,
    announcement: &Announcement,
    timeout: Duration,
    on_clash: OnClash,
) -> Result<Announced, AnnounceError> {
    let mut workspace = open(pulsar, &announcement.workspace, timeout).await?;
    let servers = workspace.values(announcement.servers()).await?;
    let tools = workspace.values(TOOL).await?;
    let items = announcement.items();
    let mut clashes = Vec::new();
    for (kind, key, value) in &items {
        let clash = match *kind {
            TOOL_SERVICE => servers.get(key).and_then(|existing| {
                let ours = &announcement.tree.tool_service[key].request_queue;
                let theirs = existing["request-queue"].as_str().unwrap_or("?");
                (theirs != ours).then(|| theirs.to_owned())
            }),
            MCP => servers.get(key).and_then(|existing| {
                let theirs = existing["url"].as_str().unwrap_or("?");
                (existing["url"] != value["url"]).then(|| theirs.to_owned())
            }),
            _ => tools.get(key).and_then(|existing| {
                (!announcement.owns_tool(existing, &servers))
                    .then(|| Announcement::tool_owner(existing, &servers))
            }),
        };
        if let Some(owner) = clash {
            clashes.push(Clash {
                kind,
                key: key.clone(),
                owner,
            });
        }
    }
    if on_clash == OnClash::Refuse && !clashes.is_empty() {
        return Err(AnnounceError::Clash(clashes));
    }
    let current = |kind: &str, key: &str| match kind {
        TOOL => tools.get(key),
        _ => servers.get(key),
    };
    let written = items
        .iter()
        .any(|(kind, key, value)| current(kind, key) != Some(value));
    if written {
        workspace
            .request(&put_request(&announcement.workspace, &items))
            .await?;
    }
    let services = match announcement.route {
        Route::ToolService => announcement.tree.tool_service.keys().cloned().collect(),
        Route::Mcp { .. } => Vec::new(),
    };
    Ok(Announced {
        workspace: announcement.workspace.clone(),
        services,
        tools: announcement.tree.tool.keys().cloned().collect(),
        written,
        replaced: clashes,
        mcp_url: announcement.mcp_url().map(str::to_owned),
    })
}

/// Deletes, in one config request, the announcement's services and every
/// tool whose service is one of them; tools of other services are left, even
/// under names the announcement uses.
///
/// # Errors
/// See [`AnnounceError`].
pub async fn withdraw(
    pulsar: &Pulsar<TokioExecutor>,
    announcement: &Announcement,
    timeout: Duration,
) -> Result<Withdrawn, AnnounceError> {
    let mut workspace = open(pulsar, &announcement.workspace, timeout).await?;
    let kind = announcement.servers();
    let live_servers = workspace.values(kind).await?;
    let live_tools = workspace.values(TOOL).await?;
    let services: Vec<String> = live_servers
        .iter()
        .filter(|(key, server)| match &announcement.route {
            Route::ToolService => announcement.owns(key),
            Route::Mcp { url, .. } => server["url"] == url.as_str(),
        })
        .map(|(key, _)| key.clone())
        .collect();
    let tools: Vec<String> = live_tools
        .iter()
        .filter(|(_, tool)| match &announcement.route {
            Route::ToolService => tool["service"]
                .as_str()
                .is_some_and(|id| announcement.owns(id)),
            Route::Mcp { .. } => {
                tool["type"] == "mcp-tool"
                    && tool["mcp-tool"]
                        .as_str()
                        .is_some_and(|key| services.iter().any(|ours| ours == key))
            }
        })
        .map(|(name, _)| name.clone())
        .collect();
    if !services.is_empty() || !tools.is_empty() {
        let mut keys: Vec<(&str, String)> = services
            .iter()
            .map(|id| (kind, id.clone()))
            .chain(tools.iter().map(|name| (TOOL, name.clone())))
            .collect();
        // The push names the types of the request, and the agent reloads
        // only those (and TrustGraph's mcp-tool processor only `mcp`): a
        // `tool-service` alone leaves the agent with no tools at all, a
        // `tool` alone fails its reload. So both types go in, the missing
        // one as a key the config does not hold (deleting it changes
        // nothing).
        if services.is_empty() {
            let absent = match announcement.route {
                Route::ToolService => announcement
                    .tree
                    .tool_service
                    .keys()
                    .next()
                    .cloned()
                    .unwrap_or_default(),
                Route::Mcp { .. } => absent_tool(announcement, &live_servers),
            };
            keys.push((kind, absent));
        }
        if tools.is_empty() {
            keys.push((TOOL, absent_tool(announcement, &live_tools)));
        }
        let keys: Vec<(&str, &str)> = keys
            .iter()
            .map(|(kind, key)| (*kind, key.as_str()))
            .collect();
        workspace
            .request(&delete_request(&announcement.workspace, &keys))
            .await?;
    }
    Ok(Withdrawn {
        workspace: announcement.workspace.clone(),
        services,
        tools,
        mcp_url: announcement.mcp_url().map(str::to_owned),
    })
}

/// A tool name that `live` does not hold: one of the announcement's, else
/// a service id, suffixed until it is free.
fn absent_tool(announcement: &Announcement, live: &BTreeMap<String, Value>) -> String {
    let names = announcement
        .tree
        .tool
        .keys()
        .chain(announcement.tree.tool_service.keys());
    if let Some(name) = names.clone().find(|name| !live.contains_key(*name)) {
        return name.clone();
    }
    let base = names.last().cloned().unwrap_or_default();
    (1..)
        .map(|n| format!("{base}-{n}"))
        .find(|name| !live.contains_key(name))
        .expect("a free name")
}

/// Announces with backoff (1 s, doubling, up to a minute) until it is done
/// or the error is not [transient](AnnounceError::is_transient); logs each
/// attempt. What `serve --announce` runs beside the services, once per
/// start: not again after a broker reconnect, since the items live in the
/// config service's own store, and putting them again would only make every
/// agent reload.
pub async fn keep_announcing(
    pulsar: &Pulsar<TokioExecutor>,
    announcement: &Announcement,
    timeout: Duration,
    on_clash: OnClash,
) -> Result<Announced, AnnounceError> {
    let mut backoff = crate::backoff::Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
    loop {
        match announce(pulsar, announcement, timeout, on_clash).await {
            Ok(announced) => {
                tracing::info!(workspace = %announced.workspace, "{announced}");
                return Ok(announced);
            }
            Err(error) if error.is_transient() => {
                tracing::warn!(workspace = %announcement.workspace, retry_in = ?backoff.delay(), "cannot announce yet: {error}");
                backoff.wait().await;
            }
            Err(error) => {
                tracing::error!(workspace = %announcement.workspace, "not announced: {error}{}", if matches!(error, AnnounceError::Clash(_)) { " (serve --replace, or OnClash::Replace, overwrites them)" } else { "" });
                return Err(error);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    /// Tell a joke.
    ///
    /// # Arguments
    /// * `topic` - What about.
    #[crate::tool_service(topic = "announce-joke", tool(name = "tell-joke"))]
    async fn joke(topic: String) -> String {
        topic
    }

    /// Echo.
    ///
    /// # Arguments
    /// * `text` - The text.
    #[crate::tool_service(topic = "announce-echo", tool(name = "announce-echo"))]
    async fn echo(text: String) -> String {
        text
    }

    const OURS: [&str; 2] = ["announce-echo-service", "announce-joke-service"];

    fn registry() -> Registry {
        Registry::collect().unwrap()
    }

    #[test]
    fn one_put_holds_every_service_and_tool_as_json_text() {
        let announcement = Announcement::new(&registry(), &OURS.map(String::from))
            .unwrap()
            .in_workspace("team-a");
        let request = announcement.put_request();
        assert_eq!(request["operation"], "put");
        assert_eq!(request["workspace"], "team-a");
        let values = request["values"].as_array().unwrap();
        let keys: Vec<(&str, &str)> = values
            .iter()
            .map(|value| {
                (
                    value["type"].as_str().unwrap(),
                    value["key"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            keys,
            [
                ("tool-service", "announce-echo-service"),
                ("tool-service", "announce-joke-service"),
                ("tool", "announce-echo"),
                ("tool", "tell-joke")
            ]
        );
        let tool: Value = serde_json::from_str(values[3]["value"].as_str().unwrap()).unwrap();
        assert_eq!(tool["service"], "announce-joke-service");
        assert_eq!(tool["arguments"][0]["name"], "topic");
    }

    #[test]
    fn only_picks_services_and_their_tools_and_names_unknown_ones() {
        let registry = registry();
        let announcement = Announcement::new(&registry, &["announce-joke-service".into()]).unwrap();
        assert_eq!(announcement.workspace(), DEFAULT_WORKSPACE);
        assert_eq!(
            announcement.delete_request(),
            json!({"operation": "delete", "workspace": "default", "keys": [
                {"type": "tool-service", "key": "announce-joke-service"},
                {"type": "tool", "key": "tell-joke"},
            ]})
        );
        let error = Announcement::new(&registry, &["jokes".into()]).unwrap_err();
        assert_eq!(error.name, "jokes");
        assert!(
            error.to_string().contains("announce-joke-service"),
            "{error}"
        );
    }

    #[test]
    fn clashes_say_whose_items_they_are_and_only_they_are_lasting() {
        let error = AnnounceError::Clash(vec![
            Clash {
                kind: TOOL,
                key: "tell-joke".into(),
                owner: "their-service".into(),
            },
            Clash {
                kind: TOOL_SERVICE,
                key: "joke-service".into(),
                owner: "non-persistent://tg/request/theirs".into(),
            },
        ]);
        assert_eq!(
            error.to_string(),
            "tool `tell-joke` belongs to service `their-service`; service `joke-service` is \
             served on `non-persistent://tg/request/theirs`; nothing was announced"
        );
        assert!(!error.is_transient());
        let timeout = AnnounceError::NoConfigService {
            queue: request_queue("default"),
            timeout: Duration::from_secs(2),
        };
        assert!(timeout.is_transient());
        assert_eq!(
            timeout.to_string(),
            "no TrustGraph config service answered on `non-persistent://tg/request/config:default` \
             within 2s; is the config service (config-svc) running on this broker?"
        );
    }
}
