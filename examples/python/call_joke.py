"""Call the joke tool over Pulsar with TrustGraph's own client (trustgraph-base),
as TrustGraph's agent does: `python3 examples/python/call_joke.py` with
`cargo run --example joke -- serve` running. PULSAR_URL picks the broker."""

import asyncio
import os
import sys

from trustgraph.base.async_pulsar_backend import AsyncPulsarBackend
from trustgraph.base.request_response_client import RequestResponseClient
from trustgraph.base.tool_service_client import ToolServiceClient
from trustgraph.schema import ToolServiceRequest, ToolServiceResponse


class Tool(ToolServiceClient):
    """ToolServiceClient's `call`, over one request–response client."""

    def __init__(self, client):
        self.client = client

    async def request(self, request, timeout=None, recipient=None):
        return await self.client.request(request, timeout=timeout)


async def main():
    backend = AsyncPulsarBackend(os.environ.get("PULSAR_URL", "pulsar://127.0.0.1:6650"))
    client = await RequestResponseClient.create(
        backend=backend,
        request_topic="non-persistent://tg/request/joke",
        response_topic="non-persistent://tg/response/joke",
        request_schema=ToolServiceRequest,
        response_schema=ToolServiceResponse,
        processor_id="joke-caller",
        target_service="joke",
        default_timeout=30,
    )
    try:
        # The tool's config (what a `tool` item presets), then the LLM's arguments.
        print(await Tool(client).call({"style": "pun"}, {"topic": "cats"}))
    finally:
        await client.close()
        await backend.close()


asyncio.run(main())
# pulsar-client's own threads may still be winding down when the interpreter
# exits, which aborts the process ("terminate called without an active
# exception"): everything is closed, so leave at once.
sys.stdout.flush()
os._exit(0)
