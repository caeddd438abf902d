//! Chat Shell: `POST /v1/response` (the agent's events as server-sent events, or one JSON
//! body; in the background with `background`), `GET /v1/response/{id}/events` (the stored
//! events after `Last-Event-ID`, then the live ones), `POST /v1/response/{id}/cancel` and
//! `POST /v1/response/{id}/approval` (the decisions a paused run waits for).
//!
//! - `schema`: the request ([`ResponseRequest`](schema::ResponseRequest)) and answer types.
//! - `plan`: a request to the service's `RunSpec`, each field honoured or refused.
//! - `encode`: the agent's events as Chat Shell's SSE frames.
//! - `run`: a run's frames numbered, stored with its record and sent; `record`: what the
//!   record keeps of the request; `takeover`: continuing a run another replica left.
//! - `handlers`, `replay`, `cancel`: the handlers; `events`: the events in the OpenAPI
//!   document.
//! - `approval`: tool approval: a run paused on calls a person must decide about, and
//!   `POST /v1/response/{id}/approval` continuing it.

mod approval;
mod cancel;
pub mod encode;
mod events;
pub(crate) mod handlers;
pub mod plan;
mod record;
mod replay;
mod run;
pub(crate) mod schema;
pub(crate) mod takeover;

use axum::Router;
use axum::routing::{get, post};
use utoipa::OpenApi;

use crate::api::layers::{self, Routes};
use crate::api::state::App;
use events::SseEvents;

/// Chat Shell's routes, behind the shared layers.
pub(crate) fn router(app: &App) -> Routes {
    let routes = Router::new()
        .route(
            "/v1/response",
            layers::json_body(app, post(handlers::create_response)),
        )
        .route("/v1/response/{id}/events", get(replay::response_events))
        .route("/v1/response/{id}/cancel", post(cancel::cancel_response))
        .route(
            "/v1/response/{id}/approval",
            layers::json_body(app, post(approval::decide::decide_response)),
        );
    layers::authenticated(app, routes)
}

/// Chat Shell's part of the OpenAPI document, its event stream included.
#[derive(OpenApi)]
#[openapi(
    paths(
        handlers::create_response,
        replay::response_events,
        cancel::cancel_response,
        approval::decide::decide_response
    ),
    components(schemas(
        schema::ResponseRequest,
        schema::ResponseBody,
        schema::BackgroundResponse,
        approval::ApprovalRequest,
        approval::DecisionBody,
        approval::DecisionName,
        encode::PendingCallPayload,
        encode::ResponseStartEvent,
        encode::ContentDeltaEvent,
        encode::ReasoningDeltaEvent,
        encode::ToolStartEvent,
        encode::ToolDoneEvent,
        encode::ToolApprovalEvent,
        encode::ResponseDoneEvent,
        encode::ResponseCancelledEvent,
        encode::ResponseErrorEvent,
    )),
    modifiers(&SseEvents)
)]
pub(crate) struct Doc;
