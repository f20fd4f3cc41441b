#!/usr/bin/env bash
# The Python package's whole test run: lint the Rust layer, build and install the package
# into a private virtual environment (bindings/python/.venv), build the interop peers (the
# `udt` CLI and the UDT4 4.11 test peer), run the README example and the pytest suite.
# Installs what a fresh Debian machine lacks (python3-venv through apt, maturin and pytest
# through pip). Exits non-zero on any failure.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"

command -v cargo >/dev/null 2>&1 || { echo "error: cargo (Rust >= 1.85) is required: https://rustup.rs" >&2; exit 1; }
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3 python3-venv python3-pip
fi

# --- the Rust layer ------------------------------------------------------------------------
echo "== python: format and lint (bindings/python)"
cargo fmt --manifest-path Cargo.toml -- --check
cargo clippy --manifest-path Cargo.toml --all-targets --quiet -- -D warnings

# --- build and install, as a user would (pip install bindings/python) ----------------------
venv="$here/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check "maturin>=1.5,<2" "pytest>=7"
echo "== python: pip install bindings/python"
"$py" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$here"

# --- peers for the interop tests -----------------------------------------------------------
echo "== python: interop peers (udt CLI, UDT4 4.11 peer)"
(cd "$repo" && cargo build --release --quiet -p udt-cli)
"$repo/interop/build.sh" >/dev/null
export UDT_BIN="$repo/target/release/udt"
export UDT4_PEER="$repo/interop/target/udt4-peer"

# --- tests ---------------------------------------------------------------------------------
echo "== python: README example"
"$py" "$here/tests/readme_example.py"
echo "== python: pytest"
cd "$here/tests"
timeout 900 "$py" -m pytest -q -p no:cacheprovider "$@"
echo "== python: all tests passed"
