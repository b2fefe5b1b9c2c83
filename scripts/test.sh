#!/usr/bin/env bash
# The project's test command:
#   scripts/test.sh
# Format, the build, then the unit, doc, ui (trybuild) and integration tests
# (with the lints beside them)
# against a real Apache Pulsar broker (started here unless PULSAR_URL names
# one, and stopped at the end if started here), the MCP conformance suite,
# the interop suite with TrustGraph's own Python code, and the alerting
# rules and the Grafana dashboard on a real Prometheus. What it needs
# besides Rust (the broker's jars, the Python peer, the LLM providers'
# client code, the conformance suite's Node, oidc-provider, Keycloak on a
# Java of 21 or newer, Debian's prometheus) is fetched once into
# ~/.cache/tool-service (or installed), while the code compiles.
# The checks a release needs on top of these are scripts/release-check.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/phase.sh

echo "==> toolchain: $(rustc --version)" >&2
echo "==> disk: $(df -h --output=avail . | tail -1 | tr -d ' ') free where the build goes" >&2
# A CI build is not edited and rebuilt: incremental compilation data would
# only take disk space.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi

# What the tests need besides the build, fetched and started in the
# background while the code compiles: each writes a log of its own, shown
# when it fails.
logs="$(mktemp -d)"
started_broker=false
jobs_pids=()
cleanup() {
  local pid
  for pid in "${jobs_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if $started_broker; then scripts/pulsar.sh stop >&2 || true; fi
  rm -rf "$logs"
}
trap cleanup EXIT
# What each suite ran, printed at the end: `counted NAME N`.
counts=()
counted() { counts+=("$(printf '%6d  %s' "$2" "$1")"); }
# The tests cargo's harness ran, from its `test result:` lines in FILE.
cargo_count() { awk '/^test result:/ {n += $4} END {print n + 0}' "$1"; }
# The tests a quiet pytest run passed, from its closing line in FILE.
pytest_count() { { grep -Eo '[0-9]+ passed' "$1" || echo 0; } | tail -n 1 | cut -d' ' -f1; }
background() {
  local name="$1"
  shift
  "$@" >"$logs/$name.out" 2>"$logs/$name.err" &
  jobs_pids+=($!)
  eval "job_$name=$!"
}
# Waits for a background job (in this shell: a subshell cannot wait for it)
# and sets `result` to the last line of its standard output.
await() {
  local name="$1" pid
  pid="$(eval "echo \$job_$name")"
  if ! wait "$pid"; then
    cat "$logs/$name.err" >&2
    echo "test.sh: preparing $name failed (above)" >&2
    exit 1
  fi
  result="$(tail -n 1 "$logs/$name.out")"
}

if [ -z "${PULSAR_URL:-}" ]; then
  if status="$(scripts/pulsar.sh status 2>/dev/null)"; then
    PULSAR_URL="${status#running }"
  else
    started_broker=true
    background broker scripts/pulsar.sh start
  fi
