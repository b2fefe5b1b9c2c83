"""The input schemas our MCP servers serve, run through the LLM providers'
own MCP client code, offline, over every example tool and the corpus of
ordinary and awkward tools (examples/schema_corpus.rs), in both schema
flavours. Each client path is the library's own conversion of an MCP tool:

- google-genai: `_mcp_utils.mcp_to_gemini_tool`;
- Google ADK: `McpTool._get_declaration` (what `MCPToolset` gives an agent);
- OpenAI Agents SDK: `MCPUtil.to_function_tool`, with
  `convert_schemas_to_strict` on (strict, or its fallback) and off;
- LangChain: `langchain_mcp_adapters.tools.convert_mcp_tool_to_langchain_tool`
  into `ChatGoogleGenerativeAI.bind_tools` (and the request's
  `_format_tools`) and into `ChatOpenAI.bind_tools`;
- Anthropic SDK: `anthropic.lib.tools.mcp.mcp_tool`.

Then:
- `check-schemas` says of each tool and path what the library does: strict,
  accepted or crashes, and which facts the LLM would read (bounds, enum
  values and docs, nested descriptions) it no longer reads;
- the strict converters on the schema as served (google-genai's
  `Schema.from_json_schema` raising on what it does not take, the Agents
  SDK's `ensure_strict_json_schema`, Anthropic's `transform_schema`), the
  second opinion, agree with `check-schemas` too;
- the default flavour crashes no path and the portable flavour is strict
  where a path has a strict mode;
- both flavours are valid JSON Schema 2020-12;
- what `mcp --schema-flavor …` serves is what `check-schemas` checked;
- the MCP guide's table of paths and flavours is what this run found.

Run with the environment scripts/install/python-providers.sh prints, after
`cargo build --examples`, with TOOL_SERVICE_EXAMPLES naming the examples'
directory (target/debug/examples by default).
"""

import copy
import json
import logging
import os
import re
import subprocess
import warnings
from functools import lru_cache
from pathlib import Path

import pytest
from agents.mcp import MCPServerStdio
from agents.mcp.util import MCPUtil
from agents.strict_schema import ensure_strict_json_schema
from anthropic.lib._parse._transform import transform_schema
from anthropic.lib.tools.mcp import mcp_tool as anthropic_mcp_tool
from google.adk.tools.mcp_tool.mcp_session_manager import MCPSessionManager
from google.adk.tools.mcp_tool.mcp_tool import McpTool
from google.genai import _mcp_utils, types
from jsonschema import Draft202012Validator
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool
from langchain_openai import ChatOpenAI
from mcp import StdioServerParameters
from mcp.types import Tool

warnings.filterwarnings("ignore")
logging.getLogger("google_adk").setLevel(logging.ERROR)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = Path(os.environ.get("TOOL_SERVICE_EXAMPLES", ROOT / "target" / "debug" / "examples"))
EXAMPLES = ["conformance", "custom_rag", "echo", "groups", "joke", "schema_corpus", "streaming",
            "tickets", "two_crates"]
FLAVORS = ["spec", "portable"]
GUIDE = ROOT / "tool-service" / "docs" / "mcp.md"

# The conformance suite's `json-schema-2020-12` scenario wants its fixture's
# schema as written, `additionalProperties: false` at the root included,
# which google-genai's MCP path crashes on: the only crash of the default
# flavour, and the scenario's to keep.
AS_WRITTEN = {("conformance", "json_schema_2020_12_tool")}


def binary(example):
    path = EXAMPLES_DIR / example
    assert path.exists(), (
        f"{path} is missing: build the examples first (cargo build --examples), "
        "or set TOOL_SERVICE_EXAMPLES to the directory that has them")
    return str(path)


@lru_cache(maxsize=None)
def _report(example, flavor):
    run = subprocess.run([binary(example), "check-schemas", "--json", "--schema-flavor", flavor],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout), run.returncode, run.stderr


def report(example, flavor):
    checked, code, stderr = _report(example, flavor)
    return copy.deepcopy(checked), code, stderr


# ---------------------------------------------------------------------------
# The client paths, each the library's own code.

SERVER = None


def _agents_server():
    global SERVER
    if SERVER is None:
        SERVER = MCPServerStdio(params={"command": "true"})
    return SERVER


def genai_path(tool):
    declaration = _mcp_utils.mcp_to_gemini_tool(tool).function_declarations[0]
    return "accepted", dumped(declaration.parameters)


