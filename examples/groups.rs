//! Tools for TrustGraph's tool groups and states: the agent offers a tool
//! only to requests of one of its groups, and only in the states it
//! applies to; a tool with a `state` moves the agent to that state once it
//! ran.
//!
//! ```text
//! cargo run --example groups -- descriptors
//! ```
//!
//! Here, a support desk: `search-tickets` is in the `support` and `ops`
//! groups and moves the agent to `found`; `close-ticket` is offered only in
//! `found`; `ticket-stats` is in the `default` group (a request that names
//! no group gets it) and `ops`.

use tool_service::tool_service;

/// Search the support tickets.
///
/// # Arguments
/// * `query` - What to look for in the tickets.
#[tool_service(
    topic = "ticket-search",
    tool(
        name = "search-tickets",
        group = ["support", "ops"],
        state = "found",
        applicable_states = ["undefined", "found"]
    )
)]
pub async fn search_tickets(query: String) -> String {
    format!("ticket 42 matches `{query}`")
}

/// Close a ticket found before.
///
/// # Arguments
/// * `ticket` - The ticket's number.
#[tool_service(
    topic = "ticket-close",
    tool(name = "close-ticket", group = ["support"], applicable_states = ["found"])
)]
pub async fn close_ticket(ticket: u32) -> String {
    format!("ticket {ticket} closed")
}

/// How many tickets are open.
#[tool_service(
    topic = "ticket-stats",
    tool(name = "ticket-stats", group = ["default", "ops"])
)]
pub async fn ticket_stats() -> String {
    String::from("7 tickets are open")
}

fn main() -> std::process::ExitCode {
    tool_service::run!()
}

/// The one-line guard: `cargo test` fails when a service or tool preset has
/// a mistake the compiler cannot see.
#[test]
fn tool_services_are_valid() {
    tool_service::Registry::collect().unwrap();
}
