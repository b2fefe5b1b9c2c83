"""Shared by the interop tests: the example services as processes, and a
tool-service caller built exactly as TrustGraph 2.11.1 builds one."""

import asyncio
import json
import re
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

from trustgraph.base.tool_service_client import ToolServiceClient
from trustgraph.schema import ToolServiceRequest, ToolServiceResponse

ROOT = pathlib.Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
PULSAR_URL = os.environ.get("PULSAR_URL", "pulsar://127.0.0.1:6650")


def examples_dir():
    path = os.environ.get("TOOL_SERVICE_EXAMPLES")
    assert path, "set TOOL_SERVICE_EXAMPLES to the built examples (scripts/interop.sh does this)"
    return pathlib.Path(path)


class Replica:
    """An example binary running `serve`, ready when it logs `ready`."""

    def __init__(self, example, *args, env=None):
        self.lines = []
        self.ready = threading.Event()
        self.process = subprocess.Popen(
            [str(examples_dir() / example), "serve", "-p", PULSAR_URL, "--metrics-port", "0", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(60):
            self.stop()
            raise AssertionError(f"{example} did not become ready:\n" + "\n".join(self.lines))

    def _read(self):
        for line in self.process.stderr:
            self.lines.append(line.rstrip())
            if " ready" in line:
                self.ready.set()

    def stop(self):
        return stop(self.process)


def traced(receiver, name, **more):
    """The `OTEL_*` variables that send a binary's spans to `receiver`,
    batched every 100 ms."""
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_SERVICE_NAME": name,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        **more,
    }


def stop(process):
    """SIGTERM, then SIGKILL after 30 s; the exit code."""
    process.terminate()
    try:
        return process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


async def trustgraph_client(topic, timeout=30):
    """A tool-service caller as TrustGraph 2.11.1 builds it."""
    from trustgraph.base.async_pulsar_backend import AsyncPulsarBackend
    from trustgraph.base.request_response_client import RequestResponseClient
    from trustgraph.base.request_response_spec import _make_impl_wrapper

    backend = AsyncPulsarBackend(PULSAR_URL)
    rr = await RequestResponseClient.create(
        backend=backend,
        request_topic=f"non-persistent://tg/request/{topic}",
        response_topic=f"non-persistent://tg/response/{topic}",
        request_schema=ToolServiceRequest,
        response_schema=ToolServiceResponse,
        processor_id="agent",
        target_service=topic,
        default_timeout=timeout,
    )
    return backend, _make_impl_wrapper(rr, ToolServiceClient)


def run(coroutine):
    return asyncio.run(coroutine)


async def with_client(topic, body):
    backend, client = await trustgraph_client(topic)
    try:
        return await body(client)
    finally:
        await client.close()
        await backend.close()




def free_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def leaf_errors(error):
    """The exceptions inside `error`, exception groups (what the MCP SDK's
    task groups raise) opened all the way down."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaf_errors(inner)]
    return [error]


def refused_over_http(error):
    """Whether `error` is what the Python MCP SDK (2.3) raises when the
    server answers a request of its session with an HTTP error status (a
    401 or a 403): `MCPError(-32603, 'Server returned an error response')`."""
    from mcp.shared.exceptions import MCPError

    return isinstance(error, MCPError) and "Server returned an error response" in str(error)


class McpHttp:
    """An example binary serving MCP over Streamable HTTP (`mcp --listen`,
    or `serve --mcp-listen` with `serve=True`), ready when it logs that it
    serves MCP."""

    def __init__(self, example, *args, serve=False, env=None, port=None):
        # Port 0 unless the caller must name the port before it starts (an
        # OAuth resource URL): the server binds a free one and logs its URL,
        # so no other process can take it in between.
        self.port = port or 0
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.lines = []
        self.ready = threading.Event()
        listen = f"127.0.0.1:{self.port}"
        if serve:
            command = ["serve", "-p", PULSAR_URL, "--metrics-port", "0", "--mcp-listen", listen]
        else:
            command = ["mcp", "--listen", listen, "--metrics-port", "0"]
        self.process = subprocess.Popen(
            [str(examples_dir() / example), *command, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        threading.Thread(target=self._read, args=(serve,), daemon=True).start()
        if not self.ready.wait(60):
            self.stop()
            raise AssertionError(f"{example} did not serve MCP:\n" + "\n".join(self.lines))

    def _read(self, serve):
        seen = set()
        for line in self.process.stderr:
            self.lines.append(line.rstrip())
            if "serving MCP" in line:
                seen.add("mcp")
                bound = re.search(r"url=(https?://[^ ]+/mcp)", line)
                if bound:
                    self.url = bound.group(1)
                    self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])
            metrics = re.search(r"metrics on (http://[^ ]+/metrics)", line)
            if metrics:
                self.metrics_url = metrics.group(1)
            if " ready" in line:
                seen.add("pulsar")
            if "mcp" in seen and (not serve or "pulsar" in seen):
                self.ready.set()

    def in_flight(self):
        """Calls the server is handling now: `tg_tool_service_in_flight`
        summed over its services, from its metrics endpoint."""
        assert getattr(self, "metrics_url", None), "the server logged no metrics URL:\n" + "\n".join(self.lines)
        with urllib.request.urlopen(self.metrics_url, timeout=10) as answer:
            text = answer.read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("tg_tool_service_in_flight{"))

    def wait_in_flight(self, condition, what, timeout=15):
        """Polls `in_flight()` until `condition` holds of it."""
        deadline = time.monotonic() + timeout
        while not condition(count := self.in_flight()):
            assert time.monotonic() < deadline, f"{what}: not within {timeout} s (in flight: {count})"
            time.sleep(0.02)

    def list_tools(self, version):
        """`tools/list` as a client on protocol `version` sends it over
        stateless Streamable HTTP (its `MCP-Protocol-Version` header): the
        tools, as JSON."""

        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        request = urllib.request.Request(self.url, data=body, headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": version,
        })
        with urllib.request.urlopen(request, timeout=30) as answer:
            text = answer.read().decode()
        data = [line[len("data:"):] for line in text.splitlines() if line.startswith("data:")]
        message = json.loads(data[-1] if data else text)
        assert "result" in message, message
        return message["result"]["tools"]

    def stop(self):
        return stop(self.process)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        code = self.stop()
        if exc[0] is None:
            assert code == 0, "\n".join(self.lines)


async def mcp_session(url, body, token=None):
    """Runs `body(session)` in a new MCP session, as TrustGraph's mcp-tool
    processor opens one for each call (Python MCP SDK, Streamable HTTP)."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)


async def mcp_stdio(example, body, *args):
    """Runs `body(session)` against an example binary started as an MCP
    client starts one: `BIN mcp`, the protocol on its stdin and stdout."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=str(examples_dir() / example), args=["mcp", *args])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)


# Load balancers in front of MCP replicas (scripts/install/balancers.sh installs
# them): nginx per request, HAProxy per connection.

def executable(name):
    found = shutil.which(name) or shutil.which(f"/usr/sbin/{name}")
    if found is None:
        raise AssertionError(f"{name} is missing: run scripts/install/balancers.sh, which installs nginx-light and haproxy")
    return found


NGINX = """
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 512; }}
http {{
  access_log off;
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  upstream replicas {{
    {servers}
    keepalive 16;
  }}
  server {{
    listen 127.0.0.1:{port};
    location /mcp {{
      proxy_pass http://replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      # A call's answer (and its progress) is a server-sent event stream.
      proxy_buffering off;
      proxy_read_timeout 60s;
    }}
  }}
}}
"""

HAPROXY = """
global
  maxconn 512