def adk_path(tool):
    manager = MCPSessionManager(StdioServerParameters(command="true"))
    declaration = McpTool(mcp_tool=tool, mcp_session_manager=manager)._get_declaration()
    if declaration.parameters_json_schema is not None:
        return "accepted", declaration.parameters_json_schema
    return "accepted", dumped(declaration.parameters)


def agents_path(strict):
    def run(tool):
        function = MCPUtil.to_function_tool(tool, _agents_server(), strict)
        taken = "strict" if function.strict_json_schema else "accepted"
        return taken, function.params_json_schema
    return run


def langchain_tool(tool):
    return convert_mcp_tool_to_langchain_tool(
        None, tool, connection={"transport": "stdio", "command": "true", "args": []})


def langchain_gemini_path(tool):
    model = ChatGoogleGenerativeAI(model="gemini-2.5-flash", google_api_key="offline")
    bound = model.bind_tools([langchain_tool(tool)])
    # What the request sends: the bound tools as google-genai declarations.
    (declared,) = model._format_tools(bound.kwargs["tools"])
    return "accepted", dumped(declared.function_declarations[0].parameters)


def langchain_openai_path(tool):
    model = ChatOpenAI(model="gpt-4o", api_key="offline")
    bound = model.bind_tools([langchain_tool(tool)])
    function = bound.kwargs["tools"][0]["function"]
    return ("strict" if function.get("strict") else "accepted"), function["parameters"]


def anthropic_path(tool):
    return "accepted", anthropic_mcp_tool(tool, None).to_dict()["input_schema"]


PATHS = {
    "google-genai": genai_path,
    "google-adk": adk_path,
    "openai-agents-strict": agents_path(True),
    "openai-agents": agents_path(False),
    "langchain-gemini": langchain_gemini_path,
    "langchain-openai": langchain_openai_path,
    "anthropic": anthropic_path,
}


def dumped(schema):
    if schema is None:
        return {}
    return schema.model_dump(by_alias=True, exclude_none=True, mode="json")


def run_path(path, name, schema):
    tool = Tool(name=name, description="A tool.", inputSchema=copy.deepcopy(schema))
    try:
        taken, converted = PATHS[path](tool)
    except Exception as error:  # each library raises its own kind
        return "crashes", f"{type(error).__name__}: {error}", []
    return taken, None, lost(schema, converted)


# ---------------------------------------------------------------------------
# What the LLM reads: the facts of a schema (the same reading as
# tool-service/src/schema/clients.rs, written again here).

BOUNDS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
          "minLength", "maxLength", "minItems", "maxItems", "pattern", "uniqueItems"]
TEXT_PREFIX = 60


def normal_text(text):
    line = " ".join(text.split()).rstrip(".").lower()
    return line[:TEXT_PREFIX]


def value_text(value):
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        if float(value).is_integer() and abs(value) < 1e15:
            return str(int(value))
        return json.dumps(value)
    if isinstance(value, str):
        return value.lower()
    return json.dumps(value, separators=(",", ":")).lower()


def read(schema):
    facts, descriptions = {}, {}

    def fact(at, what, texts):
        if texts:
            facts.setdefault((at, what), set()).update(texts)

    def walk(node, at, depth, refs):
        if not isinstance(node, dict) or depth > 64:
            return
        description = node.get("description")
        if isinstance(description, str):
            if at:
                fact(at, "description", {normal_text(description)})
            descriptions.setdefault(at, []).append(" ".join(description.split()).lower())
        for keyword in BOUNDS:
            if keyword in node and node[keyword] is not None:
                fact(at, keyword, {value_text(node[keyword])})
        if isinstance(node.get("enum"), list):
            fact(at, "enum", {value_text(v) for v in node["enum"] if v is not None})
        if node.get("const") is not None:
            fact(at, "enum", {value_text(node["const"])})
            if isinstance(description, str):
                fact(at, "docs", {normal_text(description)})
        reference = node.get("$ref")
        if isinstance(reference, str) and reference not in refs and reference.startswith("#"):
            target = pointer(schema, reference[1:])
            if target is not None:
                walk(target, at, depth + 1, refs + [reference])
        for key in ("anyOf", "oneOf", "allOf"):
            if isinstance(node.get(key), list):
                for branch in node[key]:
                    walk(branch, at, depth + 1, refs)
        if "items" in node:
            walk(node["items"], f"{at}[]", depth + 1, refs)
        if isinstance(node.get("properties"), dict):
            for name, prop in node["properties"].items():
                walk(prop, f"{at}.{name}" if at else name, depth + 1, refs)

    walk(schema, "", 0, [])
    return facts, descriptions


