"""End to end with the agent TrustGraph deploys: trustgraph-flow 2.11.1's
orchestrator (`trustgraph.agent.orchestrator.service.Processor`, id
`agent-manager`, as its `rag` templates run it beside the `mcp-tool`
processor), unpatched, with its config service and a scripted LLM that
answers the orchestrator's own prompt templates, on the real broker.

Our tools reach it over MCP (`mcp --listen`, then `announce --mcp-url`).
Each of its three patterns answers with our tool's text, a tool that fails
(`isError`) becomes an observation in each, and TrustGraph's group and state
filtering applies to our tools. Over Pulsar (the tool-service route) the
stock 2.11.1 orchestrator fails every call (the same client bug as its ReAct
service); patched, it calls our tool, and a failing call ends a
`plan-then-execute` request with an `agent-error` that quotes our message.

Run by scripts/interop.sh (`scripts/interop.sh -k orchestrator` for these alone).
"""

import json
import subprocess

import pytest

import agent_patch
from peer import PULSAR_URL, McpHttp, calls_served, examples_dir
from trustgraph_stack import TrustGraphStack

QUESTION = "Tell me a joke about programming"
JOKE = "Here's a pun for you:\n\nI'd tell you a UDP joke, but you might not get it."
# examples/joke.rs's refusal of an empty topic, as the LLM reads it.
NO_TOPIC = "give a topic for the joke, e.g. programming, animals or food"
PATTERNS = ("react", "plan-then-execute", "supervisor")
# The templates each pattern asks the prompt service for, for one question
# answered with one tool call (the supervisor: one sub-goal, run as `react`).
TEMPLATES = {
    "react": ["agent-react", "agent-react"],
    "plan-then-execute": ["plan-create", "plan-step-execute", "plan-synthesise"],
    "supervisor": ["supervisor-decompose", "agent-react", "agent-react", "supervisor-synthesise"],
}


def words(text):
    return " ".join(text.split())


@pytest.fixture(scope="module")
def stack():
    with TrustGraphStack(patched=False, mcp_tool=True, agent="orchestrator") as stack:
        yield stack


@pytest.fixture
def agent(stack):
    return stack.fresh()


def cli(example, *args, timeout=30):
    argv = [str(examples_dir() / example), *args]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"`{' '.join(argv)}` exited {result.returncode}:\n{result.stderr}"
    return result


class Announced(McpHttp):
    """`EXAMPLE mcp --listen`, announced to the agent with `announce --mcp-url`
    and withdrawn on exit."""

    def __init__(self, agent, example, *tools):
        super().__init__(example)
        self.example = example
        try:
            cli(example, "announce", "-p", PULSAR_URL, "--mcp-url", self.url)
            agent.wait_for_tools(lambda loaded: all(tool in loaded for tool in tools), 15,
                                 f"{', '.join(tools)} in the orchestrator after `{example} announce --mcp-url`")
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        try:
            if exc[0] is None:
                cli(self.example, "withdraw", "-p", PULSAR_URL, "--mcp-url", self.url)
        finally:
            super().__exit__(*exc)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_each_pattern_answers_with_our_tools_text_over_mcp(agent, pattern):
    with Announced(agent, "joke", "tell-joke") as server:
        before = calls_served(server, "joke-service")
        answer = agent.ask(QUESTION, pattern=pattern)
        assert words(answer.text) == words(JOKE), answer
        assert [words(o) for o in answer.observations] == [words(JOKE)], answer
        assert calls_served(server, "joke-service") - before == 1
    assert agent.llm.prompts() == TEMPLATES[pattern], agent.llm.calls


def test_the_supervisor_runs_one_sub_agent_per_goal_each_calling_our_tool(agent):
    agent.llm.goals = ["Find a programming joke", "Find another programming joke"]
    with Announced(agent, "joke", "tell-joke") as server:
        before = calls_served(server, "joke-service")
        answer = agent.ask(QUESTION, pattern="supervisor")
        assert calls_served(server, "joke-service") - before == 2
    assert words(answer.text) == words(f"{JOKE}\n\n{JOKE}"), answer
    assert agent.llm.prompts().count("agent-react") == 4, agent.llm.prompts()


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_tool_that_fails_is_an_observation_in_each_pattern(agent, pattern):
    """Our refusal travels as `isError` content; TrustGraph's mcp-tool
    processor hands its text on as the tool's output, so every pattern
    carries on and the LLM reads the sentence."""
    agent.llm.arguments = {"topic": ""}
    with Announced(agent, "joke", "tell-joke"):
        answer = agent.ask(QUESTION, pattern=pattern)
    assert answer.error is None, answer
    assert [words(o) for o in answer.observations] == [NO_TOPIC], answer
    assert words(answer.text) == NO_TOPIC, answer


