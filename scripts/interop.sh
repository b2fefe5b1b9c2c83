#!/usr/bin/env bash
# The interop suite: TrustGraph's own Python client (trustgraph-base), its
# agent and mcp-tool processor, the Python MCP SDK and the MCP conformance suite
# against our example services, over a real Pulsar broker and MCP, and MCP
# replicas behind nginx and HAProxy (scripts/install/balancers.sh installs them).
#   scripts/interop.sh [pytest args…]
# Starts the broker if none runs (PULSAR_URL picks an existing one), creates
# the Python peer once (and TrustGraph 2.7.15's, for interop-trustgraph-2.7;
# the providers' client code, for interop-schemas),
# builds the examples.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/broker-env.sh
PYTHON="$(scripts/install/python-peer.sh)"
scripts/install/balancers.sh >/dev/null
cargo build --examples --locked
export TOOL_SERVICE_EXAMPLES="${CARGO_TARGET_DIR:-$PWD/target}/debug/examples"
echo "==> interop suite (TrustGraph $("$PYTHON" -c 'import importlib.metadata as m; print(m.version("trustgraph-base"))'))" >&2
"$PYTHON" -m pytest interop -q -p no:cacheprovider \
  --ignore=interop/test_mcp_oauth.py --ignore=interop/test_dashboard.py "$@"
# Without conftest, whose replicas would serve these tests' topics too: MCP
# authorization, and the dashboard on a real Prometheus.
echo "==> MCP authorization, and the dashboard on a real Prometheus" >&2
"$PYTHON" -m pytest interop/test_mcp_oauth.py interop/test_dashboard.py -q -p no:cacheprovider \
  --noconftest "$@" || [ $? -eq 5 ]
PYTHON27="$(TRUSTGRAPH_VERSION=2.7.15 scripts/install/python-peer.sh)"
echo "==> TrustGraph 2.7.15's stock agent over Pulsar" >&2
# Exit status 5: the arguments selected none of these tests.
"$PYTHON27" -m pytest interop-trustgraph-2.7 -q -p no:cacheprovider "$@" || [ $? -eq 5 ]
PROVIDERS="$(scripts/install/python-providers.sh)"
echo "==> the tools' schemas through the providers' own MCP client code (google-genai, ADK, OpenAI Agents, LangChain, Anthropic)" >&2
"$PROVIDERS" -m pytest interop-schemas -q -p no:cacheprovider "$@" || [ $? -eq 5 ]
