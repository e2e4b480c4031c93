#![no_main]
//! Stored records: any bytes decode to a value or an error, never a panic.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = opsdeck::store::decode::<opsdeck::tasks::Task>(data);
    let _ = opsdeck::store::decode::<opsdeck::users::UserRecord>(data);
    let _ = opsdeck::store::decode::<opsdeck::webhooks::Delivery>(data);
    let _ = opsdeck::store::decode::<serde_json::Value>(data);
});
