#![no_main]
//! JSONL session transcripts: any bytes are scanned, malformed lines counted.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let s = opsdeck::sessions::local::scan_reader("fuzz", "-home-fuzz", data);
    assert!(s.user_messages + s.assistant_messages <= data.split(|b| *b == b'\n').count() as u64);
});
