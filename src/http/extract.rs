//! Request parsing with the interface's 400s: JSON bodies, path ids, limit/offset.

use salvo::http::ParseError;
use salvo::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{AppError, AppResult};

pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Parses a JSON object body into `T`: 400 `Invalid JSON body` when it is not JSON, 400
/// `Validation failed` naming the field when it is not an object of the right shape, 413 above 1 MiB.
pub async fn json_body<T: DeserializeOwned>(req: &mut Request) -> AppResult<T> {
    let bytes = req.payload_with_max_size(MAX_BODY_BYTES).await.map_err(|e| match e {
        ParseError::PayloadTooLarge => AppError::PayloadTooLarge,
        _ => AppError::BadRequest("Invalid JSON body".into()),
    })?;
    parse_object(bytes)
}

/// Like [`json_body`] but an empty body means `{}`.
pub async fn optional_json_body<T: DeserializeOwned>(req: &mut Request) -> AppResult<T> {
    let empty =
        req.payload_with_max_size(MAX_BODY_BYTES).await.map(|b| b.iter().all(u8::is_ascii_whitespace)).unwrap_or(false);
    if empty { parse_object(b"{}") } else { json_body(req).await }
}

pub fn parse_object<T: DeserializeOwned>(bytes: &[u8]) -> AppResult<T> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|_| AppError::BadRequest("Invalid JSON body".into()))?;
    if !value.is_object() {
        return Err(AppError::validation("body", "must be a JSON object"));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let detail = match inner.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
            Some(field) if path == "." => format!("{field}: is required"),
            Some(field) => format!("{path}.{field}: is required"),
            None => format!("{path}: {inner}"),
        };
        AppError::Validation(vec![detail])
    })
}

/// A numeric path parameter: 400 when it is not a positive integer.
pub fn path_id(req: &Request, name: &str) -> AppResult<u64> {
    req.param::<String>(name)
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|id| *id > 0)
        .ok_or_else(|| AppError::validation(name, "must be a positive integer"))
}

/// An optional query parameter parsed as `T`; 400 naming it when present but unparsable.
pub fn query_opt<T: std::str::FromStr>(req: &Request, name: &str, what: &str) -> AppResult<Option<T>> {
    match req.queries().get(name) {
        None => Ok(None),
        Some(s) if s.is_empty() => Ok(None),
        Some(s) => s.trim().parse::<T>().map(Some).map_err(|_| AppError::validation(name, what)),
    }
}

/// `limit`/`offset` of a list request. Over the maximum is clamped; negative or non-numeric is 400.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Page {
    pub limit: usize,
    pub offset: usize,
}

impl Page {
    pub fn from_query(req: &Request, default: usize, max: usize) -> AppResult<Self> {
        const WHAT: &str = "must be a non-negative integer";
        let limit = query_opt::<usize>(req, "limit", WHAT)?.unwrap_or(default);
        let offset = query_opt::<usize>(req, "offset", WHAT)?.unwrap_or(0);
        Ok(Self { limit: limit.clamp(1, max), offset })
    }

    /// `offset / limit + 1`, as list responses report it.
    pub fn page(&self) -> usize {
        self.offset / self.limit + 1
    }
}
