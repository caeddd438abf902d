//! Responses API answers → [`Chunk`]s: the SSE event stream and the non-streamed JSON.

use std::borrow::Cow;

use messages::{Reasoning, ToolCall};
use serde::Deserialize;

use crate::assemble::{Chunk, UsageUpdate};
use crate::http::sse::{EventParser, json};
use crate::openai::error::{ErrorEnvelope, WireError, stream_error};
use crate::openai::wire::WireUsage;
use crate::wire_numbers::Lenient;
use crate::{FinishReason, Provider, ProviderError};

const PROVIDER: Provider = Provider::OpenAi;

/// Joins the parts of a reasoning summary in [`Reasoning::text`].
const SUMMARY_SEPARATOR: &str = "\n\n";

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    output_index: Option<usize>,
    summary_index: Option<usize>,
    #[serde(borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<Cow<'a, str>>,
    item: Option<Item>,
    response: Option<Response>,
    #[serde(borrow)]
    error: Option<WireError<'a>>,
    /// Top-level `code` / `message` of an `error` event (the documented form; some
    /// recordings nest them under `error`).
    #[serde(borrow)]
    code: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
    encrypted_content: Option<String>,
    #[serde(default)]
    summary: Vec<TextPart>,
    #[serde(default)]
    content: Vec<TextPart>,
}

