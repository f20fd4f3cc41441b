#!/usr/bin/env bash
# Installs udt's C API (udt_c.h, libudt_c, pkg-config `udt-c`) and the UDT4 4.11 C++ drop-in
# (udt.h, udt/udt.h, udt/ccc.h, udt/packet.h, libudt, pkg-config `udt4`) into a prefix.
#
#   scripts/install-c.sh --prefix DIR
#   PKG_CONFIG_PATH=DIR/lib/pkgconfig cc app.c $(pkg-config --cflags --libs udt-c)
#   PKG_CONFIG_PATH=DIR/lib/pkgconfig c++ app.cpp $(pkg-config --cflags --libs udt4)
#
# Needs cargo and a C++ compiler (g++ or $CXX). Libraries carry an rpath to DIR/lib, so the
# programs run without LD_LIBRARY_PATH.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) echo "install-c.sh: unknown argument $1" >&2; exit 64 ;;
    esac
done
[ -n "$prefix" ] || { echo "usage: scripts/install-c.sh --prefix DIR" >&2; exit 64; }
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
cxx="${CXX:-g++}"
command -v "$cxx" >/dev/null || { echo "install-c.sh: $cxx not found (apt-get install g++)" >&2; exit 1; }

cargo build --release --quiet -p udt-ffi --manifest-path "$root/Cargo.toml"
target="${CARGO_TARGET_DIR:-$root/target}/release"

inc="$prefix/include"; lib="$prefix/lib"; pc="$lib/pkgconfig"
mkdir -p "$inc/udt" "$lib" "$pc"
src="$root/crates/udt-ffi"
install -m 644 "$src/include/udt_c.h" "$inc/udt_c.h"
for h in udt.h ccc.h packet.h; do install -m 644 "$src/cpp/include/udt/$h" "$inc/udt/$h"; done
# UDT4 applications include <udt.h> or <udt/udt.h>: both work.
install -m 644 "$src/cpp/include/udt/udt.h" "$inc/udt.h"
install -m 755 "$target/libudt_c.so" "$lib/libudt_c.so"
install -m 644 "$target/libudt_c.a" "$lib/libudt_c.a"

# The C++ layer: built with the system compiler, linked against the C library.
objs=()
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
for f in udt4 packet ccc; do
    "$cxx" -std=c++17 -O2 -g -fPIC -fvisibility=hidden -Wall -Wextra -Werror \
        -I "$src/cpp/include/udt" -I "$src/include" -I "$src/cpp/src" \
        -c "$src/cpp/src/$f.cpp" -o "$tmp/$f.o"
    objs+=("$tmp/$f.o")
done
"$cxx" -shared -o "$lib/libudt.so" -Wl,-soname,libudt.so "${objs[@]}" \
    -L "$lib" -Wl,-rpath,"$lib" -ludt_c -lpthread

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)"
cat > "$pc/udt-c.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: udt-c
Description: UDT (UDP-based Data Transfer) C API: UDT4's calls with a udt_ prefix
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -ludt_c
Libs.private: -lpthread -ldl -lm
PC
cat > "$pc/udt4.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: udt4
Description: UDT4 4.11's C++ API (udt.h, ccc.h) as a drop-in, on the udt engine
Version: 4.11-$version
Cflags: -I\${includedir}/udt -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -ludt -ludt_c -lpthread
PC
echo "installed udt's C API and UDT4 drop-in into $prefix"
