#![no_main]
//! Log lines of every format: parsed or skipped, never a panic.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        for line in text.lines() {
            let _ = opsdeck::logs::parse::parse_line(line);
            let _ = opsdeck::logs::parse::parse_timestamp(line);
        }
    }
});