def pointer(document, path):
    node = document
    for part in path.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


def ancestors(at):
    paths = [""]
    for index, character in enumerate(at):
        if character in ".[":
            paths.append(at[:index])
    if at:
        paths.append(at)
    return paths


def lost(original, converted):
    before, _ = read(original)
    after, descriptions = read(converted)
    gone = set()
    for (at, what), texts in before.items():
        found = after.get((at, what))
        if found is not None and texts <= found:
            continue
        said = [d for path in ancestors(at) for d in descriptions.get(path, [])]
        if all(any(text in d for d in said) for text in texts):
            continue
        gone.add((at, what))
    return sorted(gone)


# ---------------------------------------------------------------------------
# The strict converters on the schema as served: the second opinion.

def gemini_strict(schema):
    types.Schema.from_json_schema(
        json_schema=types.JSONSchema.model_validate(copy.deepcopy(schema)),
        api_option="GEMINI_API",
        raise_error_on_unsupported_field=True,
    )


def openai_strict(schema):
    converted = copy.deepcopy(schema)
    converted.setdefault("properties", {})
    ensure_strict_json_schema(converted, _reject_open_objects=schema != {})


def anthropic_strict(schema):
    transform_schema(copy.deepcopy(schema))


CONVERTERS = {"gemini": gemini_strict, "openai": openai_strict, "anthropic": anthropic_strict}


def verdict(check, schema):
    try:
        check(schema)
    except Exception as error:  # each client raises its own kind
        return False, f"{type(error).__name__}: {error}"
    return True, None


# ---------------------------------------------------------------------------
# The tests.

@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize("example", EXAMPLES)
def test_check_schemas_says_what_each_clients_own_code_does(example, flavor):
    checked, _, _ = report(example, flavor)
    assert checked["flavor"] == flavor
    assert checked["tools"], example
    disagreements = []
    for tool in checked["tools"]:
        schema = tool["input_schema"]
        Draft202012Validator.check_schema(schema)
        for path in PATHS:
            taken, error, gone = run_path(path, tool["name"], schema)
            ours = tool["paths"][path]
            our_lost = sorted((lost["at"], lost["what"]) for lost in ours["lost"])
            if (ours["outcome"], our_lost) != (taken, gone):
                disagreements.append(
                    f"{tool['name']} ({flavor}) on {path}: check-schemas says {ours['outcome']}"
                    f" losing {our_lost}; the library {taken} ({error}) losing {gone}")
            if taken == "crashes":
                assert ours["sentence"] == error, (tool["name"], path, ours["sentence"], error)
        for name, check in CONVERTERS.items():
            accepted, error = verdict(check, schema)
            ours = tool["strict_converters"][name]
            if ours["accepts"] != accepted:
                disagreements.append(
                    f"{tool['name']} ({flavor}) for the {name} strict converter: check-schemas "
                    f"says {'accepts' if ours['accepts'] else ours['refusals']}, the converter "
                    f"{'accepts' if accepted else error}")
    assert not disagreements, f"{example}:\n" + "\n".join(disagreements)


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_default_flavour_crashes_no_client_and_exits_zero(example):
    checked, code, stderr = report(example, "spec")
    for tool in checked["tools"]:
        for path, outcome in tool["paths"].items():
            if (example, tool["name"]) in AS_WRITTEN:
                continue
            assert outcome["outcome"] != "crashes", (tool["name"], path, outcome)
    if not any(example == written for written, _ in AS_WRITTEN):
        assert code == 0, stderr


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_portable_flavour_is_taken_everywhere_and_strict_where_there_is_a_strict_mode(example):
    checked, code, stderr = report(example, "portable")
    assert code == 0, stderr
    for tool in checked["tools"]:
        schema = tool["input_schema"]
        for path in PATHS:
            taken, error, _ = run_path(path, tool["name"], schema)
            assert taken != "crashes", (tool["name"], path, error)
        # Without arguments there is nothing to be strict about, and a
        # closed empty object (which strict mode wants) crashes google-genai.
        if schema.get("properties"):
            assert tool["paths"]["openai-agents-strict"]["outcome"] == "strict", tool
        for name, check in CONVERTERS.items():
            accepted, error = verdict(check, schema)
            if name == "openai" and not schema.get("properties"):
                continue
            assert accepted, f"{example} {tool['name']} refused by the {name} converter: {error}"


