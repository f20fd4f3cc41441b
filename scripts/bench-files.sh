#!/usr/bin/env bash
# File transfer side by side, /dev/shm to /dev/shm over loopback: one file of SIZE bytes
# (default 4G; any `numfmt --from=iec` size: SIZE=1G, SIZE=500M) moved by
#   ours   `udt send` -> `udt recv` (BLAKE3-verified, the default; the receiver renames the
#          file into place only once the digests match)
#   udt4   UDT4 4.11's UDT::sendfile -> UDT::recvfile (bench/udt4_file.cpp, Debian libudt)
#   srt    SRT's srt-file-transmit, file mode (Debian srt-tools)
# in ROUNDS rounds (default 5) that alternate the three, rotating their order each round.
# A run's time is from starting the sender to both processes having exited (the file complete
# at the receiver); throughput is SIZE / that time, in MB/s (10^6 bytes). CPU is user + system
# seconds of sender + receiver (/usr/bin/time), per GB (10^9 bytes). Prints each run, then
# min / median / max per tool and the ratios of the medians ours/udt4 and ours/srt.
# Each tool's first output is compared byte for byte with the source (not timed).
#
#   scripts/bench-files.sh                 # 4G, 5 rounds
#   SIZE=1G ROUNDS=7 scripts/bench-files.sh
#   RELAY="1gbit 50ms 8333" LOSS=0.001 CLUMP=125us SIZE=500M TOOLS="ours srt" scripts/bench-files.sh
#
# RELAY="RATE ONE_WAY_DELAY QUEUE_PACKETS" puts `udt relay` between sender and receiver, as in
# scripts/wan-bench.sh: a bottleneck of RATE with a DropTail queue, LOSS random loss in both
# directions (default 0) and CLUMP clumped release towards the receiver (default 0, off; bursts
# of at most CLUMP_MAX=32 packets). The relay forwards any UDP, so all three tools cross the
# same path. TOOLS chooses which tools run (default "ours udt4 srt").
#
# Needs about 2 x SIZE free in $SHM (default /dev/shm): the source plus one output at a time.
# Installs srt-tools, libudt-dev, g++ and time with apt-get when missing (root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE="${SIZE:-4G}"; ROUNDS="${ROUNDS:-5}"; SHM="${SHM:-/dev/shm}"
RELAY="${RELAY:-}"; read -r -a tools <<< "${TOOLS:-ours udt4 srt}"
bytes=$(numfmt --from=iec "$SIZE")
out=target/bench-files; mkdir -p "$out"

# --- what the benchmark needs ----------------------------------------------------------------
missing=()
command -v srt-file-transmit >/dev/null 2>&1 || missing+=(srt-tools)
[ -f /usr/include/udt/udt.h ] || missing+=(libudt-dev)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench-files: installing ${missing[*]}" >&2
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq "${missing[@]}" >&2
fi
cargo build --release --quiet -p udt-cli
udt="${CARGO_TARGET_DIR:-target}/release/udt"
udt4=$(bench/build.sh)/udt4-file

# --- room in /dev/shm ------------------------------------------------------------------------
avail=$(df --output=avail -B1 "$SHM" | tail -n 1)
need=$((2 * bytes + 64 * 1024 * 1024))
if [ "$avail" -lt "$need" ]; then
    echo "bench-files: $SHM has $(numfmt --to=iec "$avail") free, needs $(numfmt --to=iec "$need")" \
         "(2 x SIZE); try a smaller SIZE" >&2
    exit 1
