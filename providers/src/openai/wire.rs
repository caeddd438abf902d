//! Wire pieces the Chat Completions and Responses formats share: usage, media parts as data
//! URLs, finish reasons.

use base64::Engine as _;
use serde::Deserialize;

use crate::assemble::UsageUpdate;

/// Token counts in either format (`prompt_tokens` in Chat, `input_tokens` in Responses).
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(
        alias = "input_tokens",
        default,
        deserialize_with = "crate::wire_numbers::token_count"
    )]
    prompt_tokens: Option<u64>,
    #[serde(
        alias = "output_tokens",
        default,
        deserialize_with = "crate::wire_numbers::token_count"
    )]
    completion_tokens: Option<u64>,
    #[serde(alias = "input_tokens_details")]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(alias = "output_tokens_details")]
    completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek's name for cached prompt tokens.
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    prompt_cache_hit_tokens: Option<u64>,
    /// Only read to tell whether `completion_tokens` counts the reasoning (see `From`).
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    total_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    cached_tokens: Option<u64>,
    /// Responses: prompt tokens written to the cache.
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    cache_write_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct CompletionDetails {
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for UsageUpdate {
    fn from(usage: WireUsage) -> Self {
        let reasoning = usage
            .completion_tokens_details
            .and_then(|d| d.reasoning_tokens);
        // `output_tokens` counts everything generated. OpenAI's `completion_tokens` includes
        // the reasoning; xAI's leaves it out, which its `total_tokens` shows (prompt +
        // completion + reasoning). Counts are at most 2^40 each, so the sums cannot overflow.
        let output = match (usage.prompt_tokens, usage.completion_tokens, reasoning) {
            (Some(prompt), Some(completion), Some(reasoning))
                if reasoning > 0 && usage.total_tokens == Some(prompt + completion + reasoning) =>
            {
                Some(completion + reasoning)
            }
            _ => usage.completion_tokens,
        };
        let (cached, cache_write) = usage
            .prompt_tokens_details
            .map_or((None, None), |d| (d.cached_tokens, d.cache_write_tokens));
        UsageUpdate {
            input_tokens: usage.prompt_tokens,
            output_tokens: output,
            cached_input_tokens: cached.or(usage.prompt_cache_hit_tokens),
            cache_creation_tokens: cache_write,
            reasoning_tokens: reasoning,
        }
    }
}

/// Inline bytes as a `data:` URL.
pub(super) fn data_url(mime_type: &str, data: &[u8]) -> String {
    format!(
        "data:{mime_type};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(data)
    )
}

/// A file name for inline bytes of a non-image type (OpenAI wants one for `file` parts).
pub(super) fn file_name(mime_type: &str) -> String {
    let extension = mime_type.rsplit('/').next().unwrap_or("bin");
    format!("attachment.{extension}")
}

/// `finish_reason` of the Chat format.
pub(super) fn finish_reason(reason: &str) -> crate::FinishReason {
    use crate::FinishReason;
    match reason {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}
