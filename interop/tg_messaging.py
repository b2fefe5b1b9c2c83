"""The little of TrustGraph's messaging the harness uses, on both releases it
runs: 2.11.1 (an asyncio Pulsar backend, `RequestResponseClient.create`) and
2.7.15 (a blocking backend, and a `RequestResponse` that is constructed and
started). `RELEASE` is the installed trustgraph-base."""

import asyncio
import importlib.metadata
import uuid

RELEASE = importlib.metadata.version("trustgraph-base")

try:
    from trustgraph.base.async_pulsar_backend import AsyncPulsarBackend
    from trustgraph.base.request_response_client import RequestResponseClient
except ImportError:  # 2.7: blocking backend, RequestResponse with a constructor
    AsyncPulsarBackend = RequestResponseClient = None
    from trustgraph.base.pulsar_backend import PulsarBackend
    from trustgraph.base.request_response_spec import RequestResponse


def backend(url):
    """A backend whose consumers and producers are awaited, on either release."""
    if AsyncPulsarBackend is not None:
        return AsyncPulsarBackend(url)
    return _Awaited(PulsarBackend(url))


async def client(backend, request_topic, response_topic, request_schema, response_schema, default_timeout=60):
    """A started request/response client with `request`, `request_stream`
    and `close`."""
    if RequestResponseClient is not None:
        return await RequestResponseClient.create(
            backend=backend, request_topic=request_topic, response_topic=response_topic,
            request_schema=request_schema, response_schema=response_schema, default_timeout=default_timeout)
    tag = uuid.uuid4().hex[:8]
    inner = RequestResponse(
        backend=backend.blocking, subscription=f"harness-{tag}", consumer_name=f"harness-{tag}",
        request_topic=request_topic, request_schema=request_schema, request_metrics=None,
        response_topic=response_topic, response_schema=response_schema, response_metrics=None,
        default_timeout=default_timeout)
    await inner.start()
    return _Client27(inner)


class _Client27:
    def __init__(self, inner):
        self.inner = inner

    async def request(self, request, timeout=None):
        return await self.inner.request(request, timeout=timeout)

    async def request_stream(self, request, timeout=None):
        """Yields each response until one ends the dialog (2.7 has no stream
        helper: its `request` takes a callback that says when it is done)."""
        responses = []

        async def collect(response):
            responses.append(response)
            return bool(getattr(response, "end_of_dialog", True))

        await self.inner.request(request, timeout=timeout, recipient=collect)
        for response in responses:
            yield response

    async def close(self):
        await self.inner.stop()


class _Awaited:
    """2.7's blocking backend, its calls run in threads."""

    def __init__(self, blocking):
        self.blocking = blocking

    async def create_consumer(self, topic, subscription, schema):
        return _AwaitedConsumer(await asyncio.to_thread(
            self.blocking.create_consumer, topic=topic, subscription=subscription, schema=schema))

    async def create_producer(self, topic, schema):
        return _AwaitedProducer(await asyncio.to_thread(self.blocking.create_producer, topic, schema))

    async def close(self):
        await asyncio.to_thread(self.blocking.close)


class _AwaitedConsumer:
    def __init__(self, consumer):
        self.consumer = consumer

    async def receive(self):
        while True:  # short waits, so a cancelled task ends within one
            try:
                return await asyncio.to_thread(self.consumer.receive, 200)
            except TimeoutError:
                continue

    async def acknowledge(self, message):
        self.consumer.acknowledge(message)

    async def close(self):
        await asyncio.to_thread(self.consumer.close)


class _AwaitedProducer:
    def __init__(self, producer):
        self.producer = producer

    async def send(self, message, properties):
        await asyncio.to_thread(self.producer.send, message, properties)

    async def close(self):
        await asyncio.to_thread(self.producer.close)


class Tasks:
    """What 2.7's processors need of the task group its launcher makes
    (`create_task`); `cancel()` ends what they started."""

    def __init__(self):
        self.tasks = set()

    def create_task(self, coroutine):
        task = asyncio.create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def cancel(self):
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def processor_params(tasks):
    """The constructor arguments a processor needs on this release beside its own."""
    return {} if RequestResponseClient is not None else {"taskgroup": tasks}
