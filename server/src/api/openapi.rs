//! `GET /openapi.json`: the OpenAPI document, generated from the handlers and types by utoipa.

use axum::Json;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::api::{chat_shell, health, openai};

/// The API's OpenAPI description: each protocol's part, merged, and the service's own routes.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Skein",
        description = "The Chat Shell service: agent responses as server-sent events; OpenAI-compatible Chat Completions and models."
    ),
    paths(health::health, openapi_json),
    components(schemas(crate::ErrorBody)),
    modifiers(&Protocols, &BearerAuth),
    tags(
        (name = "response", description = "Agent responses"),
        (name = "openai", description = "OpenAI-compatible endpoints"),
        (name = "service", description = "Health and description"),
    )
)]
pub struct ApiDoc;

/// Each protocol's part of the document.
struct Protocols;

impl Modify for Protocols {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        openapi.merge(chat_shell::Doc::openapi());
        openapi.merge(openai::Doc::openapi());
    }
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// This document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "service",
    responses(
        (status = 200, description = "The OpenAPI document", content_type = "application/json"),
        (status = 403, description = "Not on loopback without tokens, a `Host` that is not this server's, or a cross-origin request", body = crate::ErrorBody),
    )
)]
pub(crate) async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use utoipa::OpenApi as _;

    use super::ApiDoc;

    /// Every text of the document meant for people, with where it is.
    fn texts(value: &Value, at: &str, found: &mut Vec<(String, String)>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    let here = format!("{at}/{key}");
                    match value {
                        Value::String(text)
                            if matches!(key.as_str(), "description" | "summary" | "title") =>
                        {
                            found.push((here, text.clone()));
                        }
                        _ => texts(value, &here, found),
                    }
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    texts(item, &format!("{at}/{index}"), found);
                }
            }
            _ => {}
        }
    }

    /// The document is read by people and tools that know nothing of Rust: no rustdoc link
    /// syntax, no paths into the crate.
    #[test]
    fn descriptions_hold_no_rustdoc_markup() {
        let document = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let mut found = Vec::new();
        texts(&document, "", &mut found);
        assert!(found.len() > 100, "only {} texts found", found.len());
        let marked: Vec<String> = found
            .iter()
            .filter(|(_, text)| {
                ["[`", "`]", "](", "crate::", "Self::", "super::"]
                    .iter()
                    .any(|markup| text.contains(markup))
            })
            .map(|(at, text)| format!("{at}: {text}"))
            .collect();
        assert!(
            marked.is_empty(),
            "rustdoc markup in:\n{}",
            marked.join("\n")
        );
    }

    /// A request schema's properties, its flattened parts (`allOf`, `$ref`) included.
    fn properties(document: &Value, schema: &Value, found: &mut serde_json::Map<String, Value>) {
        if let Some(reference) = schema["$ref"].as_str() {
            let name = reference.rsplit('/').next().unwrap();
            properties(document, &document["components"]["schemas"][name], found);
        }
        for part in schema["allOf"].as_array().into_iter().flatten() {
            properties(document, part, found);
        }
        if let Some(own) = schema["properties"].as_object() {
            found.extend(own.clone());
        }
    }

    /// The fields both OpenAI endpoints share are one flattened part of each request: each
    /// request's schema still lists them, every one described.
    #[test]
    fn both_openai_requests_list_the_shared_fields_described() {
        let document = serde_json::to_value(ApiDoc::openapi()).unwrap();
        for (request, count) in [("ChatCompletionRequest", 37), ("CreateResponseRequest", 31)] {
            let mut found = serde_json::Map::new();
            properties(
                &document,
                &document["components"]["schemas"][request],
                &mut found,
            );
            assert_eq!(found.len(), count, "{request}: {:?}", found.keys());
            for field in [
                "model",
                "temperature",
                "top_p",
                "top_logprobs",
                "parallel_tool_calls",
                "user",
                "safety_identifier",
                "service_tier",
                "metadata",
                "prompt_cache_key",
                "prompt_cache_retention",
                "prompt_cache_options",
                "moderation",
            ] {
                let description = found[field]["description"].as_str().unwrap_or_default();
                assert!(
                    !description.is_empty(),
                    "{request}.{field} is not described"
                );
            }
        }
    }
}
