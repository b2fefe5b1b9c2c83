// MCP's annotations: `annotations(…)` on the attribute holds for every tool
// of the service, a preset's own hints win hint by hint (a preset that
// makes itself read-only drops the service's write hints), and a preset's
// `title` is the tool's name for people. All reach MCP's `tools/list`.
#[path = "../support.rs"]
mod support;

use std::sync::Arc;

use tool_service::mcp::{McpOptions, McpServer};
use tool_service::tool_service;

/// Manage notes.
///
/// # Arguments
/// * `id` - The note.
#[tool_service(
    topic = "notes",
    annotations(destructive, open_world = false),
    tool(name = "delete-note", title = "Delete a note", config(mode = "delete"), annotations(idempotent)),
    tool(name = "read-note", title = "Read a note", config(mode = "read"), annotations(read_only)),
    tool(name = "touch-note", config(mode = "touch"), annotations(destructive = false, idempotent = false)),
)]
async fn notes(#[config_param] mode: String, id: u32) -> String {
    format!("{mode} {id}")
}

/// Search the web.
///
/// # Arguments
/// * `query` - What to look for.
#[tool_service(topic = "web-search", annotations(read_only = true, open_world = true), tool(title = "Web search"))]
async fn web_search(query: String) -> String {
    query
}

/// Say nothing in particular.
#[tool_service(topic = "plain")]
async fn plain() -> String {
    String::new()
}

fn main() {
    let server = McpServer::new(Arc::new(support::registry()), McpOptions::default()).unwrap();
    let served = |name: &str| {
        let tool = server.tool(name).unwrap();
        let annotations = tool.annotations.map(|annotations| {
            (
                annotations.title,
                annotations.read_only_hint,
                annotations.destructive_hint,
                annotations.idempotent_hint,
                annotations.open_world_hint,
            )
        });
        (tool.title, annotations)
    };
    let title = |text: &str| Some(text.to_owned());
    assert_eq!(
        served("delete-note"),
        (
            title("Delete a note"),
            Some((title("Delete a note"), None, Some(true), Some(true), Some(false)))
        )
    );
    assert_eq!(
        served("read-note"),
        (
            title("Read a note"),
            Some((title("Read a note"), Some(true), None, None, Some(false)))
        )
    );
    assert_eq!(
        served("touch-note"),
        (None, Some((None, None, Some(false), Some(false), Some(false))))
    );
    assert_eq!(
        served("web-search"),
        (
            title("Web search"),
            Some((title("Web search"), Some(true), None, None, Some(true)))
        )
    );
    assert_eq!(served("plain"), (None, None));
}
