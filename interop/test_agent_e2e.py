"""End to end with TrustGraph's own processes: its config service and its
ReAct agent (trustgraph_stack.py) pick up, call and drop our Rust tools as
the example binaries announce and withdraw them, with no restart.

The stack is started once for this module; each test starts from no tools
configured. `test_h…` stops the stack, so it runs last.
Run by scripts/interop.sh (`scripts/interop.sh -k e2e` for these alone).
"""

import json
import subprocess
import threading
import time

import pytest

from peer import PULSAR_URL, Replica, examples_dir
from trustgraph.schema import ConfigRequest
from trustgraph_stack import BROKEN_MESSAGE, TrustGraphStack

QUESTION = "Tell me a joke about programming"

# A tool someone else configured by hand: not ours, whatever we announce.
HAND_MADE = {
    "tool-service": {"weather-service": {
        "id": "weather-service",
        "request-queue": "non-persistent://tg/request/weather",
        "response-queue": "non-persistent://tg/response/weather",
        "config-params": [],
    }},
    "tool": {"weather": {
        "type": "tool-service", "name": "weather", "description": "The weather in a city",
        "service": "weather-service",
        "arguments": [{"name": "city", "type": "string", "description": "The city"}],
    }},
}


@pytest.fixture(scope="module")
def stack():
    stack = TrustGraphStack().start()
    yield stack
    stack.stop()


@pytest.fixture
def agent(stack):
    """The running stack, with no tool or tool-service configured in
    `default` and the agent holding no tools."""
    stack.clear_tools()
    return stack


def descriptors(example):
    out = subprocess.run([str(examples_dir() / example), "descriptors"], check=True, capture_output=True)
    return json.loads(out.stdout)


def tool_names(*examples):
    return {name for example in examples for name in descriptors(example)["tool"]}


def cli(example, command, *args, timeout=30):
    """Runs `<example> <command> -p URL args…`; the CompletedProcess, with
    `elapsed` seconds."""
    argv = [str(examples_dir() / example), command, "-p", PULSAR_URL, *args]
    started = time.monotonic()
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"`{' '.join(argv)}` still running after {timeout}s") from None
    result.elapsed = time.monotonic() - started
    if "unrecognized subcommand" in result.stderr:
        raise AssertionError(f"`{example}` has no `{command}` command: rebuild the examples (cargo build "
                             f"--examples) from a checkout with the announce/withdraw CLI\n{result.stderr}")
    return result


def ok(result):
    assert result.returncode == 0, f"`{' '.join(result.args)}` exited {result.returncode}:\n{result.stderr}"
    return result


def failed(result):
    assert result.returncode != 0, f"`{' '.join(result.args)}` succeeded, expected a failure:\n{result.stderr}"
    return result


def joke_call():
    """The joke as our handler tells it, run in-process (no broker)."""
    out = subprocess.run([str(examples_dir() / "joke"), "call", "tell-joke", "--args", '{"topic":"programming"}'],
                         check=True, capture_output=True, text=True)
    (frame,) = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert frame["error"] is None, frame
    return frame["response"].strip()  # the agent strips observations


def words(text):
    return " ".join(text.split())


class Announcing(Replica):
    """`<example> serve --announce …`, ready once it logs `announced`."""

    def __init__(self, example, *args, timeout=30):
        self.announced = threading.Event()
        super().__init__(example, "--announce", *args)
        if not self.announced.wait(timeout):
            self.stop()
            raise AssertionError(f"`{example} serve --announce` logged no `announced` line within {timeout}s:\n"
                                 + "\n".join(self.lines))

    def _read(self):
        for line in self.process.stderr:
            self.lines.append(line.rstrip())
            if " ready" in line:
                self.ready.set()
            if "announced" in line:
                self.announced.set()


def test_the_broken_workspace_answers_config_error(agent):
    """The harness's `broken` workspace (used by test g): registered and
    readable, and TrustGraph's own handler answers its put with config-error."""
    reply = agent.config_request(ConfigRequest(operation="config"), "broken")
    assert reply.error is None
    with pytest.raises(AssertionError, match="storage is unavailable"):
        agent.put(descriptors("joke"), "broken")


