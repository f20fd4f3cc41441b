#!/usr/bin/env bash
# Builds the UDT4 4.11 side of the side-by-side benchmarks into bench/target/:
#   udt4-perf  (udt4_perf.cpp)  memory-to-memory throughput tool, the payload of `udt perf`
#   udt4-idle  (udt4_idle.cpp)  N idle connections on one port per side: threads, RSS
#   udt4-file  (udt4_file.cpp)  one file with UDT::sendfile -> UDT::recvfile (scripts/bench-files.sh)
# Needs g++ and libudt-dev (Debian's UDT4 4.11: /usr/include/udt/udt.h, -ludt); installs them
# with apt-get when missing (root or sudo), as interop/build.sh does.
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

for name in udt4_perf udt4_idle udt4_file; do
    bin="$out/${name//_/-}"
    # Rebuild only when the source (or this script) is newer than the binary.
    if [ -x "$bin" ] && [ "$bin" -nt "$here/$name.cpp" ] && [ "$bin" -nt "$here/build.sh" ]; then
        continue
    fi
    tmp="$bin.tmp.$$"
    g++ -std=c++17 -O2 -g -Wall -Wextra -pthread -o "$tmp" "$here/$name.cpp" -ludt -lpthread
    mv -f "$tmp" "$bin"
done
echo "$out"
