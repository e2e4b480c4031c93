//! The bodies of the cargo-fuzz targets in `fuzz/`. They live in the library so that every input the fuzzer
//! ever found (kept under `fuzz/regressions/<target>/`) is replayed by `cargo test` through the very same
//! checks (`tests/fuzz_regressions.rs`), without nightly. Each function panics only on a real defect.

use salvo::http::Request;
use salvo::http::uri::Uri;

use crate::http::extract::{Page, parse_object, query_opt};

/// A fuzz target's checks: panics only on a defect.
pub type Check = fn(&[u8]);

/// Every target, by the name of its fuzz binary and of its regressions folder.
pub const TARGETS: &[(&str, Check)] = &[
    ("record_decode", record_decode),
    ("log_lines", log_lines),
    ("workspace_files", workspace_files),
    ("transcript", transcript),
    ("query_string", query_string),
    ("request_body", request_body),
];

/// Stored records: any bytes decode to a value or an error.
pub fn record_decode(data: &[u8]) {
    let _ = crate::store::decode::<crate::tasks::Task>(data);
    let _ = crate::store::decode::<crate::users::UserRecord>(data);
    let _ = crate::store::decode::<crate::webhooks::Delivery>(data);
    let _ = crate::store::decode::<serde_json::Value>(data);
}

/// Log lines of every format: parsed or skipped.
pub fn log_lines(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let _ = crate::logs::parse::parse_line(line);
        let _ = crate::logs::parse::parse_timestamp(line);
    }
}

/// identity.md and TOOLS.md.
pub fn workspace_files(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = crate::agents::sync::parse_identity(&text);
    for tool in crate::agents::sync::parse_tools(&text) {
        assert!(!tool.is_empty(), "an empty tool name");
    }
}

/// JSONL session transcripts: scanned, malformed lines counted, never more messages than lines.
pub fn transcript(data: &[u8]) {
    let s = crate::sessions::local::scan_reader("fuzz", "-home-fuzz", data);
    let lines = data.split(|b| *b == b'\n').count() as u64;
    assert!(s.user_messages + s.assistant_messages <= lines, "{} messages from {lines} lines", s.user_messages);
}

/// Query strings: `limit`/`offset` and typed parameters give a value or a 4xx; a page is clamped to 1..=max.
pub fn query_string(data: &[u8]) {
    let Ok(uri) = format!("/api/tasks?{}", String::from_utf8_lossy(data)).parse::<Uri>() else { return };
    let mut req = Request::new();
    req.set_uri(uri);
    match Page::from_query(&req, 50, 200) {
        Ok(page) => assert!((1..=200).contains(&page.limit) && page.page() >= 1, "{page:?}"),
        Err(e) => assert!(e.status().is_client_error(), "{e:?}"),
    }
    for err in [
        query_opt::<i64>(&req, "since", "seconds").err(),
        query_opt::<u64>(&req, "id", "an id").err(),
        query_opt::<f64>(&req, "threshold", "a number").err(),
    ]
    .into_iter()
    .flatten()
    {
        assert!(err.status().is_client_error(), "{err:?}");
    }
}

/// Request bodies: any bytes give a typed value or a 4xx.
pub fn request_body(data: &[u8]) {
    for err in [
        parse_object::<crate::tasks::api::CreateTask>(data).err(),
        parse_object::<crate::users::api::CreateUser>(data).err(),
        parse_object::<crate::webhooks::api::CreateWebhook>(data).err(),
        parse_object::<crate::alerts::api::CreateRule>(data).err(),
        parse_object::<crate::agents::api::CreateAgent>(data).err(),
    ]
    .into_iter()
    .flatten()
    {
        assert!(err.status().is_client_error(), "{err:?}");
    }
}
