//! Requests no route answers, in OpenAI's error shape: a path under `/v1/` that no route
//! serves (404), and a route asked with a method it does not take (405, with `Allow`). The
//! router answers both with an empty body, which the official SDKs report as an error without
//! a message; this layer gives them one naming the method and the path.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};

use crate::api::openai::error::OpenAiError;

/// The routes under `/v1/`, named in the answer to a path none of them serves.
const ROUTES: &str = "POST /v1/chat/completions, POST /v1/responses, GET /v1/responses/{id}, \
     POST /v1/responses/{id}/cancel, GET /v1/models, GET /v1/models/{id}, POST /v1/embeddings, \
     POST /v1/response and POST /v1/response/{id}/cancel";

/// Rewrites the router's own empty 404 and 405 answers under `/v1/` in OpenAI's shape. A
/// route's own 404 (an unknown response id, a model it does not have) has a body already and
/// passes unchanged, and so does everything outside `/v1/` (`/health`, `/openapi.json`).
pub(crate) async fn openai_unrouted(request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if !(path == "/v1" || path.starts_with("/v1/")) {
        return next.run(request).await;
    }
    let method = request.method().clone();
    // The path as the client sent it, cut short: it is quoted back, not trusted.
    let shown: String = path.chars().take(200).collect();
    let response = next.run(request).await;
    let status = response.status();
    let answered = response.headers().contains_key(header::CONTENT_TYPE);
    if answered
        || !matches!(
            status,
            StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
        )
    {
        return response;
    }
    let answer = if status == StatusCode::NOT_FOUND {
        OpenAiError::new(
            status,
            "unknown_url",
            format!("no route answers `{method} {shown}` on this server; the routes are {ROUTES}"),
        )
    } else {
        let allowed = response
            .headers()
            .get(header::ALLOW)
            .and_then(|value| value.to_str().ok())
            .filter(|value| !value.is_empty())
            .unwrap_or("no method")
            .replace(',', ", ");
        OpenAiError::new(
            status,
            "method_not_allowed",
            format!("`{method} {shown}`: this route does not take {method}; it takes {allowed}"),
        )
    };
    // The body is replaced; the other headers (`Allow`, `x-request-id`, CORS) stay.
    let mut answer = answer.into_response();
    for (name, value) in response.headers() {
        if name != header::CONTENT_LENGTH && !answer.headers().contains_key(name) {
            answer.headers_mut().insert(name, value.clone());
        }
    }
    answer
}
