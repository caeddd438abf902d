//! OpenAI Responses: `POST /v1/responses`, `GET /v1/responses/{id}`,
//! `POST /v1/responses/{id}/cancel`.
//!
//! - `schema`: the request ([`CreateResponseRequest`](schema::CreateResponseRequest)).
//! - `file_urls`: `input_file` parts by URL, fetched before planning.
//! - `references`: `item_reference` input items resolved to the caller's stored items.
//! - `mcp`: `mcp` tools, checked against the operator's MCP servers.
//! - `plan`: a request to a gateway call, continuing a stored response when asked.
//! - `encode`: the answer as numbered stream events or as one `response` object.
//! - `handlers`: the handlers.
//! - `background`: background responses (`background: true`), and their takeover by another
//!   replica.
//! - `stored_run`: a response's stored run read, streamed again and cancelled on any replica.

pub(crate) mod background;
pub mod encode;
pub(crate) mod file_urls;
pub(crate) mod handlers;
pub(crate) mod mcp;
pub(crate) mod plan;
mod references;
pub(crate) mod schema;
mod stored_run;

use axum::Router;
use axum::routing::{get, post};

use crate::api::layers::{self, Routes};
use crate::api::state::App;

/// The routes, for the OpenAI router to put behind its layers.
pub(crate) fn router(app: &App) -> Routes {
    Router::new()
        .route(
            "/v1/responses",
            layers::json_body(app, post(handlers::create_response)),
        )
        .route("/v1/responses/{id}", get(handlers::get_response))
        .route("/v1/responses/{id}/cancel", post(handlers::cancel_response))
}
