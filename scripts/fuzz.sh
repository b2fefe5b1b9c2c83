#!/usr/bin/env bash
# Fuzz the request envelope and the typed decode path with cargo-fuzz
# (libFuzzer). Targets live in fuzz/fuzz_targets/, committed seed inputs in
# fuzz/seeds/<target>/ and a JSON dictionary in fuzz/json.dict; the growing
# corpus (fuzz/corpus/), crash inputs (fuzz/artifacts/) and logs
# (fuzz/target/fuzz-logs/) are not committed.
#
# Usage:
#   scripts/fuzz.sh                        # short run: 60 s per target
#   FUZZ_SECONDS=600 scripts/fuzz.sh       # long run: 10 min per target
#   scripts/fuzz.sh dispatch               # only the named target(s)
#
# Environment:
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_MAX_LEN   longest input tried, bytes (default 65536)
#   FUZZ_RSS_MB    memory limit, MB (default 2048)
#   FUZZ_TIMEOUT   seconds one input may take before it counts as a hang (default 10)
#   FUZZ_NICE      niceness of the fuzzer (default 10; the machine is shared)
#   FUZZ_ARGS      extra libFuzzer flags, e.g. "-jobs=2 -workers=2"
#
# The summary, with the seconds per target, the machine and the commit, is
# also written to fuzz/results.txt (the figures CONTRIBUTING.md quotes).
#
# Needs the nightly toolchain (`rustup toolchain install nightly`); installs
# cargo-fuzz when it is missing. Prints one summary line per target and exits
# non-zero when any target found a crash, a hang or an out-of-memory input;
# the input is in fuzz/artifacts/<target>/ and can be replayed with
#   cargo +nightly fuzz run <target> fuzz/artifacts/<target>/<file>
# (run from fuzz/).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fuzz_dir="$root/fuzz"
seconds="${FUZZ_SECONDS:-60}"
max_len="${FUZZ_MAX_LEN:-65536}"
rss_mb="${FUZZ_RSS_MB:-2048}"
timeout="${FUZZ_TIMEOUT:-10}"
niceness="${FUZZ_NICE:-10}"
read -r -a extra_args <<<"${FUZZ_ARGS:-}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz.sh: the nightly toolchain is needed: rustup toolchain install nightly" >&2
    exit 2
fi

cd "$fuzz_dir"
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

mkdir -p target/fuzz-logs
status=0
summaries=()
for target in "${targets[@]}"; do
    corpus="corpus/$target"
    artifacts="artifacts/$target"
    log="target/fuzz-logs/$target.log"
    mkdir -p "$corpus" "$artifacts"
    if [ -d "seeds/$target" ]; then
        cp -n "seeds/$target"/* "$corpus"/ 2>/dev/null || true
    fi
    before="$(find "$artifacts" -type f | wc -l)"
    # Build first, so the time limit is all fuzzing.
    nice -n "$niceness" cargo +nightly fuzz build "$target"
    echo "fuzz.sh: fuzzing $target for ${seconds}s (log: fuzz/$log)" >&2
    rc=0
    nice -n "$niceness" cargo +nightly fuzz run "$target" "$corpus" -- \
        -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb="$rss_mb" \
        -timeout="$timeout" -print_final_stats=1 -dict=json.dict \
        "${extra_args[@]}" >"$log" 2>&1 || rc=$?
    after="$(find "$artifacts" -type f | wc -l)"

    stat() { grep -a "^stat::$1:" "$log" | tail -n 1 | awk '{print $2}'; }
    execs="$(stat number_of_executed_units)"
    rate="$(stat average_exec_per_sec)"
    rss="$(stat peak_rss_mb)"
    last="$(grep -aE '^#[0-9]+' "$log" | tail -n 1 || true)"
    cov="$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")"
    ft="$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")"
    files="$(find "$corpus" -type f | wc -l)"
    if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
        crash="yes (exit $rc; see fuzz/$log and fuzz/$artifacts/)"
        status=1
    else
        crash="no"
    fi
    summary="$target: executions=${execs:-?} exec/s=${rate:-?} corpus=${files} files cov=${cov:-?} ft=${ft:-?} peak_rss=${rss:-?}MB crash=$crash"
    summaries+=("$summary")
    echo "$summary"
done

echo "---- fuzz summary (${seconds}s per target) ----"
printf '%s\n' "${summaries[@]}"
{
    echo "scripts/fuzz.sh, ${seconds}s per target, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(rustup run nightly rustc --version)"
    printf '%s\n' "${summaries[@]}"
} > results.txt
echo "fuzz.sh: summary written to fuzz/results.txt" >&2
exit "$status"
