"""Instructions per request of a served request, over the broker: the
hand-written `pulsar` crate loop (`raw`) against `ours` (default `serve`),
for echo and joke, each service process under callgrind, which does not
move with the machine's load as CPU time does.

Each variant serves 1,000 and then, started anew, 5,000 requests at
IN_FLIGHT in flight; the difference of the two counts divided by 4,000 is
its instructions per request, start-up and shutdown excluded. Under
callgrind a service runs on one thread at a time, so the figure counts the
work, not how it spreads over threads; `ours` is told to poll requests in
its loop as it does at full speed (TOOL_SERVICE_INLINE_LIMIT).

  python3 bench/served_instructions.py [VARIANT …]   (default: raw ours raw-again)

Variants are bench/run.py's (`raw`, `ours`); `raw-again` is the loop
counted a second time, the noise floor. Needs the broker (PULSAR_URL)
and release builds of raw, ours and loadgen; `scripts/bench.sh
served-instructions` provides them. Written to
bench/served_instructions.json.
"""

import json
import pathlib
import shutil
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import run as common  # noqa: E402

IN_FLIGHT = 64
COUNTS = (1000, 5000)
KINDS = ("echo", "joke")


def refs(variant, kind, requests):
    """The service's instruction count for serving `requests` requests."""
    command, ready = command_of(variant, kind)
    return common.callgrind_refs(command, ready, None, kind, IN_FLIGHT, requests)


def command_of(variant, kind):
    """The command bench/run.py starts for a variant, and its ready line."""
    t = common.topic(kind)
    if variant in ("raw", "raw-again"):
        return [str(common.BIN / "raw"), "--url", common.URL, "--topic", t, "--kind", kind], "loop ready"
    if variant == "ours":
        return [str(common.BIN / "ours"), "serve", "-p", common.URL, "--only", f"{t}-service", "--log-level", "info",
                "--no-metrics"], "ready"
    raise SystemExit(f"served_instructions.py: unknown variant {variant}")


def main():
    if shutil.which("valgrind") is None:
        raise SystemExit("served_instructions.py: valgrind is missing; install it (apt-get install valgrind)")
    variants = sys.argv[1:] or ["raw", "ours", "raw-again"]
    common.warm_up_broker()
    result = {}
    for kind in KINDS:
        for variant in variants:
            low, high = (refs(variant, kind, n) for n in COUNTS)
            per_request = (high - low) / (COUNTS[1] - COUNTS[0])
            result.setdefault(kind, {})[variant] = per_request
            print(f"{kind:5} {variant:6} {per_request:10,.0f} instructions/request", flush=True)
    for kind in KINDS:
        if "raw" in result[kind]:
            for variant, value in result[kind].items():
                if variant != "raw":
                    print(f"{kind:5} {variant} ÷ raw: {value / result[kind]['raw']:.3f}", flush=True)
    out = common.ROOT / "bench" / "served_instructions.json"
    out.write_text(json.dumps({"in_flight": IN_FLIGHT, "counts": COUNTS, "instructions": result}, indent=2) + "\n")
    if (common.ROOT / "bench" / "results.json").exists():
        (common.ROOT / "BENCHMARKS.md").write_text(
            common.render(json.loads((common.ROOT / "bench" / "results.json").read_text())))


def render(r):
    """The section of BENCHMARKS.md."""
    lines = ["## Instructions per served request, over the broker", "",
             f"Each service process under callgrind while it answers {r['counts'][0]:,} and then "
             f"{r['counts'][1]:,} requests at {r['in_flight']} in flight; the difference over "
             f"{r['counts'][1] - r['counts'][0]:,} requests is its instructions per request "
             "(`scripts/bench.sh served-instructions`). Instructions do not move with the "
             "machine's load as CPU time does; `raw-again` counts the loop a second time, the "
             "noise floor.", "",
             "| workload | raw loop | ours | raw again | ours ÷ raw | raw again ÷ raw |",
             "|---|---|---|---|---|---|"]
    for kind, counts in r["instructions"].items():
        raw = counts.get("raw")
        ours = counts.get("ours")
        again = counts.get("raw-again")
        if raw is None or ours is None:
            continue
        floor = f"{again / raw:.3f}" if again else "not run"
        again_cell = f"{again:,.0f}" if again else "not run"
        lines.append(f"| {kind} | {raw:,.0f} | {ours:,.0f} | {again_cell} | {ours / raw:.3f} | {floor} |")
    lines.append("")
    return lines


if __name__ == "__main__":
    main()
