"""TrustGraph's own Python client (trustgraph-base) calls our Rust services
over a real Apache Pulsar broker, built exactly as TrustGraph's agent builds
it. Run by scripts/interop.sh, which starts the broker and builds the
examples; the services under test are the example binaries running `serve`.
"""

import asyncio
import json
import subprocess
import time
import uuid

import pulsar
import pytest

from trustgraph.base.async_pulsar_backend import AsyncPulsarBackend

from peer import GOLDEN, PULSAR_URL, examples_dir, run, with_client

def test_call_returns_the_joke_text():
    text = run(with_client("joke", lambda c: c.call({"style": "pun"}, {"topic": "programming"})))
    assert text.startswith("Here's a pun for you:\n\n"), text
    assert "UDP" in text


def test_config_values_reach_the_handler():
    text = run(with_client("joke", lambda c: c.call({"style": "dad-joke"}, {"topic": "food"})))
    assert text.startswith("Here's a dad joke for you:"), text
    # An empty config is sent as "{}" by TrustGraph and means the defaults.
    text = run(with_client("joke", lambda c: c.call({}, {"topic": "animals"})))
    assert text.startswith("Here's a pun for you:"), text


def test_a_handler_error_raises_runtime_error_with_our_message():
    with pytest.raises(RuntimeError) as raised:
        run(with_client("joke", lambda c: c.call({"style": "pun"}, {"topic": "  "})))
    assert str(raised.value) == "give a topic for the joke, e.g. programming, animals or food"


def test_bad_arguments_raise_naming_the_field():
    with pytest.raises(RuntimeError) as raised:
        run(with_client("joke", lambda c: c.call({}, {"topic": 5})))
    assert "`topic`" in str(raised.value)


def test_a_structured_value_arrives_as_its_json_text():
    text = run(with_client("custom-rag", lambda c: c.call({"collection": "products"}, {"question": "which gears?"})))
    hits = json.loads(text)
    assert hits[0]["source"] == "catalog/gear", hits


def test_call_streaming_receives_the_chunks_in_order():
    chunks = []

    async def collect(chunk):
        chunks.append(chunk)

    result = run(with_client(
        "story",
        lambda c: c.call_streaming({}, {"hero": "Ferris", "chapters": 4}, collect),
    ))
    assert chunks[:4] == [f"Chapter {n}: Ferris sets out again.\n" for n in range(1, 5)]
    assert chunks[4] == "The end of Ferris's 4 chapters."
    assert result == "".join(chunks)


def test_two_hundred_concurrent_calls_get_their_own_answers():
    async def body(client):
        texts = [f"message {n} {uuid.uuid4()}" for n in range(200)]
        answers = await asyncio.gather(*(client.call({}, {"text": text}) for text in texts))
        return texts, answers

    texts, answers = run(with_client("echo", body))
    assert answers == texts


def raw_exchange(topic, payload, properties):
    """Publish one raw request and return (properties, payload) of its response."""
    client = pulsar.Client(PULSAR_URL)
    try:
        consumer = client.subscribe(
            f"non-persistent://tg/response/{topic}",
            f"raw-{uuid.uuid4()}",
            consumer_type=pulsar.ConsumerType.Exclusive,
            initial_position=pulsar.InitialPosition.Latest,
        )
        producer = client.create_producer(f"non-persistent://tg/request/{topic}")
        producer.send(payload, properties=properties)
        deadline = time.time() + 30
        while time.time() < deadline:
            message = consumer.receive(timeout_millis=30000)
            consumer.acknowledge(message)
            if message.properties().get("id") == properties.get("id", "unknown"):
                return message.properties(), json.loads(message.data())
        raise AssertionError("no response")
    finally:
        client.close()


