#!/usr/bin/env bash
# The Python peer: a virtual environment with TrustGraph's own client
# (trustgraph-base, pinned), its agent's tool-config loader (trustgraph-flow,
# same version), pulsar-client, and the Python MCP SDK (mcp, pinned: what
# TrustGraph's mcp-tool processor calls MCP servers with), created once.
#   scripts/python-peer.sh          create it if needed, print its python
set -euo pipefail
TRUSTGRAPH_VERSION="${TRUSTGRAPH_VERSION:-2.11.1}"
MCP_VERSION="${MCP_VERSION:-2.3.0}"
VENV="${TOOL_SERVICE_PEER_VENV:-$HOME/.cache/tool-service/venv-trustgraph-$TRUSTGRAPH_VERSION}"

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import trustgraph.base, trustgraph.agent.react.service, pulsar, pytest, mcp.client.streamable_http' >/dev/null 2>&1 \
  || [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$MCP_VERSION" ]; then
  echo "==> creating the Python peer in $VENV (trustgraph-base $TRUSTGRAPH_VERSION)" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip >&2
  "$VENV/bin/pip" install --quiet "trustgraph-base==$TRUSTGRAPH_VERSION" pulsar-client pytest "mcp==$MCP_VERSION" >&2
  # The agent's tool-config loader only; the package's many service
  # dependencies (vector stores, LLM SDKs) are not needed for it.
  "$VENV/bin/pip" install --quiet --no-deps "trustgraph-flow==$TRUSTGRAPH_VERSION" >&2
fi
echo "$VENV/bin/python"
