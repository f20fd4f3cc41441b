#!/usr/bin/env python3
"""Real sockets through `udt relay`: ours against UDT4 4.11 on a matrix of paths, alternated.

    python3 bench/wan_matrix.py [--rounds R] [--secs S] [--rate 1gbit] [--delay 50ms]
                                [--queue 8333] [--loss 0,0.001,0.01] [--clump 0,125us]
                                [--impls ours,udt4,ours-udt4,udt4-ours]

Each cell (loss x clumping) runs every implementation once per round, in an order that rotates
from round to round, through `scripts/wan-bench.sh` (a 1 Gbit/s bottleneck with 100 ms RTT and
a one-BDP DropTail queue by default; clumping releases packets towards the receiver in bursts
of up to 32). Prints one Markdown row per cell and implementation: receiver throughput min /
median / max (Mb/s), its share of the bottleneck, retransmitted packets as a share of packets
sent, sender CPU s/GB, and the ratio ours / UDT4 of the medians. A mixed pair is named
SENDER-RECEIVER: `ours-udt4` is our sender with UDT4's receiver (whose ACKs carry UDT4's own
rate and capacity estimates), `udt4-ours` the other way; its ratio compares it with `udt4`. The receiver's figure is the
one that counts: bytes verified at the receiver over the connection's lifetime.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

LINE = re.compile(
    r"(?P<impl>[\w-]+): (?P<mbps>[\d.]+) Mb/s, (?P<bytes>\d+) bytes in [\d.]+ s, verified (?P<ok>\w+), "
    r"retransmitted (?P<retx>\w+).*sender CPU [\d.]+ s \((?P<cpu>[\d.]+) s/GB\)"
)


def rate_mbps(rate):
    m = re.fullmatch(r"([\d.]+)(k|m|g)bit", rate)
    if not m:
        sys.exit(f"cannot read rate {rate!r} (e.g. 1gbit, 300mbit)")
    return float(m.group(1)) * {"k": 1e-3, "m": 1.0, "g": 1e3}[m.group(2)]


def run(impl, secs, rate, delay, queue, loss, clump):
    env = dict(os.environ, LOSS=str(loss), CLUMP=str(clump))
    out = subprocess.run(
        ["bash", os.path.join(REPO, "scripts/wan-bench.sh"), impl, str(secs), rate, delay, str(queue)],
        env=env, capture_output=True, text=True, timeout=secs * 4 + 120,
    )
    m = LINE.search(out.stdout)
    if not m:
        print(f"# {impl} loss={loss} clump={clump}: no result\n{out.stdout}{out.stderr}", file=sys.stderr)
        return None
    d = m.groupdict()
    pkts = int(d["bytes"]) / 1456
    retx = int(d["retx"]) if d["retx"].isdigit() else 0
    return {
        "mbps": float(d["mbps"]),
        "ok": d["ok"] == "True",
        "retx_share": retx / max(pkts, 1),
        "cpu": float(d["cpu"]),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=int, default=30)
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--delay", default="50ms")
    ap.add_argument("--queue", type=int, default=8333)
    ap.add_argument("--loss", default="0,0.001,0.01")
    ap.add_argument("--clump", default="0,125us")
    ap.add_argument("--impls", default="ours,udt4")
    a = ap.parse_args()
    impls = a.impls.split(",")
    cells = [(float(l), c) for c in a.clump.split(",") for l in a.loss.split(",")]
    results = {(cell, i): [] for cell in cells for i in impls}
    for r in range(a.rounds):
        for cell in cells:
            order = impls[r % len(impls):] + impls[: r % len(impls)]
            for impl in order:
                res = run(impl, a.secs, a.rate, a.delay, a.queue, *cell)
                if res:
                    results[(cell, impl)].append(res)
                    print(f"# round {r + 1} loss={cell[0]} clump={cell[1]} {impl}: {res}", file=sys.stderr, flush=True)
    cap = rate_mbps(a.rate)
    print(f"| loss | clump | impl | Mb/s min / median / max | of bottleneck (min) | retransmitted (max) | sender CPU s/GB (median) | ours / UDT4 (median) |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for cell in cells:
        med = {}
        for impl in impls:
            rs = results[(cell, impl)]
            if not rs:
                print(f"| {cell[0]} | {cell[1]} | {impl} | no result | | | | |")
                continue
            v = [x["mbps"] for x in rs]
            med[impl] = statistics.median(v)
            bad = "" if all(x["ok"] for x in rs) else " (UNVERIFIED)"
            ratio = ""
            if impl != "udt4" and "udt4" in impls and results[(cell, "udt4")]:
                ratio = f"{med[impl] / statistics.median(x['mbps'] for x in results[(cell, 'udt4')]):.2f}"
            print(
                f"| {cell[0]} | {cell[1]} | {impl}{bad} | {min(v):.0f} / {med[impl]:.0f} / {max(v):.0f} | "
                f"{min(v) / cap:.3f} | {max(x['retx_share'] for x in rs) * 100:.2f} % | "
                f"{statistics.median(x['cpu'] for x in rs):.2f} | {ratio} |"
            )


if __name__ == "__main__":
    main()