/// `summary_text`, `reasoning_text`, `output_text` or `refusal` parts.
#[derive(Deserialize)]
struct TextPart {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct Response {
    id: Option<String>,
    model: Option<String>,
    status: Option<String>,
    #[serde(default)]
    output: Vec<Item>,
    #[serde(default)]
    usage: Lenient<WireUsage>,
    incomplete_details: Option<IncompleteDetails>,
    error: Option<ResponseError>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    reason: Option<String>,
}

#[derive(Deserialize)]
struct ResponseError {
    code: Option<String>,
    message: Option<String>,
}

/// Parses the events of a Responses stream (`response.completed` ends it).
#[derive(Debug, Default)]
pub(in crate::openai) struct ResponsesStreamParser {
    started: bool,
}

impl EventParser for ResponsesStreamParser {
    fn parse(
        &mut self,
        _event: &str,
        data: &str,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let event: Event<'_> = json(PROVIDER, data)?;
        let key = event.output_index.unwrap_or(0);
        match event.kind.as_ref() {
            "response.created" | "response.in_progress" | "response.queued" => {
                if let (false, Some(response)) = (self.started, event.response) {
                    self.started = true;
                    out.push(Chunk::Started {
                        id: response.id,
                        model: response.model,
                    });
                }
            }
            "response.output_item.added" => match event.item {
                Some(item) if item.kind == "function_call" => out.push(Chunk::ToolCallStart {
                    key,
                    id: item.call_id.unwrap_or_default(),
                    name: item.name.unwrap_or_default(),
                    reasoning: None,
                }),
                Some(item) if item.kind == "reasoning" => out.push(Chunk::ReasoningSet {
                    key,
                    fields: Reasoning {
                        id: item.id,
                        ..Default::default()
                    },
                }),
                _ => {}
            },
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(delta) = event.delta {
                    out.push(Chunk::Text(delta.into_owned()));
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(delta) = event.delta {
                    out.push(Chunk::ToolCallArgs {
                        key,
                        arguments: delta.into_owned(),
                    });
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(arguments) = event.arguments {
                    out.push(Chunk::ToolCallArgsDone {
                        key,
                        arguments: arguments.into_owned(),
                    });
                }
            }
            "response.reasoning_summary_part.added" if event.summary_index.unwrap_or(0) > 0 => {
                out.push(Chunk::ReasoningDelta {
                    key,
                    text: SUMMARY_SEPARATOR.into(),
                });
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(delta) = event.delta {
                    out.push(Chunk::ReasoningDelta {
                        key,
                        text: delta.into_owned(),
                    });
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.item {
                    item_done(key, item, out);
                }
            }
            "response.completed" | "response.incomplete" => {
                if let Some(response) = event.response {
                    finish(response, out);
                }
                out.push(Chunk::Done);
            }
            "response.failed" => {
                let error = event.response.and_then(|r| r.error);
                return Err(ProviderError::Stream {
                    provider: PROVIDER,
                    error_type: error.as_ref().and_then(|e| e.code.clone()),
                    message: error
                        .and_then(|e| e.message)
                        .unwrap_or_else(|| "the response failed".into()),
                    retryable: false,
                });
            }
            "error" => {
                let error = event.error.unwrap_or(WireError::Object {
                    message: event.message,
                    kind: None,
                    code: event.code.map(Cow::into_owned),
                });
                return Err(stream_error(error));
            }
            _ => {}
        }
        Ok(())
    }

    const FINISH_REASON_COMPLETES: bool = false;

    const MISSING_END: &'static str = "no response.completed event before the stream ended";
}

/// A finished output item: the authoritative arguments, reasoning summary and encrypted
/// content (the encrypted token differs between `added` and `done`; `done`'s is the one to
/// send back).
fn item_done(key: usize, item: Item, out: &mut Vec<Chunk>) {
    match item.kind.as_str() {
        "function_call" => {
            if let Some(arguments) = item.arguments {
                out.push(Chunk::ToolCallArgsDone { key, arguments });
            }
            out.push(Chunk::ToolCallEnd { key });
        }
        "reasoning" => {
            out.push(Chunk::ReasoningSet {
                key,
                fields: reasoning(item),
            });
            out.push(Chunk::ReasoningEnd { key });
        }
        _ => {}
    }
}

fn reasoning(item: Item) -> Reasoning {
    let parts = if item.summary.is_empty() {
        item.content
    } else {
        item.summary
    };
    let text: Vec<String> = parts.into_iter().filter_map(|part| part.text).collect();
    Reasoning {
        id: item.id,
        text: text.join(SUMMARY_SEPARATOR),
        signature: None,
        encrypted: item.encrypted_content,
    }
}

fn finish(response: Response, out: &mut Vec<Chunk>) {
    if let Some(usage) = response.usage.0 {
        out.push(Chunk::Usage(UsageUpdate::from(usage)));
    }
    let reason = match response.status.as_deref() {
        Some("incomplete") => match response
            .incomplete_details
            .and_then(|d| d.reason)
            .as_deref()
        {
            Some("max_output_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None => FinishReason::Other("incomplete".into()),
        },
        _ => FinishReason::Stop,
    };
    out.push(Chunk::Finish(reason));
}

/// A non-streamed Responses object as chunks, in the order a stream would give them.
pub(in crate::openai) fn response_chunks(body: &str) -> Result<Vec<Chunk>, ProviderError> {
    if let Ok(envelope) = serde_json::from_str::<ErrorEnvelope<'_>>(body) {
        return Err(stream_error(envelope.error));
    }
    let mut response: Response = json(PROVIDER, body)?;
    let mut out = vec![Chunk::Started {
        id: response.id.take(),
        model: response.model.take(),
    }];
    if let (Some("failed"), Some(error)) = (response.status.as_deref(), response.error.take()) {
        return Err(ProviderError::Stream {
            provider: PROVIDER,
            error_type: error.code,
            message: error
                .message
                .unwrap_or_else(|| "the response failed".into()),
            retryable: false,
        });
    }
    for (key, item) in std::mem::take(&mut response.output).into_iter().enumerate() {
        match item.kind.as_str() {
            "reasoning" => {
                out.push(Chunk::ReasoningSet {
                    key,
                    fields: reasoning(item),
                });
                out.push(Chunk::ReasoningEnd { key });
            }
            "message" => {
                for part in item.content {
                    let text = if part.kind == "refusal" {
                        part.refusal
                    } else {
                        part.text
                    };
                    out.extend(text.map(Chunk::Text));
                }
            }
            "function_call" => out.push(Chunk::ToolCall(ToolCall::new(
                item.call_id.unwrap_or_default(),
                item.name.unwrap_or_default(),
                item.arguments.unwrap_or_default(),
            ))),
            _ => {}
        }
    }
    finish(response, &mut out);
    out.push(Chunk::Done);
    Ok(out)
}
