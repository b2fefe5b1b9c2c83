"""What LLMs write as arguments, sent to `examples/groups.rs`'s
`search-tickets` by TrustGraph 2.11.1's own tool-service client over a real
Pulsar broker and by the Python MCP SDK, to one process serving both: the
everyday variants are answered as their canonical form is, the lossy ones
and broken bounds are refused with the same sentence on both routes."""

import pytest

from peer import McpHttp, mcp_session, run, with_client

CANONICAL = {"query": "vpn", "limit": 5, "status": "in-progress", "tags": ["billing"], "exact": True}

# What the LLM sent, and the canonical arguments it stands for.
EVERYDAY = [
    ({"query": "vpn", "limit": "5"}, {"query": "vpn", "limit": 5}),
    ({"query": "vpn", "limit": 5.0}, {"query": "vpn", "limit": 5}),
    ({"query": "vpn", "exact": "true"}, {"query": "vpn", "exact": True}),
    ({"query": "vpn", "tags": '["billing", "vpn"]'}, {"query": "vpn", "tags": ["billing", "vpn"]}),
    ({"query": "vpn", "tags": "billing"}, {"query": "vpn", "tags": ["billing"]}),
    ({"query": "vpn", "status": "In Progress"}, {"query": "vpn", "status": "in-progress"}),
    ({"query": "vpn", "limit": None, "status": None}, {"query": "vpn"}),
    ({"query": "vpn", "priority": "high"}, {"query": "vpn"}),
]

REFUSED = [
    ({"query": "vpn", "limit": "5.5"}, '`limit` must be an integer from 1 to 50; got the text "5.5"'),
    ({"query": "vpn", "limit": 500}, "`limit` must be an integer from 1 to 50; got 500"),
    (
        {"query": "vpn", "status": "pending"},
        '`status` must be one of: `open`, `in-progress`, `closed`; got the text "pending"',
    ),
    ({"limit": 5}, "`query` is missing; it must be a text"),
]


@pytest.fixture(scope="module")
def both():
    # groups is not among conftest's replicas: this process answers every
    # Pulsar call of the topic.
    with McpHttp("groups", "--only", "ticket-search-service", serve=True) as server:
        yield server


def over_pulsar(arguments):
    async def body(client):
        try:
            return ("answer", await client.call({}, arguments))
        except RuntimeError as error:
            return ("error", str(error))

    return run(with_client("ticket-search", body))


def over_mcp(server, arguments):
    async def body(session):
        result = await session.call_tool("search-tickets", arguments)
        text = "".join(item.text for item in result.content)
        return ("error" if result.is_error else "answer", text)

    return run(mcp_session(server.url, body))


def test_everyday_variants_are_answered_as_their_canonical_form(both):
    for sent, canonical in EVERYDAY:
        expected = over_pulsar(canonical)
        assert expected[0] == "answer", expected
        assert over_pulsar(sent) == expected, sent
        assert over_mcp(both, sent) == expected, sent


def test_lossy_variants_and_broken_bounds_are_refused_alike_on_both_routes(both):
    for sent, sentence in REFUSED:
        message = f"invalid arguments: {sentence}"
        assert over_pulsar(sent) == ("error", message), sent
        assert over_mcp(both, sent) == ("error", message), sent
