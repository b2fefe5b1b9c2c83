"""`tools/call` over MCP: ours against rmcp at its best and the Python SDK,
paired round by round.

Three servers of the same echo tool, each driven by the same Rust load
generator (bench/src/bin/mcp_loadgen.rs):
  ours        #[tool_service] + `mcp --listen` (bench/src/bin/ours.rs)
  rmcp        rmcp's own `#[tool]` macros and StreamableHttpService, its
              documented setup without sessions, as ours serves
              (bench/src/bin/rmcp_echo.rs): the baseline
  python      the Python MCP SDK 2.3.0's MCPServer (bench/py_mcp_server.py)
Each round runs ours and rmcp back to back in alternating order, and rmcp a
second time (`rmcp-again`): its ratio to rmcp's first run is the noise floor.
Streamable HTTP at 1 and 64 calls in flight (one keep-alive connection and
one MCP session per caller), stdio at 1 in flight, and `per-call/1`:
TrustGraph's mcp-tool pattern, a connection, `initialize` and the call (and
a DELETE when the server gives a session) for every call. Python gets fewer
calls (it is ~30x slower) and runs every round too.

Written to bench/mcp.json; bench/run.py renders it into BENCHMARKS.md.
Started by `scripts/bench.sh mcp` (or as part of `scripts/bench.sh`); needs
no broker.

  BENCH_ROUNDS=N     rounds (default 5; 2 with BENCH_QUICK=1)
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
import time

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
LOADGEN = common.BIN / "mcp_loadgen"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def command(server, listen=None):
    """The server's command line, over HTTP at `listen` or over stdio."""
    transport = ["--listen", listen] if listen else ["--stdio"]
    if server in ("ours", "ours-before"):
        binary = os.environ.get("OURS_BEFORE") if server == "ours-before" else str(common.BIN / "ours")
        # Like rmcp_echo, no metrics endpoint (a binary from before `mcp`
        # served one has no --no-metrics).
        quiet = ["--no-metrics"] if server == "ours" else []
        return [binary, "mcp", "--log-level", "warn", *quiet] + (["--listen", listen] if listen else [])
    if server.startswith("rmcp"):
        return [str(common.BIN / "rmcp_echo")] + transport
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
        process = subprocess.Popen(command(server, listen), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for_port(port, process)
            cpu_before = common.cpu_seconds(process.pid)
            result = subprocess.run(load + ["--url", f"http://{listen}/mcp"], capture_output=True, text=True,
                                    timeout=600)
            cpu = common.cpu_seconds(process.pid) - cpu_before
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
    if result.returncode != 0:
        raise RuntimeError(f"mcp_loadgen failed for {server}/{mode}/{in_flight}: {result.stderr}")
    run = json.loads(result.stdout.strip().splitlines()[-1])
    if mode != "stdio":
        run["cpu_us_per_call"] = cpu / max(run["calls"], 1) * 1e6
    return run


def stats(values):
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def main():
    servers = ["ours", "rmcp", "rmcp-again", "python"] + (["ours-before"] if os.environ.get("OURS_BEFORE") else [])
    rounds = {f"{mode}/{n}": [] for mode, n in MODES}
    for r in range(ROUNDS):
        for mode, in_flight in MODES:
            key = f"{mode}/{in_flight}"
            order = servers if r % 2 == 0 else ["rmcp", "ours"] + servers[2:]
            runs = {}
            for server in order:
                print(f"== round {r + 1}/{ROUNDS}: {key}/{server}", file=sys.stderr, flush=True)
                runs[server] = measure(server, mode, in_flight)
                print(f"   {runs[server]['throughput']:,.0f} calls/s, p99 {runs[server]['p99_us']:,.0f} us, "
                      f"{runs[server]['errors']} errors", file=sys.stderr, flush=True)
            rounds[key].append(runs)
    summary = {}
    for key, runs in rounds.items():
        summary[key] = {
            "ratios": {
                server: {
                    "throughput": stats([run[server]["throughput"] / run["rmcp"]["throughput"] for run in runs]),
                    "p99": stats([run[server]["p99_us"] / run["rmcp"]["p99_us"] for run in runs]),
                }
                for server in servers if server != "rmcp"
            },
            "ours_vs_python": stats([run["ours"]["throughput"] / run["python"]["throughput"] for run in runs]),
            "absolute": {
                server: {k: statistics.median(run[server][k] for run in runs)
                         for k in ("throughput", "p50_us", "p99_us")}
                for server in servers
            },
            "errors": sum(run[s]["errors"] for run in runs for s in servers),
        }
        if not key.startswith("stdio"):
            for server in servers:
                summary[key]["absolute"][server]["cpu_us_per_call"] = statistics.median(
                    run[server]["cpu_us_per_call"] for run in runs)
    result = {"quick": common.QUICK, "rounds": ROUNDS, "calls": CALLS, "versions": common.versions(),
              "before_label": os.environ.get("OURS_BEFORE_LABEL"), "summary": summary, "runs": rounds}
    (common.ROOT / "bench" / "mcp.json").write_text(json.dumps(result, indent=2) + "\n")
    results = common.ROOT / "bench" / "results.json"
    if results.exists():
        (common.ROOT / "BENCHMARKS.md").write_text(common.render(json.loads(results.read_text())))
    print("\n".join(render(result)))


def render(m):
    """The BENCHMARKS.md section for bench/mcp.json."""
    lines = ["## `tools/call` over MCP, paired", "",
             f"Generated by `scripts/bench.sh mcp` (bench/mcp_rounds.py → bench/mcp.json): {m['rounds']} rounds. The same",
             "echo tool served by `ours mcp` (`#[tool_service]`), by rmcp 3.11 with its own `#[tool]` macros and",
             "`StreamableHttpService` at its defaults but without sessions, as ours serves (the baseline: rmcp",
             "at its best) and by the Python MCP SDK's `MCPServer`, all driven by one Rust load generator",
             "(`mcp_loadgen`: one keep-alive connection per caller, which keeps the session a server gives;",
             "every answer checked). `ours-before`, when shown, is `OURS_BEFORE`: " + (m.get("before_label") or "another build") + ". Each round runs ours and rmcp",
             "back to back in alternating order, rmcp a second time (`rmcp-again`, the noise floor) and Python;",
             "each ratio pairs runs of one round. Goals: throughput ≥ 1.0× rmcp and p99 ≤ 1.1× over HTTP at 1 and 64 in flight (within the noise floor on stdio), ≥ 20× Python.", "",
             "| transport, in flight | server | throughput ÷ rmcp: min / **median** / max | p99 ÷ rmcp |",
             "|---|---|---|---|"]

    def cell(s, digits=2):
        return f"{s['min']:.{digits}f} / **{s['median']:.{digits}f}** / {s['max']:.{digits}f}"

    for key, s in m["summary"].items():
        for server, ratios in s["ratios"].items():
            if server == "python":
                continue
            lines.append(f"| {key} | {server} | {cell(ratios['throughput'])} | {cell(ratios['p99'])} |")
        lines.append(f"| {key} | ours ÷ python | {cell(s['ours_vs_python'], 1)} | |")
    lines += ["", "Medians of the runs:", "",
              "| transport, in flight | server | calls/s | p50 µs | p99 µs | server CPU µs / call |",
              "|---|---|---|---|---|---|"]
    for key, s in m["summary"].items():
        for server, a in s["absolute"].items():
            cpu = f"{a['cpu_us_per_call']:.0f}" if "cpu_us_per_call" in a else "–"
            lines.append(f"| {key} | {server} | {a['throughput']:,.0f} | {a['p50_us']:,.0f} | {a['p99_us']:,.0f} | {cpu} |")
    errors = sum(s["errors"] for s in m["summary"].values())
    lines += ["", f"Errors (answers that were not the tool's text): {errors}.", ""]
    return lines


if __name__ == "__main__":
    main()
