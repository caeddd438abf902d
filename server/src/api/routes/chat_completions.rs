//! `POST /v1/chat/completions`: OpenAI's Chat Completions in front of every provider.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use agent_loop::{AgentEvent, AgentStream, CancellationToken, StopReason};
use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use conversation_tree::{NodeId, ResponseStatus, Reuse};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt as _};
use http::{HeaderValue, StatusCode, header};
use providers::{ChatResponse, FinishReason, ProviderError, ResponseBuilder, StreamEvent};

use crate::api::auth::Caller;
use crate::api::body::{self, BodyError};
use crate::api::encode::chat_completions::{ChatCompletion, ChunkEncoder};
use crate::api::encode::failure::FailureKind;
use crate::api::encode::openai_error::OpenAiError;
use crate::api::plan::chat_completions::chat_completion;
use crate::api::schema::ChatCompletionRequest;
use crate::api::state::App;
use crate::config::AgentAlias;
use crate::service::gateway::{CallLog, GatewayCall, GatewayError, Source, replay_events};
use crate::service::spec::{DEFAULT_TOOL_ROUNDS, ModelRequest, RunInput, RunSpec};

/// Repaired chain faults, when the client's conversation needed any.
const CHAIN_REPAIRS: &str = "skein-chain-repairs";
/// `hit` when the answer came from the conversation tree, `miss` when the model was called
/// (only when the operator lets the tree answer deterministic repeats).
const CACHE: &str = "skein-cache";
/// The conversation-tree node of a non-streamed answer.
const NODE_ID: &str = "skein-node-id";

/// Creates a chat completion: `chat.completion.chunk` events, or one `chat.completion` body.
#[utoipa::path(
    post,
    path = "/v1/chat/completions",
    tag = "openai",
    request_body = ChatCompletionRequest,
    responses(
        (status = 200, description = "With `stream: true`: a `text/event-stream` of `data: <chat.completion.chunk>` lines ending with `data: [DONE]`. Without: one `chat.completion` body.",
            content((String = "text/event-stream"), (ChatCompletion = "application/json"))),
        (status = 400, description = "A field cannot be honoured; `error.param` names it", body = crate::api::encode::openai_error::OpenAiErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = crate::api::encode::openai_error::OpenAiErrorBody),
        (status = 403, description = "No tokens configured and the client is not on loopback, a `Host` that is not this server's, or a cross-origin request", body = crate::api::encode::openai_error::OpenAiErrorBody),
        (status = 404, description = "The model's provider has no key on this server", body = crate::api::encode::openai_error::OpenAiErrorBody),
        (status = 408, description = "The body did not arrive within the body read timeout", body = crate::api::encode::openai_error::OpenAiErrorBody),
        (status = 413, description = "The body is larger than the server's limit", body = crate::api::encode::openai_error::OpenAiErrorBody),
        (status = 415, description = "The body is not sent as `Content-Type: application/json`", body = crate::api::encode::openai_error::OpenAiErrorBody),
        (status = 429, description = "The caller's concurrency limit is reached, or the provider's", body = crate::api::encode::openai_error::OpenAiErrorBody),
        (status = 502, description = "The provider failed", body = crate::api::encode::openai_error::OpenAiErrorBody),
        (status = 503, description = "The server is shutting down", body = crate::api::encode::openai_error::OpenAiErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn create_chat_completion(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    if app.runs.is_draining() {
        return Err(OpenAiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down; retry on another instance",
        ));
    }
    let body = body.map_err(|rejection| {
        OpenAiError::new(rejection.status(), "invalid_body", rejection.body_text())
    })?;
    let request = parse(&body)?;
    let model_name = request.model.trim().to_owned();
    let agent = app.config.agents.get(&model_name).cloned();
    if agent.is_some()
        && request
            .tools
            .as_ref()
            .is_some_and(|tools| !tools.is_empty())
    {
        return Err(OpenAiError::invalid(
            "tools",
            format!(
                "`{model_name}` is an agent that runs the server's own tools; leave `tools` out"
            ),
        ));
    }
    let call = chat_completion(request)?;
    let (stream, include_usage) = (call.stream, call.include_usage);
    let permit = app.limit.try_acquire(caller)?;
    let id = format!("chatcmpl-{}", uuid::Uuid::new_v4().simple());
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    if let Some(agent) = agent {
        let spec = agent_spec(&agent, call);
        let prepared = app.chat.prepare(spec).await.map_err(|error| {
            OpenAiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_agent",
                format!("the agent `{model_name}` cannot run: {error}"),
            )
        })?;
        let cancel = CancellationToken::new();
        // The run stops when the client goes away and its answer is dropped.
        let disconnect = cancel.clone().drop_guard();
        let events = prepared.stream(cancel);
        let mut encoder = ChunkEncoder::new(id.clone(), model_name.clone(), created, include_usage);
        if stream {
            return Ok(sse(events.map(move |event| {
                let _held = (&permit, &disconnect);
                agent_frames(&mut encoder, &event)
            })));
        }
        let answer = collect_agent(events).await?;
        drop((permit, disconnect));
        return Ok(
            axum::Json(ChatCompletion::new(id, model_name, created, &answer)).into_response(),
        );
    }
    let reuse = if app.config.reuse_deterministic_answers {
        Reuse::Deterministic
    } else {
        Reuse::Never
    };
    let prepared = app
        .chat
        .prepare_call(call, app.auth.owner(caller), reuse)
        .await
        .map_err(gateway_error)?;
    let (repairs, log) = (prepared.repairs, prepared.log);
    let cache = match (&prepared.source, reuse) {
        _ if log.is_none() => None,
        (_, Reuse::Never) => None,
        (Source::Stored(_), _) => Some("hit"),
        (Source::Model { .. }, _) => Some("miss"),
    };

    let mut response = if stream {
        let events: BoxStream<'static, Result<StreamEvent, ProviderError>> = match prepared.source {
            Source::Model { model, request } => {
                model.stream(*request).await.map_err(provider_error)?
            }
            Source::Stored(message) => {
                futures::stream::iter(replay_events(&message).into_iter().map(Ok)).boxed()
            }
        };
        let mut encoder = ChunkEncoder::new(id, model_name, created, include_usage);
        let mut pending = PendingLog {
            log,
            answer: ResponseBuilder::default(),
            runs: Arc::clone(&app.runs),
        };
        sse(events.map(move |event| {
            let _permit = &permit;
            match event {
                Ok(event) => {
                    pending.push(&event);
                    encoder
                        .encode(event)
                        .iter()
                        .map(|chunk| serde_json::to_string(chunk).unwrap_or_default())
                        .collect::<Vec<_>>()
                }
                // A stream that already began can only report its failure in-band.
                Err(error) => {
                    pending.end(ResponseStatus::Failed);
                    vec![serde_json::to_string(provider_error(error).body()).unwrap_or_default()]
                }
            }
        }))
    } else {
        let answer = match prepared.source {
            Source::Model { model, request } => {
                model.complete(*request).await.map_err(provider_error)?
            }
            Source::Stored(message) => {
                let mut builder = ResponseBuilder::default();
                for event in replay_events(&message) {
                    builder.push(event);
                }
                builder.finish().map_err(provider_error)?
            }
        };
        drop(permit);
        let node = match log {
            Some(log) => record(log, &answer, ResponseStatus::Completed).await,
            None => None,
        };
        let mut response =
            axum::Json(ChatCompletion::new(id, model_name, created, &answer)).into_response();
        if let Some(node) = node {
            response
                .headers_mut()
                .insert(NODE_ID, HeaderValue::from(node.get()));
        }
        response
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if repairs > 0 {
        headers.insert(CHAIN_REPAIRS, HeaderValue::from(repairs));
    }
    if let Some(cache) = cache {
        headers.insert(CACHE, HeaderValue::from_static(cache));
    }
    Ok(response)
}