def test_a_the_running_agent_gains_tell_joke_after_serve_announce_and_calls_it(agent):
    """(a, b) The agent, running with no tools, gets `tell-joke` from
    `joke serve --announce`, nothing restarted; asked a question, it calls
    the tool over Pulsar and its final answer carries our joke."""
    assert agent.tools() == {}
    replica = Announcing("joke")
    try:
        tools = agent.wait_for_tools(lambda tools: "tell-joke" in tools, 15,
                                     "tell-joke in the agent after `joke serve --announce`")
        expected = descriptors("joke")
        assert tools["tell-joke"] == expected["tool"]["tell-joke"]
        tree = agent.config()
        assert tree["tool-service"] == expected["tool-service"]
        assert tree["tool"] == expected["tool"]
        joke = joke_call()
        answer = agent.ask(QUESTION)
        assert answer.observations == [joke], answer
        assert words(joke) in words(answer.text), answer
    finally:
        assert replica.stop() == 0, "\n".join(replica.lines)


def test_b_one_put_by_hand_works_too_and_the_llm_is_offered_the_tool(agent):
    """(b) The items of `joke descriptors` put by hand in one request (what
    the README's by-hand route sends through the API gateway): the agent
    offers `tell-joke` to the LLM, calls it over Pulsar (the session's
    `joke` replica answers) and its final answer carries our joke."""
    agent.put(descriptors("joke"))
    agent.wait_for_tools(lambda tools: "tell-joke" in tools, 15, "tell-joke after a put of `joke descriptors`")
    first_prompt = len(agent.llm.calls)
    joke = joke_call()
    answer = agent.ask(QUESTION)
    assert answer.observations == [joke], answer
    # The agent folds a multi-line final answer onto one line.
    assert words(joke) in words(answer.text), answer
    offered = [[tool["name"] for tool in call["tools"]] for call in agent.llm.calls[first_prompt:]]
    assert offered == [["tell-joke"], ["tell-joke"]]


def test_dry_run_prints_the_put_and_sends_nothing(agent):
    """`announce --dry-run`: the one put it would send, nothing sent."""
    version, tree = agent.snapshot()
    request = json.loads(ok(cli("joke", "announce", "--dry-run")).stdout)
    assert request["operation"] == "put"
    items = {(value["type"], value["key"]): json.loads(value["value"]) for value in request["values"]}
    expected = descriptors("joke")
    assert items == {(t, k): item for t, entries in expected.items() for k, item in entries.items()}
    assert agent.snapshot() == (version, tree)


def test_c_a_second_binary_announced_later_keeps_the_first_ones_tools(agent):
    """(c) `echo announce` after `joke announce`: both sets, in the config
    service and in the agent; each announce is ONE put (one version step)."""
    version, _ = agent.snapshot()
    ok(cli("joke", "announce"))
    ok(cli("echo", "announce"))
    both = tool_names("joke", "echo")
    agent.wait_for_tools(lambda tools: set(tools) == both, 15, f"the agent to hold {sorted(both)}")
    after, tree = agent.snapshot()
    assert after == version + 2
    assert set(tree["tool"]) == both
    assert set(tree["tool-service"]) == set(descriptors("joke")["tool-service"]) | set(descriptors("echo")["tool-service"])


def test_d_withdraw_removes_exactly_ours(agent):
    """(d) `joke withdraw` deletes joke's items in ONE delete; echo's and a
    tool put by hand for another service stay, in the config and the agent."""
    ok(cli("joke", "announce"))
    ok(cli("echo", "announce"))
    agent.put(HAND_MADE)
    remaining = tool_names("echo") | {"weather"}
    agent.wait_for_tools(lambda tools: set(tools) == remaining | {"tell-joke"}, 15, "every tool announced")
    version, _ = agent.snapshot()
    ok(cli("joke", "withdraw"))
    after, tree = agent.snapshot()
    assert after == version + 1
    assert set(tree["tool"]) == remaining
    assert "joke-service" not in tree["tool-service"]
    assert tree["tool"]["weather"] == HAND_MADE["tool"]["weather"]
    assert tree["tool-service"]["weather-service"] == HAND_MADE["tool-service"]["weather-service"]
    agent.wait_for_tools(lambda tools: set(tools) == remaining, 15, f"the agent to hold exactly {sorted(remaining)}")


