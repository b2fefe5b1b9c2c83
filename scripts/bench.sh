#!/usr/bin/env bash
# Runs every benchmark side by side and writes BENCHMARKS.md and
# bench/results.json:
#   scripts/bench.sh              (BENCH_QUICK=1 for a short smoke run)
#   scripts/bench.sh paired       only the paired rounds of default `serve`
#                                 against the hand-written loop (bench/paired.py)
# Starts the local broker unless PULSAR_URL names one, creates the Python
# peer, builds the release binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/broker-env.sh
PYTHON="$(scripts/python-peer.sh)"
cargo build --release --locked -p tool-service-bench --bins
if [ "${1:-}" = paired ]; then
  "$PYTHON" bench/paired.py
  exit
fi
"$PYTHON" bench/run.py
"$PYTHON" bench/paired.py
