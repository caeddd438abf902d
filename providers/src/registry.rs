//! [`ModelInfo`] and the model registry: context windows and output limits of known models.

use serde::{Deserialize, Serialize};

use crate::Provider;

/// What Skein knows about a model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model id as configured (e.g. `gpt-4o-mini-2024-07-18`).
    pub id: String,
    /// The protocol it speaks.
    pub provider: Provider,
    /// Context window in tokens (input plus output).
    pub context_window: u32,
    /// Maximum output tokens per response.
    pub max_output_tokens: u32,
    /// Whether the model reasons before answering (reasoning items, thinking blocks, thoughts).
    pub supports_reasoning: bool,
    /// Whether the model takes images.
    pub supports_vision: bool,
    /// Whether the figures come from the registry (`false`: the documented defaults for an
    /// unknown model, [`DEFAULT_CONTEXT_WINDOW`] and [`DEFAULT_MAX_OUTPUT_TOKENS`]; callers
    /// should leave more headroom with them than with a known model's figures).
    pub known: bool,
}

/// Context window assumed for a model the registry does not know.
pub const DEFAULT_CONTEXT_WINDOW: u32 = 128_000;
/// Output limit assumed for a model the registry does not know.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 4_096;

/// One registry row: a model family name and its figures.
struct Entry {
    name: &'static str,
    provider: Provider,
    context_window: u32,
    max_output_tokens: u32,
    reasoning: bool,
    vision: bool,
}

const fn entry(
    name: &'static str,
    provider: Provider,
    context_window: u32,
    max_output_tokens: u32,
    reasoning: bool,
    vision: bool,
) -> Entry {
    Entry {
        name,
        provider,
        context_window,
        max_output_tokens,
        reasoning,
        vision,
    }
}

use Provider::{Anthropic, Google, OpenAi};

/// The registry: each provider's models, widely used ones first, with the figures the
/// providers document. DeepSeek speaks the OpenAI protocol.
const MODELS: &[Entry] = &[
    // OpenAI (widely used).
    entry("gpt-4o", OpenAi, 128_000, 16_384, false, true),
    entry("gpt-4o-mini", OpenAi, 128_000, 16_384, false, true),
    entry("gpt-4-turbo", OpenAi, 128_000, 4_096, false, true),
    entry("o1", OpenAi, 200_000, 100_000, true, true),
    entry("o3", OpenAi, 200_000, 100_000, true, true),
    // OpenAI (current).
    entry("o1-mini", OpenAi, 128_000, 65_536, true, false),
    entry("o3-mini", OpenAi, 200_000, 100_000, true, false),
    entry("o4-mini", OpenAi, 200_000, 100_000, true, true),
    entry("gpt-4.1", OpenAi, 1_047_576, 32_768, false, true),
    entry("gpt-4.1-mini", OpenAi, 1_047_576, 32_768, false, true),
    entry("gpt-4.1-nano", OpenAi, 1_047_576, 32_768, false, true),
    entry("gpt-5", OpenAi, 400_000, 128_000, true, true),
    entry("gpt-5-mini", OpenAi, 400_000, 128_000, true, true),
    entry("gpt-5-nano", OpenAi, 400_000, 128_000, true, true),
    // Anthropic (widely used).
    entry("claude-3-5-sonnet", Anthropic, 200_000, 8_192, false, true),
    entry("claude-3-5-haiku", Anthropic, 200_000, 8_192, false, true),
    entry("claude-sonnet-4", Anthropic, 200_000, 64_000, true, true),
    entry("claude-opus-4", Anthropic, 200_000, 32_000, true, true),
    // Anthropic (current).
    entry("claude-3-7-sonnet", Anthropic, 200_000, 64_000, true, true),
    entry("claude-opus-4-1", Anthropic, 200_000, 32_000, true, true),
    entry("claude-sonnet-4-5", Anthropic, 200_000, 64_000, true, true),
    entry("claude-haiku-4-5", Anthropic, 200_000, 64_000, true, true),
    entry("claude-opus-4-5", Anthropic, 200_000, 64_000, true, true),
    // Google (widely used).
    entry("gemini-1.5-pro", Google, 2_097_152, 8_192, false, true),
    entry("gemini-1.5-flash", Google, 1_048_576, 8_192, false, true),
    entry("gemini-2.0-flash", Google, 1_048_576, 8_192, false, true),
    // Google (current).
    entry("gemini-2.5-pro", Google, 1_048_576, 65_536, true, true),
    entry("gemini-2.5-flash", Google, 1_048_576, 65_536, true, true),
    entry(
        "gemini-2.5-flash-lite",
        Google,
        1_048_576,
        65_536,
        true,
        true,
    ),
    entry(
        "gemini-3-pro-preview",
        Google,
        1_048_576,
        65_536,
        true,
        true,
    ),
    entry(
        "gemini-3-flash-preview",
        Google,
        1_048_576,
        65_536,
        true,
        true,
    ),
    // DeepSeek (OpenAI-compatible).
    entry("deepseek-chat", OpenAi, 128_000, 8_192, false, false),
    entry("deepseek-reasoner", OpenAi, 128_000, 65_536, true, false),
];

