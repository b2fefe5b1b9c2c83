"""Default `serve` against the hand-written loop, paired round by round.

This machine is noisy, and its noise is bimodal: a single run of each proves
little. So each round runs the hand-written `pulsar` loop (bench/src/bin/raw.rs)
and `serve` with its defaults (bench/src/bin/ours.rs) back to back, in an order
that alternates, and each ratio pairs the two runs of one round. Reported:
min / median / max of the ratios and how many rounds fell below 0.85x, for
throughput, service CPU per request (utime + stime from /proc) and p99, plus
context switches per request.

Each round also runs the hand-written loop a second time (`raw-again`): its
ratio to the loop's first run is the noise floor, what two runs of the very
same program differ by on this machine.

For echo, each round also runs `java`: the same loop written against
Apache Pulsar's own Java client (bench/java/EchoLoop.java, compiled by
scripts/bench.sh against the broker distribution's jars), the reference a
user who could write the tool in Java would compare with. The JVM answers
60,000 requests before it is measured, so that its JIT has compiled the
hot code, as in a service that has run for a while.

Four workloads, 64 requests in flight except the last:
  echo   the framework's own cost: a handler that is ready at once
  joke   the spec's joke tool: a config and arguments to decode
  spin   a handler that keeps the CPU busy 300 us before answering, which
         proves that requests still run in parallel
  echo@1 echo with one request in flight: the latency of a request alone

Each round also runs `unbatched`: `serve` with `--response-batching off`,
each answer its own message as before batching; `ours` ÷ `unbatched` is
what batching the responses changes.

Each run also records the machine's steal time (/proc/stat): on a shared
virtual machine, a run that lost CPU to other guests is visible as such.

Written to bench/paired.json; bench/run.py renders it into BENCHMARKS.md.
Started by `scripts/bench.sh paired` (or as part of `scripts/bench.sh`).

  BENCH_ROUNDS=N     rounds (default 7; 2 with BENCH_QUICK=1)
  OURS_BEFORE=PATH   also measure another build of bench/src/bin/ours.rs in
                     every round (e.g. the previous release), as "before"
  OURS_BEFORE_LABEL=TEXT  what that build is, for BENCHMARKS.md
  JAVA_LOOP_CLASSPATH=CP  the Java loop's classpath (set by scripts/bench.sh;
                     without it the `java` variant is not run)
"""

import json
import os
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import run as common  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2" if common.QUICK else "7"))
BEFORE = os.environ.get("OURS_BEFORE")
IN_FLIGHT = 64
WORKLOADS = {
    # name: (kind, requests in flight, requests, warm-up requests)
    "echo": ("echo", IN_FLIGHT) + ((5000, 500) if common.QUICK else (40000, 4000)),
    "joke": ("joke", IN_FLIGHT) + ((5000, 500) if common.QUICK else (40000, 4000)),
    "spin": ("spin", IN_FLIGHT) + ((1000, 100) if common.QUICK else (4000, 400)),
    "echo@1": ("echo", 1) + ((500, 50) if common.QUICK else (3000, 300)),
}
JAVA_CLASSPATH = os.environ.get("JAVA_LOOP_CLASSPATH")
# Requests the Java loop answers before it is measured: the JVM compiles
# its hot code during the first tens of thousands (measured from its start,
# a 44,000-request run costs it three times the CPU per request of a warm
# one), and a service runs for longer than a benchmark.
JAVA_PREWARM = 5000 if common.QUICK else 60000
# The workloads the Java loop serves.
JAVA_KINDS = {"echo", "echo@1"}