def test_d_withdraw_with_no_tool_of_ours_left_keeps_the_agents_other_tools(agent):
    """(d) A pitfall of the agent: on a push it fetches only the types the
    push names, and a `tool-service`-only fetch leaves it with no tools at
    all. So when our tool items are already gone (deleted by hand), a
    withdraw that deletes only our tool-service items would empty the agent
    of echo's tools too, while the config still holds them. The delete must
    name the `tool` type as well (deleting an absent key is a no-op)."""
    ok(cli("joke", "announce"))
    ok(cli("echo", "announce"))
    agent.wait_for_tools(lambda tools: set(tools) == tool_names("joke", "echo"), 15, "every tool announced")
    agent.delete([("tool", "tell-joke")])  # by hand, alone: the agent keeps a stale tell-joke
    ok(cli("joke", "withdraw"))
    assert set(agent.config()["tool"]) == tool_names("echo")
    agent.wait_for_tools(lambda tools: set(tools) == tool_names("echo"), 15,
                         f"the agent to hold echo's tools {sorted(tool_names('echo'))} after `joke withdraw`")


def test_e_a_clash_is_refused_and_replace_overwrites(agent):
    """(e) A `tell-joke` already configured for another service: announce
    exits non-zero naming it and changes nothing; `--replace` overwrites."""
    theirs = {
        "tool-service": {"other-jokes": {**HAND_MADE["tool-service"]["weather-service"], "id": "other-jokes"}},
        "tool": {"tell-joke": {**HAND_MADE["tool"]["weather"], "name": "tell-joke", "service": "other-jokes"}},
    }
    agent.put(theirs)
    before = agent.snapshot()
    result = failed(cli("joke", "announce"))
    assert "tool `tell-joke` belongs to service `other-jokes`" in result.stderr, result.stderr
    assert agent.snapshot() == before
    ok(cli("joke", "announce", "--replace"))
    tree = agent.config()
    assert tree["tool"]["tell-joke"] == descriptors("joke")["tool"]["tell-joke"]
    assert "other-jokes" in tree["tool-service"]  # not ours: left alone
    agent.wait_for_tools(lambda tools: tools.get("tell-joke", {}).get("service") == "joke-service", 15,
                         "the agent's tell-joke to be joke-service's")


def test_f_an_unknown_workspace_fails_within_the_timeout(agent):
    """(f) `--workspace nowhere` (never registered): non-zero, says so,
    within the timeout; nothing changes in `default`."""
    before = agent.snapshot()
    result = failed(cli("joke", "announce", "--workspace", "nowhere", "--timeout", "3s"))
    assert "workspace `nowhere` does not exist" in result.stderr, result.stderr
    assert result.elapsed < 3 + 4, f"took {result.elapsed:.1f}s with --timeout 3s"
    assert agent.snapshot() == before


def test_g_an_error_reply_is_quoted(agent):
    """(g) The config service's own `config-error` reply (its store fails
    for workspace `broken`): non-zero, its message quoted."""
    result = failed(cli("joke", "announce", "--workspace", "broken", "--timeout", "5s"))
    assert BROKEN_MESSAGE in result.stderr, result.stderr


def test_h_without_a_config_service_announce_fails_within_its_timeout(stack):
    """(h) No config service on the broker (the stack stopped; so this test
    runs last): `announce --timeout 2s` fails in about 2 s."""
    stack.stop()
    result = failed(cli("joke", "announce", "--timeout", "2s"))
    assert result.elapsed < 2 + 4, f"took {result.elapsed:.1f}s with --timeout 2s"
    assert "no TrustGraph config service answered" in result.stderr, result.stderr
