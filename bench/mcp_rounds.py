"""`tools/call` over MCP: ours against every MCP server we know to be fast,
and a floor with no MCP library, paired round by round.

The same echo tool on each server, each driven by the same Rust load
generator (bench/src/bin/mcp_loadgen.rs):
  ours        #[tool_service] + `mcp --listen` (bench/src/bin/ours.rs)
  rmcp        rmcp's own `#[tool]` macros and StreamableHttpService, its
              documented setup without sessions, as ours serves
              (bench/src/bin/rmcp_echo.rs): the baseline of the ratios
  mcp-go      mark3labs/mcp-go v1.2.1, stateless Streamable HTTP
              (bench/go/mcpgo_echo)
  go-sdk      the official Go SDK v1.8.0, stateless, answering JSON
              (bench/go/gosdk_echo)
  floor       a bare Go net/http handler that decodes each request and
              encodes its answer as JSON, no MCP library, checking nothing
              (bench/go/mcp_floor): what HTTP and JSON alone cost
  python      the Python MCP SDK 2.3.0's MCPServer (bench/py_mcp_server.py)
Each round runs ours and rmcp back to back in alternating order, rmcp a
second time (`rmcp-again`: its ratio to rmcp's first run is the noise
floor), then the other servers. Streamable HTTP at 1 and 64 calls in
flight (one keep-alive connection and one MCP session per caller), stdio
at 1 in flight (ours, rmcp, Python: the Go servers and the floor serve
HTTP only here), and `per-call/1`: TrustGraph's mcp-tool pattern, a
connection, `initialize`, the initialized notification and the call (and a
DELETE when the server gives a session) for every call. Python gets fewer
calls (it is ~30x slower) and runs every round too.

What OAuth authorization costs a call, paired the same way: `ours` without
it against `ours-oauth`, the same binary with `--oauth-issuer` and
`--oauth-resource` (tokens of a local issuer, bench/src/bin/jwt_issuer.rs:
an ES256 JWT whose signature, issuer, audience and expiry every request has
checked), and `ours-again`, the noise floor; HTTP at 1 and 64 in flight and
per call (three requests, so three checks, per call).

Written to bench/mcp.json and bench/mcp_auth.json; bench/run.py renders
them into BENCHMARKS.md. Started by `scripts/bench.sh mcp` (or as part of
`scripts/bench.sh`), which builds the Go servers; needs no broker.

  BENCH_ROUNDS=N     rounds (default 5; 2 with BENCH_QUICK=1)
  BENCH_MCP_ONLY=PART  only `compare` (every server) or only `auth`
                     (ours with and without OAuth); both by default
  OURS_BEFORE=PATH   also measure another build of bench/src/bin/ours.rs
                     (as "ours-before")
  OURS_BEFORE_LABEL=TEXT  what that build is, for BENCHMARKS.md
"""

import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import run as common  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2" if common.QUICK else "5"))
# (calls, warm-up calls) per run, by server kind.
CALLS = {
    "rust": (4000, 400) if common.QUICK else (30000, 3000),
    "python": (400, 40) if common.QUICK else (2000, 200),
}
# `per-call`: TrustGraph's mcp-tool pattern, a new connection and session
# for every call (and a DELETE when the server gives a session).
MODES = [("http", 1), ("http", 64), ("stdio", 1), ("per-call", 1)]
# What authorization costs: over HTTP only (stdio has no authorization).
AUTH_MODES = [("http", 1), ("http", 64), ("per-call", 1)]
AUTH_SERVERS = ["ours", "ours-oauth", "ours-again"]
LOADGEN = common.BIN / "mcp_loadgen"
# The servers of bench/go, by name: HTTP only.
GO_SERVERS = {"mcp-go": "mcpgo_echo", "go-sdk": "gosdk_echo", "floor": "mcp_floor"}
# The MCP servers ours is held against (`floor` is no MCP server).
PEERS = ["rmcp", "mcp-go", "go-sdk"]
ISSUER = common.BIN / "jwt_issuer"
PARTS = ("compare", "auth")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def parts():
    """The parts to run: BENCH_MCP_ONLY's, or all."""
    only = [part.strip() for part in os.environ.get("BENCH_MCP_ONLY", "").split(",") if part.strip()]
    unknown = [part for part in only if part not in PARTS]
    if unknown:
        raise SystemExit(f"BENCH_MCP_ONLY: unknown part {', '.join(unknown)} (parts: {', '.join(PARTS)})")
    return only or list(PARTS)


