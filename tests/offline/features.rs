//! What each cargo feature brings: without `otel`, no OpenTelemetry crate
//! is in the runtime's dependency tree, so nothing of it is compiled.

use std::process::Command;

/// The runtime's normal dependencies with `features` (`cargo tree`).
fn tree(features: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--locked", "-p", "tool-service", "-e", "normal"])
        .args(["--prefix", "none", "--format", "{p}"]);
    if !features.is_empty() {
        command.args(["--features", &features.join(",")]);
    }
    let output = command.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("cargo tree prints UTF-8")
}

fn opentelemetry_crates(tree: &str) -> Vec<&str> {
    let mut crates: Vec<&str> = tree
        .lines()
        .filter(|line| line.contains("opentelemetry"))
        .collect();
    crates.sort_unstable();
    crates.dedup();
    crates
}

#[test]
fn opentelemetry_comes_with_the_otel_feature_only() {
    for features in [&[][..], &["prometheus-client"]] {
        let without = tree(features);
        assert!(without.contains("pulsar v"), "{without}");
        assert_eq!(
            opentelemetry_crates(&without),
            Vec::<&str>::new(),
            "features {features:?}"
        );
    }
    let with = tree(&["otel"]);
    let crates = opentelemetry_crates(&with);
    for name in [
        "opentelemetry v",
        "opentelemetry_sdk v",
        "opentelemetry-otlp v",
        "tracing-opentelemetry v",
    ] {
        assert!(
            crates.iter().any(|line| line.starts_with(name)),
            "{name} with --features otel: {crates:?}"
        );
    }
}
