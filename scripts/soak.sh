#!/usr/bin/env bash
# The soak test: 100,000 requests at 64 in flight to a serving echo service
# (release build), checking that every id is answered exactly once with its
# own answer, and sampling the service's RSS. Prints one JSON line and
# writes it, with the machine and the commit, to bench/soak-REQUESTS.json
# (the figures CONTRIBUTING.md quotes).
#   scripts/soak.sh                       (SOAK_REQUESTS, SOAK_IN_FLIGHT to change)
# Starts the local broker unless PULSAR_URL names one.
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS="${SOAK_REQUESTS:-100000}"
IN_FLIGHT="${SOAK_IN_FLIGHT:-64}"
source scripts/lib/broker-env.sh
cargo build --release --locked -p tool-service-bench --bins

LOG="$(mktemp)"
target/release/ours serve -p "$PULSAR_URL" --only bench-echo-service \
  --metrics-port 0 --log-level info 2> "$LOG" &
SERVICE=$!
trap 'kill -TERM $SERVICE 2>/dev/null || true; wait $SERVICE 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 300); do grep -q " ready" "$LOG" && break; sleep 0.1; done
grep -q " ready" "$LOG" || { cat "$LOG" >&2; echo "soak: the service did not start" >&2; exit 1; }
METRICS="$(sed -n 's#.*metrics on http://0.0.0.0:\([0-9]*\)/metrics.*#\1#p' "$LOG" | head -n 1)"

status=0
RESULT="$(mktemp)"
target/release/soak --url "$PULSAR_URL" --topic bench-echo \
  --requests "$REQUESTS" --in-flight "$IN_FLIGHT" --pid "$SERVICE" > "$RESULT" || status=$?
cat "$RESULT"
OUT="bench/soak-$REQUESTS.json"
{
  printf '{"command": "scripts/soak.sh", "requests": %s, "in_flight": %s,\n' "$REQUESTS" "$IN_FLIGHT"
  printf ' "commit": "%s", "date": "%s",\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  printf ' "machine": "%s cores, %s, %s GiB",\n' "$(nproc)" \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')" \
    "$(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo)"
  printf ' "result": %s}\n' "$(tail -n 1 "$RESULT")"
} > "$OUT"
rm -f "$RESULT"
echo "==> written to $OUT" >&2

echo "==> the service's own count (Prometheus):" >&2
curl -sf "http://127.0.0.1:$METRICS/metrics" |
  grep -E '^tg_(dynamic_tool_service_invocation_total|consumer_processing_total|tool_service_errors_total|tool_service_in_flight)' >&2 || true
exit "$status"
