#!/usr/bin/env bash
# Soak run: file transfers back to back for DURATION seconds through `udt relay` (loss,
# reordering, duplication, delay), into one long-lived `udt recv`. Every file is compared
# byte for byte with its source; the receiver's open fds, threads and resident memory are
# sampled after every transfer and printed over time.
#
# usage: scripts/soak.sh [DURATION_S]        (default 60; 3600 for the full soak)
# Environment: LOSS (default 0.01), DELAY (one way, default 2ms), RATE (default 200mbit),
# MAX_MB (largest file, default 8), RSS_SLACK_KB (allowed RSS growth, default 8192),
# UDT_BIN (default target/release/udt), SOAK_LOG (also write the samples there).
#
# Fails (exit 1) on: any failed transfer, any differing byte, fds or threads of the receiver
# at the end above their level after warm-up, or its RSS at the end more than RSS_SLACK_KB
# above the largest value seen in the first quarter of the run.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-60}
udt=${UDT_BIN:-target/release/udt}
[ -x "$udt" ] || cargo build --release -q -p udt-cli
loss=${LOSS:-0.01}; delay=${DELAY:-2ms}; rate=${RATE:-200mbit}; max_mb=${MAX_MB:-8}
slack=${RSS_SLACK_KB:-8192}
tmp=$(mktemp -d); mkdir -p "$tmp/src" "$tmp/dst"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
port=$((21000 + RANDOM % 4000)); rport=$((port + 1))
"$udt" recv --port "$port" --bind 127.0.0.1 --dir "$tmp/dst" --json >"$tmp/recv.out" 2>"$tmp/recv.err" &
recv=$!; pids+=("$recv")
"$udt" relay --listen 127.0.0.1:$rport --to 127.0.0.1:$port --rate "$rate" --delay "$delay" \
  --loss "$loss" --reorder 0.005 --duplicate 0.005 --interval 0 >/dev/null 2>&1 &
pids+=("$!")
sleep 0.5
kill -0 "$recv"

fds() { ls "/proc/$recv/fd" | wc -l; }
threads() { ls "/proc/$recv/task" | wc -l; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$recv/status"; }
# The receiver's thread per sender ends shortly after the sender: sample once it is idle
# again (threads back at the listening level, or after 2 s).
settle() { local i; for i in $(seq 20); do [ "$(threads)" -le "$idle_threads" ] && return; sleep 0.1; done; }
idle_threads=$(threads)

log=${SOAK_LOG:-/dev/null}
printf '%8s %6s %10s %4s %8s %8s\n' t_s n bytes fds threads rss_kb | tee "$log"
start=$(date +%s); n=0; bytes=0; failures=0
declare -a T F TH R
while :; do
  now=$(( $(date +%s) - start )); [ "$now" -lt "$duration" ] || break
  n=$((n + 1))
  # Sizes: empty, one byte, odd sizes around the payload size, and up to MAX_MB.
  case $((n % 5)) in
    0) size=0 ;; 1) size=1 ;; 2) size=$((1456 * (RANDOM % 50) + RANDOM % 1456)) ;;
    *) size=$(( (RANDOM * 32768 + RANDOM) % (max_mb * 1048576) + 1 )) ;;
  esac
  f="$tmp/src/f$n.bin"
  head -c "$size" /dev/urandom >"$f"
  if ! "$udt" send "$f" 127.0.0.1:$rport --json >"$tmp/send.out" 2>"$tmp/send.err"; then
    echo "transfer $n ($size bytes) failed: $(cat "$tmp/send.err")" >&2
    failures=$((failures + 1))
  elif ! cmp -s "$f" "$tmp/dst/f$n.bin"; then
    echo "transfer $n ($size bytes): received file differs" >&2
    failures=$((failures + 1))
  fi
  bytes=$((bytes + size))
  rm -f "$f" "$tmp/dst/f$n.bin"
  settle
  T[n]=$now; F[n]=$(fds); TH[n]=$(threads); R[n]=$(rss)
  printf '%8d %6d %10d %4d %8d %8d\n' "$now" "$n" "$bytes" "${F[n]}" "${TH[n]}" "${R[n]}" | tee -a "$log"
  kill -0 "$recv" || { echo "udt recv died: $(cat "$tmp/recv.err")" >&2; exit 1; }
done
[ "$n" -ge 4 ] || { echo "only $n transfers in ${duration}s" >&2; exit 1; }
# Baselines after warm-up (transfer 2 on): fds and threads at their largest in the first
# quarter; RSS likewise. At the end: the smallest of the last three samples, so a sample
# taken while a thread was still exiting does not count as growth.
q=$(( n / 4 > 2 ? n / 4 : 2 ))
max() { local m=0 v; for v in "$@"; do [ "$v" -gt "$m" ] && m=$v; done; echo "$m"; }
min() { local m=$1 v; for v in "$@"; do [ "$v" -lt "$m" ] && m=$v; done; echo "$m"; }
bf=$(max "${F[@]:2:$((q - 1))}"); bt=$(max "${TH[@]:2:$((q - 1))}"); br=$(max "${R[@]:2:$((q - 1))}")
ef=$(min "${F[@]: -3}"); et=$(min "${TH[@]: -3}"); er=$(min "${R[@]: -3}")
echo "transfers $n, bytes $bytes, failures $failures; fds $bf -> $ef, threads $bt -> $et, rss_kb $br -> $er (max $(max "${R[@]}"))"
status=0
[ "$failures" -eq 0 ] || { echo "FAIL: $failures transfers failed or differed"; status=1; }
[ "$ef" -le "$bf" ] || { echo "FAIL: fds grew"; status=1; }
[ "$et" -le "$bt" ] || { echo "FAIL: threads grew"; status=1; }
[ "$er" -le $((br + slack)) ] || { echo "FAIL: RSS grew by more than $slack kB"; status=1; }
[ "$status" -ne 0 ] || echo "soak OK"
exit $status
