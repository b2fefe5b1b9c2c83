#!/usr/bin/env bash
# The project's test command: everything `.ci/run` checks, in one go.
#   scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> toolchain: $(rustc --version)" >&2
echo "==> format and lints" >&2
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "==> unit, doc, example, ui and integration tests" >&2
cargo test --workspace --locked
