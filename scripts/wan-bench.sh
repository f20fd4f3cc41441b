#!/usr/bin/env bash
# One memory-to-memory transfer across an emulated long fat path on loopback: `udt relay` with
# a 1 Gbit/s bottleneck, 50 ms each way (100 ms RTT) and a DropTail queue of one
# bandwidth-delay product (8333 packets), between a `udt perf` pair (ours) or a pair of UDT4
# 4.11 peers (interop/target/udt4-peer, built by interop/build.sh), or a mixed pair named
# SENDER-RECEIVER (ours-udt4: our sender, UDT4's receiver, whose ACKs carry its own estimates;
# udt4-ours: the other way). Default options on both.
#
# usage: scripts/wan-bench.sh ours|udt4|ours-udt4|udt4-ours [SECONDS] [RATE] [ONE_WAY_DELAY]
#        [QUEUE_PACKETS]
# Environment: LOSS (random loss both ways, e.g. 0.001), CLUMP (clumped release towards the
# receiver, e.g. 125us), CLUMP_MAX (packets per clump, default 32), UDT4_RCVBUF (bytes: a UDT4
# receiver's buffer, whose free space is its flow window; its default of 8192 packets is less
# than this path's BDP and caps any sender near 0.8 Gbit/s) and PER_SECOND=1 (also print,
# second by second, what the relay forwarded to the receiver, what its queue dropped and how
# late it released packets each way: a start-up overshoot, a periodic overflow or a relay that
# stalls shows there, and a mean hides it), KEEP=DIR (keep
# every log of the run there: the sender's interval lines, the receiver's and the relay's).
# Prints one line: receiver throughput (Mb/s over the connection), bytes, verification, the
# sender's retransmissions, the relay's drops (queue and kernel) and mean lateness, and the
# sender's CPU time.
set -euo pipefail
cd "$(dirname "$0")/.."
impl=${1:?ours, udt4, ours-udt4 or udt4-ours}; secs=${2:-30}; rate=${3:-1gbit}; delay=${4:-50ms}; queue=${5:-8333}
sender=${impl%-*}; receiver=${impl#*-}
for side in "$sender" "$receiver"; do
  case $side in ours|udt4) ;; *) echo "wan-bench: unknown implementation '$side' in '$impl'" >&2; exit 64 ;; esac
done
udt=${UDT_BIN:-target/release/udt}
peer=interop/target/udt4-peer
[ -x "$udt" ] || cargo build --release -q -p udt-cli
[ "$sender$receiver" = oursours ] || [ -x "$peer" ] || bash interop/build.sh >/dev/null
tmp=$(mktemp -d); trap 'if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$tmp"/* "$KEEP"/; fi; rm -rf "$tmp"' EXIT
sp=$((20000 + RANDOM % 5000)); rp=$((sp + 1))
if [ "$receiver" = ours ]; then
  "$udt" perf server --port $sp --bind 127.0.0.1 --once --json >"$tmp/srv" 2>"$tmp/srv.err" &
else
  "$peer" server --port $sp --once ${UDT4_RCVBUF:+--rcvbuf "$UDT4_RCVBUF"} >"$tmp/srv" 2>"$tmp/srv.err" &
fi
srv=$!
"$udt" relay --listen 127.0.0.1:$rp --to 127.0.0.1:$sp --rate "$rate" --queue "$queue" \
  --delay "$delay" --loss "fwd=${LOSS:-0},rev=${LOSS:-0}" \
  --clump "fwd=${CLUMP:-0}" --clump-max "fwd=${CLUMP_MAX:-32}" \
  --interval "${PER_SECOND:-0}" --json >"$tmp/relay" 2>"$tmp/relay.err" &
relay=$!
sleep 0.5
# The sender's CPU time (user + system, seconds) from its rusage.
cpu() { python3 -c 'import os,subprocess,sys; p=subprocess.Popen(sys.argv[2:], stdout=open(sys.argv[1],"w"), stderr=open(sys.argv[1] + ".err", "w")); _,_,ru=os.wait4(p.pid,0); print(f"{ru.ru_utime+ru.ru_stime:.2f}")' "$@"; }
if [ "$sender" = ours ]; then
  cpu "$tmp/cli" "$udt" perf client 127.0.0.1:$rp --time "$secs" --json >"$tmp/cpu"
else
  cpu "$tmp/cli" "$peer" client 127.0.0.1:$rp --time "$secs" >"$tmp/cpu"
fi
# A failed step says which and why (a matrix run once ended here with no output at all).
if ! wait $srv; then
  # Keep every log: an error's message comes before its backtrace (RUST_BACKTRACE), which
  # the last lines alone showed once, and the cause then could not be found.
  kept=$(mktemp -d /tmp/wan-bench-failed.XXXX); cp "$tmp"/* "$kept"/ 2>/dev/null || true
  echo "wan-bench: the $impl receiver failed (logs kept in $kept):" \
    "$(grep -m2 -iE 'error|panicked' "$tmp/srv.err" | tr '\n' ' ')" \
    "$(tail -3 "$tmp/srv.err" | tr '\n' ' ')" \
    "sender: $(tail -2 "$tmp/cli.err" | tr '\n' ' ')" "relay: $(tail -2 "$tmp/relay.err" | tr '\n' ' ')" >&2
  kill -TERM $relay 2>/dev/null || true
  exit 1
fi
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
cpu = float(open(f"{tmp}/cpu").read())
print(f"{impl}: {s.get('mbps', 0):.1f} Mb/s, {s.get('bytes', 0)} bytes in {s.get('seconds', 0):.1f} s, "
      f"verified {s.get('verified')}, retransmitted {c.get('retransmitted')}, "
      f"relay: queue drops {r.get('dropped_queue')}, kernel drops {r.get('kernel_dropped')}, "
      f"late {r.get('late_mean_us', 0):.0f} us, sender CPU {cpu:.2f} s "
      f"({cpu / max(s.get('bytes', 0) / 1e9, 1e-9):.2f} s/GB)")
fwd, drops, before = [], [], 0
# The relay's lateness (how long after its due time it released a packet) is a mean since
# the start; each second's own mean comes from two consecutive ones. A relay that runs late
# (a busy host) delays packets as a queue would, with nothing queued at the bottleneck.
late, sums = {"fwd": [], "rev": []}, {"fwd": (0, 0.0), "rev": (0, 0.0)}
for line in open(f"{tmp}/relay").read().splitlines():
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("final") or "fwd" not in d:
        continue
    fwd.append(d["fwd"].get("mbps", 0))
    drops.append(d["fwd"].get("dropped_queue", 0) - before)
    before = d["fwd"].get("dropped_queue", 0)
    for way in late:
        n, total = d[way].get("forwarded", 0), d[way].get("late_mean_us", 0) * d[way].get("forwarded", 0)
        n0, total0 = sums[way]
        late[way].append((total - total0) / (n - n0) / 1000 if n > n0 else 0.0)
        sums[way] = (n, total)
if fwd:
    print("  forwarded Mb/s, per second:", " ".join(f"{x:.0f}" for x in fwd))
    print("  queue drops, per second:   ", " ".join(str(x) for x in drops))
    for way, name in (("fwd", "to the receiver"), ("rev", "to the sender")):
        print(f"  relay late, ms, {name}:", " ".join(f"{x:.1f}" for x in late[way]))
PY
