#!/usr/bin/env bash
# The Java binding's whole test run (bindings/java): installs what a fresh Debian machine
# lacks (Maven, JDK 17, g++ and libudt-dev for the UDT4 peer), builds the `udt` tool and the
# UDT4 4.11 peer for the interop tests, runs `mvn -q package` (native library, jar, JUnit 5
# tests), checks the native crate (fmt, clippy, unit tests) and the Javadoc, then compiles
# and runs the README's example against the jar alone. Exits non-zero on any failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

# 1. Tools. Rust is the project's own toolchain (rustup); Debian's cargo is too old for it.
need=()
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
if [ ${#need[@]} -gt 0 ]; then
    echo "test.sh: installing ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq "${need[@]}" >&2
fi
command -v cargo >/dev/null 2>&1 || { echo "test.sh: cargo (Rust stable) is required" >&2; exit 1; }

# 2. Interop peers: the `udt` tool (udt perf) and the UDT4 4.11 peer.
(cd "$root" && cargo build --release -q -p udt-cli)
export UDT_CLI="$root/target/release/udt"
export UDT4_PEER
UDT4_PEER="$(bash "$root/interop/build.sh" | tail -n 1)"

# 3. The native crate's own checks.
native="$here/native"
cargo fmt --manifest-path "$native/Cargo.toml" -- --check
cargo clippy -q --release --manifest-path "$native/Cargo.toml" --all-targets -- -D warnings
cargo test -q --release --manifest-path "$native/Cargo.toml"

# 4. Build the jar and run the JUnit tests (Surefire), then report their totals: -q prints
# nothing on success.
rm -rf "$here/target/surefire-reports"
mvn -q -f "$here/pom.xml" package
# The totals of Surefire's reports (one <testsuite tests= failures= errors= skipped=> each).
for f in "$here"/target/surefire-reports/TEST-*.xml; do
    grep -o '<testsuite [^>]*>' "$f" | head -n 1
done | awk '
    function attr(name,   m) { return match($0, name "=\"[0-9]+\"") ? substr($0, RSTART + length(name) + 2, RLENGTH - length(name) - 3) + 0 : 0 }
    { t += attr("tests"); f += attr("failures") + attr("errors"); s += attr("skipped") }
    END {
        if (t == 0) { print "test.sh: no JUnit test ran" > "/dev/stderr"; exit 1 }
        printf "java: %d passed, %d failed, %d skipped\n", t - f - s, f, s
        exit f > 0
    }'

# 5. Javadoc: every public type and member documented, no broken references.
jdoc="$(mktemp -d)"
trap 'rm -rf "$jdoc"' EXIT
javadoc -quiet -Xdoclint:all -Werror -d "$jdoc/api" "$here"/src/main/java/net/udt/*.java >/dev/null

# 6. The README's example, compiled and run with the jar alone on the classpath.
jar="$(ls "$here"/target/udt-java-*.jar | head -n 1)"
mkdir -p "$jdoc/example"
awk '/^```java$/{on=1; next} /^```$/{if (on) exit} on' "$here/README.md" > "$jdoc/example/Example.java"
javac -Xlint:all -Werror -cp "$jar" -d "$jdoc/example" "$jdoc/example/Example.java"
out="$(cd "$jdoc" && timeout 60 java -cp "$jar:$jdoc/example" Example)"
echo "$out"
grep -q '^reply: HELLO OVER UDT$' <<<"$out" || { echo "test.sh: the README example failed" >&2; exit 1; }
echo "java: README example ok"
