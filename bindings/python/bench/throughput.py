"""Loopback throughput of the Python package against the `udt` tool, side by side.

    python bench/throughput.py [--bytes 2G] [--runs 3] [--udt target/release/udt]

Each run moves `--bytes` over 127.0.0.1 between two processes, twice: with `udt perf client`
and `udt perf server` (Rust, the receiver checking every byte), then with this package
(`sendall` of 8 MiB blocks in one process, `recv_into` an 8 MiB buffer in the other - the
read size `udt perf server` uses - without checking the bytes, since a byte-by-byte check
in Python would measure Python's loop, not the binding). Both sides time the receiver from
accept to the end of the stream, as `udt perf server` does. The runs alternate, so a busy
machine slows both alike. Prints one JSON line per run and a Markdown table.
"""

import argparse
import json
import os
import socket as pysocket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BLOCK = 8 << 20

RECEIVER = r"""
import json, sys, time, udt
srv = udt.create_server(("127.0.0.1", 0))
print(srv.getsockname()[1], flush=True)
conn, _ = srv.accept()
t0 = time.monotonic()
buf = bytearray(%d)
n = 0
while True:
    k = conn.recv_into(buf)
    if k == 0:
        break
    n += k
secs = time.monotonic() - t0
print(json.dumps({"bytes": n, "seconds": secs, "mbps": n * 8 / secs / 1e6}), flush=True)
""" % BLOCK

SENDER = r"""
import sys, udt
port, total = int(sys.argv[1]), int(sys.argv[2])
block = bytes(range(251)) * (%d // 251 + 1)
block = memoryview(block)[:%d]
with udt.create_connection(("127.0.0.1", port)) as s:
    left = total
    while left:
        n = min(left, len(block))
        s.sendall(block[:n])
        left -= n
""" % (BLOCK, BLOCK)


def size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def free_port():
    with pysocket.socket(pysocket.AF_INET, pysocket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10):
    want = ":%04X" % port
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open("/proc/net/udp") as f:
            if any(line.split()[1].endswith(want) for line in f.readlines()[1:]):
                return
        time.sleep(0.02)
    raise RuntimeError("server did not bind")


def run_udt_perf(udt_bin, total):
    port = free_port()
    srv = subprocess.Popen([udt_bin, "perf", "server", "--bind", "127.0.0.1", "--port", str(port),
                            "--once", "--json", "--interval", "0", "--mode", "stream"],
                           stdout=subprocess.PIPE, text=True)
    wait_port(port)
    subprocess.run([udt_bin, "perf", "client", "127.0.0.1:%d" % port, "--bytes", str(total),
                    "--json", "--interval", "0"], check=True, stdout=subprocess.DEVNULL)
    out, _ = srv.communicate(timeout=600)
    r = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    assert r["verified"] and r["bytes"] == total, r
    return r["mbps"]


def run_python(total):
    recv = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
    port = int(recv.stdout.readline())
    subprocess.run([sys.executable, "-c", SENDER, str(port), str(total)], check=True)
    r = json.loads(recv.stdout.readline())
    recv.wait(60)
    assert r["bytes"] == total, r
    return r["mbps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bytes", default="2G", type=size)
    ap.add_argument("--runs", default=3, type=int)
    ap.add_argument("--udt", default=os.path.join(REPO, "target", "release", "udt"))
    a = ap.parse_args()
    rows = []
    for i in range(a.runs):
        rust = run_udt_perf(a.udt, a.bytes)
        py = run_python(a.bytes)
        rows.append((rust, py))
        print(json.dumps({"run": i + 1, "bytes": a.bytes, "udt_perf_mbps": round(rust, 1),
                          "python_mbps": round(py, 1), "ratio": round(py / rust, 3)}), flush=True)
    print()
    print("| run | `udt perf` Mb/s | Python `sendall`/`recv_into` Mb/s | Python / udt perf |")
    print("|---|---|---|---|")
    for i, (rust, py) in enumerate(rows, 1):
        print("| %d | %.0f | %.0f | %.1f %% |" % (i, rust, py, 100 * py / rust))
    med = lambda xs: sorted(xs)[len(xs) // 2]
    r, p = med([x for x, _ in rows]), med([y for _, y in rows])
    print("| median | %.0f | %.0f | %.1f %% |" % (r, p, 100 * p / r))


if __name__ == "__main__":
    main()
