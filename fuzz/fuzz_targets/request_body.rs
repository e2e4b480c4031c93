#![no_main]
//! Request bodies: any bytes give a typed value or a 4xx error, never a panic.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for result in [
        opsdeck::http::extract::parse_object::<opsdeck::tasks::api::CreateTask>(data).err(),
        opsdeck::http::extract::parse_object::<opsdeck::users::api::CreateUser>(data).err(),
        opsdeck::http::extract::parse_object::<opsdeck::webhooks::api::CreateWebhook>(data).err(),
        opsdeck::http::extract::parse_object::<opsdeck::alerts::api::CreateRule>(data).err(),
    ]
    .into_iter()
    .flatten()
    {
        assert!(result.status().is_client_error(), "{result:?}");
    }
});
