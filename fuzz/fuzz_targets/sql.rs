//! Fuzz target `sql`: see `tern_fuzzing::sql` and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tern_fuzzing::sql(data));
