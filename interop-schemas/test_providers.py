"""The input schemas our MCP servers serve, run through the LLM providers'
own client code, offline: google-genai's converter (Gemini), the OpenAI
Agents SDK's strict conversion of MCP tools, the Anthropic SDK's schema
transform, and the JSON Schema 2020-12 metaschema (jsonschema). Over every
example tool and the corpus of awkward types (examples/schema_corpus.rs),
in both schema flavours:

- `check-schemas` says of each tool and provider what the provider's own
  code does (accepts, or refuses), so a tool author can trust it in CI;
- in the portable flavour every provider accepts every tool;
- both flavours are valid JSON Schema 2020-12;
- what `mcp --schema-flavor …` serves is what `check-schemas` checked.

Run with the environment scripts/python-providers.sh prints, after
`cargo build --examples`, with TOOL_SERVICE_EXAMPLES naming the examples'
directory (target/debug/examples by default).
"""

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
from agents.strict_schema import ensure_strict_json_schema
from anthropic.lib._parse._transform import transform_schema
from google.genai import types
from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = Path(os.environ.get("TOOL_SERVICE_EXAMPLES", ROOT / "target" / "debug" / "examples"))
EXAMPLES = ["conformance", "custom_rag", "echo", "groups", "joke", "schema_corpus", "streaming",
            "two_crates"]
FLAVORS = ["spec", "portable"]


def binary(example):
    path = EXAMPLES_DIR / example
    assert path.exists(), (
        f"{path} is missing: build the examples first (cargo build --examples), "
        "or set TOOL_SERVICE_EXAMPLES to the directory that has them")
    return str(path)


def report(example, flavor):
    run = subprocess.run([binary(example), "check-schemas", "--json", "--schema-flavor", flavor],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout), run


def gemini(schema):
    types.Schema.from_json_schema(
        json_schema=types.JSONSchema.model_validate(copy.deepcopy(schema)),
        api_option="GEMINI_API",
        raise_error_on_unsupported_field=True,
    )


def openai(schema):
    # What the Agents SDK does with an MCP tool's input schema
    # (agents.mcp.util.MCPUtil.to_function_tool, strict conversion on).
    converted = copy.deepcopy(schema)
    converted.setdefault("properties", {})
    ensure_strict_json_schema(converted, _reject_open_objects=schema != {})


def anthropic(schema):
    transform_schema(copy.deepcopy(schema))


PROVIDERS = {"gemini": gemini, "openai": openai, "anthropic": anthropic}


def verdict(check, schema):
    try:
        check(schema)
    except Exception as error:  # each client raises its own kind
        return False, f"{type(error).__name__}: {error}"
    return True, None


@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize("example", EXAMPLES)
def test_check_schemas_says_what_each_providers_own_code_does(example, flavor):
    checked, _ = report(example, flavor)
    assert checked["flavor"] == flavor
    assert checked["tools"], example
    for tool in checked["tools"]:
        schema = tool["input_schema"]
        Draft202012Validator.check_schema(schema)
        for name, check in PROVIDERS.items():
            accepted, error = verdict(check, schema)
            ours = tool["providers"][name]
            assert ours["accepts"] == accepted, (
                f"{example} {tool['name']} ({flavor}) for {name}: check-schemas says "
                f"{'accepts' if ours['accepts'] else 'refuses: ' + '; '.join(ours['refusals'])}, "
                f"the client {'accepts' if accepted else 'refuses: ' + error}\n"
                f"{json.dumps(schema, indent=1)}")


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_provider_accepts_every_tool_in_the_portable_flavour(example):
    checked, run = report(example, "portable")
    assert run.returncode == 0, run.stderr
    for tool in checked["tools"]:
        for name, check in PROVIDERS.items():
            accepted, error = verdict(check, tool["input_schema"])
            assert accepted, f"{example} {tool['name']} refused by {name}: {error}"


def test_a_refusal_fails_the_check_naming_the_tool_the_provider_and_why():
    # groups' search-tickets documents its status values: the spec flavour
    # serves them as `oneOf` of `const`s, which Gemini refuses.
    _, run = report("groups", "spec")
    assert run.returncode == 1
    assert "search-tickets (gemini)" in run.stderr, run.stderr
    assert "--schema-flavor portable" in run.stderr, run.stderr
    text = subprocess.run([binary("groups"), "check-schemas", "--provider", "gemini"],
                          capture_output=True, text=True, timeout=60)
    assert text.returncode == 1
    assert "search-tickets (spec)\n  gemini     refuses:\n" in text.stdout, text.stdout
    assert "Gemini does not take the keyword `const`" in text.stdout, text.stdout
    # Gemini's own converter refuses it for that reason.
    checked, _ = report("groups", "spec")
    (tool,) = [tool for tool in checked["tools"] if tool["name"] == "search-tickets"]
    accepted, error = verdict(gemini, tool["input_schema"])
    assert not accepted and "const" in error, error


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
    checked, _ = report("schema_corpus", flavor)
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
