//! Errors: [`ApiError`] (an HTTP error answer) and [`ServerError`] (a server that cannot start).

use std::time::Duration;

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// The JSON body of every error answer; the same fields as a `response.error` event.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ErrorBody {
    /// A machine-readable code: `invalid_request`, `unsupported_field`, `unauthorized`,
    /// `forbidden`, `not_found`, `payload_too_large`, `too_many_requests`,
    /// `shutting_down`, `provider_error`, `internal_error`, …
    pub code: String,
    /// What went wrong and what to do, for people.
    pub message: String,
    /// More detail (e.g. each refused field), or null.
    #[schema(value_type = Option<Object>)]
    pub details: Value,
}

/// An error answer: status, body and (for 429 and 503) a `Retry-After`.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    status: StatusCode,
    body: ErrorBody,
    retry_after: Option<Duration>,
}

impl ApiError {
    /// An error with this status, code and message, and null details.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            body: ErrorBody {
                code: code.to_owned(),
                message: message.into(),
                details: Value::Null,
            },
            retry_after: None,
        }
    }

    /// Adds details.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.body.details = details;
        self
    }

    /// Adds a `Retry-After` header.
    #[must_use]
    pub fn with_retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    /// 400: a body that is not a valid request.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// 422: a well-formed request asking for something this server does not do.
    pub fn unprocessable(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }

    /// 401, with `WWW-Authenticate: Bearer`.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 403.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 500.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", message)
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The JSON body.
    pub fn body(&self) -> &ErrorBody {
        &self.body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // Kept on the answer, typed, so the OpenAI-compatible routes can re-shape it.
        let typed = self.clone();
        let mut response = (self.status, Json(self.body)).into_response();
        response.extensions_mut().insert(typed);
        let headers = response.headers_mut();
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(after) = self.retry_after {
            // Whole seconds, at least one: `Retry-After: 0` would invite a busy loop.
            let secs = after.as_secs().max(1);
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// Why a server could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The service it serves could not be set up (its store, its tools, its configuration).
    #[error(transparent)]
    Service(#[from] service::ServiceError),
    /// The HTTP settings are inconsistent.
    #[error("invalid server configuration: {0}")]
    Config(String),
    /// Listening or serving failed.
    #[error("the server failed: {0}")]
    Io(#[from] std::io::Error),
}

/// The most problems an error lists: a body with thousands of wrong entries is told about the
/// first ones and how many more, not answered with a message of megabytes.
const MOST_PROBLEMS: usize = 20;

/// `problems`, at most [`MOST_PROBLEMS`] of them, the last saying how many were left out.
pub(crate) fn capped(mut problems: Vec<String>) -> Vec<String> {
    if problems.len() > MOST_PROBLEMS {
        let more = problems.len() - MOST_PROBLEMS;
        problems.truncate(MOST_PROBLEMS);
        problems.push(format!("and {more} more"));
    }
    problems
}

#[cfg(test)]
mod capped_tests {
    use super::capped;

    #[test]
    fn a_long_list_keeps_its_first_problems_and_says_how_many_more() {
        let problems: Vec<String> = (0..5001)
            .map(|i| format!("`c{i}` is not pending"))
            .collect();
        let shown = capped(problems);
        assert_eq!(shown.len(), 21);
        assert_eq!(shown[0], "`c0` is not pending");
        assert_eq!(shown[19], "`c19` is not pending");
        assert_eq!(shown[20], "and 4981 more");
        let few = vec!["one".to_owned(), "two".to_owned()];
        assert_eq!(capped(few.clone()), few);
    }
}
