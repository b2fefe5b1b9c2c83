"""TrustGraph's own config service and agent, in this Python process, on
TrustGraph 2.11.1 or 2.7.15 (whichever is installed; tg_messaging.py covers
the two releases' messaging).

What runs (one asyncio loop in a background thread; `TrustGraphStack.stop()`
ends it, every wait is bounded):

- TrustGraph's config service (trustgraph-flow 2.11.1,
  `trustgraph.config.service.service.Processor`): request handling,
  per-workspace queues, versions and pushes are TrustGraph's code; only its
  Cassandra table store is replaced by `MemoryConfigTableStore`; the store needs the methods the config service calls.
  The workspace `broken` stores nothing: its put/delete raise, so TrustGraph's
  own handler answers with a genuine `config-error` reply.
- TrustGraph's agent, with its flow configured as `tg-start-flow` would
  (`processor:agent-manager`, with all 20 topic keys) and, unless
  `patched=False`, its 2.11.1 tool-service client bug patched
  (agent_patch.py): by default the ReAct service
  (`trustgraph.agent.react.service.Processor`, `agent-manager-react`), with
  `agent="orchestrator"` the agent TrustGraph's templates deploy
  (`trustgraph.agent.orchestrator.service.Processor`, `agent-manager`: the
  `react`, `plan-then-execute` and `supervisor` patterns). Both run as id
  `agent-manager` and read the same flow.
- With `mcp_tool=True`, TrustGraph's mcp-tool processor
  (`trustgraph.agent.mcp_tool.service.Service`, id `mcp-tool`) on the agent's
  `mcp-tool-request` / `mcp-tool-response` queues (`processor:mcp-tool`), as
  TrustGraph's templates deploy it: the route to MCP servers.
- `ScriptedLLM`, a stand-in for the prompt service: it calls `tell-joke`, then
  answers with the observation, and records the tools it was offered; it
  answers the orchestrator's own templates too (routing, plans, sub-goals,
  syntheses).
- `Librarian`, a stand-in acking the agent's provenance saves.

The config queues (`request:tg:config`, `config:<ws>`) have fixed names, so one
stack per broker: `start()` waits for a stack that is stopping to be gone
from `request:tg:config` (the broker's topic stats), and refuses to run next
to a config service that stays. The agent's own queues carry a per-process
tag, so they do not clash.

Every step of the start waits on state, not time: the config service's
subscription is on the broker (its stats) before the first request, whose
answer may still be lost (the harness's own response subscription is
scheduled, not awaited, on 2.7.15), so the idempotent `__workspaces__` put is
sent again until answered. A start that fails names the step it was at.
`stop()` fails when a processor's stop raised, or when the config service's
consumer is still on the broker afterwards.
"""

import asyncio
import collections
import inspect
import json
import logging
import os
import sys
import threading
import time
import types
import urllib.error
import urllib.request
import uuid

PULSAR_URL = os.environ.get("PULSAR_URL", "pulsar://127.0.0.1:6650")
PULSAR_ADMIN_URL = f"http://127.0.0.1:{os.environ.get('PULSAR_HTTP_PORT', '8080')}"
# `request:tg:config` as both releases map it, and the subscription of the
# config service the stack starts (its id).
CONFIG_REQUEST_TOPIC = "non-persistent://tg/request/config"
CONFIG_SERVICE_ID = "config-svc"
BROKEN_WORKSPACE = "broken"
BROKEN_MESSAGE = "storage is unavailable for workspace 'broken' (injected by the test harness)"


