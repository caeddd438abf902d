//! `GET /v1/models`: the model registry in OpenAI's list shape, with whether this server holds a
//! key for each model's provider.

use std::sync::Arc;

use super::schema::{ModelEntry, ModelList};
use crate::api::state::App;
use axum::Json;
use axum::extract::State;
use providers::{ECHO_MODEL_ID, ModelInfo};

/// Lists the models.
#[utoipa::path(
    get,
    path = "/v1/models",
    tag = "openai",
    responses(
        (status = 200, description = "The registry", body = ModelList),
        (status = 401, description = "Missing or invalid bearer token", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 403, description = "No tokens configured and the client is not on loopback, a `Host` that is not this server's, or a cross-origin request", body = crate::api::openai::error::OpenAiErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn list_models(State(app): State<Arc<App>>) -> Json<ModelList> {
    let chat = app.service.chat();
    let echo = ModelEntry {
        id: ECHO_MODEL_ID.to_owned(),
        object: "model",
        created: 0,
        owned_by: "skein",
        available: true,
        context_window: providers::DEFAULT_CONTEXT_WINDOW,
        supports_reasoning: false,
    };
    let registry = ModelInfo::all().map(|info| ModelEntry {
        available: chat.reaches(info.provider),
        owned_by: info.provider.as_str(),
        id: info.id,
        object: "model",
        created: 0,
        context_window: info.context_window,
        supports_reasoning: info.supports_reasoning,
    });
    // The operator's agents answer like models: they run on one and are reachable with it.
    let agents = app
        .service
        .config()
        .agents
        .iter()
        .map(|(name, agent)| ModelEntry {
            id: name.clone(),
            object: "model",
            created: 0,
            owned_by: "skein",
            available: true,
            context_window: ModelInfo::lookup(
                providers::detect_provider(None, &agent.model),
                &agent.model,
            )
            .context_window,
            supports_reasoning: false,
        });
    Json(ModelList {
        object: "list",
        data: std::iter::once(echo)
            .chain(agents)
            .chain(registry)
            .collect(),
    })
}