/// The run an agent alias stands for, on the client's messages.
fn agent_spec(agent: &AgentAlias, call: GatewayCall) -> RunSpec {
    let options = call.request.options;
    let mut spec = RunSpec::new(
        ModelRequest::new(agent.model.clone()),
        RunInput::Messages(call.request.messages),
    );
    spec.system.clone_from(&agent.system);
    spec.tools.clone_from(&agent.tools);
    spec.max_rounds = agent.max_rounds.unwrap_or(DEFAULT_TOOL_ROUNDS);
    spec.temperature = options.temperature;
    spec.max_tokens = options.max_tokens;
    spec
}

/// The model events an agent event stands for: its answer text and reasoning, and its end
/// (the server's own tool activity is not the client's to see).
fn agent_stream_events(event: &AgentEvent) -> Vec<StreamEvent> {
    match event {
        AgentEvent::ContentDelta { text, .. } => vec![StreamEvent::TextDelta(text.clone())],
        AgentEvent::ReasoningDelta { text } => {
            vec![StreamEvent::ReasoningDelta { text: text.clone() }]
        }
        AgentEvent::ResponseDone {
            usage, stop_reason, ..
        } => {
            let finish = match stop_reason {
                StopReason::MaxTokens => FinishReason::Length,
                _ => FinishReason::Stop,
            };
            vec![StreamEvent::Usage(*usage), StreamEvent::Done { finish }]
        }
        _ => Vec::new(),
    }
}

/// The `data:` lines of one agent event.
fn agent_frames(encoder: &mut ChunkEncoder, event: &AgentEvent) -> Vec<String> {
    if let AgentEvent::ResponseError { error, .. } = event {
        let status = FailureKind::of(error).status();
        let failure = OpenAiError::new(status, "agent_error", error.to_string());
        return vec![serde_json::to_string(failure.body()).unwrap_or_default()];
    }
    agent_stream_events(event)
        .into_iter()
        .flat_map(|event| encoder.encode(event))
        .map(|chunk| serde_json::to_string(&chunk).unwrap_or_default())
        .collect()
}

