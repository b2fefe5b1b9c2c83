"""Runs every benchmark side by side on one local Apache Pulsar broker and
writes BENCHMARKS.md and bench/results.json. Started by scripts/bench.sh,
which provides the broker, the Python peer and release builds.

Variants, all serving the same echo and joke logic:
  raw        hand-written `pulsar` crate loop (bench/src/bin/raw.rs)
  ours       #[tool_service] + `serve` (bench/src/bin/ours.rs)
  python     TrustGraph's DynamicToolService (trustgraph-base), at its
             default concurrency (1) and at its best setting
"""

import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Where scripts/bench.sh builds: cargo's target directory, CARGO_TARGET_DIR
# when set (relative to the workspace, as cargo takes it there).
BIN = ROOT / os.environ.get("CARGO_TARGET_DIR", "target") / "release"
URL = os.environ.get("PULSAR_URL", "pulsar://127.0.0.1:6650")
QUICK = os.environ.get("BENCH_QUICK") == "1"
REPEATS = 1 if QUICK else 3
PYTHON = sys.executable


def clock_ticks():
    return os.sysconf(os.sysconf_names["SC_CLK_TCK"])


def cpu_seconds(pid):
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / clock_ticks()


def memory_kib(pid, key):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def broker_connections(pid):
    out = subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True, text=True).stdout
    port = URL.rsplit(":", 1)[1].strip("/")
    return sum(1 for line in out.splitlines() if f"pid={pid}," in line and f":{port}" in line.split()[3])


class Service:
    """A service process, ready once its log says so."""

    def __init__(self, command, ready, env=None):
        self.lines = []
        self.started = time.perf_counter()
        self.ready_after = None
        self.event = threading.Event()
        self.marker = ready
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env={**os.environ, **(env or {})})
        threading.Thread(target=self._read, daemon=True).start()
        if not self.event.wait(120):
            self.stop()
            raise RuntimeError(f"{command[0]} did not become ready:\n" + "\n".join(self.lines[-30:]))
        time.sleep(0.3)

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip())
            if self.marker in line and not self.event.is_set():
                self.ready_after = time.perf_counter() - self.started
                self.event.set()

    @property
    def pid(self):
        return self.process.pid

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# `serve` polls a request in its loop while the service's first polls take
# under 50 µs, and spawns it otherwise; under callgrind every poll takes some
# fifty times longer, so the limit is raised to keep the path a request
# takes at full speed.
CALLGRIND_ENV = {"TOOL_SERVICE_INLINE_LIMIT": "10ms"}


def callgrind_refs(command, ready, env, kind, in_flight, requests):
    """Instructions a service process runs under callgrind, from its start
    to its exit, while it answers `requests` requests of `kind`."""
    service = Service(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command], ready,
                      env={**CALLGRIND_ENV, **(env or {})})
    try:
        load(kind, in_flight, requests, 0)
    finally:
        service.process.terminate()
        service.process.wait(300)
    time.sleep(0.2)
    found = [line for line in service.lines if "I   refs:" in line]
    if not found:
        raise SystemExit("callgrind printed no count:\n" + "\n".join(service.lines[-20:]))
    return int(found[-1].split(":")[1].replace(",", ""))


def topic(kind):
    return f"bench-{kind}"


def start(variant, kind, concurrency=None):
    t = topic(kind)
    if variant == "raw":
        return Service([str(BIN / "raw"), "--url", URL, "--topic", t, "--kind", kind], "loop ready")
    if variant == "ours":
        return Service([str(BIN / "ours"), "serve", "-p", URL, "--only", f"{t}-service", "--log-level", "info", "--no-metrics"]
                       + (["--concurrency", str(concurrency)] if concurrency else []), "ready")
    return Service([PYTHON, str(ROOT / "bench" / "py_service.py"), "--kind", kind, "--id", f"{t}-service",
                    "-t", t, "-p", URL, "--concurrency", str(concurrency or 1), "--no-metrics",
                    "--no-loki-enabled", "--log-level", "INFO"], f"Tool service {t}-service started")


