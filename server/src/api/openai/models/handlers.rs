//! `GET /v1/models` and `GET /v1/models/{id}`: the model registry in OpenAI's shapes, with
//! whether this server holds a key for each model's provider.

use std::sync::Arc;

use super::schema::{ModelEntry, ModelList};
use crate::api::openai::error::OpenAiError;
use crate::api::state::App;
use axum::Json;
use axum::extract::{Path, State};
use http::StatusCode;
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
    Json(ModelList {
        object: "list",
        data: entries(&app),
    })
}

/// Describes one model. Ids may hold `/` (`openrouter/…`, `models/…`): the whole rest of
/// the path is the id.
#[utoipa::path(
    get,
    path = "/v1/models/{id}",
    tag = "openai",
    params(("id" = String, Path, description = "The model id, as `GET /v1/models` lists it (it may hold `/`)")),
    responses(
        (status = 200, description = "The model", body = ModelEntry),
        (status = 401, description = "Missing or invalid bearer token", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 403, description = "No tokens configured and the client is not on loopback, a `Host` that is not this server's, or a cross-origin request", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 404, description = "No such model (`model_not_found`)", body = crate::api::openai::error::OpenAiErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn retrieve_model(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<ModelEntry>, OpenAiError> {
    let listed = entries(&app).into_iter().find(|entry| entry.id == id);
    // A dated snapshot (`gpt-4o-2024-08-06`) is served like the family the list names.
    let snapshot = || {
        let info = ModelInfo::lookup(providers::detect_provider(None, &id), &id);
        info.known.then(|| registry_entry(&app, info))
    };
    listed.or_else(snapshot).map(Json).ok_or_else(|| {
        OpenAiError::new(
            StatusCode::NOT_FOUND,
            "model_not_found",
            format!(
                "the model `{id}` does not exist on this server; GET /v1/models lists those \
                     it serves"
            ),
        )
        .with_param("model")
    })
}

/// The entry of a model the registry knows.
fn registry_entry(app: &App, info: ModelInfo) -> ModelEntry {
    ModelEntry {
        available: app.service.chat().reaches(info.provider),
        owned_by: info.provider.as_str(),
        id: info.id,
        object: "model",
        created: 0,
        context_window: info.context_window,
        supports_reasoning: info.supports_reasoning,
    }
}

/// Every model this server names: `echo`, the operator's agents, then the registry.
fn entries(app: &App) -> Vec<ModelEntry> {
    let echo = ModelEntry {
        id: ECHO_MODEL_ID.to_owned(),
        object: "model",
        created: 0,
        owned_by: "skein",
        available: true,
        context_window: providers::DEFAULT_CONTEXT_WINDOW,
        supports_reasoning: false,
    };
    let registry = ModelInfo::all().map(|info| registry_entry(app, info));
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
    std::iter::once(echo)
        .chain(agents)
        .chain(registry)
        .collect()
}
