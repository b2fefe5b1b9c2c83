#[path = "../support.rs"]
mod support;

use serde::Deserialize;
use serde_json::json;
use tool_service::{tool_service, Context};

#[derive(Deserialize, schemars::JsonSchema)]
struct Base {
    collection: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Query {
    /// The question.
    question: String,
}

/// Everything at once, in an unusual order.
///
/// # Arguments
/// * `limit` - How many answers.
#[tool_service(topic = "mixed", tool(name = "mixed", config(collection = "c", region = "eu")))]
async fn mixed(
    limit: u8,
    #[context] ctx: &Context,
    #[config_param] region: Option<String>,
    #[args] query: &Query,
    #[config] base: &Base,
) -> String {
    format!("{} {} {:?} {} {} {:?}", limit, base.collection, region, query.question, ctx.request_id(), ctx.user())
}

fn main() {
    let tree = support::descriptors();
    assert_eq!(
        tree["tool-service"]["mixed-service"]["config-params"],
        json!([{"name": "collection", "required": true}, {"name": "region", "required": false}])
    );
    let names: Vec<&str> = tree["tool"]["mixed"]["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|argument| argument["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["question", "limit"]);
    let frames = support::call_as("mixed", Some("alice"), json!({}), json!({"limit": 2, "question": "why?"}));
    assert_eq!(frames[0].response, "2 c Some(\"eu\") why? test-id Some(\"alice\")");
}
