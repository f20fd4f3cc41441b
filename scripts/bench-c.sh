#!/usr/bin/env bash
# Throughput through the C API and the C++ drop-in beside the Rust API and UDT4 4.11: each
# sender moves BYTES (default 2 GB) of the `udt perf` pattern over loopback to
# `udt perf server` (our receiver, which verifies every byte and reports Mb/s), alternating
# senders for N rounds (default 3):
#   rust    udt perf client (the Rust API)
#   c       crates/udt-ffi/bench/c_send.c (the C API)
#   cpp     interop/peer.cpp built against the C++ drop-in (C++ layer over the C API)
#   udt4    interop/peer.cpp built against Debian's libudt (UDT4 4.11)
# Prints one line per run and each sender's mean and spread, and the ratios to rust.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N:-3}"; BYTES="${BYTES:-2000000000}"
out=target/bench-c; mkdir -p "$out"
scripts/install-c.sh --prefix "$out/prefix" >/dev/null
export PKG_CONFIG_PATH="$out/prefix/lib/pkgconfig"
cargo build --release --quiet -p udt-cli
cc -O2 -Wall -Wextra -Werror crates/udt-ffi/bench/c_send.c -o "$out/c_send" $(pkg-config --cflags --libs udt-c)
g++ -std=c++17 -O2 -o "$out/peer-dropin" interop/peer.cpp $(pkg-config --cflags --libs udt4)
real="$(bash interop/build.sh | tail -n 1)"
udt=target/release/udt
: > "$out/runs.txt"
for r in $(seq 1 "$N"); do
    for who in rust c cpp udt4; do
        port=$((31000 + RANDOM % 8000))
        "$udt" perf server --port "$port" --bind 127.0.0.1 --once --json --interval 0 > "$out/$who.json" &
        spid=$!
        sleep 0.3
        case $who in
            rust) "$udt" perf client "127.0.0.1:$port" --bytes "$BYTES" --interval 0 > /dev/null 2>&1 ;;
            c) "$out/c_send" 127.0.0.1 "$port" "$BYTES" ;;
            cpp) "$out/peer-dropin" client "127.0.0.1:$port" --bytes "$BYTES" --timeout 300 > /dev/null ;;
            udt4) "$real" client "127.0.0.1:$port" --bytes "$BYTES" --timeout 300 > /dev/null ;;
        esac
        wait "$spid"
        python3 - "$out/$who.json" "$r" "$who" >> "$out/runs.txt" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert d["verified"] and d["bytes"] > 0, d
print(sys.argv[2], sys.argv[3], round(d["mbps"], 1))
PY
        tail -n 1 "$out/runs.txt"
    done
done
python3 - "$out/runs.txt" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r, who, mbps = line.split()
    runs.setdefault(who, []).append(float(mbps))
base = statistics.mean(runs["rust"])
for who, v in runs.items():
    m = statistics.mean(v)
    print(f"{who:5} mean {m:8.1f} Mb/s  min {min(v):8.1f}  max {max(v):8.1f}  ratio to rust {m / base:.3f}")
PY
