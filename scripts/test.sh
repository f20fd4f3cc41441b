#!/usr/bin/env bash
# Runs the whole test suite, installing what a fresh Debian machine lacks.
# This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

# --- what the suite needs -------------------------------------------------------------------
missing=()
command -v cargo >/dev/null 2>&1 || { echo "error: cargo (Rust >= 1.85) is required: https://rustup.rs" >&2; exit 1; }
# The interoperability suite (crates/udt-cli/tests/interop.rs) builds a peer program against the
# reference UDT4 4.11 library and impairs paths with a small Python relay.
command -v g++ >/dev/null 2>&1 || missing+=(g++)
[ -f /usr/include/udt/udt.h ] || missing+=(libudt-dev)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

# --- checks ----------------------------------------------------------------------------------
# Each stage prints its wall time when the next begins, so that a slow CI run shows where.
stage_start=$SECONDS; stage_name=""
stage() {
  [ -z "$stage_name" ] || echo "   ($stage_name: $((SECONDS - stage_start)) s)"
  stage_name="$1"; stage_start=$SECONDS; [ -z "$1" ] || echo "== $1"
}
stage "format"
cargo fmt --all -- --check
stage "lint"
cargo clippy --workspace --all-targets --features udt/tokio --quiet -- -D warnings
stage "tests (unit, property, integration, scaled-down paper scenarios, interop with UDT4 4.11)"
cargo test --workspace --features udt/tokio --quiet
stage "C API and UDT4 C++ drop-in (valgrind, peer.cpp against real UDT4, interop suite)"
scripts/test-c.sh
stage "Java binding (Maven, JUnit 5, interop with udt perf and UDT4 4.11)"
bash bindings/java/test.sh
stage "Python package (pytest, asyncio, Ctrl-C, interop with udt perf and UDT4 4.11)"
bash bindings/python/test.sh
stage "fuzzing (six libFuzzer targets built on stable, 10 s each; docs/fuzzing.md)"
scripts/fuzz.sh 10
stage ""
echo "== all tests passed in $SECONDS s"