def test_ordinary_tools_lose_nothing_in_the_default_flavour():
    # The notes tools: a bounded title, a body, a list of documented enum
    # values, a query and a bounded limit with a default.
    checked, code, stderr = report("schema_corpus", "spec")
    assert code == 0, stderr
    tools = {tool["name"]: tool for tool in checked["tools"]}
    for name in ("add-note", "find-notes"):
        schema = tools[name]["input_schema"]
        assert "$schema" not in schema, schema
        for path, outcome in tools[name]["paths"].items():
            assert outcome["outcome"] != "crashes" and not outcome["lost"], (name, path, outcome)
    limit = tools["find-notes"]["input_schema"]["properties"]["limit"]
    assert limit["type"] == "integer" and limit["default"] == 10, limit
    assert "limit" not in tools["find-notes"]["input_schema"].get("required", [])


def mcp_tools(example, flavor):
    """The tools `mcp --schema-flavor FLAVOR` lists on stdio."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "schema-check", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
    ]
    process = subprocess.Popen([binary(example), "mcp", "--schema-flavor", flavor],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        for line in lines:
            process.stdin.write(json.dumps(line) + "\n")
            process.stdin.flush()
        while True:
            line = process.stdout.readline()
            assert line, process.stderr.read()
            message = json.loads(line)
            if message.get("id") == 2:
                return {tool["name"]: tool for tool in message["result"]["tools"]}
    finally:
        process.stdin.close()
        process.wait(30)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_the_served_schemas_are_the_checked_ones(flavor):
    served = mcp_tools("schema_corpus", flavor)
    checked, _, _ = report("schema_corpus", flavor)
    assert sorted(served) == sorted(tool["name"] for tool in checked["tools"])
    for tool in checked["tools"]:
        assert served[tool["name"]]["inputSchema"] == tool["input_schema"], tool["name"]


def test_a_map_written_as_pairs_reaches_the_handler_as_a_map():
    # The portable flavour serves a map as `key`/`value` pairs; decoding
    # takes either form.
    for arguments in ({"weights": [{"key": "a", "value": 1}, {"key": "b", "value": "2"}]},
                      {"weights": {"a": 1, "b": 2}}):
        run = subprocess.run([binary("schema_corpus"), "call", "corpus-maps", "--args",
                              json.dumps(arguments)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        frame = json.loads(run.stdout.splitlines()[0])
        assert frame["response"] == 'Maps { weights: {"a": 1, "b": 2} }', frame


# ---------------------------------------------------------------------------
# The guide's table.

TABLE_START = "<!-- client paths table: interop-schemas/test_providers.py -->"
TABLE_END = "<!-- end of the client paths table -->"


def table():
    """Per path and flavour, over every example tool: how many are taken
    strictly, taken, crash, and what is lost (by kind of fact)."""
    rows = []
    for path in PATHS:
        cells = []
        for flavor in FLAVORS:
            counts = {"strict": 0, "accepted": 0, "crashes": 0}
            kinds = set()
            for example in EXAMPLES:
                checked, _, _ = report(example, flavor)
                for tool in checked["tools"]:
                    outcome = tool["paths"][path]
                    counts[outcome["outcome"]] += 1
                    for gone in outcome["lost"]:
                        kinds.add(kind(gone["what"]))
            total = sum(counts.values())
            said = []
            if counts["strict"]:
                said.append(f"{counts['strict']} strict")
            if counts["accepted"]:
                said.append(f"{counts['accepted']} taken")
            if counts["crashes"]:
                said.append(f"{counts['crashes']} crash")
            cell = f"{', '.join(said)} of {total}"
            cell += "; drops " + ", ".join(sorted(kinds)) if kinds else "; drops nothing"
            cells.append(cell)
        rows.append(f"| {path} | {' | '.join(cells)} |")
    header = "| client path | `spec` (default) | `portable` |\n|---|---|---|"
    return header + "\n" + "\n".join(rows)


def kind(what):
    return {"enum": "enum values", "docs": "enum docs", "description": "nested descriptions"}.get(
        what, "bounds")


def test_the_guide_shows_the_table_this_run_found():
    guide = GUIDE.read_text()
    assert TABLE_START in guide and TABLE_END in guide, "the guide has no client paths table"
    head, rest = guide.split(TABLE_START, 1)
    found, tail = rest.split(TABLE_END, 1)
    expected = table()
    if os.environ.get("TOOL_SERVICE_UPDATE_GUIDE"):
        GUIDE.write_text(f"{head}{TABLE_START}\n{expected}\n{TABLE_END}{tail}")
        return
    found = found.strip()
    assert found == expected, (
        "the guide's table differs from what this run found; "
        "rerun with TOOL_SERVICE_UPDATE_GUIDE=1 to write it:\n" + expected)