def load(kind, in_flight, requests, warmup):
    out = subprocess.run(
        [str(BIN / "loadgen"), "--url", URL, "--topic", topic(kind), "--kind", kind, "--in-flight", str(in_flight),
         "--requests", str(requests), "--warmup", str(warmup)],
        check=True, capture_output=True, text=True, timeout=900,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def requests_for(variant, in_flight):
    slow = variant.startswith("python")
    if QUICK:
        return (300, 50) if slow else (2000, 200)
    if in_flight == 1:
        return (800, 100) if slow else (3000, 300)
    return (2000, 200) if slow else (40000, 4000)


def measure_once(variant, kind, in_flight, concurrency=None):
    service = start(variant, kind, concurrency)
    try:
        requests, warmup = requests_for(variant, in_flight)
        before = cpu_seconds(service.pid)
        result = load(kind, in_flight, requests, warmup)
        used = cpu_seconds(service.pid) - before
        result["cpu_s_per_10k"] = used / (requests + warmup) * 10000
        result["peak_rss_mib"] = memory_kib(service.pid, "VmHWM") / 1024
        return result
    finally:
        service.stop()


def warm_up_broker():
    """The broker is a JVM: run load through it first, so that the variant
    measured first is not the one that pays for its warm-up."""
    service = start("ours", "echo")
    try:
        load("echo", 64, 5000 if QUICK else 30000, 1000)
    finally:
        service.stop()


def summarize(runs):
    def stat(key):
        values = [run[key] for run in runs]
        return {"median": statistics.median(values), "min": min(values), "max": max(values)}

    return {
        "throughput": stat("throughput"),
        "p50_us": stat("p50_us"),
        "p99_us": stat("p99_us"),
        "cpu_s_per_10k": stat("cpu_s_per_10k"),
        "peak_rss_mib": stat("peak_rss_mib"),
        "errors": sum(run["errors"] for run in runs),
        "runs": len(runs),
    }


def best_python_concurrency(kind):
    best, best_throughput = 1, 0.0
    scan = {}
    for concurrency in (1, 4, 16, 64):
        service = start("python", kind, concurrency)
        try:
            result = load(kind, 64, 300 if QUICK else 1000, 100)
        finally:
            service.stop()
        scan[concurrency] = result["throughput"]
        if result["throughput"] > best_throughput:
            best, best_throughput = concurrency, result["throughput"]
    return best, scan


def growth():
    rows = []
    for count in (1, 10, 100):
        only = []
        for n in range(count):
            only += ["--only", f"growth-{n:03d}-service"]
        samples = []
        for _ in range(REPEATS):
            service = Service([str(BIN / "growth"), "serve", "-p", URL, "--log-level", "info", "--no-metrics"] + only, " ready")
            try:
                samples.append({
                    "startup_ms": service.ready_after * 1000,
                    "rss_mib": memory_kib(service.pid, "VmRSS") / 1024,
                    "connections": broker_connections(service.pid),
                })
            finally:
                service.stop()
        rows.append({
            "services": count,
            "startup_ms": statistics.median(s["startup_ms"] for s in samples),
            "rss_mib": statistics.median(s["rss_mib"] for s in samples),
            "connections": max(s["connections"] for s in samples),
        })
    return rows


def compile_time():
    base = ROOT / "target" / "bench-compile"
    target = base / "target"
    crates = {}
    for style in ("annotated", "hand_written"):
        crate = base / style
        (crate / "src").mkdir(parents=True, exist_ok=True)
        (crate / "Cargo.toml").write_text(
            f'[package]\nname = "growth-{style.replace("_", "-")}"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n'
            "[workspace]\n\n[dependencies]\n"
            f'tool-service = {{ path = "{ROOT / "tool-service"}" }}\n'
            'serde = { version = "1", features = ["derive"] }\nserde_json = "1"\n'
            'schemars = { version = "1", default-features = false, features = ["derive", "std"] }\n'
        )
        lockfile = ROOT / "Cargo.lock"
        (crate / "Cargo.lock").write_text(lockfile.read_text())
        (crate / "src" / "lib.rs").write_text(annotated_source() if style == "annotated" else hand_written_source())
        crates[style] = crate
    env = dict(os.environ, CARGO_TARGET_DIR=str(target))
    results = {}
    for style, crate in crates.items():
        subprocess.run(["cargo", "build", "--quiet"], cwd=crate, env=env, check=True)
        times = []
        for _ in range(REPEATS):
            (crate / "src" / "lib.rs").touch()
            started = time.perf_counter()
            subprocess.run(["cargo", "build", "--quiet"], cwd=crate, env=env, check=True)
            times.append(time.perf_counter() - started)
        results[style] = statistics.median(times)
    return results


def annotated_source():
    parts = ["use tool_service::tool_service;\n"]
    for n in range(100):
        parts.append(f'''
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Args{n} {{
    /// The text.
    pub text: String,
}}

/// Echo number {n}.
#[tool_service(topic = "compile-{n}")]
pub async fn service_{n}(#[args] args: Args{n}) -> String {{
    args.text
}}
''')
    return "".join(parts)


def hand_written_source():
    parts = ["use serde::Deserialize;\nuse serde_json::{json, Value};\n"]
    arms = []
    descriptors = []
    for n in range(100):
        parts.append(f'''
#[derive(Deserialize)]
pub struct Args{n} {{
    pub text: String,
}}

pub async fn service_{n}(config: &str, arguments: &str) -> Result<String, String> {{
    let _config: Value = serde_json::from_str(config).map_err(|e| e.to_string())?;
    let args: Args{n} = serde_json::from_str(arguments).map_err(|e| format!("invalid arguments: {{e}}"))?;
    Ok(args.text)
}}
''')
        arms.append(f'        "compile-{n}" => service_{n}(config, arguments).await,\n')
        descriptors.append(
            f'    tree["tool-service"]["compile-{n}-service"] = json!({{"id": "compile-{n}-service", '
            f'"request-queue": "non-persistent://tg/request/compile-{n}", '
            f'"response-queue": "non-persistent://tg/response/compile-{n}", "config-params": []}});\n'
            f'    tree["tool"]["service-{n}"] = json!({{"type": "tool-service", "name": "service-{n}", '
            f'"description": "Echo number {n}.", "service": "compile-{n}-service", '
            f'"arguments": [{{"name": "text", "type": "string", "description": "The text."}}]}});\n'
        )
    parts.append("\npub async fn dispatch(topic: &str, config: &str, arguments: &str) -> Result<String, String> {\n"
                 "    match topic {\n" + "".join(arms) + '        other => Err(format!("unknown topic {other}")),\n    }\n}\n')
    parts.append('\npub fn descriptors() -> Value {\n    let mut tree = json!({"tool-service": {}, "tool": {}});\n'
                 + "".join(descriptors) + "    tree\n}\n")
    return "".join(parts)


def per_request():
    """criterion's per-request benchmark: the hand-written path and ours,
    each in its own criterion run, in rounds of two back-to-back runs in
    alternating order (hand, ours; ours, hand; ...), so that the machine's
    slow spells, which last seconds, fall on both alike. Each round's ratio
    pairs its two runs; the figures per path are those of its median run."""
    names = ("hand_written_serde_json", "tool_service_dispatch")
    runs = {name: [] for name in names}
    for round_ in range(1 if QUICK else 5):
        for name in names if round_ % 2 == 0 else names[::-1]:
            subprocess.run(
                ["cargo", "bench", "--quiet", "-p", "tool-service-bench", "--bench", "per_request", "--",
                 "--noplot", "--warm-up-time", "1", "--measurement-time", "3" if QUICK else "5",
                 f"^per_request/{name}$"],
                cwd=ROOT, check=True, capture_output=True, text=True,
            )
            path = ROOT / "target" / "criterion" / "per_request" / name / "new" / "estimates.json"
            data = json.loads(path.read_text())
            runs[name].append({
                "ns": data["median"]["point_estimate"],
                "low": data["median"]["confidence_interval"]["lower_bound"],
                "high": data["median"]["confidence_interval"]["upper_bound"],
            })
    ratios = [ours["ns"] / hand["ns"] for hand, ours in zip(*(runs[name] for name in names))]
    estimates = {name: sorted(runs[name], key=lambda run: run["ns"])[len(runs[name]) // 2] for name in names}
    return estimates, ratios


def instructions():
    """Instructions per request (callgrind), ours and hand-written: a ratio
    that does not move with the machine's load."""
    counts = {}
    for mode, extra in (("tool_service_dispatch", []), ("hand_written_serde_json", ["--hand"])):
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(BIN / "per_request_profile"), *extra],
            capture_output=True, text=True,
        )
        refs = [line for line in out.stderr.splitlines() if "I   refs:" in line]
        if not refs:
            return None
        counts[mode] = int(refs[0].split(":")[1].replace(",", "")) / 20000
    return counts


def versions():
    def first_line(command):
        try:
            return subprocess.run(command, capture_output=True, text=True).stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return "unknown"

    import importlib.metadata as metadata
    return {
        "rustc": first_line(["rustc", "--version"]),
        "python": platform.python_version(),
        "trustgraph-base": metadata.version("trustgraph-base"),
        "pulsar-client (Python)": metadata.version("pulsar-client"),
        "pulsar broker": os.environ.get("PULSAR_VERSION", "4.2.4"),
        "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"),
        "cores": os.cpu_count(),
        "memory": f'{os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30:.0f} GiB',
        "kernel": platform.release(),
    }


