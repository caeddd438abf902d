//! `GET /health`: whether the server serves, and its store answers.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use http::StatusCode;
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::api::state::App;

/// The answer of `GET /health`.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct HealthBody {
    /// `healthy`, or `shutting_down` while in-flight responses drain.
    pub status: String,
    /// The server's version.
    pub version: String,
    /// Seconds since the server started.
    pub uptime_seconds: u64,
    /// Responses streaming now.
    pub active_streams: usize,
    /// The conversation store: `{"type": "sqlite" | "postgres" | "memory", "status": "ok"}`.
    #[schema(value_type = Object)]
    pub storage: Value,
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
