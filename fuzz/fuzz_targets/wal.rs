//! Fuzz target `wal`: see `tern_fuzzing::wal` and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tern_fuzzing::wal(data));
