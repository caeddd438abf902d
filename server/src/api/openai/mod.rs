//! The OpenAI-compatible endpoints: Chat Completions, Responses, models and embeddings, each
//! in its folder, with every error in OpenAI's shape (`error`) so the official SDKs read it,
//! those of paths and methods no route takes included (`unrouted`).

pub(crate) mod chat_completions;
pub(crate) mod embeddings;
pub mod error;
pub(crate) mod gateway;
pub(crate) mod media;
pub(crate) mod models;
pub(crate) mod options;
pub(crate) mod responses;
pub(crate) mod signed_ids;
pub(crate) mod unrouted;

use axum::Router;
use axum::middleware;
use utoipa::OpenApi;

use crate::api::layers::{self, Routes};
use crate::api::state::App;

/// The OpenAI routes, behind the shared layers and, outside them, the layer that writes
/// every error in OpenAI's shape, whichever layer gave it (bearer token, body limit, content
/// type, origin, concurrency, shutdown).
pub(crate) fn router(app: &App) -> Routes {
    let routes = Router::new()
        .merge(chat_completions::router(app))
        .merge(responses::router(app))
        .merge(models::router())
        .merge(embeddings::router(app));
    layers::authenticated(app, routes).layer(middleware::from_fn(error::openai_errors))
}

/// The OpenAI endpoints' part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(
        chat_completions::handlers::create_chat_completion,
        chat_completions::handlers::get_chat_completion,
        responses::handlers::create_response,
        responses::handlers::get_response,
        responses::handlers::cancel_response,
        models::handlers::list_models,
        models::handlers::retrieve_model,
        embeddings::handlers::create_embeddings,
    ),
    components(schemas(
        chat_completions::schema::ChatCompletionRequest,
        chat_completions::encode::ChatCompletion,
        chat_completions::encode::ChatCompletionChunk,
        responses::schema::CreateResponseRequest,
        responses::encode::ResponseObject,
        responses::encode::ResponseEvent,
        error::OpenAiErrorBody,
        models::schema::ModelList,
        models::schema::ModelEntry,
        embeddings::schema::EmbeddingsRequest,
        embeddings::schema::EmbeddingList,
    ))
)]
pub(crate) struct Doc;
