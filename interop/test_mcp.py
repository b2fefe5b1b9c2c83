"""Our example binaries over MCP, driven by the Python MCP SDK (what
TrustGraph's mcp-tool processor uses), over Streamable HTTP and stdio:
listing, calls, presets, structured results, failures, timeouts,
authentication, the DNS-rebinding guard, bad HTTP input, and MCP beside
Pulsar in one process. Then the official conformance suite."""

import asyncio
import json
import os
import pathlib
import re
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

from peer import ROOT, McpHttp, examples_dir, leaf_errors, mcp_session, mcp_stdio, refused_over_http, run, with_client

JOKE = "Here's a pun for you:\n\nI'd tell you a UDP joke, but you might not get it."


def texts(result):
    assert all(item.type == "text" for item in result.content), result
    return "".join(item.text for item in result.content)


def post(url, body, headers=None):
    """A raw POST: the status and the body."""
    request = urllib.request.Request(
        url,
        data=body if isinstance(body, bytes) else json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


@pytest.fixture(scope="module")
def joke():
    with McpHttp("joke") as server:
        yield server


def test_http_lists_the_tool_with_its_description_and_schema(joke):
    async def body(session):
        return (await session.list_tools()).tools

    tools = run(mcp_session(joke.url, body))
    assert [tool.name for tool in tools] == ["tell-joke"]
    assert tools[0].description == "Tell a joke on a given topic"
    schema = tools[0].input_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["topic"]
    assert schema["properties"]["topic"]["type"] == "string"
    # JSON Schema 2020-12 as MCP has it (the default flavour), without a
    # `$schema` that would name it again (a draft-07 validator refuses it).
    assert "$schema" not in schema


def test_http_call_answers_with_text_only(joke):
    async def body(session):
        return await session.call_tool("tell-joke", {"topic": "programming"})

    result = run(mcp_session(joke.url, body))
    assert not result.is_error
    assert texts(result) == JOKE
    # TrustGraph's client prefers structured content: a text tool has none.
    assert result.structured_content is None


def test_bad_arguments_are_a_tool_error_naming_the_field(joke):
    async def body(session):
        return await session.call_tool("tell-joke", {"topic": 5})

    result = run(mcp_session(joke.url, body))
    assert result.is_error
    assert "`topic`" in texts(result)


def test_an_unknown_tool_is_a_protocol_error(joke):
    from mcp.shared.exceptions import MCPError

    async def body(session):
        with pytest.raises(MCPError) as raised:
            await session.call_tool("tell-no-joke", {})
        return str(raised.value)

    assert "there is no tool `tell-no-joke`" in run(mcp_session(joke.url, body))


def test_the_presets_of_two_tools_of_one_service_apply():
    async def body(session):
        customers = await session.call_tool("query-customers", {"question": "gears"})
        products = await session.call_tool("query-products", {"question": "gears"})
        return customers, products

    with McpHttp("custom_rag") as server:
        customers, products = run(mcp_session(server.url, body))
    assert not customers.is_error and not products.is_error
    # The same question, each tool's own collection.
    assert json.loads(texts(customers)) == [
        {"source": "crm/acme", "text": "Acme Corp ordered 400 gears in March."}
    ]
    assert json.loads(texts(products)) == [
        {"source": "catalog/gear", "text": "Gears come in brass and steel, 10 to 200 teeth."}
    ]
    # A list is JSON text, with no structured content (MCP's is an object).
    assert customers.structured_content is None


def test_an_object_result_is_structured_content_and_the_timeout_a_tool_error():
    async def body(session):
        whoami = await session.call_tool("whoami", {})
        waited = await session.call_tool("wait", {"ms": 10})
        late = await session.call_tool("wait", {"ms": 10000})
        return whoami, waited, late

    with McpHttp("echo") as server:
        whoami, waited, late = run(mcp_session(server.url, body))
    assert whoami.structured_content["service"] == "whoami-service"
    assert json.loads(texts(whoami)) == whoami.structured_content
    assert texts(waited) == "waited 10 ms"
    assert late.is_error
    assert texts(late) == "the tool handler did not finish within 2s and was cancelled"


def test_a_token_is_required_when_configured_and_never_logged():
    with tempfile.TemporaryDirectory() as directory:
        token_file = pathlib.Path(directory) / "token"
        token_file.write_text("s3cret-token\n")
        with McpHttp("joke", "--mcp-token-file", str(token_file), "--log-level", "debug") as server:

            async def body(session):
                return await session.call_tool("tell-joke", {"topic": "programming"})

            assert texts(run(mcp_session(server.url, body, token="s3cret-token"))) == JOKE
            status, text = post(server.url, INITIALIZE)
            assert status == 401, text
            status, text = post(server.url, INITIALIZE, {"Authorization": "Bearer wrong"})
            assert status == 401, text
            with pytest.raises(BaseExceptionGroup) as refused:
                run(mcp_session(server.url, body, token="wrong"))
            assert [refused_over_http(error) for error in leaf_errors(refused.value)] == [True], refused.value
        assert not any("s3cret-token" in line for line in server.lines)


def test_call_over_mcp_prints_the_frame_the_in_process_call_prints():
    """`call --mcp URL` as an MCP client: initialize, tools/call, with the
    server's token from a file; the frame it prints is the in-process
    call's, for an answer and for the tool's own error; without the token,
    the refusal's status and challenge."""
    joke = str(examples_dir() / "joke")

    def call(*args):
        return subprocess.run([joke, "call", *args], capture_output=True, text=True, timeout=60)

    with tempfile.TemporaryDirectory() as directory:
        token_file = pathlib.Path(directory) / "token"
        token_file.write_text("s3cret-token\n")
        with McpHttp("joke", "--mcp-token-file", str(token_file)) as server:
            for arguments, code in (('{"topic": "programming"}', 0), ('{"topic": ""}', 1)):
                here = call("tell-joke", "--args", arguments)
                there = call("--mcp", server.url, "--mcp-token-file", str(token_file), "tell-joke", "--args", arguments)
                assert (there.returncode, there.stdout) == (code, here.stdout.replace(
                    '"type":"invalid-arguments"', '"type":"tool-service-error"')), (there, here)
            refused = call("--mcp", server.url, "tell-joke", "--args", '{"topic": "cats"}')
            assert refused.returncode == 1, refused
            assert f"{server.url} refused the call: HTTP 401 Unauthorized; WWW-Authenticate: Bearer" in refused.stderr, \
                refused.stderr
            unknown = call("--mcp", server.url, "--mcp-token-file", str(token_file), "no-such-tool")
            assert unknown.returncode == 1 and "answered `tools/call` with the error" in unknown.stderr, unknown


def test_the_dns_rebinding_guard_refuses_other_hosts_unless_allowed():
    with McpHttp("joke", "--mcp-allowed-host", "joke-tools") as server:
        status, _ = post(server.url, INITIALIZE)
        assert status == 200
        status, text = post(server.url, INITIALIZE, {"Host": "evil.example"})
        assert status == 403, text
        # The refusal says how to allow the host, in its body and the log.
        advice = "start it with --mcp-allowed-host evil.example"
        assert advice in text, text
        deadline = time.monotonic() + 5
        while not any(advice in line and "WARN" in line for line in server.lines):
            assert time.monotonic() < deadline, server.lines
            time.sleep(0.05)
        status, text = post(
            server.url, INITIALIZE, {"Host": f"127.0.0.1:{server.port}", "Origin": "http://evil.example"}
        )
        assert status == 403, text
        # A container's own service name, when configured.
        status, text = post(server.url, INITIALIZE, {"Host": f"joke-tools:{server.port}"})
        assert status == 200, text


def test_bad_http_input_is_answered_and_the_server_keeps_serving(joke):
    status, _ = post(joke.url.replace("/mcp", "/other"), INITIALIZE)
    assert status == 404
    status, text = post(joke.url, b"this is not json")
    assert 400 <= status < 500, (status, text)
    status, text = post(joke.url, {"jsonrpc": "2.0", "id": 7, "method": "no/such/method"})
    assert 400 <= status < 500 or "error" in text, (status, text)
    status, text = post(joke.url, b"{" + b" " * (5 * 1024 * 1024) + b"}")
    assert status == 413, (status, text)

    async def body(session):
        return await session.call_tool("tell-joke", {"topic": "programming"})

    assert texts(run(mcp_session(joke.url, body))) == JOKE


def test_a_client_that_disconnects_mid_call_leaves_the_server_serving():
    async def body(session):
        return await session.call_tool("wait", {"ms": 10})

    with McpHttp("echo") as server:
        async def abandon(session):
            call = asyncio.ensure_future(session.call_tool("wait", {"ms": 1500}))
            # The call is in the handler before the client goes.
            await asyncio.to_thread(server.wait_in_flight, lambda n: n == 1, "the call to start")
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            return "left"

        assert run(mcp_session(server.url, abandon)) == "left"
        # The abandoned call ends (dropped, or at its end), and the server
        # serves the next.
        server.wait_in_flight(lambda n: n == 0, "the abandoned call to end")
        assert texts(run(mcp_session(server.url, body))) == "waited 10 ms"


def test_stdio_lists_calls_and_streams_progress():
    progress = []

    async def on_progress(value, total, message):
        progress.append((value, message))

    async def body(session):
        tools = (await session.list_tools()).tools
        story = await session.call_tool(
            "tell-story", {"hero": "Ferris", "chapters": 2}, progress_callback=on_progress
        )
        return tools, story

    tools, story = run(mcp_stdio("streaming", body))
    assert [tool.name for tool in tools] == ["tell-story"]
    assert texts(story) == (
        "Chapter 1: Ferris sets out again.\n"
        "Chapter 2: Ferris sets out again.\n"
        "The end of Ferris's 2 chapters."
    )
    assert progress == [
        (1.0, "Chapter 1: Ferris sets out again.\n"),
        (2.0, "Chapter 2: Ferris sets out again.\n"),
    ]


def test_stdio_writes_nothing_but_protocol_to_stdout():
    requests = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "tell-joke", "arguments": {"topic": "programming"}}},
    ]
    process = subprocess.run(
        [str(examples_dir() / "joke"), "mcp", "--log-level", "debug"],
        input="".join(json.dumps(request) + "\n" for request in requests),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert process.returncode == 0, process.stderr
    lines = process.stdout.splitlines()
    answers = [json.loads(line) for line in lines]
    assert [answer.get("id") for answer in answers] == [1, 2], lines
    assert answers[1]["result"]["content"][0]["text"] == JOKE
    assert "DEBUG" in process.stderr


def test_serve_with_mcp_listen_answers_on_pulsar_and_mcp_and_stops_on_sigterm():
    # two_crates: no other replica of it serves on the broker (conftest's
    # are joke, custom_rag, streaming and echo), so its metrics count every
    # Pulsar call.
    async def over_mcp(session):
        return await session.call_tool("hello", {})

    async def over_pulsar(client):
        return await client.call({}, {})

    hello = "hello from the binary"
    server = McpHttp("two_crates", "--only", "two-crates-hello-service", serve=True)
    try:
        assert texts(run(mcp_session(server.url, over_mcp))) == hello
        assert run(with_client("two-crates-hello", over_pulsar)) == hello
        # One metrics endpoint: MCP calls apart, labelled transport="mcp".
        (line,) = [line for line in server.lines if "metrics on http://" in line]
        port = line.rsplit(":", 1)[1].split("/")[0]
        pulsar = 'tg_dynamic_tool_service_invocation_total{processor="two-crates-hello-service"} 1\n'
        # A Pulsar answer is counted once the broker confirms it, a moment
        # after the caller may have it.
        deadline = time.monotonic() + 10
        while True:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
                metrics = response.read().decode()
            if pulsar in metrics or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert pulsar in metrics, metrics
        assert ('tg_dynamic_tool_service_invocation_total{processor="two-crates-hello-service",transport="mcp"} 1\n'
                in metrics), metrics
    finally:
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(60)
    assert code == 0, "\n".join(server.lines)
    log = "\n".join(server.lines)
    # One drain for both transports.
    assert log.count("stopping: finishing calls in flight") == 1 and "stopped" in log, log


@pytest.mark.parametrize(
    "wire, passing",
    [
        (
            "2025-11-25",
            ["server-initialize", "ping", "tools-list", "dns-rebinding-protection",
             "tools-call-simple-text", "tools-call-error", "tools-call-with-progress"],
        ),
        (
            "2026-07-28",
            ["tools-list", "tools-call-simple-text", "tools-call-error",
             "tools-call-with-progress", "server-sse-multiple-streams",
             "dns-rebinding-protection", "http-header-validation",
             "http-custom-header-server-validation"],
        ),
    ],
)
def test_the_conformance_suite_passes_except_its_baseline(wire, passing):
    """The official MCP conformance suite against the fixture tools of
    examples/conformance.rs, on the 2025-11-25 wire (`initialize`) and on
    the 2026-07-28 one (no `initialize`, every request on its own): every
    server scenario; the checks a tools-only server cannot pass are in
    interop/mcp-expected-failures.yml with their reasons."""
    with McpHttp("conformance") as server:
        suite = subprocess.run(
            [
                str(ROOT / "scripts" / "install" / "mcp-conformance.sh"),
                "server",
                "--url",
                server.url,
                "--suite",
                "all",
                "--spec-version",
                wire,
                "--expected-failures",
                str(ROOT / "interop" / "mcp-expected-failures.yml"),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
    output = suite.stdout + suite.stderr
    assert suite.returncode == 0, output
    assert "Baseline check passed" in output, output
    for scenario in passing:
        assert re.search(rf"✓ {scenario}: [1-9]\d* passed, 0 failed\n", output), (
            f"{scenario} did not pass on the {wire} wire:\n{output}")
    # The scenario the stateless wire stands on, all but the two checks of
    # a tool that would need a client capability (see the baseline).
    if wire == "2026-07-28":
        assert re.search(r"✗ server-stateless: (\d+) passed, 2 failed", output), output


def test_sigterm_lets_a_call_in_flight_finish_within_the_grace_period():
    async def body(session):
        return await session.call_tool("wait", {"ms": 1500})

    server = McpHttp("echo", "--grace-period", "10")
    try:
        async def call_then_terminate():
            call = asyncio.ensure_future(mcp_session(server.url, body))
            await asyncio.to_thread(server.wait_in_flight, lambda n: n == 1, "the call to start")
            server.process.send_signal(signal.SIGTERM)
            return await call

        result = run(call_then_terminate())
        code = server.process.wait(30)
    finally:
        if server.process.poll() is None:
            server.process.kill()
    assert texts(result) == "waited 1500 ms"
    assert code == 0, "\n".join(server.lines)
    log = "\n".join(server.lines)
    assert "stopping: finishing calls in flight in_flight=1" in log, log
