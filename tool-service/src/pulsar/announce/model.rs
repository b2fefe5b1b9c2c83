//! What is announced: the config items of some services, the workspace
//! they go to, and the config service's requests that carry them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{json, Value};

use crate::descriptor::ConfigTree;
use crate::registry::Registry;

/// TrustGraph's default workspace.
pub const DEFAULT_WORKSPACE: &str = "default";

/// The config service's system queue, which takes the workspace in the
/// request body; read only to explain a workspace queue that is silent.
pub(super) const SYSTEM_REQUEST_QUEUE: &str = "non-persistent://tg/request/config";
pub(super) const SYSTEM_RESPONSE_QUEUE: &str = "non-persistent://tg/response/config";

/// Where workspaces are registered, and under which type.
pub(super) const WORKSPACES: &str = "__workspaces__";
pub(super) const WORKSPACE_TYPE: &str = "workspace";

/// The config request queue of `workspace`.
///
/// ```
/// assert_eq!(
///     tool_service::pulsar::announce::request_queue("default"),
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
///     tool_service::pulsar::announce::response_queue("default"),
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
/// use tool_service::pulsar::announce::Announcement;
///
/// # fn demo(registry: &tool_service::Registry) -> Result<(), tool_service::UnknownName> {
/// let announcement = Announcement::new(registry, &["joke-service".into()])?.in_workspace("team-a");
/// println!("{}", announcement.put_request());
/// # Ok(()) }
/// ```
#[derive(Clone, PartialEq)]
pub struct Announcement {
    pub(super) workspace: String,
    pub(super) tree: ConfigTree,
    pub(super) route: Route,
    /// The ids of the services announced that stream (`#[stream]`).
    pub(super) streaming: BTreeSet<String>,
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
/// let target = tool_service::pulsar::announce::McpTarget::new("http://joke-tools:8900/mcp")
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
pub(super) enum Route {
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
        let mut streaming = BTreeSet::new();
        for service in registry.services() {
            let id = service.id();
            if !only.is_empty() && !only.iter().any(|name| name == id) {
                continue;
            }
            if service.is_streaming() {
                streaming.insert(id.to_owned());
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
            streaming,
        })
    }

    /// The tools of which TrustGraph's agent would see only the beginning,
    /// each with what to do about it: those of a streaming service
    /// announced as `tool-service` tools, since the agent takes the first
    /// frame of a tool-service reply as the whole answer. Announced over
    /// MCP ([`over_mcp`](Self::over_mcp)), none: there the result is the
    /// whole text.
    ///
    /// ```
    /// use tool_service::{pulsar::announce::Announcement, tool_service, Chunks, Registry, StreamClosed};
    ///
    /// /// Tell a story, a chapter at a time.
    /// #[tool_service(topic = "story", tool(name = "tell-story"))]
    /// async fn story(#[stream] out: &Chunks) -> Result<&'static str, StreamClosed> {
    ///     out.send("Once upon a time. ").await?;
    ///     Ok("The end.")
    /// }
    ///
    /// let registry = Registry::collect().unwrap();
    /// let announcement = Announcement::new(&registry, &[]).unwrap();
    /// let warnings = announcement.first_frame_only();
    /// assert_eq!(warnings.len(), 1);
    /// assert!(warnings[0].starts_with("the tool `tell-story` streams"));
    /// assert!(announcement
    ///     .over_mcp("http://tools:8900/mcp", None)
    ///     .first_frame_only()
    ///     .is_empty());
    /// ```
    pub fn first_frame_only(&self) -> Vec<String> {
        if !matches!(self.route, Route::ToolService) {
            return Vec::new();
        }
        self.tree
            .tool
            .iter()
            .filter(|(_, tool)| self.streaming.contains(&tool.service))
            .map(|(name, tool)| {
                format!(
                    "the tool `{name}` streams (service `{}`), and TrustGraph's agent takes \
                     the first frame of a tool-service reply as the whole answer: the LLM \
                     will see only the first chunk. Announce it over MCP (--mcp-url), whose \
                     result is the whole text, or leave it out (--only) for clients that \
                     read every chunk",
                    tool.service
                )
            })
            .collect()
    }

    /// The same tools as `mcp-tool` tools served by the MCP server at
    /// `url` (e.g. `http://joke-tools:8900/mcp`): for each tool, an `mcp`
    /// item of the tool's name, `{"url", "remote-name", "auth-token"}`, and
    /// a `tool` item `{"type": "mcp-tool", "mcp-tool": <that key>, …}` with
    /// the arguments the `tool-service` route gives. `token` is what
    /// TrustGraph's client sends as `Authorization: Bearer`.
    ///
    /// ```
    /// use tool_service::{pulsar::announce::Announcement, tool_service, Registry};
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
    pub(super) fn servers(&self) -> &'static str {
        match self.route {
            Route::ToolService => TOOL_SERVICE,
            Route::Mcp { .. } => MCP,
        }
    }

    /// The same items with the services' queues written as `names` says
    /// (by default TrustGraph's `request:tg:joke`, which every TrustGraph
    /// backend reads).
    #[must_use]
    pub fn with_queue_names(mut self, names: crate::descriptor::QueueNames) -> Self {
        self.tree = self.tree.with_queue_names(names);
        self
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

    /// The one config request that deletes every item (what [`withdraw`](super::withdraw)
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
    pub(super) fn items(&self) -> Vec<(&'static str, String, Value)> {
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
    pub(super) fn owns_tool(&self, tool: &Value, servers: &BTreeMap<String, Value>) -> bool {
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
    pub(super) fn tool_owner(tool: &Value, servers: &BTreeMap<String, Value>) -> String {
        if let Some(service) = tool["service"].as_str() {
            return service.to_owned();
        }
        let key = tool["mcp-tool"].as_str().unwrap_or("?");
        match servers.get(key).and_then(|server| server["url"].as_str()) {
            Some(url) => url.to_owned(),
            None => format!("mcp:{key}"),
        }
    }

    pub(super) fn owns(&self, service: &str) -> bool {
        self.tree.tool_service.contains_key(service)
    }
}

pub(super) const TOOL_SERVICE: &str = "tool-service";
pub(super) const TOOL: &str = "tool";
pub(super) const MCP: &str = "mcp";

pub(super) fn put_request(workspace: &str, items: &[(&str, String, Value)]) -> Value {
    let values: Vec<Value> = items
        .iter()
        .map(|(kind, key, value)| json!({"type": kind, "key": key, "value": value.to_string()}))
        .collect();
    json!({"operation": "put", "workspace": workspace, "values": values})
}

pub(super) fn delete_request(workspace: &str, keys: &[(&str, &str)]) -> Value {
    let keys: Vec<Value> = keys
        .iter()
        .map(|(kind, key)| json!({"type": kind, "key": key}))
        .collect();
    json!({"operation": "delete", "workspace": workspace, "keys": keys})
}
