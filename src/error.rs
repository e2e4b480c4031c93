//! One error type for the whole service and the ONE place that maps it to an HTTP status and JSON body.

use salvo::http::{HeaderValue, StatusCode};
use salvo::prelude::*;
use salvo_oapi::{Components, EndpointOutRegister, Operation, ToSchema};
use serde::Serialize;

pub type AppResult<T> = Result<T, AppError>;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// 400 `Validation failed` with one `field: problem` line per failure.
    #[error("Validation failed")]
    Validation(Vec<String>),
    #[error("{0}")]
    BadRequest(String),
    #[error("Authentication required")]
    Unauthenticated,
    #[error("Invalid credentials")]
    InvalidCredentials,
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// 502: an agent gateway failed or answered garbage.
    #[error("{0}")]
    Upstream(String),
    #[error("Request body too large")]
    PayloadTooLarge,
    /// 429 with the message and the seconds until the window resets (`Retry-After`).
    #[error("{message}")]
    TooManyRequests { message: &'static str, retry_after: u64 },
    /// 500: the message is logged, the client sees a generic text.
    #[error("{0}")]
    Internal(String),
    /// 500 whose message the (admin) caller sees: an operation they asked for failed, e.g. a scheduler
    /// job run through `POST /api/scheduler`.
    #[error("{0}")]
    Failed(String),
}

impl AppError {
    pub fn validation(field: &str, problem: &str) -> Self {
        Self::Validation(vec![format!("{field}: {problem}")])
    }

    pub fn internal(e: impl std::fmt::Display) -> Self {
        Self::Internal(e.to_string())
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::Validation(_) | Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthenticated | Self::InvalidCredentials => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::Upstream(_) => StatusCode::BAD_GATEWAY,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Internal(_) | Self::Failed(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn body(&self) -> ErrorBody {
        match self {
            Self::Validation(details) => ErrorBody { error: self.to_string(), details: Some(details.clone()) },
            Self::Internal(_) => ErrorBody::new("Internal server error"),
            other => ErrorBody::new(other.to_string()),
        }
    }
}

/// The JSON shape of every error response.
#[derive(Debug, Serialize, ToSchema)]
#[salvo(schema(name = "Error"))]
pub struct ErrorBody {
    pub error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Vec<String>>,
}

impl ErrorBody {
    pub fn new(error: impl Into<String>) -> Self {
        Self { error: error.into(), details: None }
    }
}

/// Writes an error response; also used by the catcher for errors raised outside handlers.
pub fn write_error(res: &mut Response, status: StatusCode, body: &ErrorBody) {
    res.status_code(status);
    res.render(crate::http::Json(body));
}

#[async_trait]
impl Writer for AppError {
    async fn write(self, _req: &mut Request, _depot: &mut Depot, res: &mut Response) {
        match &self {
            Self::Internal(message) => tracing::error!(%message, "internal error"),
            Self::Failed(message) => tracing::warn!(%message, "operation failed"),
            _ => {}
        }
        if let Self::TooManyRequests { retry_after, .. } = &self
            && let Ok(v) = HeaderValue::from_str(&retry_after.to_string())
        {
            res.headers_mut().insert("retry-after", v);
        }
        write_error(res, self.status(), &self.body());
    }
}

impl EndpointOutRegister for AppError {
    fn register(components: &mut Components, operation: &mut Operation) {
        let schema = ErrorBody::to_schema(components);
        for (code, what) in [
            ("400", "Bad request or validation failure"),
            ("401", "Authentication required"),
            ("403", "Forbidden (role, CSRF, host or quality gate)"),
            ("404", "Not found"),
            ("409", "Conflict (name or title already exists)"),
            ("413", "Request body too large"),
            ("429", "Rate limit exceeded"),
            ("500", "Internal error"),
            ("502", "An agent gateway failed or answered garbage"),
        ] {
            operation.responses.insert(
                code,
                salvo_oapi::Response::new(what)
                    .add_content("application/json", salvo_oapi::Content::new(schema.clone())),
            );
        }
    }
}

impl From<crate::store::StoreError> for AppError {
    fn from(e: crate::store::StoreError) -> Self {
        Self::Internal(e.to_string())
    }
}

macro_rules! via_store {
    ($($t:ty),*) => { $( impl From<$t> for AppError { fn from(e: $t) -> Self { crate::store::StoreError::from(e).into() } } )* };
}
via_store!(redb::TableError, redb::StorageError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_show_their_message_internal_errors_do_not() {
        let failed = AppError::Failed("backup failed: disk full".into());
        assert_eq!(failed.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(failed.body().error, "backup failed: disk full");
        let internal = AppError::Internal("database: secret detail".into());
        assert_eq!(internal.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(internal.body().error, "Internal server error");
    }
}
