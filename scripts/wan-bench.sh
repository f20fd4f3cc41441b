#!/usr/bin/env bash
# One memory-to-memory transfer across an emulated long fat path on loopback: `udt relay` with
# a 1 Gbit/s bottleneck, 50 ms each way (100 ms RTT) and a DropTail queue of one
# bandwidth-delay product (8333 packets), between a `udt perf` pair (ours) or a pair of UDT4
# 4.11 peers (interop/target/udt4-peer, built by interop/build.sh). Default options on both.
#
# usage: scripts/wan-bench.sh ours|udt4 [SECONDS] [RATE] [ONE_WAY_DELAY] [QUEUE_PACKETS]
# Prints one line: receiver throughput (Mb/s over the connection), bytes, verification, the
# sender's retransmissions and the relay's drops (queue and kernel) and mean lateness.
set -euo pipefail
cd "$(dirname "$0")/.."
impl=${1:?ours or udt4}; secs=${2:-30}; rate=${3:-1gbit}; delay=${4:-50ms}; queue=${5:-8333}
udt=${UDT_BIN:-target/release/udt}
peer=interop/target/udt4-peer
[ -x "$udt" ] || cargo build --release -q -p udt-cli
[ "$impl" = ours ] || [ -x "$peer" ] || bash interop/build.sh >/dev/null
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
sp=$((20000 + RANDOM % 5000)); rp=$((sp + 1))
if [ "$impl" = ours ]; then
  "$udt" perf server --port $sp --bind 127.0.0.1 --once --json >"$tmp/srv" 2>/dev/null &
else
  "$peer" server --port $sp --once >"$tmp/srv" 2>/dev/null &
fi
srv=$!
"$udt" relay --listen 127.0.0.1:$rp --to 127.0.0.1:$sp --rate "$rate" --queue "$queue" \
  --delay "$delay" --interval 0 --json >"$tmp/relay" 2>/dev/null &
relay=$!
sleep 0.5
if [ "$impl" = ours ]; then
  "$udt" perf client 127.0.0.1:$rp --time "$secs" --json >"$tmp/cli" 2>/dev/null
else
  "$peer" client 127.0.0.1:$rp --time "$secs" >"$tmp/cli" 2>/dev/null
fi
wait $srv
kill -TERM $relay; wait $relay || true
python3 - "$impl" "$tmp" <<'PY'
import json, sys
impl, tmp = sys.argv[1], sys.argv[2]
def last(name):
    for line in reversed(open(f"{tmp}/{name}").read().splitlines()):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if "bytes" in d or "fwd" in d:
            return d
    return {}
s, c, r = last("srv"), last("cli"), last("relay").get("fwd", {})
print(f"{impl}: {s.get('mbps', 0):.1f} Mb/s, {s.get('bytes', 0)} bytes in {s.get('seconds', 0):.1f} s, "
      f"verified {s.get('verified')}, retransmitted {c.get('retransmitted')}, "
      f"relay: queue drops {r.get('dropped_queue')}, kernel drops {r.get('kernel_dropped')}, "
      f"late {r.get('late_mean_us', 0):.0f} us")
PY
