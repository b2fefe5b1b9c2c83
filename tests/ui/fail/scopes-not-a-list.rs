use tool_service::tool_service;

/// Close a ticket.
#[tool_service(topic = "tickets", scopes = "tickets:write")]
async fn close_ticket() -> String {
    String::from("closed")
}

fn main() {}
