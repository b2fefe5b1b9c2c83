use tool_service::tool_service;

/// Defaults that are not one.
///
/// # Arguments
/// * `tags` - Labels.
/// * `more` - More labels.
/// * `count` - A count.
/// * `names` - Names.
#[tool_service(topic = "misused-defaults")]
async fn misused(
    #[arg(default = ["a"])] tags: Vec<String>,
    #[arg(default = vec![])] more: Vec<String>,
    #[arg(default = [])] count: u32,
    #[arg(default = "none")] names: Vec<String>,
) -> String {
    format!("{tags:?} {more:?} {count} {names:?}")
}

fn main() {}
