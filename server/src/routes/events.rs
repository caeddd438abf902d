//! The server-sent events of `POST /v1/response` in the OpenAPI document.
//!
//! The events' payloads are built by `agent_loop::AgentEvent::payload` as JSON, not from
//! Rust types utoipa could derive, so their schemas are written here and added by
//! [`SseEvents`]: one component per payload (`ResponseStartEvent`, …), and as the
//! `text/event-stream` schema of the 200 answer, one event (OpenAPI 3.1 has no `itemSchema`;
//! tools such as schemathesis read `schema` as the schema of each event) that is exactly one of
//! `{event: <name>, data: <JSON text of that payload>}`. `cargo xtask schemathesis` checks real
//! streams against them.

use serde_json::{Value, json};
use utoipa::Modify;
use utoipa::openapi::{OpenApi, RefOr, Schema};

/// Adds the event payload schemas and the `text/event-stream` event schema.
pub(crate) struct SseEvents;

/// `(SSE event name, component name, payload schema)` of every event.
fn payloads() -> Vec<(&'static str, &'static str, Value)> {
    let count = json!({"type": "integer", "format": "int64", "minimum": 0});
    let id = json!({"type": "string", "description": "The response id (`resp-…`)."});
    let always_null = json!({"type": "null", "description": "Always null (kept so clients that read the field still find it)."});
    vec![
        (
            "response.start",
            "ResponseStartEvent",
            object(
                "The run began (first event).",
                json!({
                    "id": id,
                    "model": {"type": "string", "description": "The model id."},
                    "created": {"type": "integer", "format": "int64", "minimum": 0,
                        "description": "When the run started, in Unix seconds."},
                }),
                &[],
            ),
        ),
        (
            "content.delta",
            "ContentDeltaEvent",
            object(
                "A piece of answer text.",
                json!({
                    "type": {"type": "string", "enum": ["text"]},
                    "text": {"type": "string"},
                    "block_id": {"type": "string",
                        "description": "The text block: `text-1`, `text-2`, … (one per model answer with text)."},
                    "block_offset": {"type": "integer", "format": "int64", "minimum": 0,
                        "description": "Characters of this block streamed before this delta."},
                }),
                &[],
            ),
        ),
        (
            "reasoning.delta",
            "ReasoningDeltaEvent",
            object(
                "A piece of the model's reasoning text.",
                json!({"text": {"type": "string"}}),
                &[],
            ),
        ),
        (
            "tool.start",
            "ToolStartEvent",
            object(
                "A tool call starts.",
                json!({
                    "id": {"type": "string", "description": "The tool-call id."},
                    "name": {"type": "string"},
                    "input": {
                        "type": ["object", "array", "string", "number", "integer", "boolean", "null"],
                        "description": "The arguments as JSON (the raw text as a JSON string when it is not JSON).",
                    },
                    "display_name": always_null,
                    "blocks": always_null,
                }),
                &[],
            ),
        ),
        (
            "tool.done",
            "ToolDoneEvent",
            object(
                "A tool call finished.",
                json!({
                    "id": {"type": "string", "description": "The tool-call id, as in `tool.start`."},
                    "name": {"type": "string"},
                    "output": {"type": "string", "description": "What the model reads: the output, or the error text."},
                    "duration_ms": count,
                    "error": {"type": ["string", "null"], "description": "The error, when the call failed."},
                    "sources": always_null,
                    "display_name": always_null,
                    "blocks": always_null,
                }),
                &[],
            ),
        ),
        (
            "response.done",
            "ResponseDoneEvent",
            object(
                "The run ended with an answer (or a silent exit).",
                json!({
                    "id": id,
                    "usage": object(
                        "Tokens of every model call of the run, summed.",
                        json!({
                            "input_tokens": count,
                            "output_tokens": count,
                            "total_tokens": count,
                            "cache_read_input_tokens": count,
                            "cache_creation_input_tokens": count,
                            "reasoning_tokens": count,
                        }),
                        &[],
                    ),
                    "stop_reason": {"type": "string",
                        "enum": ["end_turn", "tool_limit", "max_tokens", "silent_exit"]},
                    "sources": always_null,
                    "blocks": always_null,
                    "silent_exit": {"type": "boolean"},
                    "silent_exit_reason": {"type": ["string", "null"]},
                    "rounds": count,
                    "conversation_id": {"type": ["string", "null"]},
                    "node_ids": {"type": "array", "items": {"type": "integer", "format": "int64"}},
                    "compression": object(
                        "Present when context compression acted.",
                        json!({
                            "prompt_truncated": {"type": "boolean"},
                            "texts_truncated": count,
                            "pairs_summarized": count,
                            "pairs_pruned": count,
                            "sections_pruned": count,
                        }),
                        &[],
                    ),
                }),
                &["compression"],
            ),
        ),
        (
            "response.cancelled",
            "ResponseCancelledEvent",
            object(
                "The run was cancelled.",
                json!({
                    "id": id,
                    "partial_content": {"type": "string",
                        "description": "The answer text streamed before the cancellation."},
                }),
                &[],
            ),
        ),
        (
            "response.error",
            "ResponseErrorEvent",
            object(
                "The run failed.",
                json!({
                    "id": id,
                    "code": {"type": "string", "description": "A machine-readable code."},
                    "message": {"type": "string"},
                    "details": {"type": ["object", "null"],
                        "description": "`{\"type\": …, \"retryable\": …}` and, for HTTP errors, `\"status\"`."},
                }),
                &[],
            ),
        ),
    ]
}

