//! Every example binary's registry is valid: `list` collects it as `serve`
//! would and fails, with the message `serve` would print, on a mistake the
//! compiler cannot see (the guard a binary crate keeps in its own tests; see
//! `examples/library-tools`).

use crate::support;

use std::process::Command;

const EXAMPLES: [&str; 9] = [
    "conformance",
    "custom_rag",
    "echo",
    "groups",
    "joke",
    "schema_corpus",
    "streaming",
    "tickets",
    "two_crates",
];

#[test]
fn every_example_lists_its_services() {
    for name in EXAMPLES {
        let output = Command::new(support::example(name))
            .arg("list")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{name} list: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains("\n  request   "), "{name} list: {stdout}");
    }
}

#[test]
fn every_example_is_listed_here() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".rs").map(str::to_owned)
        })
        .collect();
    found.sort();
    assert_eq!(found, EXAMPLES, "add the new example to EXAMPLES");
}
