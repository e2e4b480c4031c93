#![no_main]
//! identity.md and TOOLS.md parsing.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = opsdeck::agents::sync::parse_identity(text);
        let _ = opsdeck::agents::sync::parse_tools(text);
    }
});
