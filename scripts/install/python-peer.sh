#!/usr/bin/env bash
# The Python peer: a virtual environment with TrustGraph's own client
# (trustgraph-base, pinned), its agent's tool-config loader (trustgraph-flow,
# same version), pulsar-client, and the Python MCP SDK (mcp, pinned: what
# TrustGraph's mcp-tool processor calls MCP servers with), and
# OpenTelemetry's Python SDK and OTLP protobuf messages (pinned: a caller
# that starts traces, and the OTLP receiver of the trace tests), created once.
#   scripts/install/python-peer.sh          create it if needed, print its python
set -euo pipefail
TRUSTGRAPH_VERSION="${TRUSTGRAPH_VERSION:-2.11.1}"
MCP_VERSION="${MCP_VERSION:-2.3.0}"
OTEL_VERSION="${OTEL_VERSION:-1.45.2}"
VENV="${TOOL_SERVICE_PEER_VENV:-$HOME/.cache/tool-service/venv-trustgraph-$TRUSTGRAPH_VERSION}"

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import trustgraph.base, trustgraph.agent.react.service, pulsar, pytest, mcp.client.streamable_http, opentelemetry.sdk.trace, opentelemetry.proto.collector.trace.v1.trace_service_pb2' >/dev/null 2>&1 \
  || [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$MCP_VERSION" ]; then
  echo "==> creating the Python peer in $VENV (trustgraph-base $TRUSTGRAPH_VERSION)" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip >&2
  "$VENV/bin/pip" install --quiet "trustgraph-base==$TRUSTGRAPH_VERSION" pulsar-client pytest "mcp==$MCP_VERSION" \
    "opentelemetry-sdk==$OTEL_VERSION" "opentelemetry-proto==$OTEL_VERSION" >&2
  # The agent's tool-config loader only; the package's many service
  # dependencies (vector stores, LLM SDKs) are not needed for it.
  "$VENV/bin/pip" install --quiet --no-deps "trustgraph-flow==$TRUSTGRAPH_VERSION" >&2
fi
echo "$VENV/bin/python"
