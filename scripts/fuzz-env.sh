# Sourced by scripts/fuzz.sh: the flags that turn a stable `cargo build` of fuzz/ into
# coverage-guided libFuzzer binaries. These are the flags cargo-fuzz passes with
# `--sanitizer none` (SanitizerCoverage through LLVM's sancov pass, all stable rustc options);
# only `-Z sanitizer=...` would need nightly, and Rust code needs no AddressSanitizer to find
# panics, overflows (checked here) and debug assertions.
FUZZ_RUSTFLAGS="-Cpasses=sancov-module \
 -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
 -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares \
 --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
FUZZ_TARGETS="parse_packet recv_buffer transfer_protocol endpoint connection ffi_calls"
