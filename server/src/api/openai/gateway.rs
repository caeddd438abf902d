//! What both OpenAI endpoints share: the answer's events from the model, the tree or an
//! agent, the log of a streamed answer, and the OpenAI errors of a gateway call.

use std::sync::Arc;

use agent_loop::{AgentEvent, CancellationToken, StopReason};
use conversation_tree::{NodeId, ResponseStatus, Reuse};
use futures::StreamExt as _;
use futures::stream::BoxStream;
use http::StatusCode;
use providers::{ChatResponse, FinishReason, ProviderError, ResponseBuilder, StreamEvent};
use tokio::sync::oneshot;

use crate::api::auth::Caller;
use crate::api::body::{self, BodyError};
use crate::api::failure::FailureKind;
use crate::api::openai::error::OpenAiError;
use crate::api::state::App;
use crate::config::AgentAlias;
use crate::service::gateway::{
    CallLog, GatewayCall, GatewayError, Logging, Source, answer_events, replay_events,
};
use crate::service::runs::Runs;
use crate::service::spec::{DEFAULT_TOOL_ROUNDS, ModelRequest, RunInput, RunSpec};
use tokio::sync::OwnedSemaphorePermit as Permit;

/// The events of an answer, in the order a model streams them. Its last item ends it: `Done`,
/// or why it stopped; when the exchange is logged, that item comes only once the log holds how
/// the answer ended, so a client told that an answer ended can rely on it being kept.
pub(crate) type Events = BoxStream<'static, Result<StreamEvent, Stopped>>;

/// Why an answer stopped before its `Done`.
#[derive(Debug)]
pub(crate) enum Stopped {
    /// The provider (or the agent) failed; this is what the client is told.
    Failed(OpenAiError),
    /// The answer was cancelled (a cancel request, or the server shutting down); what it had
    /// produced is kept.
    Cancelled,
}

impl Stopped {
    /// How the log records an answer that stopped this way.
    pub(crate) fn status(&self) -> ResponseStatus {
        match self {
            Stopped::Failed(_) => ResponseStatus::Failed,
            Stopped::Cancelled => ResponseStatus::Cancelled,
        }
    }

    /// The OpenAI error a client is told, in-band or as the answer.
    pub(crate) fn into_error(self) -> OpenAiError {
        match self {
            Stopped::Failed(error) => error,
            Stopped::Cancelled => OpenAiError::new(
                StatusCode::CONFLICT,
                "cancelled",
                "the answer was cancelled before it was whole (a cancel request, or the server \
                 shutting down); what it had produced is kept; send the request again for a \
                 whole answer",
            ),
        }
    }
}

/// An answer on its way.
pub(crate) struct Opened {
    /// Its events; logged as they pass (when the exchange is logged).
    pub(crate) events: Events,
    /// Chain faults repaired in the client's conversation.
    pub(crate) repairs: usize,
    /// `hit` or `miss` when the operator lets the tree answer deterministic repeats.
    pub(crate) cache: Option<&'static str>,
    /// The answer's node, once it is logged.
    pub(crate) node: Option<oneshot::Receiver<NodeId>>,
}

/// Repaired chain faults, when the client's conversation needed any.
const CHAIN_REPAIRS: &str = "skein-chain-repairs";
/// `hit` when the answer came from the conversation tree, `miss` when the model was called
/// (only when the operator lets the tree answer deterministic repeats).
const CACHE: &str = "skein-cache";
/// The conversation-tree node of a non-streamed answer.
const NODE_ID: &str = "skein-node-id";

/// Says how the gateway answered: `no-cache`, the chain repairs, whether the tree answered,
/// and (for a whole answer) the node it was logged as.
pub(crate) fn gateway_headers(
    response: &mut axum::response::Response,
    repairs: usize,
    cache: Option<&'static str>,
    node: Option<NodeId>,
) {
    use http::{HeaderValue, header};

    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if repairs > 0 {
        headers.insert(CHAIN_REPAIRS, HeaderValue::from(repairs));
    }
    if let Some(cache) = cache {
        headers.insert(CACHE, HeaderValue::from_static(cache));
    }
    if let Some(node) = node {
        headers.insert(NODE_ID, HeaderValue::from(node.get()));
    }
}

/// The node a whole answer was logged as, once the log is written (`None` when it is not
/// logged).
pub(crate) async fn logged_node(node: Option<oneshot::Receiver<NodeId>>) -> Option<NodeId> {
    node?.await.ok()
}

/// Answers 503 while the server shuts down.
fn refuse_when_draining(app: &App) -> Result<(), OpenAiError> {
    if app.runs.is_draining() {
        return Err(OpenAiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down; retry on another instance",
        ));
    }
    Ok(())
}

