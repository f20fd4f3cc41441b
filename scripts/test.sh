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
echo "== format"
cargo fmt --all -- --check
echo "== lint"
cargo clippy --workspace --all-targets --features udt/tokio --quiet -- -D warnings
echo "== tests (unit, property, integration, scaled-down paper scenarios, interop with UDT4 4.11)"
cargo test --workspace --features udt/tokio --quiet
echo "== C API and UDT4 C++ drop-in (valgrind, peer.cpp against real UDT4, interop suite)"
scripts/test-c.sh
echo "== Java binding (Maven, JUnit 5, interop with udt perf and UDT4 4.11)"
bash bindings/java/test.sh
echo "== Python package (pytest, asyncio, Ctrl-C, interop with udt perf and UDT4 4.11)"
bash bindings/python/test.sh
echo "== fuzzing (six libFuzzer targets built on stable, 10 s each; docs/fuzzing.md)"
scripts/fuzz.sh 10
echo "== all tests passed"
