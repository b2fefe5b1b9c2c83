#!/usr/bin/env bash
# The project's test command: everything `.ci/run` checks, in one go.
#   scripts/test.sh
# Lints, then unit, doc, ui (trybuild) and integration tests against a real
# Apache Pulsar broker (started here unless PULSAR_URL names one), then the
# interop suite with TrustGraph's own Python client.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> toolchain: $(rustc --version)" >&2
echo "==> disk: $(df -h --output=avail . | tail -1 | tr -d ' ') free where the build goes" >&2
# A CI build starts from nothing and is never rebuilt: incremental
# compilation data would only take disk space.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
echo "==> format and lints" >&2
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "==> build (examples included)" >&2
cargo build --workspace --all-targets --locked

# The runtime without its default features (what a library crate of
# services uses), with each feature alone, and its unit and doc tests there.
echo "==> cargo features of tool-service" >&2
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
echo "==> fuzz targets" >&2
cargo check --manifest-path fuzz/Cargo.toml --locked --bins

echo "==> packages of tool-service-macros and tool-service" >&2
scripts/package.sh
echo "==> public API (public-api/*.txt)" >&2
scripts/public-api.sh
# Licences, duplicate crates and sources of what the published crates link
# (deny.toml). The advisories check needs the RustSec database from
# github.com, which this CI cannot reach: run `cargo deny check advisories`
# where it can.
echo "==> cargo deny (licences, duplicates, sources)" >&2
"$(scripts/cargo-tool.sh cargo-deny 0.20.2)" --workspace --locked check bans licenses sources
echo "==> rustdoc (no warnings)" >&2
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p tool-service -p tool-service-macros --all-features
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p tool-service
echo "==> MSRV" >&2
scripts/msrv.sh

# The TLS/token test makes its keys and certificates with openssl.
if ! command -v openssl >/dev/null; then
  [ "$(id -u)" -eq 0 ] || { echo "openssl is missing; install it (apt-get install openssl)" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl
fi

source scripts/broker-env.sh
TOOL_SERVICE_PEER_PYTHON="$(scripts/python-peer.sh)"
export TOOL_SERVICE_PEER_PYTHON

echo "==> unit, doc, ui and integration tests" >&2
cargo test --workspace --locked

# The MCP conformance suite and the Node 22 it runs on (npm packages, once).
echo "==> MCP conformance suite" >&2
scripts/mcp-conformance.sh list --server >/dev/null

echo "==> interop with TrustGraph's Python client and the Python MCP SDK" >&2
export TOOL_SERVICE_EXAMPLES="${CARGO_TARGET_DIR:-$PWD/target}/debug/examples"
"$TOOL_SERVICE_PEER_PYTHON" -m pytest interop -q -p no:cacheprovider

target_dir="${CARGO_TARGET_DIR:-$PWD/target}"
echo "==> done; $(du -sh "$target_dir" | cut -f1) in $target_dir ($(du -sh "$target_dir/debug" | cut -f1) of it the debug build)" >&2