def provenance():
    """When the figures were written and of which commit, with "-dirty"
    when the tree had changes besides the bench's own outputs: the caption
    of every plot (bench/plots.py) quotes them."""
    def git(*args):
        try:
            return subprocess.run(["git", "--no-optional-locks", *args], cwd=ROOT, capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    commit = git("rev-parse", "--short=7", "HEAD")
    if commit and git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)BENCHMARKS.md",
                      ":(exclude)bench/*.json", ":(exclude)bench/plots"):
        commit += "-dirty"
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit or "unknown"}


def per_request_paired():
    """The per-request path timed against the hand-written one in alternating
    batches in one process (per_request_profile --paired), three times: the
    machine's slow spells fall on both paths alike."""
    runs = []
    for _ in range(1 if QUICK else 3):
        out = subprocess.run([str(BIN / "per_request_profile"), "--paired", "21" if QUICK else "101"],
                             check=True, capture_output=True, text=True)
        runs.append(json.loads(out.stdout))
    return runs


def in_process(results):
    """The in-process figures: criterion, callgrind and the paired batches."""
    print("== per-request path (criterion)", file=sys.stderr, flush=True)
    results["per_request"], results["per_request_ratios"] = per_request()
    results["per_request_instructions"] = instructions()
    print("== per-request path (paired batches)", file=sys.stderr, flush=True)
    results["per_request_paired"] = per_request_paired()


