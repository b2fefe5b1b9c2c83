"""Traces: a Python caller starts a trace with OpenTelemetry's SDK and
injects its context; the example services (built with the `otel` feature)
join it, export their spans to a real OTLP receiver (`otlp.py`), and send
the context back. Over Pulsar (message properties) and over MCP (`_meta`)."""

import json
import re
import statistics
import time
import urllib.request
import uuid

import pulsar
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from otlp import Receiver, Silent
from peer import PULSAR_URL, McpHttp, Replica, mcp_session, run, traced

TRACER = TracerProvider().get_tracer("agent")
PROPAGATOR = TraceContextTextMapPropagator()
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$")


def caller_span():
    """A span of the caller's, and the carrier its context is injected into."""
    span = TRACER.start_span("agent step")
    carrier = {}
    PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
    context = span.get_span_context()
    return span, carrier, f"{context.trace_id:032x}", f"{context.span_id:016x}"


class Caller:
    """Publishes raw requests on a service's topic and reads its responses,
    as any Pulsar client would."""

    def __init__(self, topic):
        self.client = pulsar.Client(PULSAR_URL)
        self.consumer = self.client.subscribe(
            f"non-persistent://tg/response/{topic}",
            f"traces-{uuid.uuid4()}",
            consumer_type=pulsar.ConsumerType.Exclusive,
            initial_position=pulsar.InitialPosition.Latest,
        )
        self.producer = self.client.create_producer(f"non-persistent://tg/request/{topic}")

    def call(self, config, arguments, properties):
        """The properties and frames of the response: every frame's."""
        id = str(uuid.uuid4())
        payload = json.dumps({"config": json.dumps(config), "arguments": json.dumps(arguments)})
        self.producer.send(payload.encode(), properties={"id": id, **properties})
        frames = []
        deadline = time.time() + 30
        while time.time() < deadline:
            message = self.consumer.receive(timeout_millis=30000)
            self.consumer.acknowledge(message)
            if message.properties().get("id") != id:
                continue
            frame = json.loads(message.data())
            frames.append((message.properties(), frame))
            if frame["end_of_stream"]:
                return frames
        raise AssertionError(f"no complete response to {id}")

    def close(self):
        self.client.close()


def test_a_pulsar_call_joins_the_callers_trace_and_answers_with_its_context(otlp):
    span, carrier, trace_id, caller_id = caller_span()
    caller = Caller("custom-rag")
    try:
        frames = caller.call({"collection": "customers"}, {"question": "gears"}, carrier)
    finally:
        caller.close()
        span.end()
    properties, frame = frames[-1]
    assert frame["error"] is None, frame
    [process] = otlp.wait_for(lambda s: s["trace_id"] == trace_id and s["kind"] == "SPAN_KIND_CONSUMER")
    # The tool's span is the caller span's child, named and attributed by
    # OpenTelemetry's messaging conventions.
    assert process["parent_span_id"] == caller_id
    assert process["name"] == "process non-persistent://tg/request/custom-rag"
    attributes = process["attributes"]
    assert attributes["messaging.system"] == "pulsar"
    assert attributes["messaging.operation.name"] == "process"
    assert attributes["messaging.destination.name"] == "non-persistent://tg/request/custom-rag"
    assert attributes["messaging.destination.subscription.name"] == "custom-rag-request"
    assert attributes["messaging.message.conversation_id"] == properties["id"]
    assert attributes["service"] == "custom-rag"
    assert process["resource"]["service.name"] == "custom_rag"
    # The handler's own span (the SQLite query) nests under it.
    [query] = otlp.wait_for(lambda s: s["trace_id"] == trace_id and s["name"] == "SELECT passages")
    assert query["parent_span_id"] == process["span_id"]
    assert query["kind"] == "SPAN_KIND_CLIENT"
    assert query["attributes"]["db.system.name"] == "sqlite"
    # The frame was published in a `send` span, whose context it carries.
    [send] = otlp.wait_for(lambda s: s["trace_id"] == trace_id and s["kind"] == "SPAN_KIND_PRODUCER")
    assert send["name"] == "send non-persistent://tg/response/custom-rag"
    assert send["parent_span_id"] == process["span_id"]
    assert send["attributes"]["messaging.destination.name"] == "non-persistent://tg/response/custom-rag"
    assert TRACEPARENT.match(properties["traceparent"]).groups() == (trace_id, send["span_id"])
    assert send["start"] >= process["start"] and send["end"] <= process["end"]


