//! Who is calling: two tools behind OAuth scopes, and handlers that know
//! their caller on every transport.
//!
//! - `list-tickets` needs the scope `tickets:read`; it answers with the
//!   caller's name (`ctx.user()`: over MCP with OAuth on, the token's
//!   subject; over Pulsar, the request's `user`).
//! - `close-ticket` needs `tickets:write`; its handler also refuses a caller
//!   that is not the ticket's owner unless the token grants `tickets:admin`
//!   (`ctx.has_scope`), the same code on every transport.
//!
//! ```text
//! cargo run --example tickets -- call list-tickets --args '{}'
//! cargo run --example tickets -- mcp --listen 127.0.0.1:8900 \
//!     --oauth-issuer https://login.example.com/realms/tools \
//!     --oauth-resource http://127.0.0.1:8900/mcp
//! ```

use tool_service::{tool_service, Context, ToolError};

/// The tickets this example knows: number, owner, title.
const TICKETS: [(u64, &str, &str); 3] = [
    (1, "agent-reader", "The printer on floor 2 is out of toner"),
    (2, "agent-writer", "Rotate the staging database password"),
    (3, "alice", "Order more coffee"),
];

/// List the open tickets, and say who asked.
#[tool_service(topic = "list-tickets", scopes = ["tickets:read"])]
async fn list_tickets(#[context] ctx: &Context) -> String {
    let who = ctx.user().unwrap_or("an unnamed caller");
    let lines: Vec<String> = TICKETS
        .iter()
        .map(|(id, owner, title)| format!("#{id} ({owner}): {title}"))
        .collect();
    format!("Open tickets, as listed for {who}:\n{}", lines.join("\n"))
}

/// Close a ticket. Only its owner may, or a caller granted `tickets:admin`.
///
/// # Arguments
/// * `id` - The ticket's number, e.g. 2.
#[tool_service(topic = "close-ticket", scopes = ["tickets:write"])]
async fn close_ticket(id: u64, #[context] ctx: &Context) -> Result<String, ToolError> {
    let Some((_, owner, title)) = TICKETS.iter().find(|(number, _, _)| *number == id) else {
        return Err(ToolError::new(format!(
            "there is no ticket #{id}; list the tickets to see their numbers"
        )));
    };
    if ctx.user() != Some(owner) && !ctx.has_scope("tickets:admin") {
        return Err(ToolError::new(format!(
            "ticket #{id} belongs to {owner}: only its owner or an admin may close it"
        )));
    }
    Ok(format!("Closed ticket #{id}: {title}"))
}

fn main() -> std::process::ExitCode {
    tool_service::run!()
}
