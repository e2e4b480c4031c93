#![no_main]
//! See `opsdeck::fuzzing::workspace_files`: the checks live in the library so `cargo test` replays kept inputs.
libfuzzer_sys::fuzz_target!(|data: &[u8]| opsdeck::fuzzing::workspace_files(data));