defaults
  mode tcp
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend mcp
  bind 127.0.0.1:{port}
  default_backend replicas
backend replicas
  balance random
{servers}
"""


class Balancer:
    """nginx or HAProxy in front of `ports`, on a port of its own."""

    def __init__(self, kind, ports):
        self.dir = tempfile.TemporaryDirectory()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        config = f"{self.dir.name}/{kind}.conf"
        if kind == "nginx":
            servers = "\n    ".join(f"server 127.0.0.1:{port};" for port in ports)
            text = NGINX.format(dir=self.dir.name, servers=servers, port=self.port)
            command = [executable("nginx"), "-p", self.dir.name, "-c", config]
        else:
            servers = "\n".join(f"  server r{n} 127.0.0.1:{port}" for n, port in enumerate(ports))
            text = HAPROXY.format(servers=servers, port=self.port)
            command = [executable("haproxy"), "-f", config, "-db"]
        with open(config, "w") as file:
            file.write(text)
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 10
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=1):
                    break
            except urllib.error.HTTPError:
                break  # answered, from a replica (404) or the balancer
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"{kind} did not start: {self.process.communicate()[1]}")
                time.sleep(0.05)

    def stop(self):
        self.process.terminate()
        self.process.wait(10)
        self.dir.cleanup()


def metrics_port(replica):
    (line,) = [line for line in replica.lines if "metrics on http://" in line]
    return int(line.rsplit(":", 1)[1].split("/")[0])


def calls_served(replica, service):
    port = metrics_port(replica)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    prefix = f'tg_dynamic_tool_service_invocation_total{{processor="{service}",transport="mcp"}} '
    return sum(int(line[len(prefix):]) for line in text.splitlines() if line.startswith(prefix))