def test_every_frame_of_a_streamed_answer_carries_the_context_of_its_own_send(otlp):
    span, carrier, trace_id, _ = caller_span()
    caller = Caller("story")
    try:
        frames = caller.call({}, {"hero": "Ferris", "chapters": 3}, carrier)
    finally:
        caller.close()
        span.end()
    assert len(frames) == 4, frames
    sends = otlp.wait_for(lambda s: s["trace_id"] == trace_id and s["kind"] == "SPAN_KIND_PRODUCER", count=4)
    carried = [TRACEPARENT.match(properties["traceparent"]).groups() for properties, _ in frames]
    assert sorted(carried) == sorted((trace_id, send["span_id"]) for send in sends)


def test_a_failed_call_has_the_error_type_on_its_span(otlp):
    span, carrier, trace_id, _ = caller_span()
    caller = Caller("custom-rag")
    try:
        frames = caller.call({"collection": "nowhere"}, {"question": "gears"}, carrier)
    finally:
        caller.close()
        span.end()
    assert frames[-1][1]["error"]["type"] == "not-found"
    [process] = otlp.wait_for(lambda s: s["trace_id"] == trace_id and s["kind"] == "SPAN_KIND_CONSUMER")
    assert process["attributes"]["error.type"] == "not-found"
    assert process["status"] == 2  # STATUS_CODE_ERROR


def test_a_request_without_context_or_with_a_malformed_one_starts_a_trace(otlp):
    caller = Caller("echo")
    try:
        plain = caller.call({}, {"text": "plain"}, {})
        malformed = caller.call({}, {"text": "malformed"}, {"traceparent": "00-not-a-trace-context"})
    finally:
        caller.close()
    for frames in (plain, malformed):
        properties, frame = frames[-1]
        assert frame["error"] is None, frame
        trace_id, send_id = TRACEPARENT.match(properties["traceparent"]).groups()
        [process] = otlp.wait_for(lambda s: s["trace_id"] == trace_id and s["kind"] == "SPAN_KIND_CONSUMER")
        assert process["parent_span_id"] == "", "a new trace starts at the tool's span"
        assert process["attributes"]["messaging.message.conversation_id"] == properties["id"]


def test_an_mcp_call_joins_the_trace_of_the_context_in_its_meta(otlp):
    span, carrier, trace_id, caller_id = caller_span()

    async def body(session):
        return await session.call_tool("query-customers", {"question": "gears"}, meta=carrier)

    with McpHttp("custom_rag", env=traced(otlp, "custom_rag-mcp")) as server:
        result = run(mcp_session(server.url, body))
    span.end()
    assert not result.is_error, result
    [call] = otlp.wait_for(lambda s: s["trace_id"] == trace_id and s["kind"] == "SPAN_KIND_SERVER")
    assert call["parent_span_id"] == caller_id
    assert call["name"] == "tools/call query-customers"
    attributes = call["attributes"]
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "query-customers"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["jsonrpc.request.id"]
    assert call["resource"]["service.name"] == "custom_rag-mcp"
    [query] = otlp.wait_for(lambda s: s["trace_id"] == trace_id and s["name"] == "SELECT passages")
    assert query["parent_span_id"] == call["span_id"]
    # The result's _meta carries the context back.
    assert TRACEPARENT.match(result.meta["traceparent"]).groups() == (trace_id, call["span_id"])


def test_an_mcp_tool_error_is_marked_on_the_span(otlp):
    span, carrier, trace_id, _ = caller_span()

    async def body(session):
        return await session.call_tool("tell-joke", {"topic": 5}, meta=carrier)

    with McpHttp("joke", env=traced(otlp, "joke-mcp")) as server:
        result = run(mcp_session(server.url, body))
    span.end()
    assert result.is_error
    [call] = otlp.wait_for(lambda s: s["trace_id"] == trace_id and s["kind"] == "SPAN_KIND_SERVER")
    assert call["attributes"]["error.type"] == "invalid-arguments"
    assert call["status"] == 2  # STATUS_CODE_ERROR


