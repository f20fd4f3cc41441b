#![no_main]
libfuzzer_sys::fuzz_target!(|_d: &[u8]| {});