def test_pulsars_python_client_unpacks_batches_of_answers_each_under_its_own_id():
    """Answers ready together arrive as one batch (serve's default); the
    client TrustGraph builds on, pulsar-client's C++ core, hands out each
    answer of a batch as a message of its own with its own `id`."""
    client = pulsar.Client(PULSAR_URL)
    try:
        consumer = client.subscribe(
            "non-persistent://tg/response/echo",
            f"raw-{uuid.uuid4()}",
            consumer_type=pulsar.ConsumerType.Exclusive,
            initial_position=pulsar.InitialPosition.Latest,
        )
        # Requests in batches too, so that many arrive, and are answered,
        # together.
        producer = client.create_producer(
            "non-persistent://tg/request/echo", batching_enabled=True, batching_max_publish_delay_ms=5
        )
        sent = {f"batch-{n}-{uuid.uuid4()}": f"message {n}" for n in range(200)}
        for call, text in sent.items():
            request = json.dumps({"config": "{}", "arguments": json.dumps({"text": text})})
            producer.send_async(request.encode(), None, properties={"id": call})
        producer.flush()
        answered, batch_indexes = {}, set()
        deadline = time.time() + 30
        while len(answered) < len(sent) and time.time() < deadline:
            message = consumer.receive(timeout_millis=30000)
            consumer.acknowledge(message)
            call = message.properties().get("id")
            if call in sent:
                assert call not in answered, f"{call} answered twice"
                answered[call] = json.loads(message.data())["response"]
                batch_indexes.add(message.message_id().batch_index())
        assert answered == sent
        assert max(batch_indexes) > 0, f"no answer came in a batch of several: {batch_indexes}"
    finally:
        client.close()


def test_the_original_spec_request_shape_with_user_is_served():
    payload = (GOLDEN / "request-original.json").read_bytes()
    properties, frame = raw_exchange("joke", payload, {"id": "spec-request-1"})
    assert properties["id"] == "spec-request-1"
    assert frame["error"] is None
    assert frame["end_of_stream"] is True
    assert frame["response"].startswith("Hey alice! Here's a pun for you:")


def test_the_trustgraph_2_request_shape_without_user_is_served():
    payload = (GOLDEN / "request-trustgraph-2.json").read_bytes()
    properties, frame = raw_exchange("joke", payload, {"id": "tg2-request-1"})
    assert frame["response"].startswith("Here's a pun for you:")
    assert set(frame) == {"error", "response", "end_of_stream"}


def test_a_request_without_id_is_answered_as_unknown():
    payload = (GOLDEN / "request-trustgraph-2.json").read_bytes()
    properties, frame = raw_exchange("joke", payload, {})
    assert properties["id"] == "unknown"
    assert frame["error"] is None


def test_descriptors_equal_the_golden_vectors():
    def tree(example, *args):
        out = subprocess.run([str(examples_dir() / example), "descriptors", *args], check=True, capture_output=True)
        return json.loads(out.stdout)

    # The spec's vectors name Pulsar topics: `--queue-names pulsar`.
    joke = tree("joke", "--queue-names", "pulsar")
    assert joke["tool-service"]["joke-service"] == json.loads((GOLDEN / "joke-service.json").read_text())
    assert joke["tool"]["tell-joke"] == json.loads((GOLDEN / "tell-joke.json").read_text())
    rag = tree("custom_rag", "--queue-names", "pulsar")
    assert rag["tool-service"]["custom-rag"] == json.loads((GOLDEN / "custom-rag.json").read_text())
    # By default TrustGraph's own names, which its Pulsar backend maps to
    # the same topics.
    default = tree("joke")["tool-service"]["joke-service"]
    assert default == {**joke["tool-service"]["joke-service"],
                       "request-queue": "request:tg:joke", "response-queue": "response:tg:joke"}
    for key in ("request-queue", "response-queue"):
        assert (AsyncPulsarBackend._map_topic(None, default[key])
                == joke["tool-service"]["joke-service"][key])
    for name in ("query-customers", "query-products"):
        assert rag["tool"][name] == json.loads((GOLDEN / f"{name}.json").read_text())


def test_the_readmes_python_caller_prints_the_joke():
    """examples/python/call_joke.py, which the announce guide shows, run as it is."""
    import os
    import sys

    from peer import ROOT

    done = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "call_joke.py")],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PULSAR_URL": PULSAR_URL})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Here's a pun for you:\n\n"), done.stdout


def test_the_guide_shows_the_python_caller_as_it_is():
    from peer import ROOT

    code = (ROOT / "examples" / "python" / "call_joke.py").read_text()
    guide = ROOT / "tool-service" / "docs" / "trustgraph.md"
    assert f"```python\n{code}```" in guide.read_text(), (
        "tool-service/docs/trustgraph.md's Python caller differs from examples/python/call_joke.py: copy the file into it")
