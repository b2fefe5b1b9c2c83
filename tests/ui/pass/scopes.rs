// OAuth scopes: `scopes = […]` in any place among the keys reaches the
// runtime as `Service::scopes`, in the order written; `scopes = []` and no
// `scopes` both mean none.
#[path = "../support.rs"]
mod support;

use tool_service::tool_service;

/// Close a ticket.
///
/// # Arguments
/// * `ticket` - The ticket to close.
#[tool_service(
    scopes = ["tickets:write", "https://example.com/auth/tickets!#[]~"],
    topic = "close-ticket",
    timeout = "5s"
)]
async fn close_ticket(ticket: String) -> String {
    format!("closed {ticket}")
}

/// Read a ticket.
///
/// # Arguments
/// * `ticket` - The ticket to read.
#[tool_service(topic = "read-ticket", scopes = [], tool(name = "read-ticket"))]
async fn read_ticket(ticket: String) -> String {
    format!("ticket {ticket}")
}

/// Count the tickets.
#[tool_service(topic = "count-tickets")]
async fn count_tickets() -> String {
    String::from("3")
}

fn main() {
    let registry = support::registry();
    let scopes = |id: &str| registry.service(id).unwrap().scopes();
    assert_eq!(
        scopes("close-ticket-service"),
        ["tickets:write", "https://example.com/auth/tickets!#[]~"]
    );
    assert!(scopes("read-ticket-service").is_empty());
    assert!(scopes("count-tickets-service").is_empty());
}