impl ModelInfo {
    /// What the registry knows about `model_id` served over `provider`.
    ///
    /// A row matches the id itself or any id that continues it after a non-alphanumeric
    /// character (`gpt-4o-2024-08-06` and `gpt-4o@proxy` are `gpt-4o`, `gpt-4o-mini-…` is the
    /// longer row `gpt-4o-mini`, `gpt-5.5` is `gpt-5`); the longest matching row wins, and
    /// matching ignores ASCII case. A row of another provider never matches, so a Claude id
    /// served through an OpenAI-compatible proxy keeps its limits only when the provider
    /// agrees. Unknown models get [`DEFAULT_CONTEXT_WINDOW`] and
    /// [`DEFAULT_MAX_OUTPUT_TOKENS`] with `known: false`.
    ///
    /// ```
    /// use providers::{ModelInfo, Provider};
    ///
    /// let info = ModelInfo::lookup(Provider::OpenAi, "gpt-4o-mini-2024-07-18");
    /// assert_eq!((info.context_window, info.max_output_tokens), (128_000, 16_384));
    /// assert_eq!(ModelInfo::lookup(Provider::Google, "gemini-1.5-pro").context_window, 2_097_152);
    /// assert!(!ModelInfo::lookup(Provider::OpenAi, "my-local-llama").known);
    /// ```
    pub fn lookup(provider: Provider, model_id: &str) -> ModelInfo {
        if provider == Provider::OpenRouter {
            return openrouter(model_id);
        }
        let id = model_id.trim().to_ascii_lowercase();
        let row = MODELS
            .iter()
            .filter(|row| row.provider == provider && continues(&id, row.name))
            .max_by_key(|row| row.name.len());
        match row {
            Some(row) => ModelInfo {
                id: model_id.to_owned(),
                provider,
                context_window: row.context_window,
                max_output_tokens: row.max_output_tokens,
                supports_reasoning: row.reasoning,
                supports_vision: row.vision,
                known: true,
            },
            None => ModelInfo::unknown(provider, model_id),
        }
    }

    /// The documented defaults for a model the registry does not know.
    pub fn unknown(provider: Provider, model_id: &str) -> ModelInfo {
        ModelInfo {
            id: model_id.to_owned(),
            provider,
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            supports_reasoning: false,
            supports_vision: false,
            known: false,
        }
    }

    /// Every model in the registry, with its family name as id (for `skein models`).
    pub fn all() -> impl Iterator<Item = ModelInfo> {
        MODELS
            .iter()
            .map(|row| ModelInfo::lookup(row.provider, row.name))
    }
}