/// A whole agent run as one answer.
async fn collect_agent(mut events: AgentStream) -> Result<ChatResponse, OpenAiError> {
    let mut answer = ResponseBuilder::default();
    while let Some(event) = events.next().await {
        match &event {
            AgentEvent::ResponseError { error, .. } => {
                let status = FailureKind::of(error).status();
                return Err(OpenAiError::new(status, "agent_error", error.to_string()));
            }
            AgentEvent::ResponseCancelled { .. } => {
                return Err(OpenAiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "cancelled",
                    "the run was cancelled (the server is shutting down); send the request again",
                ));
            }
            _ => {}
        }
        for event in agent_stream_events(&event) {
            answer.push(event);
        }
    }
    answer.finish().map_err(provider_error)
}

/// The log of a streamed answer: written when the answer is whole, or, when the stream fails
/// or the client goes away first, with what was streamed and how it ended, so that no
/// exchange is missing from the tree.
struct PendingLog {
    log: Option<CallLog>,
    answer: ResponseBuilder,
    runs: Arc<crate::service::runs::Runs>,
}

impl PendingLog {
    fn push(&mut self, event: &StreamEvent) {
        self.answer.push(event.clone());
        if self.answer.is_done() {
            self.end(ResponseStatus::Completed);
        }
    }

    /// Logs the answer as it stands, off the client's path; tracked, so a graceful shutdown
    /// waits for the write.
    fn end(&mut self, status: ResponseStatus) {
        let Some(log) = self.log.take() else { return };
        let answer = std::mem::take(&mut self.answer).into_partial();
        self.runs.spawn(async move {
            record(log, &answer, status).await;
        });
    }
}

impl Drop for PendingLog {
    fn drop(&mut self) {
        self.end(ResponseStatus::Cancelled);
    }
}

/// Logs `answer` as ended with `status`: the node it is. A store that fails is reported, never
/// the client's problem (the answer was delivered).
async fn record(log: CallLog, answer: &ChatResponse, status: ResponseStatus) -> Option<NodeId> {
    let conversation = log.conversation().to_string();
    match log.record(answer, status).await {
        Ok(node) => Some(node),
        Err(error) => {
            tracing::warn!(%conversation, %error, "cannot log the exchange");
            None
        }
    }
}

/// The SSE answer of a stream of `data:` payloads, ended by `[DONE]` as OpenAI's streams are.
fn sse(frames: impl Stream<Item = Vec<String>> + Send + 'static) -> Response {
    let events = frames
        .flat_map(futures::stream::iter)
        .chain(futures::stream::once(async { "[DONE]".to_owned() }))
        .map(|data| Ok::<_, Infallible>(Event::default().data(data)));
    Sse::new(events).into_response()
}

pub(crate) fn parse(body: &[u8]) -> Result<ChatCompletionRequest, OpenAiError> {
    body::parse(body).map_err(|error| match error {
        BodyError::Field { path, reason } => {
            OpenAiError::invalid(path.clone(), format!("`{path}`: {reason}"))
        }
        BodyError::NotJson(reason) => OpenAiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the body is not a JSON request: {reason}"),
        ),
        BodyError::Trailing(reason) => OpenAiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the body holds more than one JSON value: {reason}; send the request alone"),
        ),
    })
}

fn gateway_error(error: GatewayError) -> OpenAiError {
    match error {
        GatewayError::NoKey { .. } => {
            OpenAiError::new(StatusCode::NOT_FOUND, "model_not_found", error.to_string())
                .with_param("model")
        }
        GatewayError::Store(_) => OpenAiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "store_error",
            error.to_string(),
        ),
        GatewayError::Model(_) => {
            OpenAiError::new(StatusCode::BAD_REQUEST, "invalid_model", error.to_string())
                .with_param("model")
        }
    }
}

/// The answer to a provider's failure: its client errors are the client's (a tool schema it
/// refused, a context too long, a model it does not have), its limits are passed on, anything
/// else is a bad gateway. A failure that a retry cannot mend says so, so that SDKs that retry
/// 5xx answers by default do not call the provider again for nothing.
fn provider_error(error: ProviderError) -> OpenAiError {
    let (status, code) = match error.status() {
        Some(404) => (StatusCode::NOT_FOUND, "model_not_found"),
        Some(400 | 413 | 422) => (StatusCode::BAD_REQUEST, "provider_rejected_request"),
        Some(429) => (StatusCode::TOO_MANY_REQUESTS, "provider_rate_limited"),
        _ => (StatusCode::BAD_GATEWAY, "provider_error"),
    };
    let retryable = error.is_retryable();
    OpenAiError::new(status, code, error.to_string()).with_should_retry(retryable)
}
