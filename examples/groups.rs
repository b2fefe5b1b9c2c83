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

//!
//! `search-tickets` also shows what an LLM may send: `"limit": "5"`,
//! `"status": "Open"` or `"tags": "billing"` are taken as `5`, `open` and
//! `["billing"]`, and `"limit": 500` is refused, since the descriptors say
//! "From 1 to 50".

use schemars::JsonSchema;
use serde::Deserialize;
use tool_service::tool_service;

/// A ticket's status.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Waiting for an answer.
    Open,
    /// Being worked on.
    InProgress,
    /// Done.
    Closed,
}

/// What to search the tickets for.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TicketSearch {
    /// What to look for in the tickets.
    pub query: String,
    /// How many tickets to list.
    #[serde(default = "ten")]
    #[schemars(range(min = 1, max = 50))]
    pub limit: u32,
    /// Only tickets with this status.
    pub status: Option<Status>,
    /// Only tickets with all these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Match whole words only.
    #[serde(default)]
    pub exact: bool,
}

fn ten() -> u32 {
    10
}

/// Search the support tickets.
#[tool_service(
    topic = "ticket-search",
    tool(
        name = "search-tickets",
        group = ["support", "ops"],
        state = "found",
        applicable_states = ["undefined", "found"]
    )
)]
pub async fn search_tickets(#[args] search: TicketSearch) -> String {
    let TicketSearch {
        query,
        limit,
        status,
        tags,
        exact,
    } = search;
    format!(
        "up to {limit} tickets match `{query}` (status {status:?}, tags {tags:?}, exact {exact})"
    )
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
