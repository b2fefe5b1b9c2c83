#!/usr/bin/env bash
# The LLM providers' own client code, to check tool schemas offline: a
# virtual environment with google-genai (Gemini's schema converter), the
# OpenAI Agents SDK (its strict-mode conversion of MCP tools), the Anthropic
# SDK (its schema transform) and jsonschema (the 2020-12 metaschema), all
# pinned, created once. Nothing calls a provider: the checks are local code.
#   scripts/python-providers.sh     create it if needed, print its python
set -euo pipefail
GOOGLE_GENAI_VERSION="${GOOGLE_GENAI_VERSION:-3.6.1}"
OPENAI_AGENTS_VERSION="${OPENAI_AGENTS_VERSION:-0.24.0}"
ANTHROPIC_VERSION="${ANTHROPIC_VERSION:-2.17.0}"
JSONSCHEMA_VERSION="${JSONSCHEMA_VERSION:-4.26.0}"
VENV="${TOOL_SERVICE_PROVIDERS_VENV:-$HOME/.cache/tool-service/venv-schema-providers}"

wanted="google-genai==$GOOGLE_GENAI_VERSION openai-agents==$OPENAI_AGENTS_VERSION anthropic==$ANTHROPIC_VERSION jsonschema==$JSONSCHEMA_VERSION"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.pinned" 2>/dev/null)" != "$wanted" ] \
  || ! "$VENV/bin/python" -c 'import google.genai.types, agents.strict_schema, anthropic.lib._parse._transform, jsonschema, pytest' >/dev/null 2>&1; then
  echo "==> creating the providers' environment in $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip >&2
  # shellcheck disable=SC2086
  "$VENV/bin/pip" install --quiet pytest $wanted >&2
  echo "$wanted" >"$VENV/.pinned"
fi
echo "$VENV/bin/python"
