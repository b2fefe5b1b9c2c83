use tool_service::tool_service;

/// Find notes.
#[tool_service(
    topic = "find-notes",
    title = "Find notes",
    annotations(readOnlyHint, open_wrld = false, destructive = "no", read_only),
    tool(title = ""),
)]
async fn find_notes() -> String {
    String::from("notes")
}

/// Add a note.
#[tool_service(topic = "add-note", annotations)]
async fn add_note() -> String {
    String::from("added")
}

fn main() {}