/// The request of an OpenAI endpoint, read while the server takes requests.
pub(crate) fn read_request<T: serde::de::DeserializeOwned>(
    app: &App,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<T, OpenAiError> {
    refuse_when_draining(app)?;
    let body = body.map_err(|rejection| {
        OpenAiError::new(rejection.status(), "invalid_body", rejection.body_text())
    })?;
    parse(&body)
}

/// Admits `call` of `caller`: the agent it runs (an alias of its model, or the caller's token
/// tools), which takes no client tools, and a place within the caller's concurrency limit.
pub(crate) fn admit(
    app: &App,
    caller: Caller,
    call: &GatewayCall,
) -> Result<(Option<AgentAlias>, Permit), OpenAiError> {
    let model = &call.model.config.model_id;
    let agent = app.agent_for(caller, model);
    if agent.is_some() && !call.request.tools.is_empty() {
        return Err(OpenAiError::invalid(
            "tools",
            format!(
                "`{model}` runs the server's own tools for this caller (an agent the operator \
                 configured); leave `tools` out"
            ),
        ));
    }
    let permit = app.limit.try_acquire(caller)?;
    Ok((agent, permit))
}

/// Now, in Unix seconds (`created`, `created_at`).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// Starts the answer to `call`: an agent's run for an agent alias, else the model's stream or
/// the answer the tree holds for this very request. Cancelling `cancel` stops the answer (the
/// agent's run, or the model's stream), which then ends with [`Stopped::Cancelled`].
pub(crate) async fn open(
    app: &App,
    agent: Option<&AgentAlias>,
    call: GatewayCall,
    caller: Caller,
    cancel: CancellationToken,
) -> Result<Opened, OpenAiError> {
    if let Some(agent) = agent {
        return agent_run(app, agent, call, caller, cancel).await;
    }
    let owner = app.auth.owner(caller);
    let reuse = if app.config.reuse_deterministic_answers {
        Reuse::Deterministic
    } else {
        Reuse::Never
    };
    let stream = call.stream;
    let prepared = app
        .chat
        .prepare_call(call, owner, reuse)
        .await
        .map_err(gateway_error)?;
    let cache = match (&prepared.source, reuse) {
        _ if prepared.log.is_none() => None,
        (_, Reuse::Never) => None,
        (Source::Stored(_), _) => Some("hit"),
        (Source::Model { .. }, _) => Some("miss"),
    };
    let events = match prepared.source {
        Source::Model { model, request } if stream => {
            model.stream(*request).await.map_err(provider_error)?
        }
        // A whole answer is asked for as one: the provider's non-streamed API.
        Source::Model { model, request } => {
            let answer = model.complete(*request).await.map_err(provider_error)?;
            futures::stream::iter(answer_events(&answer).into_iter().map(Ok)).boxed()
        }
        Source::Stored(message) => {
            futures::stream::iter(replay_events(&message).into_iter().map(Ok)).boxed()
        }
    };
    let (told, node) = oneshot::channel();
    let pending = PendingLog {
        log: prepared.log,
        answer: ResponseBuilder::default(),
        runs: Arc::clone(&app.runs),
        node: Some(told),
    };
    Ok(Opened {
        events: logged(events, pending, cancel),
        repairs: prepared.repairs,
        cache,
        node: Some(node),
    })
}

/// A model's answer as it streams, logged as it passes: the item that ends it (`Done`, a
/// failure, or the cancellation `cancel` asks for) is passed on only after the log holds the
/// answer and how it ended. A stream dropped before its end (the client went away) is logged
/// as cancelled.
fn logged(
    events: BoxStream<'static, Result<StreamEvent, ProviderError>>,
    pending: PendingLog,
    cancel: CancellationToken,
) -> Events {
    let state = Some((events, pending, cancel));
    futures::stream::unfold(state, |state| async move {
        let (mut events, mut pending, cancel) = state?;
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            event = events.next() => Some(event),
        };
        let item = match next {
            None => Err(Stopped::Cancelled),
            Some(Some(Ok(event))) => {
                if let Some(log) = &mut pending.log {
                    log.saw(&event);
                }
                pending.answer.push_ref(&event);
                if !pending.answer.is_done() {
                    return Some((Ok(event), Some((events, pending, cancel))));
                }
                Ok(event)
            }
            // A stream that already began can only report its failure in-band.
            Some(Some(Err(error))) => Err(Stopped::Failed(provider_error(error))),
            Some(None) => Err(Stopped::Failed(provider_error(
                ProviderError::StreamTruncated {
                    provider: None,
                    detail: "the provider's stream ended before the answer was whole".into(),
                },
            ))),
        };
        let status = match &item {
            Ok(_) => ResponseStatus::Completed,
            Err(stopped) => stopped.status(),
        };
        pending.commit(status).await;
        Some((item, None))
    })
    .boxed()
}

