"""What `serve` writes to the broker per request, by size, with and without
response batching.

Serves echo with the benchmark binary (bench/src/bin/ours.rs), loads it at
64 requests in flight with the Rust load generator, and counts every write
of the service process with strace (`write`, `writev`, `sendto`,
`sendmsg`), grouped by the bytes written. Each Pulsar frame the crate sends
is one write (docs/upstream-reports.md, item 9); a `CommandAck` of this
subscription is 33 bytes, tokio's eventfd wake-ups are 8, and responses are
the rest. strace slows the process down, so the throughput printed is not a
benchmark; the counts per request are what this measures.

Started by `scripts/bench.sh frames`; prints a table, writes nothing.
"""

import collections
import pathlib
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import run as common  # noqa: E402

REQUESTS = 2000 if common.QUICK else 20000
ACK_BYTES = 33
WAKE_UP_BYTES = 8
WRITE = re.compile(r"\b(write|writev|sendto|sendmsg)\(.*= (\d+)$")


def count(flags):
    """Writes of the service process by size, over REQUESTS requests."""
    t = common.topic("echo")
    service = common.Service([str(common.BIN / "ours"), "serve", "-p", common.URL, "--only", f"{t}-service",
                              "--log-level", "info", "--no-metrics"] + flags, "ready")
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as trace:
        try:
            common.load("echo", 64, 2000, 0)
            strace = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=write,writev,sendto,sendmsg",
                                       "-o", trace.name, "-p", str(service.pid)])
            time.sleep(1.0)
            result = common.load("echo", 64, REQUESTS, 0)
            time.sleep(0.5)
            strace.terminate()
            strace.wait()
        finally:
            service.stop()
        sizes = collections.Counter()
        for line in trace:
            match = WRITE.search(line.strip())
            if match:
                sizes[int(match.group(2))] += 1
    return result, sizes


def main():
    common.warm_up_broker()
    rows = []
    for label, flags in (("batched (default)", []), ("--response-batching off", ["--response-batching", "off"])):
        result, sizes = count(flags)
        acks = sizes[ACK_BYTES]
        wake_ups = sizes[WAKE_UP_BYTES]
        frames = sum(sizes.values()) - wake_ups
        rows.append((label, frames / REQUESTS, acks / REQUESTS, (frames - acks) / REQUESTS, acks / frames,
                     result["throughput"]))
    print(f"echo, 64 in flight, {REQUESTS:,} requests; writes of the serve process per request (strace):")
    print("| responses | frames written | of which CommandAck | the rest | acks' share | req/s under strace |")
    print("|---|---|---|---|---|---|")
    for label, frames, acks, rest, share, throughput in rows:
        print(f"| {label} | {frames:.2f} | {acks:.2f} | {rest:.2f} | {share:.0%} | {throughput:,.0f} |")


if __name__ == "__main__":
    main()
