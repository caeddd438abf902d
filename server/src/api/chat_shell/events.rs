//! The server-sent events of `POST /v1/response` in the OpenAPI document.
//!
//! The payload schemas are derived from the encoder's types
//! ([`chat_shell`](crate::encode::chat_shell)) and listed as components by
//! [`ApiDoc`](crate::ApiDoc); [`SseEvents`] adds, as the `text/event-stream` schema
//! of the 200 answer, one event (OpenAPI 3.1 has no `itemSchema`; tools such as schemathesis
//! read `schema` as the schema of each event) that is exactly one of
//! `{event: <name>, data: <JSON text of that payload>}`. `cargo xtask schemathesis` checks real
//! streams against them.

use serde_json::json;
use utoipa::Modify;
use utoipa::openapi::{OpenApi, RefOr, Schema};

use crate::encode::chat_shell::ChatShellEvent;

/// Adds the `text/event-stream` event schema.
pub(crate) struct SseEvents;

fn schema(value: serde_json::Value) -> RefOr<Schema> {
    serde_json::from_value(value).expect("the event schema is a valid schema object")
}

impl Modify for SseEvents {
    fn modify(&self, openapi: &mut OpenApi) {
        let mut events = Vec::new();
        for (name, component) in ChatShellEvent::names() {
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
        // A resumed response streams the same events as one that starts.
        for path in ["/v1/response", "/v1/response/{id}/approval"] {
            let content = openapi
                .paths
                .paths
                .get_mut(path)
                .and_then(|item| item.post.as_mut())
                .and_then(|operation| operation.responses.responses.get_mut("200"))
                .and_then(|response| match response {
                    RefOr::T(response) => response.content.get_mut("text/event-stream"),
                    RefOr::Ref(_) => None,
                });
            if let Some(RefOr::T(content)) = content {
                content.schema = Some(event.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn document() -> Value {
        serde_json::to_value(<crate::api::openapi::ApiDoc as utoipa::OpenApi>::openapi()).unwrap()
    }

    #[test]
    fn the_document_describes_every_event() {
        let doc = document();
        for path in ["/v1/response", "/v1/response/{id}/approval"] {
            let content = &doc["paths"][path]["post"]["responses"]["200"]["content"];
            let events = content["text/event-stream"]["schema"]["oneOf"]
                .as_array()
                .unwrap();
            assert_eq!(events.len(), ChatShellEvent::names().len(), "{path}");
        }
        for (_, component) in ChatShellEvent::names() {
            assert!(
                doc["components"]["schemas"][component]["properties"].is_object(),
                "{component} is not in the document"
            );
        }
        assert_eq!(
            doc["components"]["schemas"]["StopReasonName"]["enum"],
            json!([
                "end_turn",
                "tool_limit",
                "max_tokens",
                "silent_exit",
                "approval_required"
            ])
        );
    }
}
