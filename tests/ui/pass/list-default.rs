#[path = "../support.rs"]
mod support;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tool_service::tool_service;

/// A note's label.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum Tag {
    /// Work.
    Work,
    /// Home.
    Home,
}

/// Add a note.
///
/// # Arguments
/// * `title` - The note's title.
/// * `tags` - Labels for the note.
#[tool_service(topic = "list-default-notes")]
async fn add_note(
    title: String,
    #[arg(length(max = 3), default = [])] tags: Vec<Tag>,
) -> String {
    format!("{title} {tags:?}")
}

fn main() {
    let tree = support::descriptors();
    let arguments = tree["tool"]["add-note"]["arguments"].as_array().unwrap();
    let tags = arguments.iter().find(|argument| argument["name"] == "tags").unwrap();
    assert_eq!(
        tags["description"],
        "Labels for the note. Optional. A list of strings, each one of: `work` (Work), `home` (Home). At most 3 items. Default: `[]`."
    );
    // Left out: the empty list.
    assert_eq!(support::response("add-note", json!({}), json!({"title": "milk"})), "milk []");
    assert_eq!(
        support::response("add-note", json!({}), json!({"title": "milk", "tags": ["home"]})),
        "milk [Home]"
    );
}
