#!/usr/bin/env bash
# The checks a release needs on top of the test command (scripts/test.sh):
#   scripts/release-check.sh
# The cargo features of tool-service, the fuzz targets, a crate made from
# the README alone, the packages as published, the public API, licences and
# duplicate crates (cargo deny), rustdoc, and the oldest Rust the crates
# support. Needs no broker. The two cargo tools it uses are built once per
# machine (scripts/install/cargo-tool.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/phase.sh
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi

# The oldest Rust, in a target directory of its own, beside the checks
# below: they check one crate at a time (mostly one core), its cold build
# takes the other. Its output follows at the end.
msrv_log="$(mktemp)"
scripts/release/msrv.sh >"$msrv_log" 2>&1 &
msrv=$!
trap 'kill "$msrv" 2>/dev/null || true; rm -f "$msrv_log"' EXIT

# The runtime without its default features (what a library crate of
# services uses), each transport and the command line alone, each transport
# with the command line and traces but without the other transport, traces
# without a transport, and the default features with the application
# metrics. Every `cfg(not(feature = …))` branch of the source compiles in
# one of them. (`cli,mcp`, `otel,mcp` and `otel,pulsar` went: the runs with
# `cli` and `otel` on top compile every line they did, and the `not(otel)`
# lines of the command line compile with `cli` alone and with the default
# features.)
phase "cargo features of tool-service"
features() { cargo clippy -p tool-service --locked --no-default-features "$@" -- -D warnings; }
features --all-targets
features --features cli
features --features pulsar
features --features mcp
features --features otel
features --features cli,pulsar,otel
features --features cli,mcp,otel
cargo clippy -p tool-service --all-targets --locked --features prometheus-client -- -D warnings
cargo test -p tool-service --locked --no-default-features
cargo test -p tool-service --locked --features prometheus-client -- metrics
for crate in "tool-service --no-default-features" library-tools; do
  # shellcheck disable=SC2086
  if cargo tree -p $crate --edges normal --prefix none | grep -E '^(pulsar|rustls|clap|tracing-subscriber|rmcp|hyper) '; then
    echo "$crate depends on the crates above; a crate that only defines services must not: move them behind a feature" >&2
    exit 1
  fi
done

# The benchmarks build (the test command type-checks them with clippy;
# scripts/bench.sh runs them).
phase "benchmarks and fuzz targets"
cargo build --workspace --benches --locked

# The fuzz targets build (their invariants run on the seeds in
# tests/offline/fuzz_seeds.rs; scripts/fuzz.sh runs libFuzzer with nightly).
cargo check --manifest-path fuzz/Cargo.toml --locked --bins

# The README's "Add it to your crate" as a reader follows it: a new crate
# outside the repository with the README's [dependencies], example and
# test, and the testing guide's #[tokio::test] (offline, Cargo.lock's
# versions).
phase "a crate from the README alone"
scripts/release/readme-crate.sh
# The same crate on the newest compatible dependencies, as a user's first
# `cargo add` resolves them (online): no warning from our crates.
phase "a crate from the README on a fresh lockfile"
scripts/release/readme-crate.sh --fresh-lockfile

phase "packages of tool-service-macros and tool-service"
scripts/release/package.sh
phase "public API (public-api/*.txt)"
scripts/release/public-api.sh
# Licences, duplicate crates and sources of what the published crates link
# (deny.toml). The advisories check needs the RustSec database from
# github.com, which this CI cannot reach: run `cargo deny check advisories`
# where it can.
phase "cargo deny (licences, duplicates, sources)"
"$(scripts/install/cargo-tool.sh cargo-deny 0.20.2)" --workspace --locked check bans licenses sources
phase "rustdoc (no warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p tool-service -p tool-service-macros --all-features
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p tool-service
phase "MSRV (run beside the checks above)"
msrv_status=0
wait "$msrv" || msrv_status=$?
cat "$msrv_log" >&2
[ "$msrv_status" -eq 0 ] || { echo "release-check.sh: the oldest supported Rust failed (above)" >&2; exit 1; }
phase "release checks passed"
