//! The answers of `GET /v1/models` (OpenAI's list shape) and `GET /v1/models/{id}` (one model).

use serde::Serialize;
use utoipa::ToSchema;

/// The list.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ModelList {
    /// Always `list`.
    pub object: &'static str,
    /// The models, `echo` first.
    pub data: Vec<ModelEntry>,
}

/// One model.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ModelEntry {
    /// The id to send as `model`.
    pub id: String,
    /// Always `model`.
    pub object: &'static str,
    /// Always 0: the registry does not date its models.
    pub created: u64,
    /// The provider: `openai`, `anthropic`, `google`, `openrouter`, or `skein` for `echo`.
    pub owned_by: &'static str,
    /// Whether this server can reach it (it holds a key or an endpoint for the provider).
    pub available: bool,
    /// Tokens of context.
    pub context_window: u32,
    /// Whether it reasons.
    pub supports_reasoning: bool,
}