def command(server, listen=None):
    """The server's command line, over HTTP at `listen` or over stdio."""
    transport = ["--listen", listen] if listen else ["--stdio"]
    if server in ("ours-oauth", "ours-again"):
        server = "ours"
    if server in ("ours", "ours-before"):
        binary = os.environ.get("OURS_BEFORE") if server == "ours-before" else str(common.BIN / "ours")
        # Like rmcp_echo, no metrics endpoint (a binary from before `mcp`
        # served one has no --no-metrics).
        quiet = ["--no-metrics"] if server == "ours" else []
        return [binary, "mcp", "--log-level", "warn", *quiet] + (["--listen", listen] if listen else [])
    if server.startswith("rmcp"):
        return [str(common.BIN / "rmcp_echo")] + transport
    if server in GO_SERVERS:
        return [str(common.BIN / GO_SERVERS[server]), "--listen", listen]
    return [common.PYTHON, str(common.ROOT / "bench" / "py_mcp_server.py")] + transport


def wait_for_port(port, process, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {timeout}s")


def stop(process):
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Issuer:
    """A jwt_issuer for the MCP server at `resource`: its issuer URL, and a
    file holding its token."""

    def __init__(self, resource, scratch):
        self.process = subprocess.Popen([str(ISSUER), "--resource", resource], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        if not line:
            stop(self.process)
            raise RuntimeError(f"jwt_issuer exited with {self.process.wait()} before its token")
        said = json.loads(line)
        self.url, self.token = said["issuer"], said["token"]
        self.token_file = pathlib.Path(scratch) / "token"
        self.token_file.write_text(self.token + "\n")

    def stop(self):
        stop(self.process)


def wait_for_keys(url, token, process, timeout=30):
    """Waits until the server has its issuer's keys: until then a request
    with a token is answered 503. Any other refusal is an error."""
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcp-rounds", "version": "1"}}}).encode()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        request = urllib.request.Request(url, data=body, method="POST", headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                response.read()
                return
        except urllib.error.HTTPError as error:
            if error.code != 503:
                raise RuntimeError(f"the server refused the issuer's token: {error.code} "
                                   f"{error.headers.get('WWW-Authenticate')}") from None
        time.sleep(0.05)
    raise RuntimeError(f"the server did not load its issuer's keys within {timeout}s")


def measure(server, mode, in_flight):
    calls, warmup = CALLS["python" if server == "python" else "rust"]
    extra = []
    if mode == "per-call":
        # Three requests and a connection per call: a third of the calls.
        calls, warmup, extra = calls // 3, warmup // 3, ["--session-per-call"]
    load = [str(LOADGEN), "--calls", str(calls), "--warmup", str(warmup), "--in-flight", str(in_flight), *extra]
    if mode == "stdio":
        result = subprocess.run(load + ["--stdio", "--"] + command(server), capture_output=True, text=True,
                                timeout=600)
    else:
        port = free_port()
        listen = f"127.0.0.1:{port}"
        url = f"http://{listen}/mcp"
        with tempfile.TemporaryDirectory() as scratch:
            issuer = Issuer(url, scratch) if server == "ours-oauth" else None
            oauth = ["--oauth-issuer", issuer.url, "--oauth-resource", url] if issuer else []
            process = subprocess.Popen(command(server, listen) + oauth, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
            try:
                wait_for_port(port, process)
                if issuer:
                    wait_for_keys(url, issuer.token, process)
                    load += ["--bearer-file", str(issuer.token_file)]
                cpu_before = common.cpu_seconds(process.pid)
                result = subprocess.run(load + ["--url", url], capture_output=True, text=True, timeout=600)
                cpu = common.cpu_seconds(process.pid) - cpu_before
            finally:
                stop(process)
                if issuer:
                    issuer.stop()
    if result.returncode != 0:
        raise RuntimeError(f"mcp_loadgen failed for {server}/{mode}/{in_flight}: {result.stderr}")
    run = json.loads(result.stdout.strip().splitlines()[-1])
    if mode != "stdio":
        run["cpu_us_per_call"] = cpu / max(run["calls"], 1) * 1e6
        # The server's CPU over every call it answered, the warm-up's too.
        run["cpu_us_per_answered_call"] = cpu / max(run["calls"] + warmup, 1) * 1e6
    return run


def stats(values):
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def load_average():
    return [round(load, 2) for load in os.getloadavg()]


def main():
    todo = parts()
    if "compare" in todo:
        compare()
    if "auth" in todo:
        auth()
    results = common.ROOT / "bench" / "results.json"
    if results.exists():
        (common.ROOT / "BENCHMARKS.md").write_text(common.render(json.loads(results.read_text())))


def compare():
    servers = ["ours", "rmcp", "rmcp-again", *GO_SERVERS, "python"] + (
        ["ours-before"] if os.environ.get("OURS_BEFORE") else [])
    rounds = {f"{mode}/{n}": [] for mode, n in MODES}
    for r in range(ROUNDS):
        for mode, in_flight in MODES:
            key = f"{mode}/{in_flight}"
            here = [server for server in servers if mode != "stdio" or server not in GO_SERVERS]
            order = here if r % 2 == 0 else ["rmcp", "ours"] + here[2:]
            runs = {}
            for server in order:
                print(f"== round {r + 1}/{ROUNDS}: {key}/{server}", file=sys.stderr, flush=True)
                runs[server] = measure(server, mode, in_flight)
                print(f"   {runs[server]['throughput']:,.0f} calls/s, p99 {runs[server]['p99_us']:,.0f} us, "
                      f"{runs[server]['errors']} errors", file=sys.stderr, flush=True)
            rounds[key].append(runs)
    summary = {}
    for key, runs in rounds.items():
        here = [server for server in servers if server in runs[0]]
        http = not key.startswith("stdio")

        def ours_over(peer, field):
            return stats([run["ours"][field] / run[peer][field] for run in runs])

        summary[key] = {
            "ratios": {
                server: {
                    "throughput": stats([run[server]["throughput"] / run["rmcp"]["throughput"] for run in runs]),
                    "p99": stats([run[server]["p99_us"] / run["rmcp"]["p99_us"] for run in runs]),
                }
                for server in here if server != "rmcp"
            },
            "ours_vs_python": stats([run["ours"]["throughput"] / run["python"]["throughput"] for run in runs]),
            # Ours against each MCP server and the floor, paired per round:
            # throughput (≥ 1 is ahead) and, over HTTP, server CPU per call
            # (≤ 1 is ahead).
            "ours_vs": {
                peer: {"throughput": ours_over(peer, "throughput"),
                       **({"cpu": ours_over(peer, "cpu_us_per_call")} if http else {})}
                for peer in [*PEERS, "floor"] if peer in here
            },
            "absolute": {
                server: {k: statistics.median(run[server][k] for run in runs)
                         for k in ("throughput", "p50_us", "p99_us")}
                for server in here
            },
            "errors": sum(run[s]["errors"] for run in runs for s in here),
        }
        if http:
            for server in here:
                summary[key]["absolute"][server]["cpu_us_per_call"] = statistics.median(
                    run[server]["cpu_us_per_call"] for run in runs)
        peers = [peer for peer in PEERS if peer in here]
        summary[key]["best_peer"] = max(peers, key=lambda peer: summary[key]["absolute"][peer]["throughput"])
    result = {"quick": common.QUICK, "rounds": ROUNDS, "calls": CALLS, "versions": common.versions(),
              **common.provenance(), "load_average": load_average(), "before_label": os.environ.get("OURS_BEFORE_LABEL"),
              "summary": summary, "runs": rounds}
    (common.ROOT / "bench" / "mcp.json").write_text(json.dumps(result, indent=2) + "\n")
    common.write_plots()
    print("\n".join(render(result)))


def auth():
    """ours against ours-oauth, with ours-again as the noise floor: each
    round runs ours and ours-oauth back to back in alternating order, then
    ours again; every ratio is to the round's `ours`."""
    rounds = {f"{mode}/{n}": [] for mode, n in AUTH_MODES}
    load_before = load_average()
    for r in range(ROUNDS):
        for mode, in_flight in AUTH_MODES:
            key = f"{mode}/{in_flight}"
            order = AUTH_SERVERS if r % 2 == 0 else ["ours-oauth", "ours", "ours-again"]
            runs = {}
            for server in order:
                print(f"== auth round {r + 1}/{ROUNDS}: {key}/{server}", file=sys.stderr, flush=True)
                runs[server] = measure(server, mode, in_flight)
                print(f"   {runs[server]['throughput']:,.0f} calls/s, p99 {runs[server]['p99_us']:,.0f} us, "
                      f"{runs[server]['cpu_us_per_answered_call']:.1f} us CPU/call, {runs[server]['errors']} errors",
                      file=sys.stderr, flush=True)
            rounds[key].append(runs)
    load_after = load_average()
    summary = {}
    for key, runs in rounds.items():
        def ratio(server, field):
            return stats([run[server][field] / run["ours"][field] for run in runs])

        summary[key] = {
            "ratios": {server: {"throughput": ratio(server, "throughput"), "p99": ratio(server, "p99_us"),
                                "cpu": ratio(server, "cpu_us_per_answered_call")}
                       for server in AUTH_SERVERS if server != "ours"},
            # The server CPU authorization adds to a call, paired per round.
            "extra_cpu_us": stats([run["ours-oauth"]["cpu_us_per_answered_call"]
                                   - run["ours"]["cpu_us_per_answered_call"] for run in runs]),
            "absolute": {server: {k: statistics.median(run[server][k] for run in runs)
                                  for k in ("throughput", "p50_us", "p99_us", "cpu_us_per_answered_call")}
                         for server in AUTH_SERVERS},
            "errors": sum(run[s]["errors"] for run in runs for s in AUTH_SERVERS),
        }
    result = {"quick": common.QUICK, "rounds": ROUNDS, "calls": CALLS["rust"], "versions": common.versions(),
              **common.provenance(), "load_average": {"before": load_before, "after": load_after},
              "summary": summary, "runs": rounds}
    (common.ROOT / "bench" / "mcp_auth.json").write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(render_auth(result)))


def render(m):
    """The BENCHMARKS.md section for bench/mcp.json."""
    lines = ["## `tools/call` over MCP, paired", "",
             f"Generated by `scripts/bench.sh mcp` (bench/mcp_rounds.py → bench/mcp.json): {m['rounds']} rounds. The same",
             "echo tool served by `ours mcp` (`#[tool_service]`); by rmcp 3.11 with its own `#[tool]` macros and",
             "`StreamableHttpService` at its defaults but without sessions, as ours serves (the baseline of the",
             "first table); by mark3labs/mcp-go v1.2.1 (`WithStateLess(true)`) and by the official Go SDK v1.8.0",
             "(`Stateless`, `JSONResponse`), each as its documentation serves a tool (bench/go); by `floor`, a bare",
             "Go `net/http` handler that decodes the request and encodes the answer as JSON with no MCP library",
             "and no checks (what HTTP and JSON alone cost); and by the Python MCP SDK's `MCPServer`. One Rust load",
             "generator drives them all (`mcp_loadgen`: one keep-alive connection per caller, which keeps the",
             "session a server gives; every answer checked). The Go servers and the floor are measured over HTTP",
             "only. `ours-before`, when shown, is `OURS_BEFORE`: " + (m.get("before_label") or "another build") + ". Each round runs ours and rmcp",
             "back to back in alternating order, rmcp a second time (`rmcp-again`, the noise floor), then the others;",
             "each ratio pairs runs of one round."
             + (f" Load average (1, 5, 15 min) at the end: {', '.join(map(str, m['load_average']))}." if m.get("load_average") else ""), "",
             "Goals: throughput ≥ 1.0× the best MCP peer at 1 and 64 in flight and per call, server CPU per call",
             "≤ the best peer's, stdio not slower than rmcp's. Ours ÷ each server, paired per round",
             "(throughput: above 1 is ours ahead; CPU per call: below 1 is ours ahead):", "",
             "| transport, in flight | against | throughput: min / **median** / max | server CPU per call |",
             "|---|---|---|---|"]

    def cell(s, digits=2):
        return f"{s['min']:.{digits}f} / **{s['median']:.{digits}f}** / {s['max']:.{digits}f}"

    for key, s in m["summary"].items():
        for peer, ratios in s.get("ours_vs", {}).items():
            best = " (fastest peer)" if peer == s.get("best_peer") else ""
            cpu = cell(ratios["cpu"]) if "cpu" in ratios else "–"
            lines.append(f"| {key} | {peer}{best} | {cell(ratios['throughput'])} | {cpu} |")
        noise = s["ratios"].get("rmcp-again")
        if noise:
            lines.append(f"| {key} | noise floor (rmcp-again ÷ rmcp) | {cell(noise['throughput'])} | |")
    lines += ["", "Each server ÷ rmcp:", "",
              "| transport, in flight | server | throughput ÷ rmcp: min / **median** / max | p99 ÷ rmcp |",
              "|---|---|---|---|"]
    for key, s in m["summary"].items():
        for server, ratios in s["ratios"].items():
            if server == "python":
                continue
            lines.append(f"| {key} | {server} | {cell(ratios['throughput'])} | {cell(ratios['p99'])} |")
        lines.append(f"| {key} | ours ÷ python | {cell(s['ours_vs_python'], 1)} | |")
    lines += ["", common.plot("mcp-ratios.svg")]
    lines += ["", "Medians of the runs:", "",
              "| transport, in flight | server | calls/s | p50 µs | p99 µs | server CPU µs / call |",
              "|---|---|---|---|---|---|"]
    for key, s in m["summary"].items():
        for server, a in s["absolute"].items():
            cpu = f"{a['cpu_us_per_call']:.0f}" if "cpu_us_per_call" in a else "–"
            lines.append(f"| {key} | {server} | {a['throughput']:,.0f} | {a['p50_us']:,.0f} | {a['p99_us']:,.0f} | {cpu} |")
    lines += ["", common.plot("mcp-absolute.svg"), "", common.plot("mcp-latency.svg")]
    errors = sum(s["errors"] for s in m["summary"].values())
    lines += ["", f"Errors (answers that were not the tool's text): {errors}.", ""]
    return lines


def render_auth(m):
    """The BENCHMARKS.md section for bench/mcp_auth.json."""
    calls, warmup = m["calls"]
    before, after = m["load_average"]["before"], m["load_average"]["after"]
    lines = ["## What OAuth authorization costs a call over MCP, paired", "",
             f"Generated by `scripts/bench.sh mcp` (bench/mcp_rounds.py → bench/mcp_auth.json; "
             f"`BENCH_MCP_ONLY=auth` for this part alone): {m['rounds']} rounds",
             f"of {calls:,} calls after {warmup:,} of warm-up (a third of each per call). `ours mcp` as above, and",
             "`ours-oauth`, the same binary with `--oauth-issuer` and `--oauth-resource`, given the access token",
             "of a local issuer (`jwt_issuer`: an ES256 JWT with `kid`, `iss`, `aud`, `sub`, `scope`, `iat`, `exp`):",
             "every request's token has its signature (ring), issuer, audience and expiry checked, then the",
             "caller goes to the handler; per call that is one request kept alive, and three (`initialize`,",
             "`notifications/initialized`, the call) on a new connection. Each round runs ours and ours-oauth",
             "back to back in alternating order, then ours a second time (`ours-again`, the noise floor); each",
             "ratio pairs runs of one round. Server CPU is over every call answered, warm-up included.",
             "Goal: ours-oauth ≥ 0.90× ours in throughput (the check costs at most a tenth of a call).",
             f"Load average (1, 5, 15 min) before: {', '.join(map(str, before))}; after: {', '.join(map(str, after))}.", "",
             "| transport, in flight | server | throughput ÷ ours: min / **median** / max | p99 ÷ ours | server CPU per call ÷ ours |",
             "|---|---|---|---|---|"]

    def cell(s, digits=2):
        return f"{s['min']:.{digits}f} / **{s['median']:.{digits}f}** / {s['max']:.{digits}f}"

    for key, s in m["summary"].items():
        for server, ratios in s["ratios"].items():
            lines.append(f"| {key} | {server} | {cell(ratios['throughput'])} | {cell(ratios['p99'])} | "
                         f"{cell(ratios['cpu'])} |")
    lines += ["", "Medians of the runs, and the server CPU authorization adds to a call (ours-oauth − ours, paired):", "",
              "| transport, in flight | server | calls/s | p50 µs | p99 µs | server CPU µs / call |",
              "|---|---|---|---|---|---|"]
    for key, s in m["summary"].items():
        for server, a in s["absolute"].items():
            lines.append(f"| {key} | {server} | {a['throughput']:,.0f} | {a['p50_us']:,.0f} | {a['p99_us']:,.0f} | "
                         f"{a['cpu_us_per_answered_call']:.1f} |")
        lines.append(f"| {key} | ours-oauth − ours | | | | {cell(s['extra_cpu_us'], 1)} |")
    errors = sum(s["errors"] for s in m["summary"].values())
    lines += ["", f"Errors (answers that were not the tool's text): {errors}.", ""]
    return lines


if __name__ == "__main__":
    main()
