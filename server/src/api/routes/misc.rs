//! `POST /v1/response/{id}/cancel` and `GET /health`.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::{Extension, Json};
use conversation_tree::ResponseStatus;
use http::StatusCode;
use serde_json::json;
use service::Principal;

use crate::api::error::ApiError;
use crate::api::schema::{CancelResponse, HealthBody};
use crate::api::state::App;

/// Cancels a response in flight: its model call and tools stop, its stream ends with
/// `response.cancelled`, and what it produced so far is logged. The answer comes once the run
/// has ended and its log says how: a run that finished before the cancel reached it is a 409,
/// never a `success` it did not have.
#[utoipa::path(
    post,
    path = "/v1/response/{id}/cancel",
    tag = "response",
    params(("id" = String, Path, description = "The response id (`resp-…`) or request id (`X-Request-ID`)")),
    responses(
        (status = 200, description = "Cancelled", body = CancelResponse),
        (status = 401, description = "Missing or invalid bearer token", body = crate::ErrorBody),
        (status = 403, description = "Not on loopback without tokens, a `Host` that is not this server's, or a cross-origin request", body = crate::ErrorBody),
        (status = 404, description = "No such response of this caller in flight (another caller's runs are invisible)", body = crate::ErrorBody),
        (status = 409, description = "The response ended (completed or failed) before the cancel could stop it; nothing was cancelled", body = crate::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn cancel_response(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Json<CancelResponse>, ApiError> {
    let Some(ending) = app.service.runs().cancel(&id, caller) else {
        return Err(ApiError::not_found(
            "Request not found or already completed",
        ));
    };
    match ending.wait().await {
        ResponseStatus::Cancelled => Ok(Json(CancelResponse {
            success: true,
            message: "Request cancelled".to_owned(),
        })),
        ended => Err(ApiError::new(
            StatusCode::CONFLICT,
            "already_ended",
            format!(
                "response `{id}` ended ({ended}) before the cancel could stop it; nothing was \
                 cancelled, and it is logged as {ended}"
            ),
        )),
    }
}

/// The server's state: 200 while it serves, 503 while it shuts down or when its store fails.
#[utoipa::path(
    get,
    path = "/health",
    tag = "service",
    responses(
        (status = 200, description = "Healthy", body = HealthBody),
        (status = 403, description = "Not on loopback without tokens, a `Host` that is not this server's, or a cross-origin request", body = crate::ErrorBody),
        (status = 503, description = "Shutting down, or the store fails", body = HealthBody),
    )
)]
pub(crate) async fn health(State(app): State<Arc<App>>) -> (StatusCode, Json<HealthBody>) {
    let store_ok = app.service.chat().store().conversations(1).await.is_ok();
    let draining = app.service.runs().is_draining();
    let status = if draining || !store_ok {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let body = HealthBody {
        status: if draining {
            "shutting_down"
        } else if store_ok {
            "healthy"
        } else {
            "unhealthy"
        }
        .to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        uptime_seconds: app.started.elapsed().as_secs(),
        active_streams: app.service.runs().active(),
        storage: json!({
            "type": app.service.store_kind().as_str(),
            "status": if store_ok { "ok" } else { "error" },
        }),
    };
    (status, Json(body))
}