/// An OpenRouter model (`vendor/model`): the vendor's figures for the model, served by
/// OpenRouter.
fn openrouter(model_id: &str) -> ModelInfo {
    let found = openrouter_vendor(model_id).map(|(vendor, model)| ModelInfo::lookup(vendor, model));
    ModelInfo {
        id: model_id.to_owned(),
        provider: Provider::OpenRouter,
        ..found.unwrap_or_else(|| ModelInfo::unknown(Provider::OpenRouter, model_id))
    }
}

/// The protocol whose registry rows describe an OpenRouter model (`vendor/model`), and the
/// model's id there.
fn openrouter_vendor(model_id: &str) -> Option<(Provider, &str)> {
    let (vendor, model) = model_id.trim().split_once('/')?;
    let vendor = match vendor.to_ascii_lowercase().as_str() {
        "openai" | "deepseek" => OpenAi,
        "anthropic" => Anthropic,
        "google" => Google,
        _ => return None,
    };
    Some((vendor, model))
}

/// Whether `id` is `name` or continues it after a non-alphanumeric character.
fn continues(id: &str, name: &str) -> bool {
    id.strip_prefix(name).is_some_and(|rest| {
        rest.chars()
            .next()
            .is_none_or(|c| !c.is_ascii_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_context_windows() {
        let cases = [
            (OpenAi, "gpt-4o", 128_000, 16_384),
            (OpenAi, "gpt-4o-mini", 128_000, 16_384),
            (OpenAi, "gpt-4-turbo", 128_000, 4_096),
            (OpenAi, "o1", 200_000, 100_000),
            (OpenAi, "o3", 200_000, 100_000),
            (Anthropic, "claude-3-5-sonnet-20241022", 200_000, 8_192),
            (Anthropic, "claude-3-5-haiku", 200_000, 8_192),
            (Anthropic, "claude-sonnet-4-20250514", 200_000, 64_000),
            (Anthropic, "claude-opus-4", 200_000, 32_000),
            (Google, "gemini-1.5-pro", 2_097_152, 8_192),
            (Google, "gemini-1.5-flash", 1_048_576, 8_192),
            (Google, "gemini-2.0-flash", 1_048_576, 8_192),
        ];
        for (provider, id, window, output) in cases {
            let info = ModelInfo::lookup(provider, id);
            assert!(info.known, "{id}");
            assert_eq!(
                (info.context_window, info.max_output_tokens),
                (window, output),
                "{id}"
            );
        }
    }

    #[test]
    fn longest_row_wins_and_alphanumeric_continuations_do_not_match() {
        assert_eq!(
            ModelInfo::lookup(OpenAi, "o1-mini").max_output_tokens,
            65_536
        );
        assert_eq!(
            ModelInfo::lookup(Anthropic, "claude-sonnet-4-5-20250929").max_output_tokens,
            64_000
        );
        assert_eq!(
            ModelInfo::lookup(Anthropic, "claude-opus-4-1").max_output_tokens,
            32_000
        );
        assert!(!ModelInfo::lookup(OpenAi, "gpt-4").known);
        assert!(!ModelInfo::lookup(OpenAi, "o10").known);
        assert!(ModelInfo::lookup(OpenAi, "GPT-5.5").supports_reasoning);
        assert!(!ModelInfo::lookup(Anthropic, "gpt-4o").known);
    }

    #[test]
    fn unknown_models_get_documented_defaults() {
        let info = ModelInfo::lookup(OpenAi, "qwen3-coder");
        assert_eq!(info, ModelInfo::unknown(OpenAi, "qwen3-coder"));
        assert_eq!(info.context_window, DEFAULT_CONTEXT_WINDOW);
        assert_eq!(info.max_output_tokens, DEFAULT_MAX_OUTPUT_TOKENS);
    }

    #[test]
    fn every_row_is_reachable_by_its_own_name() {
        for info in ModelInfo::all() {
            assert!(info.known, "{}", info.id);
        }
    }
}
