"""End to end over MCP with TrustGraph 2.11.1 as released: its ReAct agent
with **no patch**, its mcp-tool processor, its config service and a scripted
LLM on the real broker. `joke serve --mcp-listen … --announce --mcp-url …`
gives the running agent `tell-joke`; asked for a joke, the agent calls our
MCP server through the mcp-tool processor and answers with our text; then
`joke withdraw --mcp-url` takes the tool away again.

Run by scripts/interop.sh (`scripts/interop.sh -k mcp_e2e` for these alone).
"""

import json
import pathlib
import subprocess
import tempfile
import threading
import time

import pytest

from peer import PULSAR_URL, Balancer, McpHttp, calls_served, examples_dir, free_port
from trustgraph_stack import TrustGraphStack

QUESTION = "Tell me a joke about programming"
JOKE = "Here's a pun for you:\n\nI'd tell you a UDP joke, but you might not get it."


@pytest.fixture(scope="module")
def stack():
    stack = TrustGraphStack(patched=False, mcp_tool=True).start()
    yield stack
    stack.stop()


@pytest.fixture
def agent(stack):
    stack.clear_tools()
    return stack


def wait_for_server(agent, key, timeout=15):
    """The mcp-tool processor's `mcp` item `key`, once it holds one."""
    deadline = time.monotonic() + timeout
    while True:
        servers = agent.mcp_servers()
        if key in servers:
            return servers[key]
        assert time.monotonic() < deadline, f"no `mcp` item {key!r} in the mcp-tool processor: {servers}"
        time.sleep(0.05)


def cli(*args, timeout=30):
    argv = [str(examples_dir() / "joke"), *args]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"`{' '.join(argv)}` exited {result.returncode}:\n{result.stderr}"
    return result


def test_the_unpatched_agent_cannot_call_a_tool_service_route_tool(agent):
    """Why MCP: the same tool on the tool-service route fails in the stock
    2.11.1 agent (the upstream bug the other e2e test patches)."""
    tree = json.loads(cli("descriptors").stdout)
    agent.put(tree)
    agent.wait_for_tools(lambda tools: "tell-joke" in tools, 15, "tell-joke (tool-service route)")
    answer = agent.ask(QUESTION)
    assert any("takes no arguments" in observation for observation in answer.observations), answer


def test_serve_announce_over_mcp_reaches_the_stock_agent_and_withdraw_removes_it(agent):
    assert agent.tools() == {}
    with McpAnnounced() as server:
        tools = agent.wait_for_tools(lambda tools: "tell-joke" in tools, 15,
                                     "tell-joke in the agent after `serve --announce --mcp-url`")
        assert tools["tell-joke"]["type"] == "mcp-tool"
        assert tools["tell-joke"]["mcp-tool"] == "tell-joke"
        assert tools["tell-joke"]["arguments"][0]["name"] == "topic"
        # The agent and the mcp-tool processor each load the pushed config
        # on their own: the processor may be a moment behind the agent.
        assert wait_for_server(agent, "tell-joke") == {"url": server.url, "remote-name": "tell-joke"}
        started = time.monotonic()
        answer = agent.ask(QUESTION)
        elapsed = time.monotonic() - started
        print(f"the stock agent answered in {elapsed:.3f} s: {answer.text!r}")
        # Our text, as text: not the {"result": …} of structured content.
        assert answer.observations == [JOKE.strip()] or answer.observations == [JOKE], answer
        assert " ".join(answer.text.split()) == " ".join(JOKE.split()), answer
        withdrawn = cli("withdraw", "-p", PULSAR_URL, "--mcp-url", server.url)
        assert "withdrawn from workspace `default` over MCP" in withdrawn.stdout, withdrawn.stdout
        agent.wait_for_tools(lambda tools: "tell-joke" not in tools, 15, "tell-joke gone after withdraw")
        assert "tell-joke" not in agent.config().get("mcp", {})


