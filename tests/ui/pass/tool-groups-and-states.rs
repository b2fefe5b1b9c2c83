// TrustGraph's tool groups and states: `group`, `state` and
// `applicable_states` in `tool(…)` go into the tool item as `group`,
// `state` and `applicable-states`; tools without them carry none.
#[path = "../support.rs"]
mod support;

use serde_json::json;
use tool_service::tool_service;

/// Search the tickets.
///
/// # Arguments
/// * `query` - What to look for.
#[tool_service(
    topic = "tickets",
    tool(
        name = "search-tickets",
        group = ["ops", "billing"],
        state = "after-search",
        applicable_states = ["undefined", "after-search"]
    ),
    tool(name = "close-ticket", description = "Close a ticket", applicable_states = ["after-search"]),
    tool(name = "count-tickets", description = "Count the tickets")
)]
async fn tickets(query: String) -> String {
    query
}

fn main() {
    let tree = support::descriptors();
    let search = &tree["tool"]["search-tickets"];
    assert_eq!(search["group"], json!(["ops", "billing"]));
    assert_eq!(search["state"], "after-search");
    assert_eq!(search["applicable-states"], json!(["undefined", "after-search"]));
    let close = &tree["tool"]["close-ticket"];
    assert_eq!(close["applicable-states"], json!(["after-search"]));
    assert!(close.get("group").is_none() && close.get("state").is_none());
    let count = tree["tool"]["count-tickets"].as_object().unwrap();
    for absent in ["group", "state", "applicable-states"] {
        assert!(!count.contains_key(absent), "{absent}");
    }
}
