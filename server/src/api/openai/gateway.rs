//! What both OpenAI endpoints share: reading a request, admitting a call, the headers that say
//! how the gateway answered, and the OpenAI errors of a call (the service answers it:
//! [`Service::call`](service::Service::call)).

use http::StatusCode;
use providers::ProviderError;
use service::Slot as Permit;
use service::{
    Failure, GatewayCall, GatewayError, Principal, Provenance, Stopped, config::AgentAlias,
};

use crate::api::body::{self, BodyError, KeepsUnknown};
use crate::api::failure::FailureKind;
use crate::api::openai::error::OpenAiError;
use crate::api::state::App;

/// The OpenAI error a client is told when its answer stopped before its end, in-band or as
/// the answer.
pub(crate) fn stopped_error(stopped: Stopped) -> OpenAiError {
    match stopped {
        Stopped::Failed(Failure::Provider(error)) => provider_error(error),
        Stopped::Failed(Failure::Agent(error)) => {
            let status = FailureKind::of(&error).status();
            OpenAiError::new(status, "agent_error", error.to_string())
        }
        Stopped::Cancelled => OpenAiError::new(
            StatusCode::CONFLICT,
            "cancelled",
            "the answer was cancelled before it was whole (a cancel request, or the server \
             shutting down); what it had produced is kept; send the request again for a \
             whole answer",
        ),
    }
}

/// Repaired chain faults, when the client's conversation needed any.
const CHAIN_REPAIRS: &str = "skein-chain-repairs";
/// `hit` when the answer came from the conversation tree, `miss` when the model was called
/// (only when the operator lets the tree answer deterministic repeats).
const CACHE: &str = "skein-cache";
/// The conversation-tree node of a non-streamed answer.
const NODE_ID: &str = "skein-node-id";
/// Request fields the provider could not honour, left out under the operator's
/// `drop_unsupported_params`, comma-separated, so a client can tell which of its fields had no
/// effect.
const DROPPED_PARAMS: &str = "x-skein-dropped-params";

/// Says how the gateway answered: `no-cache`, the chain repairs, whether the tree answered,
/// and (for a whole answer) the node it was logged as.
pub(crate) fn gateway_headers(
    response: &mut axum::response::Response,
    provenance: Provenance,
    node: Option<conversation_tree::NodeId>,
) {
    use http::{HeaderValue, header};

    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if provenance.repairs > 0 {
        headers.insert(CHAIN_REPAIRS, HeaderValue::from(provenance.repairs));
    }
    if let Some(cache) = provenance.cache {
        headers.insert(CACHE, HeaderValue::from_static(cache.as_str()));
    }
    if let Some(node) = node {
        headers.insert(NODE_ID, HeaderValue::from(node.get()));
    }
    if !provenance.dropped.is_empty()
        && let Ok(dropped) = HeaderValue::from_str(&provenance.dropped.join(","))
    {
        headers.insert(DROPPED_PARAMS, dropped);
    }
}

/// Answers 503 while the server shuts down.
fn refuse_when_draining(app: &App) -> Result<(), OpenAiError> {
    if app.service.runs().is_draining() {
        return Err(OpenAiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down; retry on another instance",
        ));
    }
    Ok(())
}

/// The request of an OpenAI endpoint, read while the server takes requests.
pub(crate) fn read_request<T: serde::de::DeserializeOwned + KeepsUnknown>(
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
pub(crate) async fn admit(
    app: &App,
    caller: Principal,
    call: &GatewayCall,
) -> Result<(Option<AgentAlias>, Permit), OpenAiError> {
    let agent = agent_of(app, caller, call)?;
    let permit = crate::api::limit::admit(&app.limit, caller, app.config.retry_after()).await?;
    Ok((agent, permit))
}

/// The agent `call` of `caller` runs (an alias of its model, or the caller's token tools),
/// which takes no client tools.
pub(crate) fn agent_of(
    app: &App,
    caller: Principal,
    call: &GatewayCall,
) -> Result<Option<AgentAlias>, OpenAiError> {
    let model = &call.model.config.model_id;
    let agent = app.service.agent_for(caller, model);
    if agent.is_some() && !call.request.tools.is_empty() {
        return Err(OpenAiError::invalid(
            "tools",
            format!(
                "`{model}` runs the server's own tools for this caller (an agent the operator \
                 configured); leave `tools` out"
            ),
        ));
    }
    Ok(agent)
}

/// The usage the tree kept for a stored answer, as a provider reports it: what both stored-object
/// GETs read back.
pub(crate) fn stored_usage(usage: &conversation_tree::TokenUsage) -> providers::Usage {
    providers::Usage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cached_input_tokens: usage.cached_input_tokens,
        cache_creation_tokens: usage.cache_creation_tokens,
        reasoning_tokens: usage.reasoning_tokens,
    }
}

/// The answer when the conversation store fails while a stored answer is read.
pub(crate) fn store_failed(error: conversation_tree::StoreError) -> OpenAiError {
    OpenAiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "store_error",
        format!("the conversation store failed: {error}"),
    )
}

/// Now, in Unix seconds (`created`, `created_at`).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
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
        GatewayError::Provider(error) => provider_error(error),
        GatewayError::Unsupported { ref fields, .. } => {
            let param = fields.join(", ");
            OpenAiError::new(
                StatusCode::BAD_REQUEST,
                "unsupported_parameter",
                error.to_string(),
            )
            .with_param(param)
        }
        // The client named the URL: what it must change is its request.
        GatewayError::Media(_) => OpenAiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_media_url",
            error.to_string(),
        ),
        // A media URL the agent's model needs fetched is the client's, as on a plain model.
        GatewayError::Agent { error: ref run, .. }
            if matches!(**run, service::RunError::Media(_)) =>
        {
            OpenAiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_media_url",
                error.to_string(),
            )
        }
        GatewayError::Agent { .. } => OpenAiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_agent",
            error.to_string(),
        ),
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

/// The request of an OpenAI endpoint, or the OpenAI error that says what is wrong with it:
/// every field the endpoint does not define is named at once.
pub(crate) fn parse<T: serde::de::DeserializeOwned + KeepsUnknown>(
    body: &[u8],
) -> Result<T, OpenAiError> {
    body::parse_naming_unknown(body).map_err(|error| match error {
        BodyError::Unknown(fields) => {
            let list = fields
                .iter()
                .map(|field| format!("`{field}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let (noun, pronoun) = if fields.len() == 1 {
                ("argument", "it")
            } else {
                ("arguments", "them")
            };
            OpenAiError::new(
                StatusCode::BAD_REQUEST,
                "unknown_parameter",
                format!(
                    "Unrecognized request {noun} supplied: {list}; the OpenAI API reference \
                     documents no such field here: remove {pronoun} or check the spelling"
                ),
            )
            .with_param(fields.join(", "))
        }
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
