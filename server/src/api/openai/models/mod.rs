//! `GET /v1/models` and `GET /v1/models/{id}`: the model registry in OpenAI's shapes.

pub(crate) mod handlers;
pub(crate) mod schema;

use axum::Router;
use axum::routing::get;

use crate::api::layers::Routes;

/// The routes, for the OpenAI router to put behind its layers. The id is a wildcard: model
/// ids such as `openrouter/anthropic/claude-sonnet-4.5` hold slashes.
pub(crate) fn router() -> Routes {
    Router::new()
        .route("/v1/models", get(handlers::list_models))
        .route("/v1/models/{*id}", get(handlers::retrieve_model))
}
