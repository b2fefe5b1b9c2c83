"""What tracing costs per request over Pulsar, paired round by round.

Each round runs, back to back in an order that alternates:
  off          `serve` built without the `otel` feature (bench/src/bin/ours.rs)
  compiled     the same with `otel` (ours_traced), and no OTEL_* endpoint:
               tracing compiled in and off
  unsampled    ours_traced exporting to a local collector, with
               OTEL_TRACES_SAMPLER=always_off: every request gets its span
               and trace context, none is recorded or exported
  sampled      ours_traced with OTEL_TRACES_SAMPLER=always_on: every span
               recorded and exported
  off-again    `off` a second time: the noise floor
and each ratio pairs a variant with `off` of the same round: throughput and
service CPU per request (utime + stime from /proc). The goal: unsampled
costs at most 5% CPU per request.

CPU time on a shared 2-core machine moves by more than 5% from run to run,
so the same variants are also counted in instructions: the service runs
under callgrind for 1,000 and then 5,000 echo requests, and the difference
divided by 4,000 is its instructions per request, start-up excluded. That
figure moves by well under 1% between runs.

The collector is a sink on 127.0.0.1 that reads each OTLP/HTTP request and
answers 200 without decoding it, so that it takes as little of the
machine's CPU as it can.

Written to bench/traced.json; `scripts/bench.sh traced` runs it.

  BENCH_ROUNDS=N     rounds (default 5; 2 with BENCH_QUICK=1)
"""

import http.server
import json
import os
import pathlib
import shutil
import statistics
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import run as common  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2" if common.QUICK else "5"))
WORKLOADS = {
    "echo": (5000, 500) if common.QUICK else (40000, 4000),
    "joke": (5000, 500) if common.QUICK else (40000, 4000),
}
IN_FLIGHT = 64
VARIANTS = ["off", "compiled", "unsampled", "sampled", "off-again"]


class Sink:
    """Reads OTLP/HTTP requests and answers 200, counting bytes."""

    def __init__(self):
        self.requests = 0
        self.bytes = 0
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                sink.requests += 1
                sink.bytes += len(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def start(variant, kind, sink, dry=False):
    t = common.topic(kind)
    binary = "ours" if variant in ("off", "off-again") else "ours_traced"
    env = {}
    if variant in ("unsampled", "sampled"):
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint,
            "OTEL_SERVICE_NAME": "bench",
            "OTEL_TRACES_SAMPLER": "always_off" if variant == "unsampled" else "always_on",
        }
    command = [str(common.BIN / binary), "serve", "-p", common.URL, "--only", f"{t}-service",
               "--log-level", "info", "--no-metrics"]
    if dry:
        return command, env
    return common.Service(command, "ready", env=env)


def measure(variant, kind, sink):
    requests, warmup = WORKLOADS[kind]
    service = start(variant, kind, sink)
    try:
        cpu = common.cpu_seconds(service.pid)
        result = common.load(kind, IN_FLIGHT, requests, warmup)
        result["cpu_us_per_request"] = (common.cpu_seconds(service.pid) - cpu) / (requests + warmup) * 1e6
        return result
    finally:
        service.stop()


def instructions_per_request(sink):
    """Each variant's instructions per echo request under callgrind."""
    if shutil.which("valgrind") is None:
        raise SystemExit("traced.py: valgrind is missing; install it (apt-get install valgrind)")
    counts = {}
    for variant in VARIANTS[:-1]:
        refs = []
        for requests in (1000, 5000):
            print(f"== callgrind: echo/{variant}, {requests} requests", file=sys.stderr, flush=True)
            command, env = start(variant, "echo", sink, dry=True)
            refs.append(common.callgrind_refs(command, "ready", env, "echo", 16, requests))
        counts[variant] = (refs[1] - refs[0]) / 4000
    return counts


