//! Fuzz target `block`: see `tern_fuzzing::block` and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tern_fuzzing::block(data));