class MemoryConfigTableStore:
    """`trustgraph.tables.config.ConfigTableStore` (Cassandra) in a dict, same
    methods and return shapes. Put/delete in workspace `broken` raise."""

    def __init__(self, *_cassandra_settings):
        self.rows = {}  # (workspace, type, key) -> value
        self.version = 0

    def _check(self, workspace):
        if workspace == BROKEN_WORKSPACE:
            raise RuntimeError(BROKEN_MESSAGE)

    async def inc_version(self):
        self.version += 1

    async def get_version(self):
        return self.version

    async def put_config(self, workspace, cls, key, value):
        self._check(workspace)
        self.rows[(workspace, cls, key)] = value

    async def delete_key(self, workspace, cls, key):
        self._check(workspace)
        self.rows.pop((workspace, cls, key), None)

    async def get_value(self, workspace, cls, key):
        return self.rows.get((workspace, cls, key))

    async def get_values(self, workspace, cls):
        return [[k, v] for (w, c, k), v in sorted(self.rows.items()) if (w, c) == (workspace, cls)]

    async def get_values_all_ws(self, cls):
        return [(w, k, v) for (w, c, k), v in sorted(self.rows.items()) if c == cls]

    async def get_keys_all_ws(self, cls):
        return [(w, k) for (w, c, k) in sorted(self.rows) if c == cls]

    async def get_all(self):
        return [(w, c, k, v) for (w, c, k), v in sorted(self.rows.items())]

    async def get_all_for_workspace(self, workspace):
        return [(c, k, v) for (w, c, k), v in sorted(self.rows.items()) if w == workspace]

    async def get_keys(self, workspace, cls):
        return [k for (w, c, k) in sorted(self.rows) if (w, c) == (workspace, cls)]


def _install_memory_store():
    """Must run before `trustgraph.config.service` is imported (its
    `config.py` imports the store, whose real module needs the Cassandra driver)."""
    module = sys.modules.get("trustgraph.tables.config")
    if module is None or getattr(module, "ConfigTableStore", None) is not MemoryConfigTableStore:
        module = types.ModuleType("trustgraph.tables.config")
        module.ConfigTableStore = MemoryConfigTableStore
        sys.modules["trustgraph.tables.config"] = module


_install_memory_store()

import agent_patch  # noqa: E402
import tg_messaging  # noqa: E402
from trustgraph.agent.orchestrator.service import Processor as OrchestratorProcessor  # noqa: E402
from trustgraph.agent.react.service import Processor as AgentProcessor  # noqa: E402
from trustgraph.config.service.service import Processor as ConfigProcessor  # noqa: E402
from trustgraph.schema import (  # noqa: E402
    AgentRequest,
    AgentResponse,
    ConfigKey,
    ConfigRequest,
    ConfigResponse,
    ConfigValue,
    Error,
    LibrarianRequest,
    LibrarianResponse,
    PromptRequest,
    PromptResponse,
)


def flow_definition(tag):
    """`processor:agent-manager` / `default`: all 20 topic keys (a missing one leaves the flow silently dead)."""
    def pair(name):
        return {f"{name}-request": f"request:tg:{name}:{tag}", f"{name}-response": f"response:tg:{name}:{tag}"}

    topics = {
        "request": f"request:tg:agent:{tag}",
        "next": f"request:tg:agent:{tag}",
        "response": f"response:tg:agent:{tag}",
        "explainability": f"flow:tg:explainability:{tag}",
    }
    for name in ("prompt", "text-completion", "mcp-tool", "graph-rag", "structured-query",
                 "embeddings", "row-embeddings-query", "librarian"):
        topics |= pair(name)
    assert len(topics) == 20
    return {"topics": topics, "parameters": {}}


def _json(value):
    return json.loads(value) if value else value


def consumers(topic, admin_url=PULSAR_ADMIN_URL):
    """{subscription: number of consumers} of `topic` (`non-persistent://…` or
    `persistent://…`) from the broker's topic stats; {} while the topic does
    not exist."""
    url = f"{admin_url}/admin/v2/{topic.replace('://', '/', 1)}/stats"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            stats = json.load(response)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return {}
        raise
    return {name: len(sub.get("consumers") or []) for name, sub in (stats.get("subscriptions") or {}).items()}


