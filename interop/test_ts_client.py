"""Our example binaries driven by the official TypeScript MCP SDK's client
(@modelcontextprotocol/sdk 1.32.2, what most MCP hosts are built on), over
Streamable HTTP and stdio: listing, text and structured results (the SDK
checks structured content against the tool's declared outputSchema),
progress notifications, tool errors and protocol errors. Through
scripts/install/mcp-ts-client.sh, which runs interop/ts_client.mjs on Node 22."""

import json
import re
import subprocess

from peer import ROOT, McpHttp, examples_dir

JOKE = "Here's a pun for you:\n\nI'd tell you a UDP joke, but you might not get it."


def ts_client(mode, target, plan):
    done = subprocess.run(
        [str(ROOT / "scripts" / "install" / "mcp-ts-client.sh"), mode, target, json.dumps(plan)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def text(call):
    assert "error" not in call, call
    (item,) = call["result"]["content"]
    assert item["type"] == "text", call
    return item["text"]


def test_text_results_tool_errors_and_protocol_errors_over_http_and_stdio():
    plan = [
        {"tool": "tell-joke", "arguments": {"topic": "programming"}},
        {"tool": "tell-joke", "arguments": {}},
        {"tool": "tell-jokes", "arguments": {}},
    ]
    with McpHttp("joke") as server:
        over_http = ts_client("http", server.url, plan)
    over_stdio = ts_client("stdio", str(examples_dir() / "joke"), plan)
    for got in (over_http, over_stdio):
        assert got["server"]["name"] == "joke", got
        assert [tool["name"] for tool in got["tools"]] == ["tell-joke"], got
        answered, refused, unknown = got["calls"]
        assert text(answered) == JOKE
        assert answered["result"]["isError"] is False
        assert "structuredContent" not in answered["result"], answered
        assert refused["result"]["isError"] is True
        assert text(refused) == "invalid arguments: `topic` is missing; it must be a text"
        assert unknown["error"] == (
            "MCP error -32602: there is no tool `tell-jokes` on this server (its tools: `tell-joke`)"
        ), unknown


def test_structured_results_match_their_output_schema():
    with McpHttp("echo") as server:
        got = ts_client("http", server.url, [{"tool": "whoami", "arguments": {}}])
    (whoami,) = [tool for tool in got["tools"] if tool["name"] == "whoami"]
    assert whoami["outputSchema"]["type"] == "object", whoami
    (call,) = got["calls"]
    # The SDK refuses structured content that its schema does not describe;
    # this one passed.
    assert call["result"]["structuredContent"]["service"] == "whoami-service", call
    assert json.loads(text(call)) == call["result"]["structuredContent"]


def test_a_list_result_is_structured_as_result_and_matches_its_output_schema():
    with McpHttp("echo") as server:
        got = ts_client("http", server.url, [{"tool": "words", "arguments": {"text": "a list of words"}}])
    (words,) = [tool for tool in got["tools"] if tool["name"] == "words"]
    # Wrapped as FastMCP wraps a list: an object with `result`.
    assert words["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"type": "string"}}},
        "required": ["result"],
    }, words
    (call,) = got["calls"]
    # The SDK validated the structured content against that schema.
    assert call["result"]["structuredContent"] == {"result": ["a", "list", "of", "words"]}, call
    assert json.loads(text(call)) == ["a", "list", "of", "words"]


def test_titles_and_hints_reach_the_sdk_on_every_revision_that_has_them():
    with McpHttp("echo") as server:
        got = ts_client("http", server.url, [])
    tools = {tool["name"]: tool for tool in got["tools"]}
    words = tools["words"]
    # The name a host shows (the SDK's getDisplayName) is the title.
    assert words["displayName"] == "Split into words", words
    assert words["title"] == "Split into words", words
    assert words["annotations"] == {
        "title": "Split into words",
        "readOnlyHint": True,
        "openWorldHint": False,
    }, words
    # A tool without either shows its name, with no annotations.
    assert tools["echo"]["displayName"] == "echo"
    assert tools["echo"]["annotations"] is None and tools["echo"]["title"] is None


def test_an_older_revision_gets_the_title_only_where_it_has_one():
    listed = {}
    with McpHttp("echo") as server:
        for version in ("2024-11-05", "2025-03-26", "2025-06-18"):
            listed[version] = server.list_tools(version)
    words = {version: next(tool for tool in tools if tool["name"] == "words")
             for version, tools in listed.items()}
    assert "annotations" not in words["2024-11-05"] and "title" not in words["2024-11-05"], words
    assert "title" not in words["2025-03-26"], words
    assert words["2025-03-26"]["annotations"]["title"] == "Split into words", words
    assert words["2025-06-18"]["title"] == "Split into words", words


def test_progress_reaches_the_sdk_over_http_and_stdio():
    plan = [{"tool": "tell-story", "arguments": {"hero": "Ferris", "chapters": 2}, "progress": True}]
    with McpHttp("streaming") as server:
        over_http = ts_client("http", server.url, plan)
    over_stdio = ts_client("stdio", str(examples_dir() / "streaming"), plan)
    expected = [
        [1, "Chapter 1: Ferris sets out again.\n"],
        [2, "Chapter 2: Ferris sets out again.\n"],
    ]
    for got in (over_http, over_stdio):
        (call,) = got["calls"]
        assert text(call).endswith("The end of Ferris's 2 chapters."), call
        # The SDK hands a notification to its handler a moment after reading
        # it, but retires the handler as it reads the result: a notification
        # written before the result can reach it after the result and is
        # reported as for "an unknown token" instead (typescript-sdk#2580);
        # on a busy machine every one of them can (seen once in ten runs
        # under a CPU hog). What the server guarantees holds either way:
        # every notification arrives, in order, before the result.
        late = [error for error in got["clientErrors"] if "progress notification for an unknown token" in error]
        late_values = [int(re.search(r'"progress":(\d+)', error).group(1)) for error in late]
        progress = call["progress"]
        assert progress == expected[: len(progress)], got
        assert [value for value, _ in progress] + late_values == [value for value, _ in expected], got


AJV_EXAMPLES = ["conformance", "custom_rag", "echo", "groups", "joke", "schema_corpus",
                "streaming", "tickets", "two_crates"]


def test_every_examples_input_schemas_compile_in_ajv_and_ajv2020():
    # What a host's validator makes of the input schemas: the SDK's own, a
    # default Ajv (draft-07: a schema naming 2020-12 in `$schema` is refused)
    # and Ajv2020, in both schema flavours. The conformance fixture states
    # `$schema` and uses 2020-12 keywords, so only Ajv2020 and the SDK's
    # validator (which does not check the metaschema) take it.
    schemas = []
    for example in AJV_EXAMPLES:
        for flavor in ("spec", "portable"):
            run = subprocess.run(
                [str(examples_dir() / example), "check-schemas", "--json", "--schema-flavor",
                 flavor], capture_output=True, text=True, timeout=60)
            for tool in json.loads(run.stdout)["tools"]:
                schemas.append({"name": f"{example} {tool['name']} ({flavor})",
                                "schema": tool["input_schema"]})
    done = subprocess.run([str(ROOT / "scripts" / "install" / "mcp-ts-client.sh"), "ajv"],
                          input=json.dumps(schemas), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(results) == len(schemas) > 40
    for result in results:
        assert result["sdk"] is None and result["ajv2020"] is None, result
        if result["name"] != "conformance json_schema_2020_12_tool (spec)":
            assert result["ajv"] is None, result
