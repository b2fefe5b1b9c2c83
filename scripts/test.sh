#!/usr/bin/env bash
# The project's test command: everything `.ci/run` checks, in one go.
#   scripts/test.sh
# Lints, then unit, doc, ui (trybuild) and integration tests against a real
# Apache Pulsar broker (started here unless PULSAR_URL names one), then the
# interop suite with TrustGraph's own Python client.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase says when it starts, and how long the run has taken so far.
phase() { echo "==> [+${SECONDS}s] $*" >&2; }

phase "toolchain: $(rustc --version)"
phase "disk: $(df -h --output=avail . | tail -1 | tr -d ' ') free where the build goes"
# A CI build starts from nothing and is never rebuilt: incremental
# compilation data would only take disk space.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
phase "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

phase "build (examples included)"
cargo build --workspace --all-targets --locked

# The runtime without its default features (what a library crate of
# services uses), with each feature alone, and its unit and doc tests there.
phase "cargo features of tool-service"
cargo clippy -p tool-service --all-targets --locked --no-default-features -- -D warnings
cargo clippy -p tool-service --locked --no-default-features --features cli -- -D warnings
cargo clippy -p tool-service --locked --no-default-features --features pulsar -- -D warnings
cargo clippy -p tool-service --locked --no-default-features --features mcp -- -D warnings
cargo clippy -p tool-service --locked --no-default-features --features cli,mcp -- -D warnings
cargo test -p tool-service --locked --no-default-features
# OpenTelemetry traces, alone and with each transport.
cargo clippy -p tool-service --all-targets --locked --no-default-features --features otel -- -D warnings
cargo clippy -p tool-service --locked --no-default-features --features otel,mcp -- -D warnings
cargo clippy -p tool-service --locked --no-default-features --features otel,pulsar -- -D warnings
# The application metrics of a prometheus_client registry.
cargo clippy -p tool-service --all-targets --locked --features prometheus-client -- -D warnings
cargo test -p tool-service --locked --features prometheus-client -- metrics
for crate in "tool-service --no-default-features" library-tools; do
  # shellcheck disable=SC2086
  if cargo tree -p $crate --edges normal --prefix none | grep -E '^(pulsar|rustls|clap|tracing-subscriber|rmcp|hyper) '; then
    echo "$crate depends on the crates above; a crate that only defines services must not: move them behind a feature" >&2
    exit 1
  fi
done

# The fuzz targets build (their invariants run on the seeds in
# tests/offline/fuzz_seeds.rs; scripts/fuzz.sh runs libFuzzer with nightly).
phase "fuzz targets"
cargo check --manifest-path fuzz/Cargo.toml --locked --bins

phase "packages of tool-service-macros and tool-service"
scripts/package.sh
phase "public API (public-api/*.txt)"
scripts/public-api.sh
# Licences, duplicate crates and sources of what the published crates link
# (deny.toml). The advisories check needs the RustSec database from
# github.com, which this CI cannot reach: run `cargo deny check advisories`
# where it can.
phase "cargo deny (licences, duplicates, sources)"
"$(scripts/cargo-tool.sh cargo-deny 0.20.2)" --workspace --locked check bans licenses sources
phase "rustdoc (no warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p tool-service -p tool-service-macros --all-features
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p tool-service
phase "MSRV"
scripts/msrv.sh

# The TLS/token test makes its keys and certificates with openssl.
if ! command -v openssl >/dev/null; then
  [ "$(id -u)" -eq 0 ] || { echo "openssl is missing; install it (apt-get install openssl)" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl
fi

source scripts/broker-env.sh
TOOL_SERVICE_PEER_PYTHON="$(scripts/python-peer.sh)"
export TOOL_SERVICE_PEER_PYTHON

phase "unit, doc, ui and integration tests"
cargo test --workspace --locked

# The MCP conformance suite and the Node 22 it runs on (npm packages, once).
phase "MCP conformance suite"
scripts/mcp-conformance.sh list --server >/dev/null

phase "interop with TrustGraph's Python client and the Python MCP SDK"
export TOOL_SERVICE_EXAMPLES="${CARGO_TARGET_DIR:-$PWD/target}/debug/examples"
"$TOOL_SERVICE_PEER_PYTHON" -m pytest interop -q -p no:cacheprovider --durations=5

target_dir="${CARGO_TARGET_DIR:-$PWD/target}"
echo "==> [+${SECONDS}s] done; $(du -sh "$target_dir" | cut -f1) in $target_dir ($(du -sh "$target_dir/debug" | cut -f1) of it the debug build)" >&2
