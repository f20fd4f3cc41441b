#!/usr/bin/env bash
# Encrypted vs clear throughput on loopback, side by side: `udt perf client` sends BYTES
# (default 1 GB) of the verified pattern to `udt perf server` (which checks every byte), in N
# rounds (default 6) that alternate clear, AES-256-GCM and ChaCha20-Poly1305. Prints each run,
# then min / median / max per variant and the ratio of medians to clear.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N:-6}"; BYTES="${BYTES:-1000000000}"
out=target/bench-encryption; mkdir -p "$out"
cargo build --release --quiet -p udt-cli
udt=target/release/udt
: > "$out/runs.txt"
for r in $(seq 1 "$N"); do
    for who in clear aes chacha; do
        port=$((31000 + RANDOM % 8000))
        "$udt" perf server --port "$port" --bind 127.0.0.1 --once --json --interval 0 \
            --secret bench-secret > "$out/$who.json" &
        spid=$!
        sleep 0.3
        case $who in
            clear) extra=() ;;
            aes) extra=(--secret bench-secret --cipher aes256-gcm) ;;
            chacha) extra=(--secret bench-secret --cipher chacha20-poly1305) ;;
        esac
        "$udt" perf client "127.0.0.1:$port" --bytes "$BYTES" --interval 0 --json "${extra[@]}" \
            > "$out/$who.client.json"
        wait "$spid"
        python3 - "$out/$who.json" "$out/$who.client.json" "$r" "$who" >> "$out/runs.txt" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
c = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
assert d["verified"] and d["bytes"] > 0, d
# The client names the cipher only when the connection really was encrypted.
assert ("cipher" in c) == (sys.argv[4] != "clear"), c
print(sys.argv[3], sys.argv[4], round(d["mbps"], 1), c.get("cipher", "-"))
PY
        tail -n 1 "$out/runs.txt"
    done
done
python3 - "$out/runs.txt" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r, who, mbps, _ = line.split()
    runs.setdefault(who, []).append(float(mbps))
base = statistics.median(runs["clear"])
for who, v in runs.items():
    m = statistics.median(v)
    print(f"{who:6} n={len(v)}  min {min(v):7.1f}  median {m:7.1f}  max {max(v):7.1f} Mb/s"
          f"  median/clear {m / base:.3f}")
PY