def main():
    if sys.argv[1:] == ["inprocess"]:
        # Only the in-process figures, into the existing results (the broker
        # must not run: its JVM distorts them).
        path = ROOT / "bench" / "results.json"
        results = json.loads(path.read_text())
        in_process(results)
        path.write_text(json.dumps(results, indent=2) + "\n")
        # The plots show the broker figures, which this leaves as they were:
        # their date and commit stay too.
        write_plots()
        (ROOT / "BENCHMARKS.md").write_text(render(results))
        return
    results = {"versions": versions(), "quick": QUICK, "repeats": REPEATS, "services": {}}
    in_process(results)
    print("== warming up the broker", file=sys.stderr, flush=True)
    warm_up_broker()
    for kind in ("echo", "joke"):
        print(f"== {kind}: best Python concurrency", file=sys.stderr, flush=True)
        best, scan = best_python_concurrency(kind)
        results.setdefault("python_scan", {})[kind] = {"best": best, "throughput_at_64_in_flight": scan}
        for in_flight in (1, 64):
            variants = [("raw", None), ("ours", None), ("python", 1)]
            if best != 1:
                variants.append(("python", best))
            runs = {}
            # Repeats interleave the variants, so slow drifts of the machine
            # or the broker spread over all of them alike.
            for repeat in range(REPEATS):
                for variant, concurrency in variants:
                    label = variant if variant != "python" else f"python-c{concurrency}"
                    print(f"== {kind}/{in_flight}/{label} run {repeat + 1}", file=sys.stderr, flush=True)
                    runs.setdefault(label, []).append(measure_once(variant, kind, in_flight, concurrency))
            for label, samples in runs.items():
                results["services"][f"{kind}/{in_flight}/{label}"] = summarize(samples)
    print("== growth: 1, 10, 100 services", file=sys.stderr, flush=True)
    results["growth"] = growth()
    print("== compile time: 100 annotated vs 100 hand-written", file=sys.stderr, flush=True)
    results["compile_s"] = compile_time()
    results.update(provenance())
    (ROOT / "bench" / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    write_plots()
    (ROOT / "BENCHMARKS.md").write_text(render(results))
    print(render(results))


def write_plots():
    """Redraws bench/plots/*.svg from the JSON just written (bench/plots.py)."""
    import plots
    plots.write()


def plot(name):
    """BENCHMARKS.md's image of a plot of bench/plots.py."""
    import plots
    return plots.image(name)


def fmt(value, digits=0):
    return f"{value:,.{digits}f}"


def spread(stat, digits=0):
    return f"{fmt(stat['median'], digits)} ({fmt(stat['min'], digits)}–{fmt(stat['max'], digits)})"


def render(r):
    s = r["services"]
    lines = ["# Benchmarks", "",
             "Generated by `scripts/bench.sh` (do not edit by hand). Every variant serves the same",
             "echo and joke logic on the same local Apache Pulsar standalone broker, driven by the",
             "same Rust load generator (the project's `ToolClient`), one after another in one run.",
             f"Figures are medians of {r['repeats']} runs (min–max in brackets), the variants interleaved; each run",
             "warms up first, and the broker (a JVM) is warmed up before anything is measured.",
             "", "## Machine and versions", ""]
    lines += [f"- {k}: {v}" for k, v in r["versions"].items()]
    lines += ["", "## Ratios against the goals", ""]
    rows = []
    for kind in ("echo", "joke"):
        best = r["python_scan"][kind]["best"]
        ours64, raw64 = s[f"{kind}/64/ours"], s[f"{kind}/64/raw"]
        py_best = s[f"{kind}/64/python-c{best}"]
        rows.append((kind, ours64["throughput"]["median"] / raw64["throughput"]["median"],
                     ours64["p99_us"]["median"] / raw64["p99_us"]["median"],
                     ours64["throughput"]["median"] / py_best["throughput"]["median"], best))
    lines += ["| tool | ours ÷ hand-written throughput @64 (goal ≥ 0.9) | ours ÷ hand-written p99 @64 (goal ≤ 1.2) | ours ÷ TrustGraph Python at its best (goal ≥ 10) |",
              "|---|---|---|---|"]
    for kind, t, p, py, best in rows:
        lines.append(f"| {kind} | {t:.2f} | {p:.2f} | {py:.1f} (Python at concurrency {best}) |")
    pr = r["per_request"]
    ratios = sorted(r.get("per_request_ratios") or
                    [pr["tool_service_dispatch"]["ns"] / pr["hand_written_serde_json"]["ns"]])
    lines += ["", f"Per-request path in process (criterion): ours ÷ hand-written serde_json = "
                  f"**{statistics.median(ratios):.2f}** in time (reported, no goal: the broker path decides; see the paired rounds below); {len(ratios)} rounds of the two "
                  f"benchmarks run back to back in alternating order, ratio per round "
                  f"{' / '.join(f'{ratio:.2f}' for ratio in ratios)}."]
    ins = r.get("per_request_instructions")
    if ins:
        lines += [f"In instructions (callgrind, whole loop incl. runtime): "
                  f"**{ins['tool_service_dispatch'] / ins['hand_written_serde_json']:.2f}** "
                  f"({fmt(ins['tool_service_dispatch'])} vs {fmt(ins['hand_written_serde_json'])} per request)."]
    paired = r.get("per_request_paired")
    if paired:
        medians = ", ".join(f"{run['ratio_median']:.2f}" for run in paired)
        lines += [f"Paired in one process (`per_request_profile --paired {paired[0]['rounds']}`: batches of "
                  f"{paired[0]['batch']} requests of each path, alternating; each ratio pairs two neighbouring "
                  f"batches): median ratio per run **{medians}** "
                  f"({fmt(statistics.median(run['ours_ns'] for run in paired))} vs "
                  f"{fmt(statistics.median(run['hand_ns'] for run in paired))} ns per request)."]
    lines += [""]
    for kind in ("echo", "joke"):
        lines += [f"## {kind} over Pulsar", "",
                  "| variant | in flight | requests/s | p50 µs | p99 µs | CPU s / 10k requests | peak RSS MiB |",
                  "|---|---|---|---|---|---|---|"]
        for in_flight in (1, 64):
            for key in sorted(k for k in s if k.startswith(f"{kind}/{in_flight}/")):
                m = s[key]
                label = key.split("/", 2)[2]
                lines.append(f"| {label} | {in_flight} | {spread(m['throughput'])} | {spread(m['p50_us'])} | "
                             f"{spread(m['p99_us'])} | {spread(m['cpu_s_per_10k'], 2)} | {spread(m['peak_rss_mib'], 1)} |")
        scan = r["python_scan"][kind]["throughput_at_64_in_flight"]
        lines += ["", "TrustGraph Python throughput at 64 in flight by its `--concurrency`: "
                  + ", ".join(f"{c}: {fmt(v)} req/s" for c, v in scan.items()), ""]
    lines += ["The echo and joke tables plotted (bench/plots.py, from bench/results.json), on logarithmic axes:", "",
              plot("pulsar-load.svg"), "", plot("pulsar-latency.svg"), ""]
    lines += ["## In-process per-request path (criterion)", "",
              "Envelope decode → typed config/argument decode → handler → response encode, no broker.", "",
              "| path | median ns/request (95% CI), its median run |", "|---|---|"]
    for name, e in pr.items():
        lines.append(f"| {name} | {fmt(e['ns'])} ({fmt(e['low'])}–{fmt(e['high'])}) |")
    lines += ["", "## Growth with the number of services", "",
              "One binary with 100 registered services, serving 1, 10 or 100 of them (`serve --only`).", "",
              "| services | start → all subscribed, ms | RSS MiB | broker connections |", "|---|---|---|---|"]
    for g in r["growth"]:
        lines.append(f"| {g['services']} | {fmt(g['startup_ms'])} | {fmt(g['rss_mib'], 1)} | {g['connections']} |")
    c = r["compile_s"]
    lines += ["", "## Compile time", "",
              "Rebuild of a crate with 100 services after touching it (dependencies already built), debug profile.", "",
              "| crate | seconds |", "|---|---|",
              f"| 100 `#[tool_service]` functions | {c['annotated']:.2f} |",
              f"| 100 hand-written equivalents (serde structs, dispatcher, descriptor JSON) | {c['hand_written']:.2f} |",
              "", f"Ratio annotated ÷ hand-written: **{c['annotated'] / c['hand_written']:.2f}**.", ""]
    paired = ROOT / "bench" / "paired.json"
    if paired.exists():
        import paired as paired_rounds
        lines += paired_rounds.render(json.loads(paired.read_text()))
    mcp = ROOT / "bench" / "mcp.json"
    if mcp.exists():
        import mcp_rounds
        lines += mcp_rounds.render(json.loads(mcp.read_text()))
    mcp_auth = ROOT / "bench" / "mcp_auth.json"
    if mcp_auth.exists():
        import mcp_rounds
        lines += mcp_rounds.render_auth(json.loads(mcp_auth.read_text()))
    traced = ROOT / "bench" / "traced.json"
    if traced.exists():
        import traced as traced_rounds
        lines += [""] + traced_rounds.render(json.loads(traced.read_text()))
    instructions = ROOT / "bench" / "instructions.json"
    if instructions.exists():
        import instructions as instruction_counts
        lines += [""] + instruction_counts.render(json.loads(instructions.read_text()))
    served = ROOT / "bench" / "served_instructions.json"
    if served.exists():
        import served_instructions
        lines += [""] + served_instructions.render(json.loads(served.read_text()))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
