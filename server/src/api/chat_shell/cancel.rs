//! `POST /v1/response/{id}/cancel`: stops a Chat Shell response in flight.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::{Extension, Json};
use conversation_tree::ResponseStatus;
use conversation_tree::runs::{RunProtocol, RunStatus};
use http::StatusCode;
use service::Principal;

use crate::api::chat_shell::replay::store_error;
use crate::api::chat_shell::schema::CancelResponse;
use crate::api::error::ApiError;
use crate::api::state::App;

/// Cancels a response in flight, on whichever replica runs it: its model call and tools stop,
/// its stream ends with `response.cancelled`, and what it produced so far is logged. The
/// answer comes once the run has ended and its log says how: a run that finished before the
/// cancel reached it is a 409, never a `success` it did not have.
#[utoipa::path(
    post,
    path = "/v1/response/{id}/cancel",
    tag = "response",
    params(("id" = String, Path, description = "The response id (`resp-…`), or its request id (`X-Request-ID`) on the replica that runs it")),
    responses(
        (status = 200, description = "Cancelled", body = CancelResponse),
        (status = 401, description = "Missing or invalid bearer token", body = crate::ErrorBody),
        (status = 403, description = "Not on loopback without tokens, a `Host` that is not this server's, or a cross-origin request", body = crate::ErrorBody),
        (status = 404, description = "No such response of this caller in flight (another caller's runs are invisible)", body = crate::ErrorBody),
        (status = 202, description = "The cancel is recorded, but the replica running the response did not stop it within twice the lease's time to live (`cancel_pending`); its stream ends with `response.cancelled` when it does", body = crate::ErrorBody),
        (status = 409, description = "The response ended (completed or failed) before the cancel could stop it; nothing was cancelled", body = crate::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn cancel_response(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Json<CancelResponse>, ApiError> {
    // A run of this replica stops at once, and says how it ended.
    if let Some(ending) = app.service.runs().cancel(&id, caller) {
        return answer(&id, ending.wait().await);
    }
    // Another replica's: asked through its record, which that replica follows.
    let not_found = || ApiError::not_found("Request not found or already completed");
    let Some(records) = app.service.run_records() else {
        return Err(not_found());
    };
    // A run that had ended is as gone as one that never was, as on the replica that ran it.
    let running = records
        .get(&id, caller)
        .await
        .map_err(store_error)?
        .is_some_and(|run| run.protocol == RunProtocol::ChatShell && !run.status.is_terminal());
    if !running {
        return Err(not_found());
    }
    let run = records
        .cancel(&id, caller)
        .await
        .map_err(store_error)?
        .ok_or_else(not_found)?;
    answer(
        &id,
        match run.status {
            RunStatus::Cancelled => ResponseStatus::Cancelled,
            RunStatus::Failed => ResponseStatus::Failed,
            RunStatus::Queued | RunStatus::InProgress => {
                return Err(ApiError::new(
                    StatusCode::ACCEPTED,
                    "cancel_pending",
                    format!(
                        "the cancel of response `{id}` is recorded, but the replica running it \
                         has not stopped it yet; its stream ends with `response.cancelled` \
                         when it does"
                    ),
                ));
            }
            _ => ResponseStatus::Completed,
        },
    )
}

/// The answer of a cancel of a run that ended `ended`.
fn answer(id: &str, ended: ResponseStatus) -> Result<Json<CancelResponse>, ApiError> {
    match ended {
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
