#!/usr/bin/env bash
# The LLM providers' own client code, to check tool schemas offline: a
# virtual environment with the MCP client paths of google-genai (Gemini),
# Google's Agent Development Kit, the OpenAI Agents SDK, LangChain's MCP
# adapters with its Gemini and OpenAI chat models, and the Anthropic SDK,
# plus jsonschema (the 2020-12 metaschema), all pinned, created once.
# Nothing calls a provider: the checks are local code. google-adk 2.13
# takes google-genai below 3, so google-genai is 2.34 (its MCP conversion,
# `_mcp_utils.py` and `Schema.from_json_schema`, is the same in 3.6.1).
#   scripts/install/python-providers.sh     create it if needed, print its python
set -euo pipefail
GOOGLE_GENAI_VERSION="${GOOGLE_GENAI_VERSION:-2.34.0}"
GOOGLE_ADK_VERSION="${GOOGLE_ADK_VERSION:-2.13.0}"
OPENAI_AGENTS_VERSION="${OPENAI_AGENTS_VERSION:-0.24.0}"
ANTHROPIC_VERSION="${ANTHROPIC_VERSION:-2.17.0}"
LANGCHAIN_MCP_ADAPTERS_VERSION="${LANGCHAIN_MCP_ADAPTERS_VERSION:-0.3.2}"
LANGCHAIN_GOOGLE_GENAI_VERSION="${LANGCHAIN_GOOGLE_GENAI_VERSION:-4.4.3}"
LANGCHAIN_OPENAI_VERSION="${LANGCHAIN_OPENAI_VERSION:-1.8.1}"
LANGCHAIN_CORE_VERSION="${LANGCHAIN_CORE_VERSION:-1.8.3}"
MCP_VERSION="${MCP_VERSION:-1.30.0}"
JSONSCHEMA_VERSION="${JSONSCHEMA_VERSION:-4.26.0}"
VENV="${TOOL_SERVICE_PROVIDERS_VENV:-$HOME/.cache/tool-service/venv-schema-providers}"

wanted="google-genai==$GOOGLE_GENAI_VERSION google-adk[mcp]==$GOOGLE_ADK_VERSION openai-agents==$OPENAI_AGENTS_VERSION anthropic==$ANTHROPIC_VERSION langchain-mcp-adapters==$LANGCHAIN_MCP_ADAPTERS_VERSION langchain-google-genai==$LANGCHAIN_GOOGLE_GENAI_VERSION langchain-openai==$LANGCHAIN_OPENAI_VERSION langchain-core==$LANGCHAIN_CORE_VERSION mcp==$MCP_VERSION jsonschema==$JSONSCHEMA_VERSION"
imports='import google.genai._mcp_utils, google.adk.tools.mcp_tool.mcp_tool, agents.mcp.util, anthropic.lib.tools.mcp, langchain_mcp_adapters.tools, langchain_google_genai, langchain_openai, jsonschema, pytest'
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.pinned" 2>/dev/null)" != "$wanted" ] \
  || ! "$VENV/bin/python" -c "$imports" >/dev/null 2>&1; then
  echo "==> creating the providers' environment in $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip >&2
  # shellcheck disable=SC2086
  "$VENV/bin/pip" install --quiet pytest $wanted >&2
  echo "$wanted" >"$VENV/.pinned"
fi
echo "$VENV/bin/python"
