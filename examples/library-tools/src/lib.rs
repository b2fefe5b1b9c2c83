//! Tool services defined in a library crate. A binary serves them once it
//! names the crate (`use library_tools as _;`), which links it.

use tool_service::tool_service;

/// Reverse a text.
///
/// # Arguments
/// * `text` - The text to reverse.
#[tool_service(topic = "library-reverse")]
pub async fn reverse(text: String) -> String {
    text.chars().rev().collect()
}

/// The one-line guard: `cargo test` fails, with the message a binary would
/// print, when a service or tool preset of this crate has a mistake the
/// compiler cannot see.
#[test]
fn tool_services_are_valid() {
    tool_service::Registry::collect().unwrap();
}
