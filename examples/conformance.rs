//! The fixture tools of the MCP conformance suite
//! (`@modelcontextprotocol/conformance`), as `#[tool_service]` functions:
//! `scripts/test.sh` serves them with `conformance mcp --listen …` and runs
//! the suite against them (see `interop/mcp-expected-failures.yml`).
//!
//! ```text
//! cargo run --example conformance -- mcp --listen 127.0.0.1:8900
//! scripts/install/mcp-conformance.sh server --url http://127.0.0.1:8900/mcp --scenario tools-call-with-progress
//! ```

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use tool_service::{tool_service, Chunks, StreamClosed, ToolError};

/// Answer with a simple text.
#[tool_service(topic = "conformance-simple-text", tool(name = "test_simple_text"))]
async fn simple_text() -> &'static str {
    "This is a simple text response for testing."
}

/// Answer with an error, always.
#[tool_service(topic = "conformance-error", tool(name = "test_error_handling"))]
async fn error_handling() -> Result<String, ToolError> {
    Err(ToolError::new(
        "This tool intentionally returns an error for testing",
    ))
}

/// Report progress three times (streamed chunks become progress
/// notifications), then answer.
#[tool_service(topic = "conformance-progress", tool(name = "test_tool_with_progress"))]
async fn with_progress(#[stream] out: &Chunks) -> Result<&'static str, StreamClosed> {
    for step in ["started", "halfway", "finished"] {
        out.send(format!("{step}; ")).await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok("Progress test completed.")
}

/// A postal address.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "address", extend("$anchor" = "addressDef"))]
pub struct Address {
    /// The street.
    pub street: Option<String>,
    /// The city.
    pub city: Option<String>,
}

/// How to reach a person.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ContactMethod {
    /// By phone.
    Phone,
    /// By email.
    Email,
}

/// The arguments of `json_schema_2020_12_tool`: composition and
/// conditional keywords (a phone or an email, the one the contact method
/// names). The type states `$schema`, so the default schema flavour serves
/// its schema as written, `additionalProperties: false` included, as the
/// conformance suite wants (google-genai's MCP path crashes on it).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(extend(
    "$schema" = "https://json-schema.org/draft/2020-12/schema",
    "allOf" = [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if" = {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then" = {"required": ["phone"]},
    "else" = {"required": ["email"]},
))]
pub struct Person {
    /// The person's name.
    pub name: Option<String>,
    /// Where the person lives.
    pub address: Option<Address>,
    /// How to reach the person.
    pub contact_method: Option<ContactMethod>,
    /// A phone number.
    pub phone: Option<String>,
    /// An email address.
    pub email: Option<String>,
}

/// Take arguments described with JSON Schema 2020-12 features.
#[tool_service(topic = "conformance-schema", tool(name = "json_schema_2020_12_tool"))]
async fn json_schema(#[args] person: Person) -> String {
    let contact = match person.contact_method {
        Some(ContactMethod::Phone) => person.phone,
        _ => person.email.or(person.phone),
    };
    format!(
        "Hello, {} from {} ({}).",
        person.name.as_deref().unwrap_or("nobody"),
        person
            .address
            .and_then(|address| address.city)
            .as_deref()
            .unwrap_or("nowhere"),
        contact.as_deref().unwrap_or("no contact")
    )
}

/// Log while answering. The logs go where the service's logs go (standard
/// error), never to the client as `notifications/message`.
#[tool_service(topic = "conformance-logging", tool(name = "test_logging_tool"))]
async fn logging() -> &'static str {
    for step in ["started", "working", "finished"] {
        tracing::info!(step, "the logging tool logs");
    }
    "Logged three times."
}

/// Stream progress on the call's own response stream, then answer: that
/// stream carries notifications and the result, never a request to the
/// client (a tool here asks the client for nothing).
#[tool_service(
    topic = "conformance-streaming",
    tool(name = "test_streaming_elicitation")
)]
async fn streaming(#[stream] out: &Chunks) -> Result<&'static str, StreamClosed> {
    for step in ["one", "two", "three"] {
        out.send(format!("{step}; ")).await?;
    }
    Ok("Streamed three chunks.")
}

/// The arguments of `test_custom_header`: one is mirrored into an
/// `Mcp-Param-Region` HTTP header (SEP-2243), for balancers to route by.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Routed {
    /// Where the request should be served.
    #[schemars(extend("x-mcp-header" = "Region"))]
    pub region: String,
    /// What to say.
    pub text: Option<String>,
}

/// Answer with the region a balancer could route the call by.
#[tool_service(topic = "conformance-header", tool(name = "test_custom_header"))]
async fn custom_header(#[args] routed: Routed) -> String {
    format!(
        "{} (region {})",
        routed.text.as_deref().unwrap_or("routed"),
        routed.region
    )
}

fn main() -> std::process::ExitCode {
    tool_service::run!()
}
