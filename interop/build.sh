#!/usr/bin/env bash
# Builds interop/target/udt4-peer, the UDT4 (libudt 4.11) test peer, from interop/peer.cpp.
# Installs g++ and libudt-dev with apt-get first if they are missing (needs root, or sudo).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/target"
mkdir -p "$out"

need=()
command -v g++ >/dev/null 2>&1 || need+=(g++)
[ -f /usr/include/udt/udt.h ] || need+=(libudt-dev)
if [ ${#need[@]} -gt 0 ]; then
    echo "build.sh: installing ${need[*]}" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq "${need[@]}" >&2
fi

# Rebuild only when the source (or this script) is newer than the binary.
bin="$out/udt4-peer"
if [ -x "$bin" ] && [ "$bin" -nt "$here/peer.cpp" ] && [ "$bin" -nt "$here/build.sh" ]; then
    echo "$bin"
    exit 0
fi
tmp="$bin.tmp.$$"
g++ -std=c++17 -O2 -g -Wall -Wextra -o "$tmp" "$here/peer.cpp" -ludt -lpthread
mv -f "$tmp" "$bin"
echo "$bin"
