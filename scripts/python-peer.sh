#!/usr/bin/env bash
# The Python peer: a virtual environment with TrustGraph's own client
# (trustgraph-base, pinned), its agent's tool-config loader (trustgraph-flow,
# same version) and pulsar-client, created once.
#   scripts/python-peer.sh          create it if needed, print its python
set -euo pipefail
TRUSTGRAPH_VERSION="${TRUSTGRAPH_VERSION:-2.11.1}"
VENV="${TOOL_SERVICE_PEER_VENV:-$HOME/.cache/tool-service/venv-trustgraph-$TRUSTGRAPH_VERSION}"

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import trustgraph.base, trustgraph.agent.react.service, pulsar, pytest' >/dev/null 2>&1; then
  echo "==> creating the Python peer in $VENV (trustgraph-base $TRUSTGRAPH_VERSION)" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip >&2
  "$VENV/bin/pip" install --quiet "trustgraph-base==$TRUSTGRAPH_VERSION" pulsar-client pytest >&2
  # The agent's tool-config loader only; the package's many service
  # dependencies (vector stores, LLM SDKs) are not needed for it.
  "$VENV/bin/pip" install --quiet --no-deps "trustgraph-flow==$TRUSTGRAPH_VERSION" >&2
fi
echo "$VENV/bin/python"