class ScriptedLLM:
    """Stands in for the prompt service on the agent's `prompt-request` queue.

    `agent-react` (the ReAct service, the orchestrator's `react` pattern and
    the supervisor's sub-agents): first turn, call `action` (default
    `tell-joke` on programming) if the agent offered it; once an observation
    is in the history, a Final Answer quoting it verbatim.

    The orchestrator's own templates (trustgraph-flow 2.11.1's ids):
    `task-type-classify` → `task_type`, `pattern-select` → `pattern`;
    `plan-create` → one step whose hint is `action`; `plan-step-execute` →
    call `action` with `arguments` if offered; `supervisor-decompose` →
    `goals` (default: the question); `plan-synthesise` and
    `supervisor-synthesise` → the results, verbatim, one per paragraph.

    `calls` records each request's id and terms, so a test sees which
    templates ran and which tools the agent offered."""

    def __init__(self, action="tell-joke", arguments=None):
        self.reset(action, arguments)

    def reset(self, action="tell-joke", arguments=None):
        """Back to the default script, with no calls recorded."""
        self.action = action
        self.arguments = arguments if arguments is not None else {"topic": "programming"}
        self.task_type = "general"
        self.pattern = "react"
        self.goals = None
        self.calls = []

    def answer(self, terms):
        history = terms.get("history") or []
        offered = [tool["name"] for tool in terms.get("tools") or []]
        if history:
            return f"Thought: the tool answered.\nFinal Answer: {history[-1]['observation']}"
        if self.action in offered:
            return (f"Thought: I should use {self.action}.\nAction: {self.action}\n"
                    f"Args: {json.dumps(self.arguments)}")
        return f"Thought: no {self.action} tool.\nFinal Answer: no tool named {self.action} was offered (offered: {offered})"

    def reply(self, prompt, terms):
        """(text, object): what the prompt service would answer."""
        offered = [tool["name"] for tool in terms.get("tools") or []]
        if prompt == "agent-react":
            return self.answer(terms), None
        if prompt == "task-type-classify":
            return self.task_type, None
        if prompt == "pattern-select":
            return self.pattern, None
        if prompt == "plan-create":
            hint = self.action if self.action in offered else ""
            return None, [{"goal": terms["question"], "tool_hint": hint, "depends_on": []}]
        if prompt == "plan-step-execute":
            if self.action in offered:
                return None, {"tool": self.action, "arguments": self.arguments}
            return None, {"tool": "", "arguments": {}}
        if prompt == "plan-synthesise":
            return "\n\n".join(step["result"] for step in terms["steps"]), None
        if prompt == "supervisor-decompose":
            return None, list(self.goals or [terms["question"]])
        if prompt == "supervisor-synthesise":
            return "\n\n".join(result["result"] for result in terms["results"]), None
        raise KeyError(prompt)

    def prompts(self):
        """The template ids asked for so far, in order."""
        return [call["id"] for call in self.calls]

    async def serve(self, backend, request_topic, response_topic):
        consumer = await backend.create_consumer(request_topic, f"llm-{uuid.uuid4().hex[:8]}", PromptRequest)
        producer = await backend.create_producer(response_topic, PromptResponse)
        try:
            while True:
                msg = await consumer.receive()
                await consumer.acknowledge(msg)
                request = msg.value()
                terms = {key: _json(value) for key, value in request.terms.items()}
                self.calls.append({"id": request.id, **terms})
                try:
                    text, value = self.reply(request.id, terms)
                except KeyError:
                    reply = PromptResponse(error=Error(type="llm-error", message=f"no script for prompt {request.id}"),
                                           end_of_stream=True)
                else:
                    reply = (PromptResponse(text=text, end_of_stream=True) if value is None
                             else PromptResponse(object=json.dumps(value), end_of_stream=True))
                await producer.send(reply, {"id": msg.properties()["id"]})
        finally:
            await consumer.close()
            await producer.close()


class Librarian:
    """Acks the agent's provenance saves (`add-document`, 3 per one-tool
    question); without it each waits the librarian timeout (120 s by default)."""

    def __init__(self):
        self.operations = []

    async def serve(self, backend, request_topic, response_topic):
        consumer = await backend.create_consumer(request_topic, f"librarian-{uuid.uuid4().hex[:8]}", LibrarianRequest)
        producer = await backend.create_producer(response_topic, LibrarianResponse)
        try:
            while True:
                msg = await consumer.receive()
                await consumer.acknowledge(msg)
                self.operations.append(msg.value().operation)
                await producer.send(LibrarianResponse(error=None, is_final=True), {"id": msg.properties()["id"]})
        finally:
            await consumer.close()
            await producer.close()


