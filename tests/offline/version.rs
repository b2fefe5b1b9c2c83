//! `-V` and `--version` of a binary whose `main` is `tool_service::run!()`
//! name that binary and its package's version, not tool-service's.

use crate::support;

use std::process::Command;

fn version(name: &str, flag: &str) -> String {
    let output = Command::new(support::example(name))
        .arg(flag)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// tool-service's version: the workspace's, as is this package's.
fn tool_service_version() -> &'static str {
    assert!(
        include_str!("../../tool-service/Cargo.toml").contains("version.workspace = true"),
        "tool-service no longer takes the workspace's version; read it another way"
    );
    env!("CARGO_PKG_VERSION")
}

#[test]
fn short_version_is_the_binarys_name_and_version() {
    let expected = format!("joke {}\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(version("joke", "-V"), expected);
    let expected = format!("custom_rag {}\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(version("custom_rag", "-V"), expected);
}

#[test]
fn long_version_adds_the_tool_service_version() {
    let expected = format!(
        "joke {} (tool-service {})\n",
        env!("CARGO_PKG_VERSION"),
        tool_service_version()
    );
    assert_eq!(version("joke", "--version"), expected);
}
