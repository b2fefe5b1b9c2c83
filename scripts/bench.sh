#!/usr/bin/env bash
# Runs every benchmark side by side and writes BENCHMARKS.md,
# bench/results.json and the plots of BENCHMARKS.md (bench/plots/*.svg,
# redrawn by bench/plots.py wherever a script writes its JSON):
#   scripts/bench.sh              (BENCH_QUICK=1 for a short smoke run)
#   scripts/bench.sh paired       only the paired rounds of default `serve`
#                                 against the hand-written loop and, for echo,
#                                 the same loop over Pulsar's Java client
#                                 (bench/paired.py, bench/java/EchoLoop.java)
#   scripts/bench.sh mcp          only `tools/call` over MCP: ours against
#                                 rmcp's own macros, mark3labs/mcp-go, the
#                                 official Go SDK, a bare HTTP floor and the
#                                 Python SDK (bench/mcp_rounds.py, bench/go;
#                                 no broker needed)
#   scripts/bench.sh frames       what `serve` writes to the broker per
#                                 request, with and without response
#                                 batching (bench/frames.py, strace)
#   scripts/bench.sh traced       only what tracing costs per request over
#                                 Pulsar, paired (bench/traced.py)
#   scripts/bench.sh instructions REV  instructions per request (callgrind)
#                                 of this tree against revision REV
#                                 (bench/instructions.py; no broker needed)
#   scripts/bench.sh served-instructions [VARIANT…]  instructions per request
#                                 of a served request over the broker, raw
#                                 loop against ours (bench/served_instructions.py)
#   scripts/bench.sh inprocess    only the in-process per-request figures
#                                 (criterion, callgrind, paired batches), with
#                                 no broker running
# Starts the local broker unless PULSAR_URL names one, creates the Python
# peer, builds the release binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = inprocess ]; then
  if scripts/pulsar.sh status >/dev/null 2>&1; then
    echo "bench.sh inprocess: stop the broker first (scripts/pulsar.sh stop): its JVM distorts in-process timings" >&2
    exit 1
  fi
  cargo build --release --locked -p tool-service-bench --bins
  exec python3 bench/run.py inprocess
fi
if [ "${1:-}" = instructions ]; then
  shift
  exec python3 bench/instructions.py "$@"
fi
# The Go peers of the MCP benchmark (bench/go), as Go modules through the
# Go proxy, beside the release binaries.
build_go_peers() {
  local out
  out="$(realpath -m "${CARGO_TARGET_DIR:-target}")/release/"
  (cd bench/go && go build -mod=readonly -trimpath -o "$out" ./...)
}
if [ "${1:-}" = mcp ]; then
  PYTHON="$(scripts/install/python-peer.sh)"
  cargo build --release --locked -p tool-service-bench --bins
  build_go_peers
  exec "$PYTHON" bench/mcp_rounds.py
fi
source scripts/lib/broker-env.sh
PYTHON="$(scripts/install/python-peer.sh)"
cargo build --release --locked -p tool-service-bench --bins
# `ours` with the otel feature, beside it.
cargo build --release --locked -p tool-service-bench --features otel --bin ours_traced
build_go_peers
# paired.py's `java` variant: the echo loop over Pulsar's own Java client,
# compiled against the jars of the broker's distribution (no download).
PULSAR_LIB="${PULSAR_CACHE:-$HOME/.cache/tool-service/pulsar-${PULSAR_VERSION:-4.2.4}}/lib"
JAVA_CLASSES="${CARGO_TARGET_DIR:-$PWD/target}/release/java-echo-loop"
mkdir -p "$JAVA_CLASSES"
javac -cp "$PULSAR_LIB/*" -d "$JAVA_CLASSES" bench/java/EchoLoop.java
export JAVA_LOOP_CLASSPATH="$JAVA_CLASSES:$PULSAR_LIB/*"
# traced.py counts instructions with callgrind.
if ! command -v valgrind >/dev/null && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind
fi
if [ "${1:-}" = served-instructions ]; then
  shift
  "$PYTHON" bench/served_instructions.py "$@"
  exit
fi
if [ "${1:-}" = paired ]; then
  "$PYTHON" bench/paired.py
  exit
fi
if [ "${1:-}" = frames ]; then
  if ! command -v strace >/dev/null; then
    scripts/install/apt-install.sh "bench.sh frames" strace
  fi
  "$PYTHON" bench/frames.py
  exit
fi
if [ "${1:-}" = traced ]; then
  "$PYTHON" bench/traced.py
  exit
fi
"$PYTHON" bench/run.py
"$PYTHON" bench/paired.py
"$PYTHON" bench/traced.py
"$PYTHON" bench/mcp_rounds.py