def context_switches(pid):
    total = 0
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def cpu_jiffies():
    """(steal, total) jiffies of the whole machine."""
    fields = [int(v) for v in pathlib.Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return fields[7], sum(fields[:8])


def start(variant, kind):
    if variant == "raw-again":
        return common.start("raw", kind)
    if variant == "java":
        return common.Service(["java", "-cp", JAVA_CLASSPATH, "EchoLoop", "--url", common.URL,
                               "--topic", common.topic(kind)], "java echo loop ready")
    if variant in ("before", "unbatched"):
        t = common.topic(kind)
        binary, flags = (BEFORE, []) if variant == "before" else (str(common.BIN / "ours"), ["--response-batching", "off"])
        return common.Service([binary, "serve", "-p", common.URL, "--only", f"{t}-service", "--log-level", "info",
                               "--no-metrics"] + flags, "ready")
    return common.start(variant, kind)


def measure(variant, workload):
    kind, in_flight, requests, warmup = WORKLOADS[workload]
    service = start(variant, kind)
    try:
        if variant == "java":
            common.load(kind, IN_FLIGHT, JAVA_PREWARM, 0)
        cpu = common.cpu_seconds(service.pid)
        switches = context_switches(service.pid)
        steal, jiffies = cpu_jiffies()
        result = common.load(kind, in_flight, requests, warmup)
        steal_after, jiffies_after = cpu_jiffies()
        result["steal_pct"] = 100 * (steal_after - steal) / max(1, jiffies_after - jiffies)
        total = requests + warmup
        result["cpu_us_per_request"] = (common.cpu_seconds(service.pid) - cpu) / total * 1e6
        result["switches_per_request"] = (context_switches(service.pid) - switches) / total
        return result
    finally:
        service.stop()


def stats(values):
    return {
        "min": min(values),
        "median": statistics.median(values),
        "max": max(values),
        "below_0_85": sum(1 for v in values if v < 0.85),
    }


def main():
    variants = (["raw", "ours", "raw-again", "unbatched"] + (["java"] if JAVA_CLASSPATH else [])
                + (["before"] if BEFORE else []))
    print("== warming up the broker", file=sys.stderr, flush=True)
    common.warm_up_broker()
    rounds = {kind: [] for kind in WORKLOADS}
    for r in range(ROUNDS):
        for kind in WORKLOADS:
            these = [v for v in variants if v != "java" or kind in JAVA_KINDS]
            order = these if r % 2 == 0 else list(reversed(these))
            runs = {}
            for variant in order:
                print(f"== round {r + 1}/{ROUNDS}: {kind}/{variant}", file=sys.stderr, flush=True)
                runs[variant] = measure(variant, kind)
                print(f"   {runs[variant]['throughput']:,.0f} req/s, p99 {runs[variant]['p99_us']:,.0f} us, "
                      f"{runs[variant]['cpu_us_per_request']:.1f} us CPU/request, "
                      f"steal {runs[variant]['steal_pct']:.0f}%", file=sys.stderr, flush=True)
            rounds[kind].append(runs)
    summary = {}
    for kind, runs in rounds.items():
        summary[kind] = {}
        present = [v for v in variants if all(v in run for run in runs)]
        for variant in present:
            if variant == "raw":
                continue
            summary[kind][variant] = {
                "throughput": stats([run[variant]["throughput"] / run["raw"]["throughput"] for run in runs]),
                "cpu_per_request": stats([run[variant]["cpu_us_per_request"] / run["raw"]["cpu_us_per_request"]
                                          for run in runs]),
                "p50": stats([run[variant]["p50_us"] / run["raw"]["p50_us"] for run in runs]),
                "p99": stats([run[variant]["p99_us"] / run["raw"]["p99_us"] for run in runs]),
            }
        if "unbatched" in present:
            summary[kind]["ours_vs_unbatched"] = {
                key: stats([run["ours"][field] / run["unbatched"][field] for run in runs])
                for key, field in (("throughput", "throughput"), ("cpu_per_request", "cpu_us_per_request"),
                                   ("p50", "p50_us"), ("p99", "p99_us"))
            }
        summary[kind]["absolute"] = {
            variant: {
                key: statistics.median(run[variant][key] for run in runs)
                for key in ("throughput", "p50_us", "p99_us", "cpu_us_per_request", "switches_per_request",
                            "steal_pct")
            }
            for variant in present
        }
        summary[kind]["errors"] = sum(run[v]["errors"] for run in runs for v in present)
        if "java" in present:
            summary[kind]["ours_vs_java"] = {
                "throughput": stats([run["ours"]["throughput"] / run["java"]["throughput"] for run in runs]),
                "cpu_per_request": stats([run["ours"]["cpu_us_per_request"] / run["java"]["cpu_us_per_request"]
                                          for run in runs]),
                "p99": stats([run["ours"]["p99_us"] / run["java"]["p99_us"] for run in runs]),
            }
    if BEFORE and "spin" in summary:
        spin = [run["ours"]["throughput"] / run["before"]["throughput"] for run in rounds["spin"]]
        summary["spin"]["ours_vs_before_throughput"] = stats(spin)
    result = {
        "quick": common.QUICK,
        "rounds": ROUNDS,
        "in_flight": IN_FLIGHT,
        "workloads": {name: {"kind": kind, "in_flight": n, "requests": r, "warmup": w}
                      for name, (kind, n, r, w) in WORKLOADS.items()},
        "before": BEFORE,
        "before_label": os.environ.get("OURS_BEFORE_LABEL"),
        "versions": common.versions(),
        **common.provenance(),
        "summary": summary,
        "runs": rounds,
    }
    path = common.ROOT / "bench" / "paired.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    common.write_plots()
    results = common.ROOT / "bench" / "results.json"
    if results.exists():
        (common.ROOT / "BENCHMARKS.md").write_text(common.render(json.loads(results.read_text())))
    print("\n".join(render(result)))


def render(p):
    """The BENCHMARKS.md section for bench/paired.json."""
    lines = ["## Default `serve` against the hand-written loop, paired", "",
             f"Generated by `scripts/bench.sh paired` (bench/paired.py → bench/paired.json): {p['rounds']} rounds,",
             f"{p['in_flight']} requests in flight (`echo@1`: one), the hand-written `pulsar` loop (bench/src/bin/raw.rs) and",
             "`serve` at its defaults back to back in alternating order; each ratio pairs the two runs of",
             "one round. `joke` is the spec's joke tool; `spin` keeps the CPU busy 300 µs per request before answering;"
             " `echo@1` is echo with one request in flight."
             + (" `unbatched` is `serve --response-batching off`: each answer its own message, as before"
                " responses were batched."
                if any("unbatched" in by_variant for by_variant in p["summary"].values()) else "")
             + (" `raw-again` is the hand-written loop run a second time in each round: its ratios are the"
                " machine's noise floor, what two runs of the same program differ by."
                if any("raw-again" in by_variant for by_variant in p["summary"].values()) else "")
             + ((" `before` is another build of the same binary (`OURS_BEFORE`)"
                 + (f": {p['before_label']}" if p.get("before_label") else "") + ".") if p.get("before") else ""), "",
             "| workload | variant | throughput ÷ loop: min / median / max (rounds < 0.85) | CPU per request ÷ loop | p99 ÷ loop |",
             "|---|---|---|---|---|"]

    def cell(s):
        return f"{s['min']:.2f} / **{s['median']:.2f}** / {s['max']:.2f} ({s['below_0_85']})"

    for kind, by_variant in p["summary"].items():
        for variant, s in by_variant.items():
            if variant in ("absolute", "errors", "ours_vs_before_throughput", "ours_vs_java", "ours_vs_unbatched"):
                continue
            lines.append(f"| {kind} | {variant} | {cell(s['throughput'])} | {cell(s['cpu_per_request'])} | {cell(s['p99'])} |")
    lines += ["", common.plot("paired-ratios.svg")]
    lines += ["", "Medians of the runs:", "",
              "| workload | variant | requests/s | p50 µs | p99 µs | CPU µs / request | context switches / request | steal % |",
              "|---|---|---|---|---|---|---|---|"]
    for kind, by_variant in p["summary"].items():
        for variant, a in by_variant["absolute"].items():
            lines.append(f"| {kind} | {variant} | {a['throughput']:,.0f} | {a['p50_us']:,.0f} | {a['p99_us']:,.0f} | "
                         f"{a['cpu_us_per_request']:.1f} | {a['switches_per_request']:.2f} | {a['steal_pct']:.0f} |")
    lines += ["", common.plot("paired-absolute.svg"), "", common.plot("paired-latency.svg")]
    low = [(kind, n + 1, run) for kind, runs in p["runs"].items() for n, run in enumerate(runs)
           if run["ours"]["throughput"] / run["raw"]["throughput"] < 0.85]
    if low:
        lines += ["", "Rounds below 0.85× throughput, with the machine's steal time during each run:", ""]
        for kind, n, run in low:
            lines.append(f"- {kind} round {n}: {run['ours']['throughput'] / run['raw']['throughput']:.2f}× "
                         f"(steal {run['ours'].get('steal_pct', float('nan')):.0f}% in ours' run, "
                         f"{run['raw'].get('steal_pct', float('nan')):.0f}% in the loop's; "
                         f"CPU per request {run['ours']['cpu_us_per_request']:.0f} µs against "
                         f"{run['raw']['cpu_us_per_request']:.0f} µs"
                         + (f"; the loop's second run: {run['raw-again']['throughput'] / run['raw']['throughput']:.2f}×"
                            if "raw-again" in run else "") + ")")
    java = [(kind, by_variant) for kind, by_variant in p["summary"].items() if "ours_vs_java" in by_variant]
    if java:
        lines += ["", "Against Apache Pulsar's own Java client (`java`: bench/java/EchoLoop.java, the same loop "
                  "over pulsar-client-original from the broker's distribution, no batching, measured after "
                  "60,000 requests of JIT warm-up), median of the per-round ratios, with `raw-again` ÷ `raw` "
                  "as the noise floor:", "",
                  "| workload | ratio | throughput | CPU per request | p99 |", "|---|---|---|---|---|"]
        for kind, by_variant in java:
            rows = [("java ÷ loop", by_variant["java"]), ("ours ÷ loop", by_variant["ours"]),
                    ("ours ÷ java", by_variant["ours_vs_java"])]
            if "raw-again" in by_variant:
                rows.append(("noise floor (loop ÷ loop)", by_variant["raw-again"]))
            for name, r in rows:
                lines.append(f"| {kind} | {name} | **{r['throughput']['median']:.2f}** | "
                             f"**{r['cpu_per_request']['median']:.2f}** | {r['p99']['median']:.2f} |")
    unbatched = [(kind, by_variant) for kind, by_variant in p["summary"].items() if "ours_vs_unbatched" in by_variant]
    if unbatched:
        lines += ["", "What batching the responses changes: `ours` ÷ `unbatched` (`--response-batching off`), paired "
                  "within each round, beside `raw-again` ÷ `raw` (the noise floor); min / median / max:", "",
                  "| workload | ratio | throughput | CPU per request | p50 | p99 |", "|---|---|---|---|---|---|"]
        for kind, by_variant in unbatched:
            rows = [("ours ÷ unbatched", by_variant["ours_vs_unbatched"])]
            if "raw-again" in by_variant:
                rows.append(("noise floor (loop ÷ loop)", by_variant["raw-again"]))
            for name, r in rows:
                lines.append(f"| {kind} | {name} | {cell(r['throughput'])} | {cell(r['cpu_per_request'])} | "
                             f"{cell(r['p50'])} | {cell(r['p99'])} |")
    if p.get("before"):
        lines += ["", "`ours` ÷ `before`, paired within each round, beside `raw-again` ÷ `raw` (the noise floor):", "",
                  "| workload | throughput, ours ÷ before | throughput, raw-again ÷ raw | CPU per request, ours ÷ before | CPU per request, raw-again ÷ raw |",
                  "|---|---|---|---|---|"]
        for kind, runs in p["runs"].items():
            def ratio(a, b, key):
                return stats([run[a][key] / run[b][key] for run in runs])
            lines.append(f"| {kind} | {cell(ratio('ours', 'before', 'throughput'))} | "
                         f"{cell(ratio('raw-again', 'raw', 'throughput'))} | "
                         f"{cell(ratio('ours', 'before', 'cpu_us_per_request'))} | "
                         f"{cell(ratio('raw-again', 'raw', 'cpu_us_per_request'))} |")
    lines.append("")
    return lines


if __name__ == "__main__":
    main()