fi
work=$(mktemp -d "$SHM/udt-bench-files.XXXXXX")
pids=()
cleanup() {
    # A receiver left running (interrupted run): its /usr/bin/time, whose child `timeout`
    # passes the signal on to the receiver itself.
    for p in "${pids[@]}"; do pkill -TERM -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
src="$work/src.bin"
echo "bench-files: writing $SIZE of random bytes to $src" >&2
head -c "$bytes" /dev/urandom > "$src"

# Waits until something listens on UDP port $1 (all three receivers bind before accepting).
wait_listening() {
    for _ in $(seq 1 200); do
        [ -n "$(ss -Hlun "sport = :$1" 2>/dev/null)" ] && return 0
        sleep 0.05
    done
    echo "bench-files: nothing listens on UDP port $1" >&2
    return 1
}

now() { date +%s.%N; }
# Generous: a transfer slower than 5 MB/s counts as failed rather than holding the bench.
limit=$((bytes / 5000000 + 60))
port=$((32000 + RANDOM % 8000))
declare -A checked=()
runs="$out/runs.tsv"; : > "$runs"

# Starts `udt relay` in front of UDP port $1 on port $2 when RELAY is set; sets relay_pid.
relay_pid=""
start_relay() {
    [ -n "$RELAY" ] || return 0
    local rate delay queue
    read -r rate delay queue <<< "$RELAY"
    "$udt" relay --listen "127.0.0.1:$2" --to "127.0.0.1:$1" --rate "$rate" --delay "$delay" \
        --queue "$queue" --loss "fwd=${LOSS:-0},rev=${LOSS:-0}" --clump "fwd=${CLUMP:-0}" \
        --clump-max "fwd=${CLUMP_MAX:-32}" --interval 0 > /dev/null 2>&1 &
    relay_pid=$!
    pids+=("$relay_pid")
    wait_listening "$2"
}

# One transfer with tool $1 in round $2; appends "round tool seconds MB/s cpu_send cpu_recv".
run() {
    local tool=$1 round=$2 rx="$work/rx" got
    port=$((port + 1))
    # The sender's destination: the receiver itself, or the relay in front of it.
    local dport=$port
    [ -z "$RELAY" ] || dport=$((port + 20000))
    rm -rf "$rx"; mkdir -p "$rx"
    case $tool in
        ours)
            /usr/bin/time -f "%U %S" -o "$out/recv.cpu" timeout "$limit" \
                "$udt" recv --port "$port" --bind 127.0.0.1 --dir "$rx" --once --json \
                > "$out/recv.log" 2>&1 &
            got="$rx/src.bin" ;;
        udt4)
            /usr/bin/time -f "%U %S" -o "$out/recv.cpu" timeout "$limit" \
                "$udt4" recv "$port" "$rx/src.bin" > "$out/recv.log" 2>&1 &
            got="$rx/src.bin" ;;
        srt)
            # The listener takes the file name from the caller (its stream id) and writes it
            # into the directory.
            /usr/bin/time -f "%U %S" -o "$out/recv.cpu" timeout "$limit" \
                srt-file-transmit "srt://127.0.0.1:$port?mode=listener" "file://$rx/" \
                > "$out/recv.log" 2>&1 &
            got="$rx/src.bin" ;;
    esac
    local rpid=$!
    pids=("$rpid")
    wait_listening "$port"
    start_relay "$port" "$dport"
    local t0 t1 srs=0 rrs=0
    t0=$(now)
    case $tool in
        ours) /usr/bin/time -f "%U %S" -o "$out/send.cpu" timeout "$limit" \
                  "$udt" send "$src" "127.0.0.1:$dport" --json > "$out/send.log" 2>&1 || srs=$? ;;
        udt4) /usr/bin/time -f "%U %S" -o "$out/send.cpu" timeout "$limit" \
                  "$udt4" send "127.0.0.1:$dport" "$src" > "$out/send.log" 2>&1 || srs=$? ;;
        srt)  /usr/bin/time -f "%U %S" -o "$out/send.cpu" timeout "$limit" \
                  srt-file-transmit "file://$src" "srt://127.0.0.1:$dport" \
                  > "$out/send.log" 2>&1 || srs=$? ;;
    esac
    wait "$rpid" || rrs=$?
    t1=$(now)
    if [ -n "$relay_pid" ]; then kill "$relay_pid" 2>/dev/null || true; wait "$relay_pid" 2>/dev/null || true; fi
    relay_pid=""
    pids=()
    local size
    size=$(stat -c %s "$got" 2>/dev/null || echo 0)
    if [ "$srs" -ne 0 ] || [ "$rrs" -ne 0 ] || [ "$size" -ne "$bytes" ]; then
        echo "bench-files: $tool round $round FAILED (sender $srs, receiver $rrs, $size of $bytes bytes)" >&2
        tail -n 3 "$out/send.log" "$out/recv.log" >&2
        printf '%s\t%s\tFAIL\n' "$round" "$tool" >> "$runs"
        rm -rf "$rx"
        return 0
    fi
    if [ -z "${checked[$tool]:-}" ]; then
        cmp "$src" "$got" || { echo "bench-files: $tool delivered different bytes" >&2; exit 1; }
        checked[$tool]=1
    fi
    rm -rf "$rx"
    python3 - "$round" "$tool" "$t0" "$t1" "$bytes" "$out/send.cpu" "$out/recv.cpu" >> "$runs" <<'PY'
