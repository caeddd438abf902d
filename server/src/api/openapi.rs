//! `GET /openapi.json`: the OpenAPI document, generated from the handlers and types by utoipa.

use axum::Json;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::api::{chat_shell, health, openai};

/// The API's OpenAPI description: each protocol's part, merged, and the service's own routes.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Skein",
        description = "The Chat Shell service: agent responses as server-sent events; OpenAI-compatible Chat Completions and models."
    ),
    paths(health::health, openapi_json),
    components(schemas(crate::ErrorBody)),
    modifiers(&Protocols, &BearerAuth),
    tags(
        (name = "response", description = "Agent responses"),
        (name = "openai", description = "OpenAI-compatible endpoints"),
        (name = "service", description = "Health and description"),
    )
)]
pub struct ApiDoc;

/// Each protocol's part of the document.
struct Protocols;

impl Modify for Protocols {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        openapi.merge(chat_shell::Doc::openapi());
        openapi.merge(openai::Doc::openapi());
    }
}

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
