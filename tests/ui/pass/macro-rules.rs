#[path = "../support.rs"]
mod support;

use serde_json::json;
use tool_service::tool_service;

// Services stamped out by a declarative macro: `$topic:literal` and
// `$n:literal` reach the attribute inside invisible groups.
macro_rules! echo_services {
    ($($name:ident => $topic:literal, $concurrency:literal, $style:literal;)*) => {
        $(
            /// Echo the text back.
            ///
            /// # Arguments
            /// * `text` - The text.
            #[tool_service(topic = $topic, concurrency = $concurrency, tool(config(style = $style)))]
            async fn $name(text: String, #[config_param] style: String) -> String {
                format!("{style}: {text}")
            }
        )*
    };
}

echo_services! {
    first => "macro-first", 2, "loud";
    second => "macro-second", 4, "quiet";
}

fn main() {
    assert_eq!(support::response("first", json!({}), json!({"text": "a"})), "loud: a");
    assert_eq!(support::response("second", json!({}), json!({"text": "b"})), "quiet: b");
    let registry = support::registry();
    assert_eq!(registry.service("macro-second-service").unwrap().concurrency(), Some(4));
}
