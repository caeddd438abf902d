//! `GET /v1/models`: the model registry in OpenAI's list shape.

pub(crate) mod handlers;
pub(crate) mod schema;

use axum::Router;
use axum::routing::get;

use crate::api::layers::Routes;

/// The route, for the OpenAI router to put behind its layers.
pub(crate) fn router() -> Routes {
    Router::new().route("/v1/models", get(handlers::list_models))
}
