use tool_service::tool_service;

/// Drop a table.
#[tool_service(topic = "drop-table", annotations(read_only, destructive))]
async fn drop_table() -> String {
    String::from("dropped")
}

/// Read a table.
#[tool_service(topic = "read-table", annotations(read_only), tool(annotations(idempotent)))]
async fn read_table() -> String {
    String::from("rows")
}

/// Count rows.
#[tool_service(topic = "count-rows", tool(annotations(read_only, destructive = false)))]
async fn count_rows() -> String {
    String::from("3")
}

fn main() {}