fi
background peer scripts/install/python-peer.sh
background peer27 env TRUSTGRAPH_VERSION=2.7.15 scripts/install/python-peer.sh
background providers scripts/install/python-providers.sh
background conformance scripts/install/mcp-ts-client.sh --install
background oauth scripts/install/oauth-issuer.sh --install
background keycloak scripts/install/keycloak.sh --install
background balancers scripts/install/balancers.sh
background prometheus scripts/install/prometheus.sh
# The TLS/token test makes its keys and certificates with openssl.
if ! command -v openssl >/dev/null; then
  [ "$(id -u)" -eq 0 ] || { echo "openssl is missing; install it (apt-get install openssl)" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq openssl
fi

# The partition test cuts a veth link between network namespaces (iproute2).
if ! command -v ip >/dev/null; then
  [ "$(id -u)" -eq 0 ] || { echo "iproute2 is missing; install it (apt-get install iproute2)" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq iproute2
fi

phase "format"
cargo fmt --all -- --check
# BENCHMARKS.md's plots are what its JSON draws (standard library only).
python3 bench/plots.py --check

phase "build the tests and examples"
cargo test --workspace --locked --no-run

target_dir="${CARGO_TARGET_DIR:-$PWD/target}"

phase "broker, Python peer, conformance suite and load balancers"
if $started_broker; then
  await broker
  PULSAR_URL="$result"
fi
export PULSAR_URL
echo "==> Pulsar broker: $PULSAR_URL" >&2
await peer
export TOOL_SERVICE_PEER_PYTHON="$result"
await peer27
peer27_python="$result"
await providers
providers_python="$result"
await conformance
await oauth
await keycloak
await balancers
await prometheus

phase "alerting rules: promtool check and unit tests"
scripts/install/prometheus.sh --check >/dev/null

phase "unit, doc, ui and integration tests"
# The ui cases (trybuild compiles each against tool-service without
# default features, in a build of its own: tests/ui) beside the others,
# which mostly wait on the broker. cargo holds no lock while tests run, so
# the two share the build above.
cargo test --workspace --locked --test ui >"$logs/ui-tests.out" 2>&1 &
ui_tests=$!
jobs_pids+=("$ui_tests")
# The lints: clippy over every target of the workspace, warnings as
# errors. A clippy check shares no artifact with the build but its build
# scripts and proc macros (it checks every dependency again, without code
# generation), so it runs beside the tests and the interop suites, in the
# time they spend waiting on the broker: below their CPU priority, above
# the release checks' cargo tools (.ci/run builds them at 19). It starts
# once both test runs are past their build (cargo holds the build
# directory's lock while it builds, not while tests run), so that it
# never holds them up; its verdict is read at the end.
(
  until grep -q '^     Running' "$logs/ui-tests.out" 2>/dev/null \
    && grep -q '^     Running' "$logs/tests.out" 2>/dev/null; do
    kill -0 "$ui_tests" 2>/dev/null || break
    sleep 1
  done
  exec nice -n 10 cargo clippy --workspace --all-targets --locked -- -D warnings
) >"$logs/lints.out" 2>&1 &
lints=$!
jobs_pids+=("$lints")
tests_status=0
cargo test --workspace --locked --no-fail-fast -- --skip ui --exact 2>&1 | tee "$logs/tests.out" \
  || tests_status=$?
echo "==> the attribute's compile errors and accepted shapes (trybuild)" >&2
ui_status=0
wait "$ui_tests" || ui_status=$?
cat "$logs/ui-tests.out"
[ "$tests_status" -eq 0 ] || { echo "test.sh: tests failed (above)" >&2; exit 1; }
[ "$ui_status" -eq 0 ] || { echo "test.sh: the ui tests failed (above)" >&2; exit 1; }
# A renamed test would match no filter and pass as zero tests.
grep -q '^test ui \.\.\. ok$' "$logs/ui-tests.out" \
  || { echo "test.sh: no test ui ran: rename it here too (tests/ui/ui.rs)" >&2; exit 1; }
counted "unit, doc and integration tests (cargo test)" "$(cargo_count "$logs/tests.out")"

# Each case's line says which it should do (the test as a whole passed
# above; libtest's "running for over 60 seconds" can split a case's line).
counted "ui cases, compile-fail and compile-pass (trybuild, one test)" \
  "$(grep -Eo '\[should (pass|fail to compile)\]' "$logs/ui-tests.out" | wc -l)"

phase "interop with TrustGraph's Python code, the Python MCP SDK and the MCP conformance suite"
export TOOL_SERVICE_EXAMPLES="${CARGO_TARGET_DIR:-$PWD/target}/debug/examples"
# Beside the suites on the broker, the two that need none: MCP authorization
# (its own authorization servers and MCP servers, on ports of their own; no
# conftest, whose replicas would serve the broker suite's topics too) and
# the providers' schema checks. Their output follows the broker suites'.
"$TOOL_SERVICE_PEER_PYTHON" -m pytest interop/test_mcp_oauth.py -q -p no:cacheprovider --noconftest \
  >"$logs/oauth-tests.out" 2>&1 &
oauth_tests=$!
jobs_pids+=("$oauth_tests")
"$providers_python" -m pytest interop-schemas -q -p no:cacheprovider >"$logs/schemas-tests.out" 2>&1 &
schemas_tests=$!
jobs_pids+=("$schemas_tests")
"$TOOL_SERVICE_PEER_PYTHON" -m pytest interop -q -p no:cacheprovider --durations=5 \
  --ignore=interop/test_mcp_oauth.py --ignore=interop/test_dashboard.py 2>&1 | tee "$logs/interop-tests.out"
counted "interop: TrustGraph 2.11.1, the MCP SDKs, conformance, balancers (pytest)" \
  "$(pytest_count "$logs/interop-tests.out")"
# The dashboard and alerts against a real Prometheus scraping the echo
# example, beside the 2.7 suite (which serves joke only): conftest's echo
# replica, gone by now, would have shared its topics.
"$TOOL_SERVICE_PEER_PYTHON" -m pytest interop/test_dashboard.py -q -p no:cacheprovider --noconftest \
  >"$logs/dashboard-tests.out" 2>&1 &
dashboard_tests=$!
jobs_pids+=("$dashboard_tests")
echo "==> TrustGraph 2.7.15's stock agent over Pulsar" >&2
"$peer27_python" -m pytest interop-trustgraph-2.7 -q -p no:cacheprovider 2>&1 | tee "$logs/tg27-tests.out"
counted "interop: TrustGraph 2.7.15's stock agent (pytest)" "$(pytest_count "$logs/tg27-tests.out")"
echo "==> the Grafana dashboard's queries and the alerts' expressions on a real Prometheus" >&2
dashboard_status=0
wait "$dashboard_tests" || dashboard_status=$?
cat "$logs/dashboard-tests.out"
[ "$dashboard_status" -eq 0 ] || { echo "test.sh: the dashboard check failed (above)" >&2; exit 1; }
counted "the dashboard and alerts on Prometheus (pytest)" "$(pytest_count "$logs/dashboard-tests.out")"
echo "==> MCP authorization: a real authorization server, the TypeScript and Python SDKs' OAuth clients" >&2
oauth_status=0
wait "$oauth_tests" || oauth_status=$?
cat "$logs/oauth-tests.out"
[ "$oauth_status" -eq 0 ] || { echo "test.sh: the MCP authorization tests failed (above)" >&2; exit 1; }
counted "MCP authorization (pytest)" "$(pytest_count "$logs/oauth-tests.out")"
echo "==> the tools' schemas through the providers' own MCP client code (google-genai, ADK, OpenAI Agents, LangChain, Anthropic)" >&2
schemas_status=0
wait "$schemas_tests" || schemas_status=$?
cat "$logs/schemas-tests.out"
[ "$schemas_status" -eq 0 ] || { echo "test.sh: the schema checks failed (above)" >&2; exit 1; }
counted "schemas through the providers' MCP clients (pytest)" "$(pytest_count "$logs/schemas-tests.out")"

echo "==> lints (clippy, every target of the workspace, warnings as errors)" >&2
lints_status=0
wait "$lints" || lints_status=$?
if [ "$lints_status" -eq 0 ]; then
  tail -n 1 "$logs/lints.out" >&2
else
  cat "$logs/lints.out" >&2
  echo "test.sh: clippy found problems (above)" >&2
  exit 1
fi

echo "==> tests run, by suite:" >&2
total=0
for line in "${counts[@]}"; do
  echo "$line" >&2
  read -r n _ <<<"$line"
  total=$((total + n))
done
echo "==> $total tests in all"
echo "$total passed, 0 failed"

phase "tests passed; $(du -sh "$target_dir" | cut -f1) in $target_dir"
