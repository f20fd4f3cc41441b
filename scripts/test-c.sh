#!/usr/bin/env bash
# Tests of the C API and the UDT4 C++ drop-in (crates/udt-ffi), run by scripts/test.sh:
#  1. install both into target/c-test/prefix with scripts/install-c.sh;
#  2. the C test program (every function, error paths, bad handles) under valgrind;
#  3. the C++ drop-in tests (exceptions, sets, fstreams, CCC algorithms);
#  4. the README's C server and client, extracted from README.md, compiled and run;
#  5. interop/peer.cpp, unchanged, built against the drop-in, against real UDT4 4.11 both ways;
#  6. the interoperability suite with that build as its peer (UDT_INTEROP_PEER).
# Installs what a fresh Debian machine lacks (g++, valgrind, pkg-config, libudt-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
[ -f /usr/include/udt/udt.h ] || need+=(libudt-dev)
if [ ${#need[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi

out="$PWD/target/c-test"
prefix="$out/prefix"
rm -rf "$prefix"
mkdir -p "$out"
scripts/install-c.sh --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"

# The last line of a test program must say it passed everything.
expect_all_passed() {
    local log="$1"
    local last
    last="$(tail -n 1 "$log")"
    if ! [[ "$last" =~ ^[0-9]+\ passed,\ 0\ failed$ ]]; then
        echo "test-c.sh: $log did not end with 'N passed, 0 failed' (got: $last)" >&2
        exit 1
    fi
    echo "   $last"
}

echo "== C API tests (under valgrind)"
cc -std=c11 -Wall -Wextra -Werror -g crates/udt-ffi/tests/c/test_c_api.c -o "$out/test_c_api" \
    $(pkg-config --cflags --libs udt-c) -lpthread
valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    --suppressions=crates/udt-ffi/tests/c/valgrind.supp \
    --show-leak-kinds=definite "$out/test_c_api" > "$out/test_c_api.log" 2> "$out/test_c_api.valgrind" || {
    cat "$out/test_c_api.log" "$out/test_c_api.valgrind" >&2
    echo "test-c.sh: the C tests failed or valgrind reported errors" >&2
    exit 1
}
if [ -s "$out/test_c_api.valgrind" ]; then
    cat "$out/test_c_api.valgrind" >&2
    echo "test-c.sh: valgrind reported problems" >&2
    exit 1
fi
expect_all_passed "$out/test_c_api.log"

echo "== C++ drop-in tests"
g++ -std=c++17 -O1 -g -Wall -Wextra -Werror crates/udt-ffi/tests/cpp/test_cpp_api.cpp -o "$out/test_cpp_api" \
    $(pkg-config --cflags --libs udt4)
timeout 300 "$out/test_cpp_api" > "$out/test_cpp_api.log" || { cat "$out/test_cpp_api.log" >&2; exit 1; }
expect_all_passed "$out/test_cpp_api.log"

echo "== README C example"
for f in server.c client.c; do
    awk -v f="$f" '$0 == "<!-- c-example: " f " -->" {on=1; next}
                   on && /^```c$/ {code=1; next}
                   code && /^```$/ {exit}
                   code {print}' README.md > "$out/$f"
    [ -s "$out/$f" ] || { echo "test-c.sh: README.md has no $f example" >&2; exit 1; }
    cc -std=c11 -Wall -Wextra -Werror "$out/$f" -o "$out/${f%.c}" $(pkg-config --cflags --libs udt-c)
done
timeout 30 "$out/server" > "$out/server.out" &
srv=$!
sleep 0.5
timeout 30 "$out/client"
wait "$srv"
grep -qx "hello over UDT" "$out/server.out" || { echo "test-c.sh: the README server printed: $(cat "$out/server.out")" >&2; exit 1; }
echo "   server received the client's line"

echo "== interop/peer.cpp, unchanged, built against the drop-in, with real UDT4 4.11"
g++ -std=c++17 -O2 -g -Wall -Wextra -o "$out/udt4-peer-dropin" interop/peer.cpp $(pkg-config --cflags --libs udt4)
real="$(bash interop/build.sh | tail -n 1)"
dropin="$out/udt4-peer-dropin"
run_pair() { # name server-binary client-binary extra-args...
    local name="$1" server="$2" client="$3"; shift 3
    local port=$((30000 + RANDOM % 9000))
    timeout 120 "$server" server --port "$port" --once --timeout 100 "$@" > "$out/$name.server" &
    local spid=$!
    sleep 0.3
    if ! timeout 120 "$client" client "127.0.0.1:$port" --timeout 100 "$@" > "$out/$name.client"; then
        kill "$spid" 2>/dev/null || true
        echo "test-c.sh: $name: client failed" >&2; cat "$out/$name.client" >&2; exit 1
    fi
    wait "$spid" || { echo "test-c.sh: $name: server failed" >&2; cat "$out/$name.server" >&2; exit 1; }
    grep -q '"verified":true' "$out/$name.server" || { echo "test-c.sh: $name: not verified" >&2; cat "$out/$name.server" >&2; exit 1; }
    echo "   $name: $(grep -o '"mbps":[0-9.]*' "$out/$name.server" | tail -n 1)"
}
run_pair stream_dropin_to_udt4 "$real" "$dropin" --bytes 100000000
run_pair stream_udt4_to_dropin "$dropin" "$real" --bytes 100000000
# --inorder: peer.cpp checks each message at its place in the sequence, and a message sent
# without the flag may overtake a lost one (UDT4 delivers it as soon as it is complete; one
# packet lost on a busy loopback then failed this check). Unordered messages are covered by
# message_unordered_lossy_udt4_to_ours_cli of the interop suite, run below with this peer.
run_pair message_dropin_to_udt4 "$real" "$dropin" --mode message --bytes 20000000 --msg-size 9000 --vary-sizes --inorder
run_pair message_udt4_to_dropin "$dropin" "$real" --mode message --bytes 20000000 --msg-size 9000 --vary-sizes --inorder
run_pair bidir_dropin_udt4 "$real" "$dropin" --bytes 30000000 --bidir

echo "== interoperability suite with the drop-in as its peer"
# The two killed-peer tests are left out here: with the drop-in as the peer both ends run our
# Rust core, whose dead-peer detection the first run of this suite and udt's faults tests
# already check, and they spend 60-100 s waiting out the idle timeout.
UDT_INTEROP_PEER="$dropin" cargo test --quiet -p udt-cli --test interop -- --skip killed_
echo "== C and C++ tests passed"