import sys
round_, tool, t0, t1, n = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
def cpu(path):
    # /usr/bin/time may put a "Command exited ..." line first.
    u, s = open(path).read().split("\n")[-2].split()
    return float(u) + float(s)
secs = t1 - t0
print(f"{round_}\t{tool}\t{secs:.3f}\t{n / secs / 1e6:.1f}\t{cpu(sys.argv[6]):.2f}\t{cpu(sys.argv[7]):.2f}")
PY
    tail -n 1 "$runs" | awk -F'\t' '{printf "round %s  %-5s %7.2f s  %7.1f MB/s  CPU send %s s, recv %s s\n", $1, $2, $3, $4, $5, $6}'
}

echo "bench-files: $SIZE ($bytes bytes), $ROUNDS rounds, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
     "net.core.rmem_max $(sysctl -n net.core.rmem_max), wmem_max $(sysctl -n net.core.wmem_max)"
[ -z "$RELAY" ] || echo "bench-files: through udt relay: $RELAY, loss ${LOSS:-0} both ways, clump ${CLUMP:-0}"
nt=${#tools[@]}
for r in $(seq 1 "$ROUNDS"); do
    # Rotate the order so no tool always runs first (or right after the same other one).
    k=$(( (r - 1) % nt ))
    for i in $(seq 0 $((nt - 1))); do
        run "${tools[$(( (i + k) % nt ))]}" "$r"
    done
done
echo "bench-files: load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$runs" "$bytes" "${tools[@]}" <<'PY'
import statistics, sys
runs, n, tools = {}, int(sys.argv[2]), sys.argv[3:]
fails = {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if f[2] == "FAIL":
        fails[f[1]] = fails.get(f[1], 0) + 1
        continue
    runs.setdefault(f[1], []).append((float(f[3]), (float(f[4]) + float(f[5])) / (n / 1e9)))
med = {}
print(f"{'tool':5} {'runs':>4} {'min':>8} {'median':>8} {'max':>8}  MB/s   CPU-s/GB (send+recv, median)")
for tool in tools:
    v = runs.get(tool, [])
    if not v:
        print(f"{tool:5} no successful run ({fails.get(tool, 0)} failed)")
        continue
    mbps = [x for x, _ in v]
    med[tool] = statistics.median(mbps)
    extra = f"  ({fails[tool]} failed)" if tool in fails else ""
    print(f"{tool:5} {len(v):4} {min(mbps):8.1f} {med[tool]:8.1f} {max(mbps):8.1f}        "
          f"{statistics.median([c for _, c in v]):.2f}{extra}")
for other in (t for t in tools if t != "ours"):
    if "ours" in med and other in med:
        print(f"ours / {other}: {med['ours'] / med[other]:.2f} (ratio of median throughputs)")
PY
