#!/usr/bin/env bash
# Connect / transfer / close cycles on loopback in one process (crates/udt/tests/cycles.rs):
# prints fds, threads and resident memory every tenth of the run and fails if fds or threads
# grew. Sizes cycle through 0, 1, 1456, 20 000 and 300 000 bytes.
#
# usage: scripts/cycles-bench.sh [CYCLES]     (default 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
UDT_CYCLES=${1:-10000} cargo test --release -q -p udt --test cycles -- --nocapture 2>&1 \
  | grep -E 'cycles|test result|panicked|grew'
