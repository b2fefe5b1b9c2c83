// MCP's annotations: `annotations(…)` on the attribute holds for every tool
// of the service, a preset's own hints win hint by hint (a preset that
// makes itself read-only drops the service's write hints), and a preset's
// `title` is the tool's name for people. What MCP's `tools/list` serves of
// them is tests/mcp.rs's `annotations_and_titles_reach_tools_list` (the
// same services, with `mcp` on).
#[path = "../support.rs"]
mod support;

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
    let registry = support::registry();
    let mut names: Vec<&str> = registry.descriptors().tool.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["delete-note", "plain", "read-note", "touch-note", "web-search"]);
}