def test_a_token_protected_server_is_announced_with_its_token_and_called(agent):
    with tempfile.TemporaryDirectory() as directory:
        token_file = pathlib.Path(directory) / "token"
        token_file.write_text("e2e-token\n")
        with McpAnnounced("--mcp-token-file", str(token_file)):
            agent.wait_for_tools(lambda tools: "tell-joke" in tools, 15, "tell-joke (with a token)")
            assert wait_for_server(agent, "tell-joke")["auth-token"] == "e2e-token"
            answer = agent.ask(QUESTION)
            assert " ".join(answer.text.split()) == " ".join(JOKE.split()), answer


def test_the_stock_agent_with_its_static_token_beside_an_oauth_client(agent):
    """One server for TrustGraph and for OAuth clients: TrustGraph's
    mcp-tool route sends the fixed token `announce` gave it, while an MCP
    client signs in with client credentials at the server's authorization
    server (the Python SDK's own OAuth support), and both get the joke. A
    token of neither kind is refused."""
    import asyncio

    from oauth import Issuer, mcp_oauth_session, once_keys_load, secret

    with Issuer() as issuer, tempfile.TemporaryDirectory() as directory:
        token_file = pathlib.Path(directory) / "token"
        token_file.write_text("e2e-static-token\n")
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        oauth = ["--oauth-issuer", issuer.issuer, "--oauth-resource", url]
        with McpAnnounced("--mcp-token-file", str(token_file), *oauth, port=port):
            agent.wait_for_tools(lambda tools: "tell-joke" in tools, 15, "tell-joke (static token and OAuth)")
            assert wait_for_server(agent, "tell-joke")["auth-token"] == "e2e-static-token"
            answer = agent.ask(QUESTION)
            assert " ".join(answer.text.split()) == " ".join(JOKE.split()), answer

            async def call(session):
                result = await session.call_tool("tell-joke", {"topic": "programming"})
                return "".join(item.text for item in result.content)

            text = once_keys_load(
                lambda: asyncio.run(
                    mcp_oauth_session(url, "agent-reader", secret("agent-reader"), call, issuer=issuer.issuer)
                )
            )
            # The joke example greets a caller it knows: the token's subject.
            assert text == f"Hey agent-reader! {JOKE}"


def test_the_stock_agent_calls_two_replicas_behind_a_balancer(agent):
    """Two replicas of `joke mcp --listen` behind nginx (round robin per
    request), announced at the balancer's URL: every question the stock
    agent is asked is answered through the mcp-tool processor, whose
    session (initialize, then the call) the balancer splits over the
    replicas."""
    replicas = [McpHttp("joke"), McpHttp("joke")]
    balancer = Balancer("nginx", [replica.port for replica in replicas])
    try:
        before = [calls_served(replica, "joke-service") for replica in replicas]
        cli("announce", "-p", PULSAR_URL, "--mcp-url", balancer.url)
        agent.wait_for_tools(lambda tools: "tell-joke" in tools, 15, "tell-joke behind the balancer")
        assert wait_for_server(agent, "tell-joke")["url"] == balancer.url
        asked = 4
        for _ in range(asked):
            answer = agent.ask(QUESTION)
            assert " ".join(answer.text.split()) == " ".join(JOKE.split()), answer
        served = [calls_served(replica, "joke-service") - was for replica, was in zip(replicas, before)]
        assert sum(served) == asked, served
        cli("withdraw", "-p", PULSAR_URL, "--mcp-url", balancer.url)
        agent.wait_for_tools(lambda tools: "tell-joke" not in tools, 15, "tell-joke gone after withdraw")
    finally:
        balancer.stop()
        for replica in replicas:
            replica.stop()


class McpAnnounced(McpHttp):
    """`joke serve --mcp-listen 127.0.0.1:PORT --announce --mcp-url
    http://127.0.0.1:PORT/mcp ARGS…`, ready once it has announced."""

    def __init__(self, *args, port=None):
        port = port or free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        self.announced = threading.Event()
        super().__init__("joke", "--announce", "--mcp-url", url, *args, serve=True, port=port)

    def _read(self, serve):
        for line in self.process.stderr:
            self.lines.append(line.rstrip())
            if "announced" in line:
                self.ready.set()
