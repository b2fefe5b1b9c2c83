#!/usr/bin/env bash
# Runs every benchmark side by side and writes BENCHMARKS.md and
# bench/results.json:
#   scripts/bench.sh              (BENCH_QUICK=1 for a short smoke run)
# Starts the local broker unless PULSAR_URL names one, creates the Python
# peer, builds the release binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/broker-env.sh
PYTHON="$(scripts/python-peer.sh)"
cargo build --release --locked -p tool-service-bench --bins
"$PYTHON" bench/run.py
