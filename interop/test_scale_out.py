"""MCP replicas behind real load balancers, driven by the Python MCP SDK
(TrustGraph's mcp-tool client): two replicas of an example binary (`mcp
--listen`) behind nginx (Debian's nginx-light: HTTP, round-robin per
request, as an ingress balances) and behind HAProxy (TCP, a replica drawn
at random per connection, as a Kubernetes Service's kube-proxy balances). TrustGraph's pattern (a
session per call), one long session, and progress notifications: every
call answered, and both replicas serve. The balancers come from
scripts/install/balancers.sh."""

import pytest

from peer import Balancer, McpHttp, calls_served, mcp_session, run

JOKE = "Here's a pun for you:\n\nI'd tell you a UDP joke, but you might not get it."
CALLS = 40


def texts(result):
    assert not result.is_error, result
    return "".join(item.text for item in result.content)


@pytest.fixture(scope="module")
def jokes():
    replicas = [McpHttp("joke"), McpHttp("joke")]
    yield replicas
    for replica in replicas:
        replica.stop()


@pytest.mark.parametrize("kind", ["nginx", "haproxy"])
def test_a_session_per_call_is_answered_by_every_replica_behind_the_balancer(jokes, kind):
    async def call(session):
        return await session.call_tool("tell-joke", {"topic": "programming"})

    # TrustGraph's session is four requests (initialize, initialized, the
    # GET a server without sessions refuses, the call): under round robin
    # every call would meet the same replica, and every initialize the
    # other one. Every other session lists the tools first, as another
    # client in between would shift the turn, so calls meet both.
    async def list_then_call(session):
        await session.list_tools()
        return await call(session)

    before = [calls_served(replica, "joke-service") for replica in jokes]
    balancer = Balancer(kind, [replica.port for replica in jokes])
    try:
        for n in range(CALLS):
            assert texts(run(mcp_session(balancer.url, list_then_call if n % 2 else call))) == JOKE
    finally:
        balancer.stop()
    served = [calls_served(replica, "joke-service") - was for replica, was in zip(jokes, before)]
    assert sum(served) == CALLS, served
    assert all(count > 0 for count in served), f"a replica served no call: {served}"


@pytest.mark.parametrize("kind", ["nginx", "haproxy"])
def test_one_long_session_is_answered_behind_the_balancer(jokes, kind):
    async def body(session):
        answers = []
        for _ in range(CALLS):
            answers.append(texts(await session.call_tool("tell-joke", {"topic": "programming"})))
        return answers

    before = [calls_served(replica, "joke-service") for replica in jokes]
    balancer = Balancer(kind, [replica.port for replica in jokes])
    try:
        assert run(mcp_session(balancer.url, body)) == [JOKE] * CALLS
    finally:
        balancer.stop()
    served = [calls_served(replica, "joke-service") - was for replica, was in zip(jokes, before)]
    assert sum(served) == CALLS, served
    if kind == "nginx":
        # Per request: the session's calls are spread over both.
        assert all(count > 0 for count in served), f"a replica served no call: {served}"


def test_progress_reaches_the_client_through_the_balancer():
    replicas = [McpHttp("streaming"), McpHttp("streaming")]
    balancer = Balancer("nginx", [replica.port for replica in replicas])
    try:
        for n in range(6):
            progress = []

            async def on_progress(value, total, message):
                progress.append((value, message))

            async def body(session, n=n):
                if n % 2:
                    # The turn shifts, as in the test above.
                    await session.list_tools()
                return await session.call_tool(
                    "tell-story", {"hero": "Ferris", "chapters": 2}, progress_callback=on_progress
                )

            story = texts(run(mcp_session(balancer.url, body)))
            assert story.endswith("The end of Ferris's 2 chapters."), story
            assert [value for value, _ in progress] == [1.0, 2.0], progress
        served = [calls_served(replica, "story-service") for replica in replicas]
        assert all(count > 0 for count in served), f"a replica served no call: {served}"
    finally:
        balancer.stop()
        for replica in replicas:
            replica.stop()