def test_with_no_pattern_the_meta_router_picks_react_without_asking_the_llm(agent):
    """2.11.1's meta-router reads `agent-pattern` and `agent-task-type` from
    the config its handler is given, but the orchestrator registers that
    handler for `tool` and `tool-service` only: with both types configured
    it still knows one pattern and one task type, so it asks the LLM
    nothing and runs `react`. A request picks another pattern with its
    `pattern` field (as the tests above do)."""
    agent.put({
        "agent-pattern": {name: {"name": name, "description": name} for name in PATTERNS},
        "agent-task-type": {
            "general": {"name": "general", "description": "General queries", "valid_patterns": list(PATTERNS)},
            "research": {"name": "research", "description": "Research", "valid_patterns": list(PATTERNS)},
        },
    })
    agent.llm.task_type, agent.llm.pattern = "research", "plan-then-execute"
    try:
        with Announced(agent, "joke", "tell-joke"):
            answer = agent.ask(QUESTION)
    finally:
        agent.delete([("agent-pattern", name) for name in PATTERNS]
                     + [("agent-task-type", "general"), ("agent-task-type", "research")])
    assert words(answer.text) == words(JOKE), answer
    assert agent.llm.prompts() == TEMPLATES["react"], agent.llm.calls


def offered(call):
    return sorted(tool["name"] for tool in call["tools"])


def test_groups_and_states_filter_our_tools_in_the_orchestrator(agent):
    """`examples/groups.rs` over MCP: the orchestrator offers each request
    only the tools of its group and state, and `search-tickets` moves it to
    state `found`, where `close-ticket` is offered too."""
    agent.llm.action, agent.llm.arguments = "search-tickets", {"query": "printer"}
    with Announced(agent, "groups", "search-tickets", "close-ticket", "ticket-stats"):
        answer = agent.ask("Find the printer tickets", group=["support"])
        assert answer.observations and answer.observations[0].startswith("up to"), answer
        assert [offered(call) for call in agent.llm.calls] == [
            ["search-tickets"], ["close-ticket", "search-tickets"]], agent.llm.calls
        agent.llm.calls.clear()
        agent.ask("How many tickets are open?")
        assert offered(agent.llm.calls[0]) == ["ticket-stats"], agent.llm.calls
        agent.llm.calls.clear()
        agent.ask("Find the printer tickets", group=["ops"], pattern="plan-then-execute")
        assert offered(agent.llm.calls[0]) == ["search-tickets", "ticket-stats"], agent.llm.calls
        agent.llm.calls.clear()
        agent.ask("Close ticket 7", group=["support"], state="found", pattern="plan-then-execute")
        assert offered(agent.llm.calls[0]) == ["close-ticket", "search-tickets"], agent.llm.calls


def test_over_pulsar_the_stock_orchestrator_fails_the_call_and_the_patched_one_makes_it(agent):
    """The tool-service route: the 2.11.1 orchestrator builds its
    tool-service client with the ReAct service's code, so the stock one
    fails every call before sending it (the LLM reads the error); with the
    harness's fix (agent_patch.py) it calls `joke serve` and answers."""
    agent.put(json.loads(cli("joke", "descriptors").stdout))
    agent.wait_for_tools(lambda tools: "tell-joke" in tools, 15, "tell-joke (tool-service route)")
    answer = agent.ask(QUESTION)
    assert any("takes no arguments" in observation for observation in answer.observations), answer
    agent_patch.apply()
    try:
        for pattern in PATTERNS:
            answer = agent.ask(QUESTION, pattern=pattern)
            assert words(answer.text) == words(JOKE), (pattern, answer)
        # The queue names in Pulsar's own form name the same topics.
        agent.clear_tools()
        agent.put(json.loads(cli("joke", "descriptors", "--queue-names", "pulsar").stdout))
        agent.wait_for_tools(lambda tools: "tell-joke" in tools, 15, "tell-joke (Pulsar queue names)")
        assert agent.config()["tool-service"]["joke-service"]["request-queue"] == "non-persistent://tg/request/joke"
        answer = agent.ask(QUESTION)
        assert words(answer.text) == words(JOKE), answer
        agent.llm.arguments = {"topic": ""}
        answer = agent.ask(QUESTION, pattern="react")
        assert [words(o) for o in answer.observations] == [f"Error: {NO_TOPIC}"], answer
        # plan-then-execute calls the tool without a `try`: the tool's error
        # frame ends the request with an agent-error quoting our message.
        answer = agent.ask(QUESTION, pattern="plan-then-execute", error_ok=True)
        assert answer.error is not None and NO_TOPIC in answer.error, answer
    finally:
        agent_patch.revert()
