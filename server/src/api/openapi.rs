//! `GET /openapi.json`: the OpenAPI document, generated from the handlers and types by utoipa.

use axum::Json;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::api::chat_shell::events::SseEvents;
use crate::encode::chat_shell;
use crate::schema;

/// The API's OpenAPI description.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Skein",
        description = "The Chat Shell service: agent responses as server-sent events; OpenAI-compatible Chat Completions and models."
    ),
    paths(
        crate::api::chat_shell::handlers::create_response,
        crate::api::misc::cancel_response,
        crate::api::misc::health,
        crate::api::openai::chat_completions::handlers::create_chat_completion,
        crate::api::openai::responses::handlers::create_response,
        crate::api::openai::responses::handlers::get_response,
        crate::api::openai::responses::handlers::cancel_response,
        crate::api::openai::models::handlers::list_models,
        openapi_json,
    ),
    components(schemas(
        schema::ResponseRequest,
        schema::ResponseBody,
        crate::ErrorBody,
        crate::schema::ChatCompletionRequest,
        crate::encode::chat_completions::ChatCompletion,
        crate::encode::chat_completions::ChatCompletionChunk,
        crate::schema::CreateResponseRequest,
        crate::encode::responses::ResponseObject,
        crate::encode::responses::ResponseEvent,
        crate::encode::openai_error::OpenAiErrorBody,
        crate::schema::ModelList,
        chat_shell::ResponseStartEvent,
        chat_shell::ContentDeltaEvent,
        chat_shell::ReasoningDeltaEvent,
        chat_shell::ToolStartEvent,
        chat_shell::ToolDoneEvent,
        chat_shell::ResponseDoneEvent,
        chat_shell::ResponseCancelledEvent,
        chat_shell::ResponseErrorEvent,
    )),
    modifiers(&BearerAuth, &SseEvents),
    tags(
        (name = "response", description = "Agent responses"),
        (name = "openai", description = "OpenAI-compatible endpoints"),
        (name = "service", description = "Health and description"),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// This document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "service",
    responses(
        (status = 200, description = "The OpenAPI document", content_type = "application/json"),
        (status = 403, description = "Not on loopback without tokens, a `Host` that is not this server's, or a cross-origin request", body = crate::ErrorBody),
    )
)]
pub(crate) async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