def test_one_failure_has_one_error_type_on_either_transports_span(otlp):
    """One process serving the tickets example over Pulsar and MCP: the same
    failing call (a ticket that does not exist), made over each, is marked
    on its span with the error type the Pulsar frame carries."""
    # Ready once it serves MCP and Pulsar.
    with McpHttp("tickets", serve=True, env=traced(otlp, "tickets")) as server:
        span, carrier, pulsar_trace, _ = caller_span()
        caller = Caller("close-ticket")
        try:
            frames = caller.call({}, {"id": 9}, carrier)
        finally:
            caller.close()
            span.end()
        span, carrier, mcp_trace, _ = caller_span()

        async def body(session):
            return await session.call_tool("close-ticket", {"id": 9}, meta=carrier)

        result = run(mcp_session(server.url, body))
        span.end()
    error = frames[-1][1]["error"]
    assert error["message"] == "there is no ticket #9; list the tickets to see their numbers"
    assert result.is_error and result.content[0].text == error["message"], result
    [process] = otlp.wait_for(lambda s: s["trace_id"] == pulsar_trace and s["kind"] == "SPAN_KIND_CONSUMER")
    [call] = otlp.wait_for(lambda s: s["trace_id"] == mcp_trace and s["kind"] == "SPAN_KIND_SERVER")
    assert process["attributes"]["error.type"] == error["type"] == "tool-service-error"
    assert call["attributes"]["error.type"] == error["type"]
    assert process["status"] == call["status"] == 2  # STATUS_CODE_ERROR


def test_an_mcp_call_the_sampler_drops_gets_a_context_and_nothing_is_exported():
    receiver = Receiver()
    span, carrier, trace_id, caller_id = caller_span()

    async def body(session):
        plain = await session.call_tool("query-customers", {"question": "gears"})
        joined = await session.call_tool("query-customers", {"question": "gears"}, meta=carrier)
        return plain, joined

    # A ratio of 0, not parent-based: even a sampled caller's call is dropped.
    env = traced(receiver, "custom_rag-unsampled", OTEL_TRACES_SAMPLER="traceidratio", OTEL_TRACES_SAMPLER_ARG="0")
    try:
        with McpHttp("custom_rag", env=env) as server:
            plain, joined = run(mcp_session(server.url, body))
        # Stopped, the server has flushed what it queued.
    finally:
        span.end()
        receiver.stop()
    assert not plain.is_error and not joined.is_error, (plain, joined)
    plain_trace, _ = TRACEPARENT.match(plain.meta["traceparent"]).groups()
    joined_trace, joined_span = TRACEPARENT.match(joined.meta["traceparent"]).groups()
    assert plain.meta["traceparent"].endswith("-00"), plain.meta
    assert joined.meta["traceparent"].endswith("-00"), joined.meta
    assert joined_trace == trace_id and joined_span != caller_id
    assert plain_trace != trace_id
    # Neither the calls nor their queries were exported.
    assert receiver.spans == [], sorted({s["name"] for s in receiver.spans})


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        name: float(value)
        for name, value in re.findall(r"^(tg_tool_service_trace_\w+) (\S+)$", text, re.MULTILINE)
    }


def metrics_port(replica):
    for line in replica.lines:
        found = re.search(r"metrics on http://[\d.]+:(\d+)/metrics", line)
        if found:
            return int(found.group(1))
    raise AssertionError("no metrics line:\n" + "\n".join(replica.lines))


def timed_calls(caller, count):
    """The latency of `count` sequential calls, each sampled, in seconds."""
    latencies = []
    for n in range(count):
        _, carrier, _, _ = caller_span()
        started = time.perf_counter()
        frames = caller.call({}, {}, carrier)
        latencies.append(time.perf_counter() - started)
        assert frames[-1][1]["error"] is None, frames
    return latencies