class Answer:
    """What the agent said to one question."""

    def __init__(self, messages):
        self.messages = messages
        self.text = "".join(m.content for m in messages if m.message_type == "answer")
        self.observations = [m.content for m in messages if m.message_type == "observation"]
        last = messages[-1]
        self.error = (last.error.message if last.error is not None
                      else last.content if last.message_type == "error" else None)

    def __repr__(self):
        return f"Answer(text={self.text!r}, observations={self.observations!r}, error={self.error!r})"


class _LogTail(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = collections.deque(maxlen=60)

    def emit(self, record):
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")


class TrustGraphStack:
    """Start with `TrustGraphStack().start()`; stop with `.stop()`. Helpers
    are synchronous (for pytest) and bounded; they run on the stack's loop."""

    WORKSPACES = ("default", BROKEN_WORKSPACE)

    AGENTS = {"react": AgentProcessor, "orchestrator": OrchestratorProcessor}

    def __init__(self, url=PULSAR_URL, startup_timeout=60, patched=True, mcp_tool=False, agent="react"):
        assert agent in self.AGENTS, f"agent is one of {sorted(self.AGENTS)}"
        self.agent_kind = agent
        self.url = url
        self.patched = patched
        self.mcp_tool = mcp_tool
        self.startup_timeout = startup_timeout
        self.tag = f"e2e-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.flow = flow_definition(self.tag)
        self.llm = ScriptedLLM()
        self.librarian = Librarian()
        self.log = _LogTail()
        self._loop = None
        self._thread = None
        self._started = threading.Event()
        self._startup_error = None
        self._stopping = None  # asyncio.Event, made on the loop
        self._config_clients = {}
        self._step = "connecting to the broker"
        self._stop_errors = []

    # ---- lifecycle ------------------------------------------------------

    def start(self):
        if self.patched:
            agent_patch.apply()
        else:
            agent_patch.revert()
        logging.getLogger("trustgraph").addHandler(self.log)
        logging.getLogger("trustgraph").setLevel(logging.INFO)
        self._thread = threading.Thread(target=self._run, name="trustgraph-stack", daemon=True)
        self._thread.start()
        if not self._started.wait(self.startup_timeout + 10):
            self.stop()
            raise AssertionError(f"the TrustGraph stack did not start within {self.startup_timeout}s\n{self.tail()}")
        if self._startup_error is not None:
            self.stop()
            raise AssertionError(f"the TrustGraph stack did not start: {self._startup_error}\n{self.tail()}")
        return self

    def stop(self, timeout=30):
        """Stops both processors and the stand-ins; idempotent."""
        if self._thread is None:
            return
        if self._loop is not None and self._stopping is not None:
            try:
                self._loop.call_soon_threadsafe(self._stopping.set)
            except RuntimeError:  # the loop has ended already (a failed start)
                pass
        self._thread.join(timeout)
        alive = self._thread.is_alive()
        self._thread = None
        agent_patch.revert()
        logging.getLogger("trustgraph").removeHandler(self.log)
        assert not alive, f"the TrustGraph stack did not stop within {timeout}s\n{self.tail()}"
        errors, self._stop_errors = self._stop_errors, []
        assert not errors, "stopping the TrustGraph stack failed:\n  " + "\n  ".join(errors) + f"\n{self.tail()}"

    def tail(self):
        return "last TrustGraph log lines:\n  " + "\n  ".join(self.log.lines)

    def _run(self):
        try:
            asyncio.run(self._main())
        except BaseException as e:  # reported by start(), or visible in the log tail
            self._startup_error = self._startup_error or repr(e)
            self._started.set()

    async def _main(self):
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self.backend = tg_messaging.backend(self.url)
        self.tasks = tg_messaging.Tasks()
        release = tg_messaging.processor_params(self.tasks)
        tasks, processors = [], []
        deadline = asyncio.timeout(self.startup_timeout)
        try:
            async with deadline:
                await self._refuse_a_second_config_service()
                self._step = "starting TrustGraph's config service"
                config = ConfigProcessor(id=CONFIG_SERVICE_ID, pulsar_host=self.url, **release)
                await config.start()
                processors.append(config)
                self.config_service = config
                self._step = f"waiting for the config service's subscription on {CONFIG_REQUEST_TOPIC}"
                await self._until_consumers(lambda found: found.get(CONFIG_SERVICE_ID, 0) > 0, self._step)
                for workspace in self.WORKSPACES:
                    self._step = f"registering the workspace {workspace!r}"
                    await self._register_workspace(workspace)
                self._step = "putting the agent's flow (processor:agent-manager)"
                await self._config_request("default", ConfigRequest(operation="put", values=[ConfigValue(
                    type="processor:agent-manager", key="default", value=json.dumps(self.flow))]))
                topics = self.flow["topics"]
                if self.mcp_tool:
                    route = {"topics": {"request": topics["mcp-tool-request"],
                                        "response": topics["mcp-tool-response"]}, "parameters": {}}
                    await self._config_request("default", ConfigRequest(operation="put", values=[ConfigValue(
                        type="processor:mcp-tool", key="default", value=json.dumps(route))]))
                    # Imported here: 2.7.15's needs an older MCP SDK than the peer's.
                    from trustgraph.agent.mcp_tool.service import Service as McpToolProcessor
                    self._step = "starting TrustGraph's mcp-tool processor"
                    mcp_tool = McpToolProcessor(id="mcp-tool", pulsar_host=self.url, config_timeout=10, **release)
                    await mcp_tool.start()
                    processors.append(mcp_tool)
                    self.mcp_tool_processor = mcp_tool
                    await self._until(lambda: ("default", "default") in mcp_tool.flows, 20,
                                      "the mcp-tool processor did not start its flow from processor:mcp-tool")
                tasks.append(asyncio.create_task(self.llm.serve(
                    self.backend, topics["prompt-request"], topics["prompt-response"])))
                tasks.append(asyncio.create_task(self.librarian.serve(
                    self.backend, topics["librarian-request"], topics["librarian-response"])))
                self._step = f"starting TrustGraph's {self.agent_kind} agent"
                agent = self.AGENTS[self.agent_kind](id="agent-manager", pulsar_host=self.url, config_timeout=10,
                                       librarian_timeout=10, prompt_timeout=30, **release)
                await agent.start()
                processors.append(agent)
                self.agent = agent
                await self._until(lambda: ("default", "default") in agent.flows, 20,
                                  "the agent did not start its flow from processor:agent-manager")
                self.questions = await tg_messaging.client(
                    self.backend, request_topic=topics["request"], response_topic=topics["response"],
                    request_schema=AgentRequest, response_schema=AgentResponse, default_timeout=60)
        except TimeoutError as e:
            if not deadline.expired():  # a wait of the step's own
                self._startup_error = f"{self._step}: timed out ({type(e).__name__}: {e})"
            elif processors:
                self._startup_error = f"not up within {self.startup_timeout}s, while {self._step}"
            else:
                self._startup_error = (f"not up within {self.startup_timeout}s, while {self._step}: is a Pulsar "
                                       f"broker at {self.url}? (scripts/pulsar.sh status / start)")
        except BaseException as e:
            self._startup_error = f"{self._step}: {type(e).__name__}: {e}"
        self._started.set()
        try:
            if self._startup_error is None:
                await self._stopping.wait()
        finally:
            await self._shut_down(tasks, processors)

    async def _shut_down(self, tasks, processors):
        """Closes clients before their connections, so no receive loop
        outlives its consumer (TrustGraph's stop() leaves flows running)."""
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        clients = list(self._config_clients.values())
        if getattr(self, "questions", None) is not None:
            clients.append(self.questions)
        for processor in reversed(processors):
            processor.running = False
            try:
                async with asyncio.timeout(10):
                    for workspace, flow in list(getattr(processor, "flows", {})):
                        await processor.stop_flow(workspace, flow)
                    for client in getattr(processor, "tool_service_clients", {}).values():
                        # 2.11.1's clients close(); 2.7.15's (a RequestResponse) stop().
                        await (client.close() if hasattr(client, "close") else client.stop())
                    # 2.11.1's stop() is a coroutine; 2.7.15's closes its
                    # backend and returns None.
                    stopping = processor.stop()
                    if inspect.isawaitable(stopping):
                        await stopping
            except Exception as e:
                self._stop_errors.append(f"stopping {processor.id}: {type(e).__name__}: {e}")
        for client in clients:
            await client.close()
        await self.tasks.cancel()
        await self.backend.close()
        if processors:  # the config service started: its consumer must be gone
            try:
                await self._until_consumers(lambda found: not found.get(CONFIG_SERVICE_ID), 
                                            "the config service's consumer to leave the broker", timeout=15)
            except Exception as e:
                self._stop_errors.append(str(e))

    async def _until_consumers(self, condition, what, timeout=None):
        """Polls the consumers on `request:tg:config` until `condition`
        holds of them ({subscription: count})."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            found = await asyncio.to_thread(consumers, CONFIG_REQUEST_TOPIC)
            if condition(found):
                return found
            if deadline is not None and time.monotonic() > deadline:
                raise RuntimeError(f"{what}: not within {timeout}s (consumers on {CONFIG_REQUEST_TOPIC}: {found})")
            await asyncio.sleep(0.05)

    async def _refuse_a_second_config_service(self):
        """Waits for the consumers of a stack that is stopping to leave
        `request:tg:config`; refuses to start beside one that stays."""
        self._step = f"waiting for {CONFIG_REQUEST_TOPIC} to have no consumer"
        try:
            await self._until_consumers(lambda found: not any(found.values()), self._step, timeout=15)
        except RuntimeError as e:
            raise RuntimeError(f"another TrustGraph config service answers on request:tg:config on this broker; "
                               f"stop it (one stack per broker: the config queues have fixed names): {e}") from None

    async def _register_workspace(self, workspace):
        """The `__workspaces__` registration (a system-queue put, which TrustGraph's IAM service makes in a deployment), then wait for `config:<ws>`."""
        client = await tg_messaging.client(
            self.backend, request_topic="request:tg:config", response_topic="response:tg:config",
            request_schema=ConfigRequest, response_schema=ConfigResponse)
        put = ConfigRequest(
            operation="put", workspace="__workspaces__",
            values=[ConfigValue(type="workspace", key=workspace, value=json.dumps({"enabled": True}))])
        try:
            # The config service is subscribed (start() waited for it), but
            # the answer can go before this client's own response
            # subscription is in place: the put is idempotent, so it goes
            # again until answered.
            for attempt in range(1, 11):
                try:
                    reply = await client.request(put, timeout=2)
                    break
                except asyncio.TimeoutError:
                    if attempt == 10:
                        raise RuntimeError(f"the __workspaces__ put of {workspace!r} was not answered in 10 tries "
                                           f"of 2 s") from None
            assert reply.error is None, reply.error
        finally:
            await client.close()
        deadline = time.monotonic() + 15
        while True:  # a request sent before the consumer exists is lost: retry
            try:
                await self._config_request(workspace, ConfigRequest(operation="config"), timeout=1)
                return
            except asyncio.TimeoutError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"config:{workspace} did not answer after the __workspaces__ put")

    async def _config_request(self, workspace, request, timeout=10):
        client = self._config_clients.get(workspace)
        if client is None:
            client = await tg_messaging.client(
                self.backend, request_topic=f"non-persistent://tg/request/config:{workspace}",
                response_topic=f"non-persistent://tg/response/config:{workspace}",
                request_schema=ConfigRequest, response_schema=ConfigResponse)
            self._config_clients[workspace] = client
        return await client.request(request, timeout=timeout)

    @staticmethod
    async def _until(condition, timeout, what):
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} within {timeout}s")
            await asyncio.sleep(0.05)

    def _call(self, coroutine, timeout, what):
        assert self._thread is not None and self._startup_error is None, "the TrustGraph stack is not running"
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise AssertionError(f"{what}: no answer within {timeout}s\n{self.tail()}") from None

    # ---- helpers for tests -----------------------------------------------

    def config_request(self, request, workspace="default", timeout=10):
        """One request on `config:<workspace>`; the raw ConfigResponse."""
        return self._call(self._config_request(workspace, request, timeout), timeout + 5,
                          f"the config service on config:{workspace}")

    def snapshot(self, workspace="default"):
        """(version, {type: {key: parsed JSON}}) from one `config` request."""
        reply = self.config_request(ConfigRequest(operation="config"), workspace)
        assert reply.error is None, reply.error
        return reply.version, {t: {k: json.loads(v) for k, v in items.items()} for t, items in reply.config.items()}

    def config(self, workspace="default"):
        """The workspace's config tree, values parsed."""
        return self.snapshot(workspace)[1]

    def put(self, tree, workspace="default"):
        """Puts a tree {type: {key: item}} (e.g. `joke descriptors`) in ONE put."""
        values = [ConfigValue(type=t, key=k, value=json.dumps(item)) for t, items in tree.items() for k, item in items.items()]
        reply = self.config_request(ConfigRequest(operation="put", values=values), workspace)
        assert reply.error is None, reply.error

    def delete(self, keys, workspace="default"):
        """Deletes [(type, key), …] in ONE delete."""
        reply = self.config_request(ConfigRequest(operation="delete", keys=[ConfigKey(type=t, key=k) for t, k in keys]),
                                    workspace)
        assert reply.error is None, reply.error

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def fresh(self):
        """No tool, tool-service or mcp item in `default`, the agent holding
        none, and the LLM on its default script: what each test starts from."""
        self.clear_tools()
        self.llm.reset()
        return self

    def clear_tools(self, workspace="default", timeout=15):
        """Deletes every tool, tool-service and mcp item; waits until the agent has none."""
        tree = self.config(workspace)
        keys = [(t, k) for t in ("tool", "tool-service", "mcp") for k in tree.get(t, {})]
        if keys:
            self.delete(keys, workspace)
        return self.wait_for_tools(lambda tools: not tools, timeout, "the agent to drop every tool", workspace)

    def mcp_servers(self, workspace="default"):
        """The `mcp` items the mcp-tool processor holds now: {key: item}."""
        async def read():
            return dict(self.mcp_tool_processor.mcp_services.get(workspace, {}))
        return self._call(read(), 5, "reading the mcp-tool processor's servers")

    def tools(self, workspace="default"):
        """The agent's loaded tools now: {name: the tool's config item}."""
        async def read():
            manager = self.agent.agents.get(workspace)
            return {} if manager is None else {name: tool.config for name, tool in manager.tools.items()}
        return self._call(read(), 5, "reading the agent's tools")

    def wait_for_tools(self, predicate, timeout=15, what="the agent's tools to change", workspace="default"):
        """Polls the agent's loaded tools until predicate(tools) holds."""
        deadline = time.monotonic() + timeout
        while True:
            tools = self.tools(workspace)
            if predicate(tools):
                return tools
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout}s waiting for {what}; the agent has {sorted(tools)}, the config "
                    f"service has {sorted(self.config(workspace).get('tool', {}))} (a config push the agent did "
                    f"not apply? see the log)\n{self.tail()}")
            time.sleep(0.1)

    def ask(self, question, timeout=30, pattern="", group=None, state="", error_ok=False):
        """Puts a question to the agent (with the orchestrator's `pattern`,
        TrustGraph's `group` and `state` if given); returns its Answer once
        end_of_dialog. An error reply fails unless `error_ok` (then
        `Answer.error` holds it)."""
        async def converse():
            messages = []
            request = AgentRequest(question=question, group=group, state=state, pattern=pattern)
            async for response in self.questions.request_stream(request, timeout=timeout):
                messages.append(response)
                if response.end_of_dialog:
                    return messages

        messages = self._call(asyncio.wait_for(converse(), timeout), timeout + 5, f"the agent asked {question!r}")
        last = messages[-1]
        failed = last.error is not None or last.message_type == "error"
        assert error_ok or not failed, \
            f"the agent answered with an error: {last.error or last.content}\n{self.tail()}"
        return Answer(messages)

if __name__ == "__main__":
    # Manual check: start the stack, put the joke descriptors, ask.
    # `joke serve` must run (interop/conftest.py's replicas, or by hand).
    import subprocess
    logging.basicConfig(level=logging.WARNING)
    stack = TrustGraphStack().start()
    try:
        examples = os.environ["TOOL_SERVICE_EXAMPLES"]
        stack.put(json.loads(subprocess.run([f"{examples}/joke", "descriptors"], check=True,
                                            capture_output=True).stdout))
        print("tools:", sorted(stack.wait_for_tools(lambda t: "tell-joke" in t, 15, "tell-joke")))
        print(stack.ask("Tell me a programming joke"))
        print("offered:", [[t["name"] for t in c["tools"]] for c in stack.llm.calls])
    finally:
        stack.stop()
