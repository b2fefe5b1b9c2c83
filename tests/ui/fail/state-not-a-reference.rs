use tool_service::tool_service;

pub struct Db;

/// Look something up.
#[tool_service(topic = "lookup")]
async fn lookup(#[state] db: Db) -> String {
    let _ = db;
    String::new()
}

fn main() {}
