"""The fix for TrustGraph 2.11.1's tool-service client in its ReAct agent.

The bug (trustgraph-flow 2.11.1 `agent/react/tools.py`, still at upstream
HEAD): `ToolServiceImpl._get_or_create_client` builds its client as

    ToolServiceClient(backend=…, subscription=…, consumer_name=…,
                      request_topic=…, request_schema=…, request_metrics=…,
                      response_topic=…, response_schema=…)

but since upstream commit 9c24d17e `ToolServiceClient` (trustgraph-base
`base/tool_service_client.py`) is a plain mix-in with business methods only
(`call`, `call_streaming`) and no constructor arguments. Every tool-service
call therefore fails before anything is sent, and the LLM sees the
observation "Error: ToolServiceClient() takes no arguments".

The fix builds the client the way trustgraph-base itself now builds every
request/response client (`RequestResponseSpec.register`):
`RequestResponseClient.create(…)` for the transport, wrapped by
`_make_impl_wrapper(rr, ToolServiceClient)` for `call`. The cache by queue
pair on the processor (`tool_service_clients`) is kept as it was.
"""

import uuid

from trustgraph.agent.react.tools import ToolServiceImpl
from trustgraph.base.tool_service_client import ToolServiceClient
from trustgraph.schema import ToolServiceRequest, ToolServiceResponse

try:
    from trustgraph.base.request_response_client import RequestResponseClient
    from trustgraph.base.request_response_spec import _make_impl_wrapper
except ImportError:  # 2.7.x: its client has the constructor the agent calls
    RequestResponseClient = _make_impl_wrapper = None

_ORIGINAL = ToolServiceImpl._get_or_create_client


async def _get_or_create_client(self):
    if self._client is not None:
        return self._client
    key = f"{self.request_queue}|{self.response_queue}"
    client = self.processor.tool_service_clients.get(key)
    if client is None:
        rr = await RequestResponseClient.create(
            backend=self.processor.pubsub,
            request_topic=self.request_queue,
            response_topic=self.response_queue,
            request_schema=ToolServiceRequest,
            response_schema=ToolServiceResponse,
            subscription=f"{self.processor.id}--tool-service--{uuid.uuid4()}",
            processor_id=self.processor.id,
            target_service=self.request_queue,
        )
        client = _make_impl_wrapper(rr, ToolServiceClient)
        self.processor.tool_service_clients[key] = client
    self._client = client
    return client


def apply():
    """Patches the agent's tool-service client factory (idempotent)."""
    assert _make_impl_wrapper is not None, "TrustGraph 2.7.x needs no patch: its agent builds the client it calls"
    ToolServiceImpl._get_or_create_client = _get_or_create_client


def revert():
    ToolServiceImpl._get_or_create_client = _ORIGINAL