/// A closed object schema: every property required except `optional`.
fn object(description: &str, properties: Value, optional: &[&str]) -> Value {
    let required: Vec<&String> = properties
        .as_object()
        .map(|properties| {
            properties
                .keys()
                .filter(|key| !optional.contains(&key.as_str()))
                .collect()
        })
        .unwrap_or_default();
    json!({
        "type": "object",
        "description": description,
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn schema(value: Value) -> RefOr<Schema> {
    serde_json::from_value(value).expect("the event schemas are valid schema objects")
}

impl Modify for SseEvents {
    fn modify(&self, openapi: &mut OpenApi) {
        let mut events = Vec::new();
        let components = openapi.components.get_or_insert_with(Default::default);
        for (name, component, payload) in payloads() {
            components
                .schemas
                .insert(component.to_owned(), schema(payload));
            events.push(json!({
                "type": "object",
                "description": format!("A `{name}` event."),
                "properties": {
                    "event": {"type": "string", "enum": [name]},
                    "data": {
                        "type": "string",
                        "contentMediaType": "application/json",
                        "contentSchema": {"$ref": format!("#/components/schemas/{component}")},
                    },
                    "id": {"type": "string"},
                    "retry": {"type": "integer"},
                },
                "required": ["event", "data"],
            }));
        }
        let event = schema(json!({
            "description": "One server-sent event: `event: <name>` and `data: <JSON payload>`.",
            "oneOf": events,
        }));
        let content = openapi
            .paths
            .paths
            .get_mut("/v1/response")
            .and_then(|item| item.post.as_mut())
            .and_then(|operation| operation.responses.responses.get_mut("200"))
            .and_then(|response| match response {
                RefOr::T(response) => response.content.get_mut("text/event-stream"),
                RefOr::Ref(_) => None,
            });
        if let Some(RefOr::T(content)) = content {
            content.schema = Some(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_describes_every_event() {
        let doc =
            serde_json::to_value(<crate::routes::openapi::ApiDoc as utoipa::OpenApi>::openapi())
                .unwrap();
        let content = &doc["paths"]["/v1/response"]["post"]["responses"]["200"]["content"];
        let events = content["text/event-stream"]["schema"]["oneOf"]
            .as_array()
            .unwrap();
        assert_eq!(events.len(), payloads().len());
        assert_eq!(
            doc["components"]["schemas"]["ResponseDoneEvent"]["properties"]["stop_reason"]["enum"]
                [0],
            "end_turn"
        );
    }

    #[test]
    fn every_payload_schema_is_a_schema_object() {
        for (name, _, payload) in payloads() {
            for (key, property) in payload["properties"].as_object().unwrap() {
                assert!(
                    serde_json::from_value::<RefOr<Schema>>(property.clone()).is_ok(),
                    "{name}.{key}: {property}"
                );
            }
        }
    }
}
