"""TrustGraph 2.7.15 as released, unpatched: the newest release whose stock
agent builds the tool-service client it calls (from 2.8.2 on it cannot; see
interop/agent_patch.py). Its config service, its ReAct agent service and its
orchestrator (one module run each), and a scripted LLM, on the real broker:
`joke serve --announce` gives the running agent `tell-joke` over Pulsar, and
the agent answers with our joke, with the queue names in either form our
descriptors write; a failing call is an observation (ReAct) or ends the
request with an `agent-error` quoting our message (`plan-then-execute`).

Run by scripts/interop.sh, in its own environment:
`TRUSTGRAPH_VERSION=2.7.15 scripts/install/python-peer.sh` makes it.
"""

import pytest

import tg_messaging
from peer import Replica
from trustgraph_stack import TrustGraphStack

QUESTION = "Tell me a joke about programming"
JOKE = "Here's a pun for you:\n\nI'd tell you a UDP joke, but you might not get it."
NO_TOPIC = "give a topic for the joke, e.g. programming, animals or food"


def words(text):
    return " ".join(text.split())


def test_this_is_2_7_15():
    assert tg_messaging.RELEASE == "2.7.15", f"run with TrustGraph 2.7.15's environment, not {tg_messaging.RELEASE}"


@pytest.fixture(scope="module", params=["react", "orchestrator"])
def stack(request):
    with TrustGraphStack(patched=False, agent=request.param) as stack:
        yield stack


@pytest.fixture
def agent(stack):
    return stack.fresh()


@pytest.mark.parametrize("queue_names", ["trustgraph", "pulsar"])
def test_the_stock_agent_calls_serve_announce_over_pulsar(agent, queue_names):
    replica = Replica("joke", "--announce", "--queue-names", queue_names)
    try:
        tools = agent.wait_for_tools(lambda tools: "tell-joke" in tools, 15, "tell-joke after `joke serve --announce`")
        queue = agent.config()["tool-service"]["joke-service"]["request-queue"]
        assert queue == {"trustgraph": "request:tg:joke", "pulsar": "non-persistent://tg/request/joke"}[queue_names]
        assert tools["tell-joke"]["type"] == "tool-service"
        answer = agent.ask(QUESTION)
        assert [words(o) for o in answer.observations] == [words(JOKE)], answer
        assert words(answer.text) == words(JOKE), answer
    finally:
        assert replica.stop() == 0, "\n".join(replica.lines)


def test_a_failing_call_is_an_observation_or_ends_a_plan(agent):
    agent.llm.arguments = {"topic": ""}
    replica = Replica("joke", "--announce")
    try:
        agent.wait_for_tools(lambda tools: "tell-joke" in tools, 15, "tell-joke after `joke serve --announce`")
        answer = agent.ask(QUESTION)
        assert [words(o) for o in answer.observations] == [f"Error: {NO_TOPIC}"], answer
        if agent.agent_kind == "orchestrator":
            answer = agent.ask(QUESTION, pattern="plan-then-execute", error_ok=True)
            assert answer.error is not None and NO_TOPIC in answer.error, answer
            agent.llm.reset()
            for pattern in ("plan-then-execute", "supervisor"):
                answer = agent.ask(QUESTION, pattern=pattern)
                assert words(answer.text) == words(JOKE), (pattern, answer)
    finally:
        assert replica.stop() == 0, "\n".join(replica.lines)
