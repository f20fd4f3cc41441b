#!/usr/bin/env bash
# A UDT listener under a flood of spoofed handshakes, on loopback (crates/udt/examples/flood.rs).
#
# usage: scripts/flood-bench.sh [SECS] [RATE] [SOCKETS] [CLIENT_THREADS]
#   SECS     length of each phase, seconds (default 10)
#   RATE     spoofed handshakes per second, 0 = as fast as the kernel takes them (default 100000)
#   SOCKETS  flooding sockets (ports); each sends from 65 536 addresses 127.1.x.y (default 2)
#   CLIENT_THREADS  threads making legitimate connections back to back (default 2)
# Environment: PIN=1 runs the listener on CPU 1 and the flooder and clients on CPU 0 (taskset),
# as if they were different hosts; by default the scheduler places them.
#
# Phase 1: legitimate clients alone. Phase 2: the same clients during the flood. Prints one
# line per phase (connections per second, success ratio, latencies) and the listener's figures:
# resident memory before and at most during the flood, handshakes it processed per second
# (twice the second-phase requests it refused: the flood alternates first and second phase;
# the rest were dropped by the kernel before the listener read them), and what it held per
# peer at the end of the flood (connections, index entries, queued replies).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}; rate=${2:-100000}; sockets=${3:-2}; threads=${4:-2}
bin=target/release/examples/flood
[ -x "$bin" ] && [ -z "${REBUILD:-}" ] || cargo build --release -q -p udt --example flood
tmp=$(mktemp -d); trap 'kill $lpid 2>/dev/null || true; rm -rf "$tmp"' EXIT
port=$((22000 + RANDOM % 4000))
lcpu=(); ocpu=()
if [ -n "${PIN:-}" ]; then lcpu=(taskset -c 1); ocpu=(taskset -c 0); fi
"${lcpu[@]}" "$bin" listen --port "$port" --secs $((2 * secs + 8)) >"$tmp/listen" &
lpid=$!
sleep 1
"${ocpu[@]}" "$bin" connect --to 127.0.0.1:$port --secs "$secs" --threads "$threads" >"$tmp/calm" 2>"$tmp/calm.err"
sleep 1
before=$(tail -1 "$tmp/listen")
"${ocpu[@]}" "$bin" attack --to 127.0.0.1:$port --rate "$rate" --sockets "$sockets" --secs $((secs + 2)) \
  >"$tmp/attack" 2>"$tmp/attack.err" &
apid=$!
sleep 1
"${ocpu[@]}" "$bin" connect --to 127.0.0.1:$port --secs "$secs" --threads "$threads" >"$tmp/flood" 2>"$tmp/flood.err"
during=$(tail -1 "$tmp/listen")
wait $apid
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
echo "calm:  $(cat "$tmp/calm")"
echo "flood: $(cat "$tmp/flood")"
echo "attack: $(cat "$tmp/attack")"
r0=$(field "$before" rss_kb); r1=$(field "$during" max_rss_kb)
h0=$(field "$before" handshakes_refused); h1=$(field "$during" handshakes_refused)
t0=$(field "$before" t); t1=$(field "$during" t)
echo "listener: rss_kb before flood $r0, max during $r1 (growth $((r1 - r0)) kB);" \
  "handshakes processed $(python3 -c "print(round(2*($h1-$h0)/($t1-$t0)))")/s;" \
  "held at the end: connections $(field "$during" connections)," \
  "accepted_from $(field "$during" accepted_from), queued_replies $(field "$during" queued_replies)," \
  "replies_dropped $(field "$during" replies_dropped)"
