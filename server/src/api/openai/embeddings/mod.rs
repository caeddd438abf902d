//! OpenAI embeddings: `POST /v1/embeddings`.
//!
//! - `schema`: the request ([`EmbeddingsRequest`](schema::EmbeddingsRequest)) and the answer.
//! - `handlers`: the handler: the inputs read, the service's embedding model called, the
//!   vectors written as floats or base64.

pub(crate) mod handlers;
pub(crate) mod schema;

use axum::Router;
use axum::routing::post;

use crate::api::layers::{self, Routes};
use crate::api::state::App;

/// The route, for the OpenAI router to put behind its layers.
pub(crate) fn router(app: &App) -> Routes {
    Router::new().route(
        "/v1/embeddings",
        layers::json_body(app, post(handlers::create_embeddings)),
    )
}
