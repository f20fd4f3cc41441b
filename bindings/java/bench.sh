#!/usr/bin/env bash
# Side-by-side stream throughput on loopback: `udt perf` (Rust at both ends) against the
# Java binding (bench/StreamBench.java at one or both ends), BYTES per run (default 2 GB),
# ROUNDS rounds (default 3). Prints the receiver's JSON report of each run. Needs the jar
# (mvn package) and target/release/udt (cargo build --release -p udt-cli).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bytes="${BYTES:-2000000000}"
rounds="${ROUNDS:-3}"
udt="$root/target/release/udt"
jar="$(ls "$here"/target/udt-java-*.jar | head -n 1)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
javac -cp "$jar" -d "$work" "$here/bench/StreamBench.java"
jbench=(java -cp "$jar:$work" StreamBench)
port=47100

# run NAME SERVER-CMD... -- CLIENT-CMD...
run() {
    local name="$1"; shift
    local server=() client=()
    while [ "$1" != "--" ]; do server+=("$1"); shift; done
    shift; client=("$@")
    "${server[@]}" > "$work/server.out" 2>&1 &
    local spid=$!
    sleep 1
    "${client[@]}" > "$work/client.out" 2>&1
    wait "$spid"
    echo "$name: $(grep -h '"bytes"' "$work/server.out" | tail -n 1)"
}

for r in $(seq 1 "$rounds"); do
    port=$((port + 1))
    run "round $r udt-perf -> udt-perf" "$udt" perf server --port "$port" --bind 127.0.0.1 --once --json --interval 0 \
        -- "$udt" perf client "127.0.0.1:$port" --bytes "$bytes" --json --interval 0
    port=$((port + 1))
    run "round $r java -> java" "${jbench[@]}" server "$port" -- "${jbench[@]}" client "127.0.0.1:$port" "$bytes"
    port=$((port + 1))
    run "round $r java -> udt-perf" "$udt" perf server --port "$port" --bind 127.0.0.1 --once --json --interval 0 \
        -- "${jbench[@]}" client "127.0.0.1:$port" "$bytes"
    port=$((port + 1))
    run "round $r udt-perf -> java" "${jbench[@]}" server "$port" \
        -- "$udt" perf client "127.0.0.1:$port" --bytes "$bytes" --json --interval 0
done