def test_with_the_collector_silent_or_stopped_calls_keep_their_latency_and_drops_are_counted():
    silent = Silent()
    # A small queue and a long export timeout: a request path that waited
    # for the collector would wait 20 s.
    env = traced(
        silent,
        "two_crates",
        OTEL_BSP_MAX_QUEUE_SIZE="16",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE="8",
        OTEL_BSP_EXPORT_TIMEOUT="20000",
    )
    # A grace period of 2 s: the flush at shutdown gives up with it.
    replica = Replica("two_crates", "--grace-period", "2", env=env)
    caller = Caller("two-crates-hello")
    try:
        port = metrics_port(replica)
        before = metrics(port)
        latencies = timed_calls(caller, 60)
        after = metrics(port)
    finally:
        caller.close()
        stopping = time.perf_counter()
        code = replica.stop()
        stopped = time.perf_counter() - stopping
        silent.stop()
    assert code == 0, "\n".join(replica.lines)
    assert stopped < 10, f"stopping took {stopped:.1f} s with a grace period of 2 s"
    assert any("not every span was exported within the grace period" in line for line in replica.lines), replica.lines
    # 60 calls of two spans each (process and send): the queue of 16
    # overflows while the first batch waits for the silent collector.
    assert after["tg_tool_service_trace_spans_dropped_total"] > before.get(
        "tg_tool_service_trace_spans_dropped_total", 0
    ), after
    assert after["tg_tool_service_trace_spans_exported_total"] == 0, after
    # No call waited for the silent collector's 20 s export timeout.
    assert max(latencies) < 5, f"slowest call {max(latencies):.3f} s; median {statistics.median(latencies):.4f} s"
    print(f"collector silent: median {statistics.median(latencies) * 1000:.2f} ms, max {max(latencies) * 1000:.2f} ms")


def test_with_the_collector_gone_the_batch_is_dropped_and_counted():
    receiver = Receiver()
    env = traced(receiver, "two_crates")
    replica = Replica("two_crates", env=env)
    caller = Caller("two-crates-hello")
    try:
        port = metrics_port(replica)
        timed_calls(caller, 5)
        receiver.wait_for(lambda s: s["kind"] == "SPAN_KIND_CONSUMER", count=5)
        exported = metrics(port)["tg_tool_service_trace_spans_exported_total"]
        assert exported >= 10, exported
        receiver.stop()
        receiver = None
        latencies = timed_calls(caller, 20)
        deadline = time.time() + 30
        while metrics(port)["tg_tool_service_trace_spans_dropped_total"] < 40 and time.time() < deadline:
            time.sleep(0.2)
        after = metrics(port)
    finally:
        caller.close()
        code = replica.stop()
        if receiver:
            receiver.stop()
    assert code == 0, "\n".join(replica.lines)
    # The 20 calls' 40 spans were refused with the connection.
    assert after["tg_tool_service_trace_spans_dropped_total"] >= 40, after
    assert max(latencies) < 5, max(latencies)


def test_an_unsampled_callers_context_comes_back_and_nothing_of_it_is_exported(otlp):
    trace_id, parent = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    caller = Caller("custom-rag")
    question = ({"collection": "customers"}, {"question": "gears"})
    try:
        unsampled = caller.call(*question, {"traceparent": f"00-{trace_id}-{parent}-00"})
        # A sampled call after it: once its spans have arrived, so would have
        # the unsampled call's.
        span, carrier, sampled_trace, _ = caller_span()
        caller.call(*question, carrier)
        span.end()
    finally:
        caller.close()
    properties, frame = unsampled[-1]
    assert frame["error"] is None, frame
    assert properties["traceparent"].startswith(f"00-{trace_id}-"), properties
    assert properties["traceparent"].endswith("-00"), properties
    assert properties["traceparent"] != f"00-{trace_id}-{parent}-00", "the tool's own span id"
    assert "tracestate" not in properties, "an empty tracestate is not sent"
    otlp.wait_for(lambda s: s["trace_id"] == sampled_trace and s["kind"] == "SPAN_KIND_PRODUCER")
    otlp.wait_for(lambda s: s["trace_id"] == sampled_trace and s["name"] == "SELECT passages")
    assert otlp.trace(trace_id) == []
    # The handler's own span was not sampled either: not exported in a trace
    # of its own.
    queries = [s for s in otlp.spans if s["name"] == "SELECT passages" and s["trace_id"] != sampled_trace]
    assert [q for q in queries if q["parent_span_id"] in ("", None)] == [], queries
