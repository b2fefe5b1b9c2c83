"""MCP replicas behind real load balancers, driven by the Python MCP SDK
(TrustGraph's mcp-tool client): two replicas of an example binary (`mcp
--listen`) behind nginx (Debian's nginx-light: HTTP, round-robin per
request, as an ingress balances) and behind HAProxy (TCP, a replica drawn
at random per connection, as a Kubernetes Service's kube-proxy balances). TrustGraph's pattern (a
session per call), one long session, and progress notifications: every
call answered, and both replicas serve. The balancers come from
scripts/balancers.sh."""

import shutil
import subprocess
import tempfile
import time
import urllib.request

import pytest

from peer import McpHttp, free_port, mcp_session, run

JOKE = "Here's a pun for you:\n\nI'd tell you a UDP joke, but you might not get it."
CALLS = 40


def texts(result):
    assert not result.is_error, result
    return "".join(item.text for item in result.content)


def executable(name):
    found = shutil.which(name) or shutil.which(f"/usr/sbin/{name}")
    if found is None:
        pytest.fail(f"{name} is missing: run scripts/balancers.sh, which installs nginx-light and haproxy")
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
