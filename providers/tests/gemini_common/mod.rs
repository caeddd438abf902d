//! Helpers of the Gemini fixture-replay tests (`gemini_replay.rs`, `gemini_generate.rs`).
#![allow(dead_code, unreachable_pub)]

use providers::{
    ChatModel, ChatRequest, ChatResponse, Message, StreamEvent, ToolSpec, Usage, model_from_config,
};
use serde_json::{Value, json};

use crate::support::{Replay, config, streamed};

/// Where a model's method lives under the `…/v1beta` base URL.
pub fn path(model: &str, method: &str) -> String {
    format!("/v1beta/models/{model}:{method}")
}

pub fn model(replay: &Replay, model_id: &str) -> Box<dyn ChatModel> {
    model_from_config(&config(model_id, &format!("{}/v1beta", replay.url()))).expect("model builds")
}

/// Streams `request` against `fixture` served as `model`'s `streamGenerateContent`.
pub async fn stream(
    model_id: &str,
    fixture: &str,
    request: ChatRequest,
) -> (Replay, Vec<StreamEvent>, ChatResponse) {
    let replay = Replay::fixture(&path(model_id, "streamGenerateContent"), fixture).await;
    let (events, response) = streamed(model(&replay, model_id).as_ref(), request)
        .await
        .unwrap_or_else(|err| panic!("{fixture}: {err}"));
    (replay, events, response)
}

/// Completes `request` against `fixture` served as `model`'s `generateContent`.
pub async fn complete(
    model_id: &str,
    fixture: &str,
    request: ChatRequest,
) -> (Replay, ChatResponse) {
    let replay = Replay::fixture(&path(model_id, "generateContent"), fixture).await;
    let response = model(&replay, model_id)
        .complete(request)
        .await
        .unwrap_or_else(|err| panic!("{fixture}: {err}"));
    (replay, response)
}

pub fn usage(input: u64, candidates: u64, thoughts: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: candidates + thoughts,
        reasoning_tokens: thoughts,
        ..Default::default()
    }
}

/// The signature on the `index`-th tool call of a response.
pub fn call_signature(response: &ChatResponse, index: usize) -> Option<String> {
    let call = response.message.tool_calls().nth(index)?;
    call.reasoning.as_ref()?.signature.clone()
}

/// The thoughtSignature of part `index` of content `turn` in a request body.
pub fn sent_signature(body: &Value, turn: usize, index: usize) -> Option<&str> {
    body["contents"][turn]["parts"][index]["thoughtSignature"].as_str()
}

/// Whether two base64 signatures hold the same bytes (the google-genai SDK re-encodes them
/// URL-safe on the way back; Skein sends the received string unchanged).
pub fn same_signature(ours: Option<&str>, theirs: Option<&str>) -> bool {
    let standard = |s: &str| s.replace('-', "+").replace('_', "/");
    match (ours, theirs) {
        (Some(ours), Some(theirs)) => standard(ours) == standard(theirs),
        _ => false,
    }
}

/// A follow-up: the conversation so far, the answer, and one tool message per result.
pub fn followup(
    mut messages: Vec<Message>,
    answer: &ChatResponse,
    results: &[(&str, &str)],
) -> Vec<Message> {
    messages.push(answer.message.clone());
    let ids: Vec<String> = answer.message.tool_calls().map(|c| c.id.clone()).collect();
    for (id, (name, content)) in ids.iter().zip(results) {
        messages.push(Message::tool_response(id.clone(), *name, *content));
    }
    messages
}

/// Every `functionCall` / `functionResponse` in a body, to check no minted id left Skein.
pub fn wire_ids(body: &Value) -> Vec<Value> {
    let mut ids = Vec::new();
    for content in body["contents"].as_array().into_iter().flatten() {
        for part in content["parts"].as_array().into_iter().flatten() {
            for kind in ["functionCall", "functionResponse"] {
                if let Some(id) = part.get(kind).and_then(|p| p.get("id")) {
                    ids.push(id.clone());
                }
            }
        }
    }
    ids
}

pub fn secret_tool() -> ToolSpec {
    // What pydantic derives for `def secret_retrieval_tool(password: str)`.
    ToolSpec {
        name: "secret_retrieval_tool".into(),
        description: "A tool that requires a password to retrieve a secret.".into(),
        parameters: json!({
            "properties": {"password": {"title": "Password", "type": "string"}},
            "required": ["password"],
            "type": "object",
            "additionalProperties": false
        }),
    }
}
