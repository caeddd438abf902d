//! What a Chat Shell run's record keeps of its request, so that another replica can continue
//! it: the request as the client sent it, without its secrets, and what the server had
//! decided for it (the stored conversation, its owner, the knowledge bases offered).
//!
//! The record is stored in clear, so a key in `model_config.api_key`, headers in
//! `model_config.default_headers` (which may carry one) and `metadata.auth_token` are left
//! out and only named: a replica continuing the run refuses to run it with the server's key
//! instead of the client's.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The secret-bearing fields of a request, as paths of its JSON: never stored.
const SECRET_FIELDS: [(&str, &str); 3] = [
    ("model_config", "api_key"),
    ("model_config", "default_headers"),
    ("metadata", "auth_token"),
];

/// The `spec` of a Chat Shell run record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredRequest {
    /// The request body, without the fields named in `withheld`.
    pub(crate) request: Value,
    /// The secret fields the client sent and the record does not hold (`model_config.api_key`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) withheld: Vec<String>,
    /// The request id (`X-Request-ID`).
    pub(crate) request_id: String,
    /// The conversation as stored (namespaced by its owner).
    pub(crate) conversation: String,
    /// The conversation as the client names it.
    pub(crate) client_conversation: String,
    /// The owner a new conversation is created with (`None`: it existed).
    #[serde(default)]
    pub(crate) owner: Option<String>,
    /// The knowledge bases the caller was offered.
    #[serde(default)]
    pub(crate) offered_bases: Vec<String>,
}

impl StoredRequest {
    /// The record of `body` (a request that parsed), its secrets left out.
    pub(crate) fn new(body: &[u8]) -> Self {
        let mut request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let mut withheld = Vec::new();
        for (object, field) in SECRET_FIELDS {
            let removed = request
                .get_mut(object)
                .and_then(Value::as_object_mut)
                .and_then(|object| object.remove(field));
            if removed.is_some_and(|value| !is_empty(&value)) {
                withheld.push(format!("{object}.{field}"));
            }
        }
        StoredRequest {
            request,
            withheld,
            request_id: String::new(),
            conversation: String::new(),
            client_conversation: String::new(),
            owner: None,
            offered_bases: Vec::new(),
        }
    }
}

/// Whether a withheld value asked for nothing (a `null` key, no headers).
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        Value::String(text) => text.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn secrets_are_named_and_never_kept() {
        let body = json!({
            "model_config": {"model_id": "gpt-4o", "api_key": "sk-client-secret",
                             "default_headers": {"x-key": "hdr-secret"}},
            "input": {"text": "Hi"},
            "metadata": {"auth_token": null, "task_id": 3},
        });
        let stored = StoredRequest::new(body.to_string().as_bytes());
        assert_eq!(
            stored.withheld,
            ["model_config.api_key", "model_config.default_headers"]
        );
        let text = serde_json::to_string(&stored).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(
            stored.request["model_config"],
            json!({"model_id": "gpt-4o"})
        );
        assert_eq!(stored.request["metadata"], json!({"task_id": 3}));
    }

    #[test]
    fn a_request_without_secrets_is_kept_whole() {
        let body = json!({"model_config": {"model_id": "echo"}, "input": {"text": "Hi"}});
        let stored = StoredRequest::new(body.to_string().as_bytes());
        assert!(stored.withheld.is_empty());
        assert_eq!(stored.request, body);
    }
}
