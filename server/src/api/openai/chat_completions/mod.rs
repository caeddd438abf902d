//! OpenAI Chat Completions: `POST /v1/chat/completions`, and `GET /v1/chat/completions/{id}`
//! for a stored completion.
//!
//! - `schema`: the request ([`ChatCompletionRequest`](schema::ChatCompletionRequest)).
//! - `plan`: a request to a gateway call, each field honoured or refused.
//! - `encode`: the answer as one `chat.completion` or as `chat.completion.chunk` events.
//! - `extra`: `extra_content` on tool calls, where a Gemini call's signature travels.
//! - `handlers`: the handlers.

pub mod encode;
pub(crate) mod extra;
pub(crate) mod handlers;
pub(crate) mod plan;
pub(crate) mod schema;

use axum::Router;
use axum::routing::{get, post};

use crate::api::layers::{self, Routes};
use crate::api::state::App;

/// The routes, for the OpenAI router to put behind its layers.
pub(crate) fn router(app: &App) -> Routes {
    Router::new()
        .route(
            "/v1/chat/completions",
            layers::json_body(app, post(handlers::create_chat_completion)),
        )
        .route(
            "/v1/chat/completions/{id}",
            get(handlers::get_chat_completion),
        )
}
