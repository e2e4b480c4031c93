#![no_main]
//! See `opsdeck::fuzzing::query_string`: the checks live in the library so `cargo test` replays kept inputs.
libfuzzer_sys::fuzz_target!(|data: &[u8]| opsdeck::fuzzing::query_string(data));
