"""Our descriptors, loaded by TrustGraph's own agent (trustgraph-flow 2.11.1,
`agent/react/service.py`, `on_tools_config`) exactly as it loads them from its
config service; then our service is called with the config values and
argument names the loader derived. Run by scripts/interop.sh.
"""

import asyncio
import copy
import json
import subprocess

from trustgraph.agent.react.agent_manager import AgentManager
from trustgraph.agent.react.service import Processor
from trustgraph.agent.react.tools import ToolServiceImpl
from trustgraph.base.async_pulsar_backend import AsyncPulsarBackend

from peer import GOLDEN, examples_dir, with_client


def descriptors(example):
    out = subprocess.run([str(examples_dir() / example), "descriptors"], check=True, capture_output=True)
    return json.loads(out.stdout)


def load_tools(tree):
    """Runs the agent's loader on a config tree; returns its tools (or None
    when the loader rejected the configuration)."""
    agent = Processor.__new__(Processor)  # the loader needs no connections
    agent.agents = {}
    agent.config_key = "agent"
    config = {kind: {key: json.dumps(item) for key, item in items.items()} for kind, items in tree.items()}
    asyncio.run(Processor.on_tools_config(agent, "default", config, 1))
    manager = agent.agents.get("default")
    return None if manager is None else manager.tools


def tool_service_settings(tool):
    implementation = tool.implementation
    assert implementation.func is ToolServiceImpl
    return implementation.keywords


def test_the_agent_loads_the_joke_tool():
    tree = descriptors("joke")
    tools = load_tools(tree)
    assert tools is not None, "the agent rejected the descriptors"
    tool = tools["tell-joke"]
    assert tool.description == "Tell a joke on a given topic"
    settings = tool_service_settings(tool)
    # TrustGraph's own queue names, which its Pulsar backend maps to the
    # topics the service is served on (its RabbitMQ and Kafka backends take
    # only these).
    assert settings["request_queue"] == "request:tg:joke"
    assert settings["response_queue"] == "response:tg:joke"
    assert AsyncPulsarBackend._map_topic(None, settings["request_queue"]) == "non-persistent://tg/request/joke"
    assert AsyncPulsarBackend._map_topic(None, settings["response_queue"]) == "non-persistent://tg/response/joke"
    assert settings["config_values"] == {"style": "pun"}
    assert [(a.name, a.type, a.description) for a in settings["arguments"]] == [
        ("topic", "string", "The topic for the joke (e.g., programming, animals, food)"),
    ]


def test_the_agent_loads_two_tools_of_one_service_with_their_own_config():
    tools = load_tools(descriptors("custom_rag"))
    assert tools is not None, "the agent rejected the descriptors"
    assert tool_service_settings(tools["query-customers"])["config_values"] == {"collection": "customers"}
    assert tool_service_settings(tools["query-products"])["config_values"] == {
        "collection": "products",
        "max-results": 2,
    }


def test_the_loader_rejects_what_our_registry_rejects():
    # The same rule our registry applies before deployment: a tool must set
    # every required config param of its service.
    tree = copy.deepcopy(descriptors("custom_rag"))
    del tree["tool"]["query-customers"]["collection"]
    assert load_tools(tree) is None
    # And a tool must name an existing tool-service.
    tree = copy.deepcopy(descriptors("joke"))
    tree["tool"]["tell-joke"]["service"] = "no-such-service"
    assert load_tools(tree) is None


def test_a_call_with_what_the_agent_derived_is_answered():
    settings = tool_service_settings(load_tools(descriptors("custom_rag"))["query-products"])
    argument = settings["arguments"][0].name
    text = asyncio.run(with_client(
        "custom-rag",
        lambda client: client.call(settings["config_values"], {argument: "which springs and gears?"}),
    ))
    hits = json.loads(text)
    assert len(hits) == 2  # the tool's max-results reached the service


def search_tree():
    """The search-documents tool as our registry describes it (pinned by
    tests/descriptions.rs), with its service item."""
    tool = json.loads((GOLDEN / "search-documents.json").read_text())
    service = {
        "id": "search-documents-service",
        "request-queue": "non-persistent://tg/request/search-documents",
        "response-queue": "non-persistent://tg/response/search-documents",
        "config-params": [],
    }
    return {"tool-service": {service["id"]: service}, "tool": {tool["name"]: tool}}


class RecordingPrompt:
    """The prompt service as the agent calls it: records the variables of
    the agent-react template and answers with a final answer."""

    def __init__(self):
        self.variables = None

    async def agent_react(self, variables, streaming=False, **_):
        self.variables = variables

        class Result:
            text = "Thought: done\nFinal Answer: ok"

        return Result()


def test_the_agent_prompt_carries_the_allowed_values_and_fields():
    tools = load_tools(search_tree())
    assert tools is not None, "the agent rejected the descriptors"
    prompt = RecordingPrompt()
    manager = AgentManager(tools)
    asyncio.run(manager.reason("find the Q3 report", [], lambda name: prompt))
    (tool,) = prompt.variables["tools"]
    arguments = {argument["name"]: argument for argument in tool["arguments"]}
    mode = arguments["mode"]
    assert mode["type"] == "string"
    for value in ("`keyword` (Exact words)", "`semantic`", "`hybrid`"):
        assert value in mode["description"], mode
    assert "`from` (string, required)" in arguments["period"]["description"]
    assert "Default: `5`." in arguments["maxHits"]["description"]
    print(json.dumps(prompt.variables["tools"], indent=2))


def test_groups_and_states_select_the_tools_trustgraphs_filter_should():
    """`examples/groups.rs`'s tools, loaded by the agent's loader and filtered
    by TrustGraph's own `tool_filter` as the agent filters them per request
    (`AgentRequest.group` and `state`)."""
    from trustgraph.agent.tool_filter import filter_tools_by_group_and_state, get_next_state

    tools = load_tools(descriptors("groups"))
    assert tools is not None, "the agent rejected the descriptors"
    assert sorted(tools) == ["close-ticket", "search-tickets", "ticket-stats"]

    def offered(group, state):
        return sorted(filter_tools_by_group_and_state(tools, group, state))

    # No group asked for: TrustGraph's ["default"].
    assert offered(None, None) == ["ticket-stats"]
    assert offered(["support"], None) == ["search-tickets"]
    assert offered(["ops"], None) == ["search-tickets", "ticket-stats"]
    assert offered(["support"], "found") == ["close-ticket", "search-tickets"]
    assert offered(["*"], "found") == ["close-ticket", "search-tickets", "ticket-stats"]
    assert offered(["billing"], None) == []
    # A tool with a `state` moves the agent there; the others leave it.
    assert get_next_state(tools["search-tickets"], "undefined") == "found"
    assert get_next_state(tools["close-ticket"], "found") == "found"