/// An agent alias's run on the client's messages, as the events of its answer (the server's
/// own tool activity is not the client's to see).
async fn agent_run(
    app: &App,
    agent: &AgentAlias,
    call: GatewayCall,
    caller: Caller,
    cancel: CancellationToken,
) -> Result<Opened, OpenAiError> {
    let name = call.model.config.model_id.clone();
    let options = call.request.options;
    let mut spec = RunSpec::new(
        ModelRequest::new(agent.model.clone()),
        RunInput::Messages(call.request.messages),
    );
    spec.system.clone_from(&agent.system);
    spec.tools = agent.builtin_tools().map(str::to_owned).collect();
    if agent.searches_knowledge() {
        spec.knowledge_bases = app.knowledge_bases(caller).to_vec();
    }
    spec.max_rounds = agent.max_rounds.unwrap_or(DEFAULT_TOOL_ROUNDS);
    spec.temperature = options.temperature;
    spec.max_tokens = options.max_tokens;
    spec.label = call.label;
    spec.owner = Some(app.auth.owner(caller).to_owned());
    spec.log = call.logging == Logging::On;
    let prepared = app.chat.prepare(spec).await.map_err(|error| {
        OpenAiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_agent",
            format!("the agent `{name}` cannot run: {error}"),
        )
    })?;
    let events = prepared
        .stream(cancel)
        .flat_map(|event| futures::stream::iter(agent_events(event)))
        .boxed();
    Ok(Opened {
        events,
        repairs: 0,
        cache: None,
        node: None,
    })
}

/// The answer events an agent event stands for (at most two): its answer text and reasoning,
/// its end, or its failure. The event is taken whole, so a delta's text moves on uncopied.
fn agent_events(event: AgentEvent) -> impl Iterator<Item = Result<StreamEvent, Stopped>> {
    let events = match event {
        AgentEvent::ContentDelta { text, .. } => [Some(Ok(StreamEvent::TextDelta(text))), None],
        AgentEvent::ReasoningDelta { text } => {
            [Some(Ok(StreamEvent::ReasoningDelta { text })), None]
        }
        AgentEvent::ResponseDone {
            usage, stop_reason, ..
        } => {
            let finish = match stop_reason {
                StopReason::MaxTokens => FinishReason::Length,
                _ => FinishReason::Stop,
            };
            [
                Some(Ok(StreamEvent::Usage(usage))),
                Some(Ok(StreamEvent::Done { finish })),
            ]
        }
        AgentEvent::ResponseError { error, .. } => {
            let status = FailureKind::of(&error).status();
            [
                Some(Err(Stopped::Failed(OpenAiError::new(
                    status,
                    "agent_error",
                    error.to_string(),
                )))),
                None,
            ]
        }
        AgentEvent::ResponseCancelled { .. } => [Some(Err(Stopped::Cancelled)), None],
        _ => [None, None],
    };
    events.into_iter().flatten()
}

/// A whole answer from its events, or why it stopped.
pub(crate) async fn collect(mut events: Events) -> Result<ChatResponse, Stopped> {
    let mut answer = ResponseBuilder::default();
    while let Some(event) = events.next().await {
        answer.push(event?);
    }
    answer
        .finish()
        .map_err(|error| Stopped::Failed(provider_error(error)))
}

/// The log of a streamed answer: written when the answer ends (whole, failed or cancelled), or,
/// when the client goes away first, with what was streamed as cancelled, so that no exchange
/// is missing from the tree.
struct PendingLog {
    log: Option<CallLog>,
    answer: ResponseBuilder,
    runs: Arc<Runs>,
    /// Told the answer's node once it is logged.
    node: Option<oneshot::Sender<NodeId>>,
}

impl PendingLog {
    /// Logs the answer as ended with `status` and waits until the log is written.
    async fn commit(&mut self, status: ResponseStatus) {
        let Some(written) = self.write(status) else {
            return;
        };
        if let (Ok(Some(node)), Some(told)) = (written.await, self.node.take()) {
            let _ = told.send(node);
        }
    }

    /// Starts writing the answer as it stands, ended with `status`, as a task of its own: a
    /// client that goes away while it is written does not cut the write short, and a graceful
    /// shutdown waits for it. The receiver is told the node (`None` when the store failed).
    fn write(&mut self, status: ResponseStatus) -> Option<oneshot::Receiver<Option<NodeId>>> {
        let log = self.log.take()?;
        let answer = std::mem::take(&mut self.answer).into_partial();
        let (written, node) = oneshot::channel();
        self.runs.spawn(async move {
            let _ = written.send(record(log, &answer, status).await);
        });
        Some(node)
    }
}

impl Drop for PendingLog {
    fn drop(&mut self) {
        drop(self.write(ResponseStatus::Cancelled));
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

/// The answer to a gateway call that cannot be made.
pub(crate) fn gateway_error(error: GatewayError) -> OpenAiError {
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
pub(crate) fn provider_error(error: ProviderError) -> OpenAiError {
    let (status, code) = match error.status() {
        Some(404) => (StatusCode::NOT_FOUND, "model_not_found"),
        Some(400 | 413 | 422) => (StatusCode::BAD_REQUEST, "provider_rejected_request"),
        Some(429) => (StatusCode::TOO_MANY_REQUESTS, "provider_rate_limited"),
        _ => (StatusCode::BAD_GATEWAY, "provider_error"),
    };
    let retryable = error.is_retryable();
    OpenAiError::new(status, code, error.to_string()).with_should_retry(retryable)
}

/// The request of an OpenAI endpoint, or the OpenAI error that says what is wrong with it.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, OpenAiError> {
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
