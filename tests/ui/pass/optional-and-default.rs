#[path = "../support.rs"]
mod support;

use serde::Deserialize;
use serde_json::json;
use tool_service::tool_service;

fn ten() -> u32 {
    10
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Config {
    required: String,
    optional: Option<String>,
    #[serde(default)]
    defaulted: bool,
    #[serde(default = "ten")]
    limit: u32,
}

/// Show what was decoded.
///
/// # Arguments
/// * `name` - A name.
/// * `nickname` - An optional nickname.
#[tool_service(topic = "defaults", tool(name = "show", config(required = "r")))]
async fn show(#[config] config: Config, name: String, nickname: Option<String>) -> String {
    format!("{} {:?} {} {} {} {:?}", config.required, config.optional, config.defaulted, config.limit, name, nickname)
}

fn main() {
    let tree = support::descriptors();
    assert_eq!(
        tree["tool-service"]["defaults-service"]["config-params"],
        json!([
            {"name": "required", "required": true},
            {"name": "optional", "required": false},
            {"name": "defaulted", "required": false},
            {"name": "limit", "required": false}
        ])
    );
    assert_eq!(support::response("show", json!({}), json!({"name": "n"})), "r None false 10 n None");
    assert_eq!(
        support::response("show", json!({"optional": "o", "limit": 2}), json!({"name": "n", "nickname": "k"})),
        "r Some(\"o\") false 2 n Some(\"k\")"
    );
}
