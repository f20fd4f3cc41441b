#!/usr/bin/env bash
# Coverage-guided fuzzing of udt on the STABLE toolchain: builds every libFuzzer target of
# fuzz/ and runs each for SECONDS_PER_TARGET (default 20), starting from the checked-in seed
# corpora. Fails if any target crashes, panics, times out or runs out of memory, and prints
# executions, coverage and corpus size per target.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]
#
# Environment:
#   UDT_FUZZ_TARGETS   space-separated subset of targets (default: all)
#   UDT_FUZZ_KEEP      directory to keep the grown corpora and any crash in (default: a
#                      temporary directory, removed at the end unless something crashed)
#   UDT_FUZZ_JOBS      cargo build jobs (default: cargo's)
#
# Why no cargo-fuzz and no nightly: see docs/fuzzing.md. The targets are ordinary binaries
# linked with libfuzzer-sys (from crates.io); the instrumentation flags below are stable
# rustc options (the ones `cargo fuzz build --sanitizer none` passes). Needs: cargo/rustc
# stable and a C++ compiler (libfuzzer-sys compiles libFuzzer), installed below if missing.
set -euo pipefail

secs="${1:-20}"
case "$secs" in '' | *[!0-9]*) echo "usage: $0 [SECONDS_PER_TARGET]" >&2; exit 2 ;; esac

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/fuzz-env.sh
. "$root/scripts/fuzz-env.sh"
targets="${UDT_FUZZ_TARGETS:-$FUZZ_TARGETS}"

# --- what a fresh Debian machine needs -----------------------------------------------------
if ! command -v c++ >/dev/null 2>&1; then
    echo "== installing a C++ compiler (libFuzzer is C++)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq g++ >/dev/null
fi
command -v cargo >/dev/null || { echo "cargo (stable Rust) is required" >&2; exit 1; }

# --- build -----------------------------------------------------------------------------------
host="$(rustc -vV | sed -n 's/^host: //p')"
t0=$(date +%s)
echo "== building fuzz targets ($(rustc --version), host $host)"
# --target keeps RUSTFLAGS off build scripts and proc macros (they must not be instrumented);
# release with debug assertions and overflow checks on, as cargo-fuzz does.
RUSTFLAGS="$FUZZ_RUSTFLAGS" cargo build --manifest-path "$root/fuzz/Cargo.toml" \
    --release --locked --target "$host" ${UDT_FUZZ_JOBS:+-j "$UDT_FUZZ_JOBS"} \
    $(for t in $targets; do printf -- '--bin %s ' "$t"; done)
bin="$root/fuzz/target/$host/release"
t1=$(date +%s)
echo "== built in $((t1 - t0)) s"

# --- run -------------------------------------------------------------------------------------
work="${UDT_FUZZ_KEEP:-$(mktemp -d "${TMPDIR:-/tmp}/udt-fuzz.XXXXXX")}"
mkdir -p "$work"
failed=""
total_execs=0
printf '%-18s %12s %10s %8s %8s %12s %s\n' target executions exec/s cov ft corpus result \
    >"$work/summary"
for t in $targets; do
    mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
    log="$work/$t/log"
    # The first directory receives new inputs; the checked-in seeds are only read. The
    # per-input timeout is above ffi_calls' own 10 s limit on threads outliving close, so
    # that its message, not a bare timeout, reports that case.
    set +e
    "$bin/$t" "$work/$t/corpus" "$root/fuzz/corpus/$t" \
        -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$work/$t/artifacts/" >"$log" 2>&1
    rc=$?
    set -e
    # libFuzzer's last status line: "#N DONE cov: C ft: F corp: K/SIZE ... exec/s: E ...".
    done_line="$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1 || true)"
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
    cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")"
    ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")"
    corp="$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$done_line")"
    if [ "$rc" -eq 0 ]; then
        result=ok
    else
        result="FAILED (exit $rc)"
        failed="$failed $t"
    fi
    total_execs=$((total_execs + ${execs:-0}))
    printf '%-18s %12s %10s %8s %8s %12s %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
        "${ft:-?}" "${corp:-?}" "$result" | tee -a "$work/summary"
    if [ "$rc" -ne 0 ]; then
        echo "---- $t: last lines of $log"
        grep -v '^\s*#' "$log" | tail -40
        ls -l "$work/$t/artifacts/"
    fi
done
t2=$(date +%s)
echo
cat "$work/summary"
echo "total executions: $total_execs; build $((t1 - t0)) s, run $((t2 - t1)) s, total $((t2 - t0)) s"
if [ -n "$failed" ]; then
    echo "FAILED:$failed (inputs and logs kept in $work)" >&2
    echo "reproduce: $bin/<target> <crash file>" >&2
    exit 1
fi
[ -n "${UDT_FUZZ_KEEP:-}" ] || rm -rf "$work"
echo "fuzzing passed"
