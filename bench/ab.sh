#!/usr/bin/env bash
# A/B comparison of two builds of `udt`: alternating single-flow `udt perf` runs on loopback,
# memory to memory, one line per run with throughput and the sender's and receiver's CPU time
# per GB (each process's own `cpu_seconds`), the packets retransmitted and the kernel's UDP
# receive-buffer drops during the run (`RcvbufErrors` of /proc/net/snmp, all sockets of the
# machine), then the mean and the median of each build.
#
# usage: [MSS=9000] bench/ab.sh UDT_A UDT_B [ROUNDS=4] [BYTES=3000000000]
# e.g.   git worktree add /tmp/base HEAD~1 && (cd /tmp/base && CARGO_TARGET_DIR=/tmp/tb \
#          cargo build --release -p udt-cli) && bench/ab.sh /tmp/tb/release/udt target/release/udt 6
set -euo pipefail
a=${1:?binary A}; b=${2:?binary B}; rounds=${3:-4}; bytes=${4:-3000000000}
mss=${MSS:-1500}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
rcvbuf_errors() { awk '/^Udp:/ {n++; if (n == 2) print $6}' /proc/net/snmp; }
port=$((30000 + RANDOM % 5000))
for r in $(seq 1 "$rounds"); do
  for tag in A B; do
    bin=$a; [ "$tag" = B ] && bin=$b
    port=$((port + 1))
    drops0=$(rcvbuf_errors)
    "$bin" perf server --port $port --bind 127.0.0.1 --mss "$mss" --json --interval 0 --once >"$tmp/srv" 2>/dev/null &
    srv=$!
    sleep 0.3
    "$bin" perf client 127.0.0.1:$port --bytes "$bytes" --mss "$mss" --json --interval 0 >"$tmp/cli" 2>/dev/null
    wait $srv
    drops=$(( $(rcvbuf_errors) - drops0 ))
    python3 - "$tag" "$tmp" "$drops" <<'PY'
import json, sys
tag, tmp, drops = sys.argv[1], sys.argv[2], sys.argv[3]
c, s = json.load(open(f"{tmp}/cli")), json.load(open(f"{tmp}/srv"))
gb = c["bytes"] / 1e9
print(f"{tag} {c['mbps']:7.0f} Mb/s  sender {c['cpu_seconds'] / gb:.3f} s/GB  "
      f"receiver {s['cpu_seconds'] / gb:.3f} s/GB  retransmitted {c['retransmitted']}  "
      f"verified {s['verified']}  kernel-drops {drops}")
PY
  done
done | tee "$tmp/all"
awk '{n[$1]++; t[$1]+=$2; s[$1]+=$5; r[$1]+=$8}
     END {for (k in n) printf "%s mean: %.0f Mb/s, sender %.3f s/GB, receiver %.3f s/GB (%d runs)\n",
          k, t[k]/n[k], s[k]/n[k], r[k]/n[k], n[k]}' "$tmp/all" | sort
for tag in A B; do
  awk -v t=$tag '$1 == t {print $2}' "$tmp/all" | sort -n |
    awk -v t=$tag '{v[NR]=$1} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2;
                   printf "%s Mb/s: min %.0f, median %.0f, max %.0f\n", t, v[1], m, v[NR]}'
done
