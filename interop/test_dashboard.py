"""deploy/grafana-dashboard.json and deploy/prometheus-alerts.yml against a
real Prometheus (Debian's, installed by scripts/install/prometheus.sh): it scrapes
the echo example serving Pulsar and MCP every second while a short mixed
load runs (results, invalid arguments, timeouts, rate-limited calls and an
oversized response, over both transports); then every panel's query, with
the dashboard's variables filled in, and every alert's expression go to its
HTTP API. A query that errors fails, and so does a panel query that returns
no series when this load should have given it some.

Run apart from the broker suite (`--noconftest`): conftest's echo replica
would share the echo topics' subscriptions with this one."""

import asyncio
import json
import pathlib
import re
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import yaml

from peer import ROOT, McpHttp, executable, free_port, metrics_port, stop, trustgraph_client

DASHBOARD = ROOT / "deploy" / "grafana-dashboard.json"
ALERTS = ROOT / "deploy" / "prometheus-alerts.yml"

# The dashboard's variables as the check fills them in: every service of
# the scraped job.
VARIABLES = {
    "$__rate_interval": "1m",
    "$job": "tools",
    "$service": ".*",
}

# Panels whose queries legitimately return no series under this load, each
# with the reason.
NO_DATA = {
    # Only with --oauth-issuer: the families are absent without it.
    "MCP authorization",
}


def prometheus_query(port, expr):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = json.load(answer)
    except urllib.error.HTTPError as error:
        body = json.load(error)
    assert body["status"] == "success", f"{expr}\n{body.get('errorType')}: {body.get('error')}"
    return body["data"]["result"]


def fill(expr):
    for name, value in sorted(VARIABLES.items(), key=lambda item: -len(item[0])):
        expr = expr.replace(name, value)
    assert "$" not in expr, f"a variable the check does not fill: {expr}"
    return expr


class Prometheus:
    """Debian's Prometheus scraping `target` every second as job `tools`,
    with the alerting rules loaded."""

    def __init__(self, target):
        self.dir = tempfile.TemporaryDirectory()
        self.port = free_port()
        config = pathlib.Path(self.dir.name) / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"rule_files: [{json.dumps(str(ALERTS))}]\n"
            "scrape_configs:\n"
            f"  - job_name: tools\n    static_configs: [{{targets: ['{target}']}}]\n"
        )
        self.process = subprocess.Popen(
            [
                executable("prometheus"),
                f"--config.file={config}",
                f"--storage.tsdb.path={self.dir.name}/data",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2):
                    break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    stop(self.process)
                    raise AssertionError(f"prometheus did not start: {self.process.stderr.read()}")
                time.sleep(0.1)

    def query(self, expr):
        return prometheus_query(self.port, expr)

    def stop(self):
        stop(self.process)
        self.dir.cleanup()


def mcp_call(url, name, arguments):
    body = json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }).encode()
    request = urllib.request.Request(url, data=body, headers={
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    })
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()


async def pulsar_calls(topic, calls):
    backend, client = await trustgraph_client(topic)
    try:
        return await asyncio.gather(
            *(client.call({}, arguments) for arguments in calls), return_exceptions=True
        )
    finally:
        await client.close()
        await backend.close()


async def load(url):
    """Results, invalid arguments, timeouts, rate-limited calls and an
    oversized response, over Pulsar and MCP at once."""
    mcp = [("echo", {"text": f"mcp {i}"}) for i in range(10)]
    mcp += [("words", {"text": f"one two {i}"}) for i in range(12)]
    mcp += [("echo", {}), ("wait", {"ms": 2500})]
    answers = await asyncio.gather(
        pulsar_calls("echo", [{"text": f"pulsar {i}"} for i in range(20)] + [{}, {"text": 5}]),
        pulsar_calls("words", [{"text": f"a b {i}"} for i in range(12)]),
        pulsar_calls("wait", [{"ms": 2500}, {"ms": 10}]),
        pulsar_calls("blob", [{"bytes": 20000}, {"bytes": 10}]),
        *(asyncio.to_thread(mcp_call, url, name, arguments) for name, arguments in mcp),
    )
    return answers


def scraped_total(prometheus, port):
    """Whether Prometheus holds the requests the replica counted by now."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    counted = sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
        if line.startswith("tg_consumer_processing_total{")
    )
    seen = prometheus.query('sum(tg_consumer_processing_total{job="tools"})')
    return counted > 0 and seen and float(seen[0]["value"][1]) == counted


def test_every_dashboard_query_and_alert_expression_answers_from_a_real_prometheus():
    dashboard = json.loads(DASHBOARD.read_text())
    rules = [rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]]
    titles = {panel["title"] for panel in dashboard["panels"]}
    assert NO_DATA <= titles, f"NO_DATA names panels the dashboard lacks: {NO_DATA - titles}"

    server = McpHttp(
        "echo",
        "--rate", "words-service=5/s",
        "--max-message-size", "8192",
        serve=True,
    )
    prometheus = None
    try:
        port = metrics_port(server)
        prometheus = Prometheus(f"127.0.0.1:{port}")
        asyncio.run(load(server.url))
        deadline = time.monotonic() + 30
        while not scraped_total(prometheus, port):
            assert time.monotonic() < deadline, "Prometheus did not scrape the load's counts"
            time.sleep(0.5)
        # What the load should have produced, seen through Prometheus once
        # a scrape has all of it (polled: one scrape may have part).
        def produced():
            types = {s["metric"]["type"] for s in prometheus.query('tg_tool_service_errors_total{job="tools"} > 0')}
            transports = {
                s["metric"].get("transport", "pulsar")
                for s in prometheus.query('tg_consumer_processing_total{job="tools"} > 0')
            }
            return types, transports

        expected = {"invalid-arguments", "timeout", "rate-limited", "response-too-large"}
        deadline = time.monotonic() + 30
        while not (expected <= (found := produced())[0] and found[1] == {"pulsar", "mcp"}):
            assert time.monotonic() < deadline, f"the load's error types and transports: {found}"
            time.sleep(0.5)

        def empty_series():
            """The dashboard's variables and panels with no series yet."""
            empty = []
            for variable in dashboard["templating"]["list"]:
                found = re.fullmatch(r"label_values\((.+), (\w+)\)", variable.get("definition", ""))
                if found:
                    answer = prometheus.query(fill(f"count by ({found[2]}) ({found[1]})"))
                    if not answer:
                        empty.append(f"variable {variable['name']}")
            for panel in dashboard["panels"]:
                for target in panel["targets"]:
                    answer = prometheus.query(fill(target["expr"]))
                    if panel["title"] in NO_DATA:
                        assert not answer, f"{panel['title']} has data now: take it off NO_DATA"
                    elif not answer:
                        empty.append(f"{panel['title']} ({target['refId']}): {target['expr']}")
            return empty

        # A rate needs two scrapes after the load: polled until every panel
        # has its series (or 30 s have passed, and the assertion names those
        # still empty).
        deadline = time.monotonic() + 30
        while (empty := empty_series()) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not empty, "no series for:\n" + "\n".join(empty)

        for rule in rules:
            prometheus.query(rule["expr"])
        # Prometheus loaded the rules and evaluates each without an error.
        with urllib.request.urlopen(f"http://127.0.0.1:{prometheus.port}/api/v1/rules", timeout=10) as answer:
            loaded = [r for g in json.load(answer)["data"]["groups"] for r in g["rules"]]
        assert sorted(r["name"] for r in loaded) == sorted(r["alert"] for r in rules)
        assert all(r["health"] == "ok" for r in loaded), loaded
    finally:
        if prometheus is not None:
            prometheus.stop()
        server.stop()
