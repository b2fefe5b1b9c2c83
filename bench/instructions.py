"""Instructions per request of the in-process path, this tree against a
revision before a change, under callgrind (which does not move with the
machine's load): the joke request (no bounds, the rules are not
consulted), the typed search (`#[args]` with a bounded `limit`, an enum and
a list) and the same search as an LLM writes it (coerced, then checked).

The revision is built in a git worktree with the same target directory as
this tree, so only the workspace's own crates are built twice. The joke
request's path is the noise floor: a change to the rules does not touch it,
so its ratio shows what code layout and the allocator move alone.

  python3 bench/instructions.py REVISION [LABEL]

Written to bench/instructions.json; bench/run.py renders it into
BENCHMARKS.md (so does this script).
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import run as common  # noqa: E402

MODES = [
    ("joke", [], "joke (`topic: String`, no bounds: the rules are not consulted)"),
    ("search", ["--search"], "search, typed (`#[args]` with a bounded `limit`, an enum, a list)"),
    ("search-loose", ["--search-loose"],
     "search as an LLM writes it (`\"5\"`, `\"Open\"`, one tag for a list: coerced, then checked)"),
]
ITERATIONS = 20000


def build(tree, target):
    subprocess.run(["cargo", "build", "--release", "--locked", "-p", "tool-service-bench", "--bin",
                    "per_request_profile"], cwd=tree, check=True,
                   env={**os.environ, "CARGO_TARGET_DIR": str(target)})
    return target / "release" / "per_request_profile"


def count(binary, extra):
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(binary),
                          *extra], capture_output=True, text=True, check=True)
    refs = [line for line in out.stderr.splitlines() if "I   refs:" in line]
    return int(refs[0].split(":")[1].replace(",", "")) / ITERATIONS


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    revision = sys.argv[1]
    label = sys.argv[2] if len(sys.argv) > 2 else revision
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", common.ROOT / "target"))
    commit = subprocess.run(["git", "rev-parse", "--short", revision], cwd=common.ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    before = {}
    with tempfile.TemporaryDirectory() as scratch:
        tree = pathlib.Path(scratch) / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), commit], cwd=common.ROOT,
                       check=True, capture_output=True)
        try:
            binary = build(tree, target)
            kept = pathlib.Path(scratch) / "per_request_profile-before"
            shutil.copy(binary, kept)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=common.ROOT)
        for name, extra, _ in MODES:
            before[name] = count(kept, extra)
    after_binary = build(common.ROOT, target)
    after = {name: count(after_binary, extra) for name, extra, _ in MODES}
    results = {"before": commit, "before_label": label, "iterations": ITERATIONS,
               "requests": [{"name": name, "what": what, "before": before[name], "after": after[name]}
                            for name, _, what in MODES]}
    (common.ROOT / "bench" / "instructions.json").write_text(json.dumps(results, indent=2) + "\n")
    if (common.ROOT / "bench" / "results.json").exists():
        (common.ROOT / "BENCHMARKS.md").write_text(
            common.render(json.loads((common.ROOT / "bench" / "results.json").read_text())))
    print(json.dumps(results, indent=2))


def render(r):
    lines = ["## Instructions per request, before and after a change", "",
             f"The in-process path under callgrind, {r['iterations']:,} requests each "
             "(`python3 bench/instructions.py REVISION`, release builds of the revision and of "
             f"this tree): before is `{r['before']}` ({r['before_label']}).", "",
             "| request | before | after | after ÷ before |", "|---|---|---|---|"]
    for row in r["requests"]:
        lines.append(f"| {row['what']} | {row['before']:,.0f} | {row['after']:,.0f} | "
                     f"{row['after'] / row['before']:.3f} |")
    floor = next(row for row in r["requests"] if row["name"] == "joke")
    lines += ["", f"The noise floor is the joke row: its path does not consult the rules, so "
              f"{floor['after'] / floor['before']:.3f} is what code layout and the allocator move alone.", ""]
    return lines


if __name__ == "__main__":
    main()
