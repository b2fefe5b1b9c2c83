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
//! use tool_service::pulsar::announce::{self, Announcement, OnClash};
//! use tool_service::pulsar::broker::BrokerOptions;
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
//!
// The guide below links other guides as files (for GitHub and a
// checkout). A label's first definition wins, so this one, read first,
// sends its label to the section of the rustdoc page instead.
//! [pulsar-authentication]: crate::pulsar::serve#authentication-and-tls
//!
#![doc = include_str!("../../../docs/trustgraph.md")]

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use pulsar::{Pulsar, TokioExecutor};
use serde_json::Value;

mod client;
mod model;

use client::open;
use model::{
    delete_request, put_request, Route, MCP, TOOL, TOOL_SERVICE, WORKSPACES, WORKSPACE_TYPE,
};
pub use model::{request_queue, response_queue, Announcement, McpTarget, DEFAULT_WORKSPACE};

/// How long to wait for each of the config service's replies.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

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
#[non_exhaustive]
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
    #[error("Pulsar: {}", crate::pulsar::broker::describe(.0))]
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
                // The same topic is the same service, whichever way each
                // names it (`request:tg:joke`, `non-persistent://tg/request/joke`).
                let ours = &announcement.tree.tool_service[key].request_queue;
                let theirs = existing["request-queue"].as_str().unwrap_or("?");
                (crate::descriptor::pulsar_topic(theirs) != crate::descriptor::pulsar_topic(ours))
                    .then(|| theirs.to_owned())
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
    let mut backoff =
        crate::pulsar::backoff::Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
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
    use crate::registry::Registry;
    use serde_json::json;
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
