//! A binary that serves its own service and those of a library crate
//! (`examples/library-tools`).
//!
//! ```text
//! cargo run --example two_crates -- list
//! ```

// A crate the binary never names is not linked, and its services would be
// missing: name it once.
use library_tools as _;
use tool_service::tool_service;

/// Say which binary answers.
#[tool_service(topic = "two-crates-hello")]
async fn hello() -> &'static str {
    "hello from the binary"
}

fn main() -> std::process::ExitCode {
    tool_service::run!()
}
