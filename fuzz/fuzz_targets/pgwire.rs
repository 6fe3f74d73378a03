//! Fuzz target `pgwire`: see `tern_fuzzing::pgwire` and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tern_fuzzing::pgwire(data));