def stats(values):
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def main():
    sink = Sink()
    print("== warming up the broker", file=sys.stderr, flush=True)
    common.warm_up_broker()
    rounds = {kind: [] for kind in WORKLOADS}
    for r in range(ROUNDS):
        for kind in WORKLOADS:
            order = VARIANTS if r % 2 == 0 else list(reversed(VARIANTS))
            runs = {}
            for variant in order:
                print(f"== round {r + 1}/{ROUNDS}: {kind}/{variant}", file=sys.stderr, flush=True)
                runs[variant] = measure(variant, kind, sink)
                print(f"   {runs[variant]['throughput']:,.0f} req/s, "
                      f"{runs[variant]['cpu_us_per_request']:.1f} us CPU/request", file=sys.stderr, flush=True)
            rounds[kind].append(runs)
    counted = instructions_per_request(sink)
    summary = {}
    for kind, runs in rounds.items():
        summary[kind] = {
            variant: {
                "throughput": stats([run[variant]["throughput"] / run["off"]["throughput"] for run in runs]),
                "cpu_per_request": stats([run[variant]["cpu_us_per_request"] / run["off"]["cpu_us_per_request"]
                                          for run in runs]),
            }
            for variant in VARIANTS if variant != "off"
        }
        # Tracing on against off in the very same binary.
        for variant in ("unsampled", "sampled"):
            summary[kind][variant]["cpu_per_request_vs_compiled"] = stats(
                [run[variant]["cpu_us_per_request"] / run["compiled"]["cpu_us_per_request"] for run in runs])
        summary[kind]["absolute"] = {
            variant: {key: statistics.median(run[variant][key] for run in runs)
                      for key in ("throughput", "cpu_us_per_request", "p99_us")}
            for variant in VARIANTS
        }
        summary[kind]["errors"] = sum(run[v]["errors"] for run in runs for v in VARIANTS)
    result = {
        "quick": common.QUICK,
        "rounds": ROUNDS,
        "in_flight": IN_FLIGHT,
        "workloads": {kind: {"requests": r, "warmup": w} for kind, (r, w) in WORKLOADS.items()},
        "collector": {"requests": sink.requests, "bytes": sink.bytes},
        "instructions_per_request": counted,
        "versions": common.versions(),
        "summary": summary,
        "runs": rounds,
    }
    (common.ROOT / "bench" / "traced.json").write_text(json.dumps(result, indent=2) + "\n")
    results = common.ROOT / "bench" / "results.json"
    if results.exists():
        (common.ROOT / "BENCHMARKS.md").write_text(common.render(json.loads(results.read_text())))
    print("\n".join(render(result)))


def render(t):
    """The BENCHMARKS.md section for bench/traced.json."""
    lines = ["## What tracing costs, paired", "",
             f"Generated by `scripts/bench.sh traced` (bench/traced.py → bench/traced.json): {t['rounds']} rounds,",
             f"{t['in_flight']} requests in flight, each variant's ratio to `off` (built without `otel`) of the",
             "same round, median (min–max). `compiled`: built with `otel`, no endpoint; `unsampled`: exporting,",
             "`OTEL_TRACES_SAMPLER=always_off`; `sampled`: `always_on`, every span exported to a local sink;",
             "`off-again`: `off` once more, the noise floor.", ""]
    lines.append("| workload | variant | throughput ÷ off | CPU/request ÷ off | CPU/request ÷ compiled "
                 "(same binary) | CPU µs/request (median) |")
    lines.append("|---|---|---|---|---|---|")
    for kind, summary in t["summary"].items():
        absolute = summary["absolute"]
        lines.append(f"| {kind} | off | 1 | 1 | – | {absolute['off']['cpu_us_per_request']:.1f} |")
        for variant in VARIANTS[1:]:
            s = summary[variant]

            def cell(stat):
                return f"{stat['median']:.2f} ({stat['min']:.2f}–{stat['max']:.2f})"

            same = cell(s["cpu_per_request_vs_compiled"]) if "cpu_per_request_vs_compiled" in s else "–"
            lines.append(f"| {kind} | {variant} | {cell(s['throughput'])} | {cell(s['cpu_per_request'])} | {same} | "
                         f"{absolute[variant]['cpu_us_per_request']:.1f} |")
    lines.append("")
    counted = t.get("instructions_per_request")
    if counted:
        lines += ["In instructions, which do not move with the machine's load: the service under callgrind, the",
                  "difference between 5,000 and 1,000 echo requests (16 in flight) divided by 4,000.", "",
                  "| variant | instructions/request | ÷ off | ÷ compiled (same binary) |", "|---|---|---|---|"]
        for variant, count in counted.items():
            same = f"{count / counted['compiled']:.3f}" if variant in ("unsampled", "sampled") else "–"
            lines.append(f"| {variant} | {count:,.0f} | {count / counted['off']:.3f} | {same} |")
        lines.append("")
    lines.append(f"Errors: {sum(s['errors'] for s in t['summary'].values())}. The sink took "
                 f"{t['collector']['requests']:,} OTLP requests ({t['collector']['bytes'] / 1e6:.1f} MB).")
    return lines


if __name__ == "__main__":
    main()
