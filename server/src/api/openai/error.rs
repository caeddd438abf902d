//! [`OpenAiError`]: an error answer in OpenAI's shape,
//! `{"error": {"message", "type", "param", "code"}}`, so the official SDKs raise their own
//! error classes (`BadRequestError`, `AuthenticationError`, `NotFoundError`, …) from it.

use axum::Json;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::error::ApiError;

/// An error answer of the OpenAI-compatible endpoints.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenAiError {
    status: StatusCode,
    body: OpenAiErrorBody,
    source: Option<Box<ApiError>>,
    should_retry: Option<bool>,
}

/// The body: `{"error": {…}}`.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct OpenAiErrorBody {
    /// The error.
    pub error: OpenAiErrorDetail,
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct OpenAiErrorDetail {
    /// What went wrong and what to do, for people.
    pub message: String,
    /// `invalid_request_error`, `authentication_error`, `permission_error`, `not_found_error`,
    /// `rate_limit_error`, `api_error` or `server_error`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The request field at fault, when one is.
    pub param: Option<String>,
    /// A machine-readable code.
    pub code: Option<String>,
}

impl OpenAiError {
    /// An error of `status` with `code` and `message`; the type follows from the status.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        OpenAiError {
            status,
            body: OpenAiErrorBody {
                error: OpenAiErrorDetail {
                    message: message.into(),
                    kind: kind_of(status),
                    param: None,
                    code: Some(code.to_owned()),
                },
            },
            source: None,
            should_retry: None,
        }
    }

    /// Tells clients whether sending the request again may help (`x-should-retry`, which the
    /// official SDKs obey instead of their own guess from the status).
    #[must_use]
    pub fn with_should_retry(mut self, retry: bool) -> Self {
        self.should_retry = Some(retry);
        self
    }

    /// A 400 about `param`.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_value", message).with_param(param)
    }

    /// Names the request field at fault.
    #[must_use]
    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.body.error.param = Some(param.into());
        self
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The body.
    pub fn body(&self) -> &OpenAiErrorBody {
        &self.body
    }
}

/// The OpenAI error `type` of an answer with `status`.
fn kind_of(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        400..=499 => "invalid_request_error",
        502..=504 => "api_error",
        _ => "server_error",
    }
}

impl From<ApiError> for OpenAiError {
    fn from(error: ApiError) -> Self {
        let body = error.body();
        let mut converted = OpenAiError::new(error.status(), &body.code, body.message.clone());
        // The field a 422 names, so `param` points at it as OpenAI's own answers do.
        if let Some(field) = body
            .details
            .pointer("/fields/0/field")
            .and_then(|field| field.as_str())
        {
            converted.body.error.param = Some(field.to_owned());
        }
        converted.source = Some(Box::new(error));
        converted
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        match self.source {
            // The shared error keeps its headers (`WWW-Authenticate`, `Retry-After`).
            Some(source) => {
                let mut response = (*source).into_response();
                *response.body_mut() =
                    axum::body::Body::from(serde_json::to_vec(&self.body).unwrap_or_default());
                response.headers_mut().remove(http::header::CONTENT_LENGTH);
                response
            }
            None => {
                let mut response = (self.status, Json(self.body)).into_response();
                if let Some(retry) = self.should_retry {
                    response.headers_mut().insert(
                        "x-should-retry",
                        http::HeaderValue::from_static(if retry { "true" } else { "false" }),
                    );
                }
                response
            }
        }
    }
}

/// The OpenAI router's outermost layer: an error the shared layers answered (bearer token,
/// body limit, content type, origin, concurrency, shutdown) is rewritten in OpenAI's shape,
/// so an SDK reads its message instead of failing to parse it.
pub(crate) async fn openai_errors(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    match response.extensions_mut().remove::<ApiError>() {
        Some(error) => OpenAiError::from(error).into_response(),
        None => response,
    }
}
