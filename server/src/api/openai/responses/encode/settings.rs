//! [`ResponseSettings`]: what a `response` object repeats of the request that made it, beside
//! the fields it always had (tools, tool choice, temperature, output limit, `store`). A field
//! the request left out reads as OpenAI's default, as OpenAI's own objects show it, so a client
//! that reads `response.text.format` or `response.top_p` finds a value either way.

use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

/// OpenAI's sampling temperature when a request sets none.
pub const DEFAULT_TEMPERATURE: f64 = 1.0;

/// The request's settings as a `response` object repeats them.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ResponseSettings {
    /// Nucleus sampling asked for (default 1).
    pub top_p: f64,
    /// How many most likely tokens to report at each position (default 0).
    pub top_logprobs: u32,
    /// The text output options: `format` (default `{"type": "text"}`) and `verbosity`
    /// (default `medium`).
    pub text: TextSettings,
    /// The reasoning options: `effort` and `summary` (default null).
    pub reasoning: ReasoningSettings,
    /// `disabled` (the default) or `auto`.
    pub truncation: String,
    /// The end user named by the request.
    pub user: Option<String>,
    /// The hashed end-user id for safety checks.
    pub safety_identifier: Option<String>,
    /// The prompt-cache routing key.
    pub prompt_cache_key: Option<String>,
    /// How long a cached prompt is kept, as asked.
    pub prompt_cache_retention: Option<String>,
    /// The processing tier asked for, `default` when none was.
    pub service_tier: String,
    /// Whether the response ran in the background: never (default false).
    pub background: bool,
    /// The most calls to built-in tools, as asked.
    pub max_tool_calls: Option<u32>,
}

/// `text` of a `response` object.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct TextSettings {
    /// The answer's shape, as the request gave it.
    #[schema(value_type = Object)]
    pub format: Value,
    /// `low`, `medium` or `high`.
    pub verbosity: String,
}

/// `reasoning` of a `response` object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, ToSchema)]
pub struct ReasoningSettings {
    /// The reasoning effort asked for.
    pub effort: Option<String>,
    /// The summary asked for (`auto`, `concise` or `detailed`).
    pub summary: Option<String>,
}

impl Default for ResponseSettings {
    /// OpenAI's defaults: what a response object says of a request that set nothing.
    fn default() -> Self {
        ResponseSettings {
            top_p: 1.0,
            top_logprobs: 0,
            text: TextSettings {
                format: json!({"type": "text"}),
                verbosity: "medium".to_owned(),
            },
            reasoning: ReasoningSettings::default(),
            truncation: "disabled".to_owned(),
            user: None,
            safety_identifier: None,
            prompt_cache_key: None,
            prompt_cache_retention: None,
            service_tier: "default".to_owned(),
            background: false,
            max_tool_calls: None,
        }
    }
}
