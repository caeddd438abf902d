//! `POST /v1/chat/completions`: OpenAI's Chat Completions in front of every provider, and
//! `GET /v1/chat/completions/{id}`: a stored completion read back from the conversation tree,
//! where each logged completion's node is labelled with its id.

use std::sync::Arc;

use agent_loop::CancellationToken;
use axum::Extension;
use axum::body::Bytes;
use axum::extract::Path;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use http::{StatusCode, header};
use providers::{ChatResponse, FinishReason, Usage};
use service::{Answer, Logging, Principal};

use super::schema::ChatCompletionRequest;
use crate::api::openai::chat_completions::encode::{ChatCompletion, ChunkEncoder};
use crate::api::openai::chat_completions::plan::chat_completion;
use crate::api::openai::error::OpenAiError;
use crate::api::openai::gateway::{
    admit, gateway_error, gateway_headers, read_request, stopped_error, store_failed, stored_usage,
    unix_now,
};
use crate::api::request_log::RequestLog;
use crate::api::sse;
use crate::api::state::App;

/// Creates a chat completion: `chat.completion.chunk` events, or one `chat.completion` body.
#[utoipa::path(
    post,
    path = "/v1/chat/completions",
    tag = "openai",
    request_body = ChatCompletionRequest,
    responses(
        (status = 200, description = "With `stream: true`: a `text/event-stream` of `data: <chat.completion.chunk>` lines ending with `data: [DONE]`. Without: one `chat.completion` body.",
            content((String = "text/event-stream"), (ChatCompletion = "application/json"))),
        (status = 400, description = "A field cannot be honoured; `error.param` names it", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 403, description = "No tokens configured and the client is not on loopback, a `Host` that is not this server's, or a cross-origin request", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 404, description = "The model's provider has no key on this server", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 408, description = "The body did not arrive within the body read timeout", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 409, description = "The answer was cancelled before it was whole (a cancel request, or the server shutting down); what it had produced is kept", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 413, description = "The body is larger than the server's limit", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 415, description = "The body is not sent as `Content-Type: application/json`", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 429, description = "The caller's concurrency limit is reached, or the provider's", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 502, description = "The provider failed", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 503, description = "The server is shutting down", body = crate::api::openai::error::OpenAiErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn create_chat_completion(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Principal>,
    Extension(log): Extension<RequestLog>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    let request: ChatCompletionRequest = read_request(&app, body)?;
    let model_name = request.model.trim().to_owned();
    let mut call = chat_completion(request)?;
    log.model(&model_name, &call.model.config);
    let (agent, permit) = admit(&app, caller, &call).await?;
    let include_usage = call.include_usage;
    let id = format!("chatcmpl-{}", uuid::Uuid::new_v4().simple());
    // A logged completion is found again by its id, as OpenAI's stored completions are.
    if call.logging == Logging::On {
        call.label = Some(id.clone());
    }
    let created = unix_now();
    let cancel = CancellationToken::new();
    // An agent's run stops when the client goes away and its answer is dropped.
    let disconnect = cancel.clone().drop_guard();
    let answer = app
        .service
        .call(agent.as_ref(), call, caller, cancel)
        .await
        .map_err(gateway_error)?;

    match answer {
        Answer::Streamed {
            events,
            provenance,
            meter,
        } => {
            log.streamed(meter);
            let mut encoder = ChunkEncoder::new(id, model_name, created, include_usage);
            // The answer's events, then the end of the stream (`[DONE]`, as OpenAI's streams
            // end).
            let events = events
                .map(Some)
                .chain(futures::stream::once(async { None }));
            let mut response = sse::response(events, move |event, frames| {
                let _held = (&permit, &disconnect);
                match event {
                    Some(Ok(event)) => encoder.write(event, frames),
                    // A stream that already began can only report its failure in-band.
                    Some(Err(stopped)) => frames.data(stopped_error(stopped).body()),
                    None => frames.text("[DONE]"),
                }
            });
            gateway_headers(&mut response, provenance, None);
            Ok(response)
        }
        Answer::Whole {
            answer,
            provenance,
            node,
        } => {
            drop((permit, disconnect));
            let answer = answer.map_err(stopped_error)?;
            log.usage(&answer.usage);
            let mut response =
                axum::Json(ChatCompletion::new(id, model_name, created, &answer)).into_response();
            gateway_headers(&mut response, provenance, node);
            Ok(response)
        }
    }
}

/// Reads a stored chat completion: one this caller created without `store: false`, as the
/// conversation tree holds it, with the `metadata` it was tagged with.
#[utoipa::path(
    get,
    path = "/v1/chat/completions/{id}",
    tag = "openai",
    params(("id" = String, Path, description = "The completion id (`chatcmpl-…`)")),
    responses(
        (status = 200, description = "The completion, with its `metadata`", body = ChatCompletion),
        (status = 401, description = "Missing or invalid bearer token", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 403, description = "No tokens configured and the client is not on loopback, a `Host` that is not this server's, or a cross-origin request", body = crate::api::openai::error::OpenAiErrorBody),
        (status = 404, description = "No completion of this caller has this id (or it was created with `store: false`)", body = crate::api::openai::error::OpenAiErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn get_chat_completion(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Response, OpenAiError> {
    // Responses share the tree's labels: only a completion's id reads back as a completion.
    let node = if id.starts_with("chatcmpl-") {
        app.service
            .chat()
            .owned_answer(&id, app.service.owner(caller))
            .await
            .map_err(store_failed)?
    } else {
        None
    };
    let Some(node) = node else {
        return Err(not_found(&id));
    };
    let turn = app
        .service
        .chat()
        .store()
        .turn(node.id())
        .await
        .map_err(store_failed)?;
    let usage = node.usage().map_or_else(Usage::default, stored_usage);
    let answer = ChatResponse {
        message: turn.response,
        usage,
        // The tree keeps the answer, not the provider's finish reason: it reads back as
        // stopped, or as calling tools when it called some.
        finish_reason: FinishReason::Stop,
        ..ChatResponse::default()
    };
    let completion = ChatCompletion {
        metadata: Some(node.metadata().clone()),
        ..ChatCompletion::new(
            id,
            node.model().unwrap_or_default().to_owned(),
            u64::try_from(node.datetime_utc().as_second()).unwrap_or(0),
            &answer,
        )
    };
    let mut response = axum::Json(completion).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache"),
    );
    Ok(response)
}

fn not_found(id: &str) -> OpenAiError {
    OpenAiError::new(
        StatusCode::NOT_FOUND,
        "completion_not_found",
        format!(
            "no chat completion `{id}` of yours is kept here: it was created with \
             `store: false`, by another caller, or the server stopped before its answer was \
             logged"
        ),
    )
}
