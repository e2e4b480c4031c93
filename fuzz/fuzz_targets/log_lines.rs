#![no_main]
//! See `opsdeck::fuzzing::log_lines`: the checks live in the library so `cargo test` replays kept inputs.
libfuzzer_sys::fuzz_target!(|data: &[u8]| opsdeck::fuzzing::log_lines(data));
