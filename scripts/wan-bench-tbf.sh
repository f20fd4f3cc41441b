#!/usr/bin/env bash
# The long-fat-path transfer of scripts/wan-bench.sh, with the bottleneck in the kernel: two
# network namespaces joined by a veth pair, a `tbf` qdisc on the sender side's veth as the
# 1 Gbit/s bottleneck with a DropTail queue of one bandwidth-delay product (in bytes), and
# `udt relay` adding only the 50 ms each way (this kernel has no netem). The receiver then
# sees packets spaced by the kernel's shaper, not by a user-space relay, which is closer to
# a netem path. Needs root. Default options on both implementations.
#
# usage: [TRACE=S] [BUCKET=PACKETS] scripts/wan-bench-tbf.sh ours|udt4 [SECONDS] [RATE]
#        [ONE_WAY_DELAY] [QUEUE_PACKETS]
# Prints one line: receiver throughput (Mb/s over the connection), bytes, verification, the
# sender's retransmissions, and the shaper's drops.
set -euo pipefail
cd "$(dirname "$0")/.."
impl=${1:?ours or udt4}; secs=${2:-30}; rate=${3:-1gbit}; delay=${4:-50ms}; queue=${5:-8333}
udt=$(realpath "${UDT_BIN:-target/release/udt}")
peer=$(realpath -m interop/target/udt4-peer)
[ -x "$udt" ] || cargo build --release -q -p udt-cli
[ "$impl" = ours ] || [ -x "$peer" ] || bash interop/build.sh >/dev/null
[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)" >&2; exit 1; }
command -v tc >/dev/null || { echo "needs tc (iproute2)" >&2; exit 1; }

tag=$$; a=udtwA$tag; b=udtwB$tag
tmp=$(mktemp -d)
cleanup() {
  ip netns pids "$a" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns pids "$b" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add "$a"; ip netns add "$b"
ip link add va$tag type veth peer name vb$tag
ip link set va$tag netns "$a"; ip link set vb$tag netns "$b"
ip -n "$a" addr add 10.77.0.1/24 dev va$tag; ip -n "$b" addr add 10.77.0.2/24 dev vb$tag
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set va$tag up; ip -n "$b" link set vb$tag up
# The bottleneck: tbf at RATE with a bucket of BUCKET packets (default 10; smaller ones cannot
# keep 1 Gbit/s on this VM: TCP got 358 Mbit/s through a one-packet bucket, 812 through two,
# 934 through four, 952 through ten), and QUEUE_PACKETS full-size packets of queue.
ip netns exec "$a" tc qdisc add dev va$tag root tbf rate "$rate" burst $((${BUCKET:-10} * 1514)) \
  limit $((queue * 1514))
# UDP buffers as large as the path needs (the namespaces share the host's caps).
sysctl -qw net.core.rmem_max=67108864 net.core.wmem_max=67108864

sp=9000; rp=9001
if [ "$impl" = ours ]; then
  ip netns exec "$b" "$udt" perf server --port $sp --bind 10.77.0.2 --once --json >"$tmp/srv" 2>/dev/null &
else
  ip netns exec "$b" "$peer" server --port $sp --once >"$tmp/srv" 2>/dev/null &
fi
srv=$!
# Delay only: the relay in the sender's namespace forwards across the shaped veth.
ip netns exec "$a" "$udt" relay --listen 127.0.0.1:$rp --to 10.77.0.2:$sp --delay "$delay" \
  --interval 0 --json >"$tmp/relay" 2>/dev/null &
relay=$!
sleep 0.5
if [ "$impl" = ours ] && [ -n "${TRACE:-}" ]; then
  # TRACE=S: interval reports every S seconds (rate, window, RTT, capacity estimate) on stderr.
  ip netns exec "$a" "$udt" perf client 127.0.0.1:$rp --time "$secs" --interval "$TRACE" >&2
  echo '{}' >"$tmp/cli"
elif [ "$impl" = ours ]; then
  ip netns exec "$a" "$udt" perf client 127.0.0.1:$rp --time "$secs" --json >"$tmp/cli" 2>/dev/null
else
  ip netns exec "$a" "$peer" client 127.0.0.1:$rp --time "$secs" >"$tmp/cli" 2>/dev/null
fi
wait $srv || true
kill -TERM $relay 2>/dev/null; wait $relay 2>/dev/null || true
drops=$(ip netns exec "$a" tc -s qdisc show dev va$tag | sed -n 's/.*dropped \([0-9]*\).*/\1/p' | head -1)
python3 - "$impl" "$tmp" "${drops:-?}" <<'PY'
import json, sys
impl, tmp, drops = sys.argv[1], sys.argv[2], sys.argv[3]
def last(name):
    for line in reversed(open(f"{tmp}/{name}").read().splitlines()):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if "bytes" in d:
            return d
    return {}
s, c = last("srv"), last("cli")
print(f"{impl} (tbf): {s.get('mbps', 0):.1f} Mb/s, {s.get('bytes', 0)} bytes in "
      f"{s.get('seconds', 0):.1f} s, verified {s.get('verified')}, "
      f"retransmitted {c.get('retransmitted')}, shaper drops {drops}")
PY
