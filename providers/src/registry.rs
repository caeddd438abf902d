//! [`ModelInfo`] and the model registry: context windows and output limits of known models,
//! and the wire rules that differ between model families ([`ReasoningReplay`], which role
//! carries the system prompt).

use std::borrow::Cow;
use std::fmt;

use messages::{Message, Role};
use serde::{Deserialize, Serialize};

use crate::{Provider, ProviderError};

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

/// Whether the reasoning a model returned goes back to it in later requests: DeepSeek's
/// `reasoning_content`, OpenRouter's `reasoning_details`, Anthropic's signed thinking and
/// redacted-thinking blocks, Gemini's thought signatures and the Responses API's encrypted
/// reasoning items.
///
/// Each model has a default from the registry ([`ModelInfo::reasoning_replay`]), written from
/// what the vendor documents; [`ModelConfig::reasoning_replay`](crate::ModelConfig) overrides
/// it when a vendor changes its contract before the registry does. Reasoning that is not
/// replayed is left out of the request; the messages themselves are never changed.
///
/// In configuration files it is `never`, `tool_turns` or `always`:
///
/// ```
/// use providers::ReasoningReplay;
///
/// assert_eq!("tool_turns".parse::<ReasoningReplay>().unwrap(), ReasoningReplay::ToolTurns);
/// assert_eq!(ReasoningReplay::Always.to_string(), "always");
/// let replay: ReasoningReplay = serde_json::from_str("\"never\"").unwrap();
/// assert_eq!(replay, ReasoningReplay::Never);
/// let err = "sometimes".parse::<ReasoningReplay>().unwrap_err();
/// assert!(err.to_string().contains("`never`, `tool_turns` or `always`"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningReplay {
    /// Never sent back: every request goes without the reasoning of earlier answers.
    ///
    /// ```
    /// use providers::{ModelConfig, ReasoningReplay};
    ///
    /// // A DeepSeek deployment with thinking switched off has no reasoning to send back.
    /// let config = ModelConfig {
    ///     reasoning_replay: Some(ReasoningReplay::Never),
    ///     ..ModelConfig::new("deepseek-chat")
    /// };
    /// assert_eq!(config.reasoning_replay, Some(ReasoningReplay::Never));
    /// ```
    Never,
    /// Sent back only within a tool-call turn: on AI messages that call tools, and on the other
    /// AI messages of the same turn (from one human message to the next), where a model that
    /// reasons between tool calls continues its reasoning.
    ///
    /// ```
    /// use providers::{ModelInfo, Provider, ReasoningReplay};
    ///
    /// // DeepSeek's thinking mode needs a tool-call turn's reasoning back, and ignores the rest.
    /// let info = ModelInfo::lookup(Provider::OpenAi, "deepseek-reasoner");
    /// assert_eq!(info.reasoning_replay(), ReasoningReplay::ToolTurns);
    /// ```
    ToolTurns,
    /// Sent back on every AI message that has some.
    ///
    /// ```
    /// use providers::{ModelInfo, Provider, ReasoningReplay};
    ///
    /// let info = ModelInfo::lookup(Provider::Anthropic, "claude-sonnet-4-5");
    /// assert_eq!(info.reasoning_replay(), ReasoningReplay::Always);
    /// ```
    Always,
}

impl ReasoningReplay {
    /// The name used in configuration files: `never`, `tool_turns` or `always`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReasoningReplay::Never => "never",
            ReasoningReplay::ToolTurns => "tool_turns",
            ReasoningReplay::Always => "always",
        }
    }

    /// For each of `messages`, whether its reasoning goes back under this policy (always
    /// `false` for messages that are not AI messages).
    #[cfg_attr(not(feature = "__http"), allow(dead_code))]
    pub(crate) fn replayed(self, messages: &[Message]) -> Vec<bool> {
        let is_ai = |message: &Message| message.role == Role::Ai;
        match self {
            ReasoningReplay::Never => vec![false; messages.len()],
            ReasoningReplay::Always => messages.iter().map(is_ai).collect(),
            ReasoningReplay::ToolTurns => {
                let mut replayed = vec![false; messages.len()];
                let mut start = 0;
                while start < messages.len() {
                    // A turn runs from one human message to the next.
                    let end = messages[start + 1..]
                        .iter()
                        .position(|message| message.role == Role::Human)
                        .map_or(messages.len(), |offset| start + 1 + offset);
                    let turn = &messages[start..end];
                    let calls_tools = turn
                        .iter()
                        .any(|message| is_ai(message) && message.tool_calls().next().is_some());
                    if calls_tools {
                        for (index, message) in turn.iter().enumerate() {
                            replayed[start + index] = is_ai(message);
                        }
                    }
                    start = end;
                }
                replayed
            }
        }
    }
}

impl fmt::Display for ReasoningReplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ReasoningReplay {
    type Err = ProviderError;

    /// Case, surrounding spaces and `-` for `_` are accepted (`Tool-Turns`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "never" => Ok(ReasoningReplay::Never),
            "tool_turns" => Ok(ReasoningReplay::ToolTurns),
            "always" => Ok(ReasoningReplay::Always),
            _ => Err(ProviderError::config(format!(
                "unknown reasoning_replay `{}`: use `never`, `tool_turns` or `always`",
                text.trim()
            ))),
        }
    }
}

/// Which role carries the system prompt in a Chat Completions request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "openai"), allow(dead_code))]
pub(crate) enum SystemRole {
    /// `system`, what every chat model and compatible server takes.
    System,
    /// `developer`, what OpenAI's reasoning models take instead (on OpenAI's own endpoint).
    Developer,
    /// A `user` message: for models that refuse both `system` and `developer`.
    User,
}

impl SystemRole {
    /// The wire name of the role.
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            SystemRole::System => "system",
            SystemRole::Developer => "developer",
            SystemRole::User => "user",
        }
    }
}

/// Model families whose wire rules differ from their provider's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    /// OpenAI's chat models (GPT-4o, GPT-4.1, …).
    Gpt,
    /// OpenAI's reasoning models from o1-2024-12-17 on: o1, o3, o4-mini, GPT-5.
    OSeries,
    /// o1-mini and o1-preview, the first reasoning models.
    EarlyO1,
    /// DeepSeek's models on DeepSeek's API or any server copying it.
    DeepSeek,
}

/// (provider, model-id prefix, family), matched like the registry rows: the prefix itself or
/// a continuation after a non-alphanumeric character, the longest prefix winning.
const FAMILIES: &[(Provider, &str, Family)] = &[
    (OpenAi, "gpt-3.5", Family::Gpt),
    (OpenAi, "gpt-4", Family::Gpt),
    (OpenAi, "gpt-4o", Family::Gpt),
    (OpenAi, "chatgpt", Family::Gpt),
    (OpenAi, "o1", Family::OSeries),
    (OpenAi, "o3", Family::OSeries),
    (OpenAi, "o4", Family::OSeries),
    (OpenAi, "o4-mini", Family::OSeries),
    (OpenAi, "gpt-5", Family::OSeries),
    (OpenAi, "o1-mini", Family::EarlyO1),
    (OpenAi, "o1-preview", Family::EarlyO1),
    (OpenAi, "deepseek", Family::DeepSeek),
];

/// The family of `model_id` served over `provider`; an OpenRouter id (`vendor/model`) is
/// looked up under its vendor.
fn family(provider: Provider, model_id: &str) -> Option<Family> {
    let (provider, id) = match provider {
        Provider::OpenRouter => {
            let (vendor, model) = openrouter_vendor(model_id)?;
            (vendor, model.trim().to_ascii_lowercase())
        }
        other => (other, model_id.trim().to_ascii_lowercase()),
    };
    FAMILIES
        .iter()
        .filter(|(of, prefix, _)| *of == provider && continues(&id, prefix))
        .max_by_key(|(_, prefix, _)| prefix.len())
        .map(|(_, _, family)| *family)
}

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
    entry("o1-preview", OpenAi, 128_000, 32_768, true, false),
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

    /// Whether this model's reasoning goes back to it in later requests, by default (a
    /// [`ModelConfig::reasoning_replay`](crate::ModelConfig) overrides it). Computed from the
    /// provider and the model id, so a `ModelInfo` built by hand gets its model's policy too.
    ///
    /// ```
    /// use providers::{ModelInfo, Provider, ReasoningReplay};
    ///
    /// let replay = |provider, id| ModelInfo::lookup(provider, id).reasoning_replay();
    /// assert_eq!(replay(Provider::OpenAi, "deepseek-v4-flash"), ReasoningReplay::ToolTurns);
    /// assert_eq!(replay(Provider::OpenAi, "o3"), ReasoningReplay::Always);
    /// assert_eq!(replay(Provider::OpenAi, "qwen3-32b"), ReasoningReplay::ToolTurns);
    /// assert_eq!(replay(Provider::Anthropic, "claude-opus-4-5"), ReasoningReplay::Always);
    /// assert_eq!(replay(Provider::Google, "gemini-3-pro-preview"), ReasoningReplay::Always);
    /// assert_eq!(replay(Provider::OpenRouter, "google/gemini-2.5-pro"), ReasoningReplay::ToolTurns);
    /// ```
    pub fn reasoning_replay(&self) -> ReasoningReplay {
        use ReasoningReplay::{Always, ToolTurns};
        match (self.provider, family(self.provider, &self.id)) {
            // OpenRouter documents `reasoning_details` replay for tool calling, and the upstream
            // models that check it (Gemini signatures, DeepSeek thinking) check tool-call turns.
            (Provider::OpenRouter, _) => ToolTurns,
            // DeepSeek's thinking mode answers 400 when a tool-call turn comes back without its
            // `reasoning_content`, and ignores it on turns without tool calls.
            (_, Some(Family::DeepSeek)) => ToolTurns,
            // The Responses API asks for every reasoning item back and skips those it no longer
            // needs (OpenAI's Chat endpoint takes no reasoning at all, whatever the policy).
            (_, Some(Family::Gpt | Family::OSeries | Family::EarlyO1)) => Always,
            // Compatible servers with a thinking mode (Kimi, GLM, Qwen, gpt-oss) read a tool-call
            // turn's reasoning and drop older turns', and a few refuse fields they do not know.
            (Provider::OpenAi, None) => ToolTurns,
            // The API drops earlier turns' thinking itself (the newest models keep it) and needs
            // a tool-use turn's signed thinking back unmodified.
            (Provider::Anthropic, _) => Always,
            // Gemini 3 rejects a function call of the current turn without its signature, and
            // Google asks for every signature back on the part it came with.
            (Provider::Google, _) => Always,
        }
    }

    /// Whether an AI message with tool calls must carry `reasoning_content` back even when it
    /// has no reasoning (then an empty one): DeepSeek's thinking mode rejects a tool-call
    /// message without the field.
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    pub(crate) fn requires_reasoning_content_on_calls(&self) -> bool {
        self.provider == Provider::OpenAi
            && family(self.provider, &self.id) == Some(Family::DeepSeek)
    }

    /// Which role carries the system prompt in a Chat Completions request to OpenAI.
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    pub(crate) fn system_role(&self) -> SystemRole {
        match family(self.provider, &self.id) {
            // o1-mini and o1-preview (and their dated snapshots) answer 400 to a `system` and
            // to a `developer` message: the instructions can only come as user text.
            Some(Family::EarlyO1) => SystemRole::User,
            // From o1-2024-12-17 on, OpenAI's reasoning models take instructions as
            // `developer` messages (a `system` one is only converted to it).
            Some(Family::OSeries) => SystemRole::Developer,
            _ => SystemRole::System,
        }
    }

    /// Whether the model takes a JSON Schema for its answer natively. Only Anthropic's models
    /// before Claude 4.5 (Claude 3.x, Sonnet 4, Opus 4) lack it: their adapter makes them call
    /// a tool whose input schema is the answer's instead. Every other model is sent the schema
    /// in its provider's own field, unknown ones included (a newer model has it; an older one's
    /// refusal names the field).
    ///
    /// ```
    /// use providers::{ModelInfo, Provider};
    ///
    /// let native = |provider, id| ModelInfo::lookup(provider, id).native_json_schema();
    /// assert!(native(Provider::Anthropic, "claude-sonnet-4-5-20250929"));
    /// assert!(native(Provider::Anthropic, "claude-opus-4-1"));
    /// assert!(!native(Provider::Anthropic, "claude-sonnet-4-20250514"));
    /// assert!(!native(Provider::Anthropic, "claude-3-5-haiku-latest"));
    /// assert!(native(Provider::OpenAi, "gpt-4o"));
    /// ```
    pub fn native_json_schema(&self) -> bool {
        if self.provider != Provider::Anthropic {
            return true;
        }
        let id = self.id.trim().to_ascii_lowercase();
        let old_claude_4 = ["claude-sonnet-4", "claude-opus-4"].iter().any(|family| {
            id.strip_prefix(family).is_some_and(|rest| {
                // The family itself, a dated snapshot or `-latest`, not a later `-4-5`.
                rest.is_empty()
                    || rest.starts_with('@')
                    || rest == "-latest"
                    || rest.strip_prefix('-').is_some_and(|date| {
                        date.len() >= 8 && date.bytes().take(8).all(|b| b.is_ascii_digit())
                    })
            })
        });
        let before_4 = ["claude-2", "claude-3", "claude-instant"]
            .iter()
            .any(|family| id.starts_with(family));
        !(old_claude_4 || before_4)
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
    let found =
        openrouter_vendor(model_id).map(|(vendor, model)| ModelInfo::lookup(vendor, &model));
    ModelInfo {
        id: model_id.to_owned(),
        provider: Provider::OpenRouter,
        ..found.unwrap_or_else(|| ModelInfo::unknown(Provider::OpenRouter, model_id))
    }
}

/// The protocol whose registry rows describe an OpenRouter model (`vendor/model`), and the
/// model's id there.
///
/// OpenRouter writes Anthropic's versions with dots (`anthropic/claude-opus-4.5`,
/// `anthropic/claude-3.7-sonnet`) where Anthropic's ids have dashes (`claude-opus-4-5`,
/// `claude-3-7-sonnet`): read as written, `claude-opus-4.5` would be the older
/// `claude-opus-4` row and `claude-haiku-4.5` no row at all. Other vendors' ids have their dots
/// already (`gpt-4.1`, `gemini-2.5-pro`).
fn openrouter_vendor(model_id: &str) -> Option<(Provider, Cow<'_, str>)> {
    let (vendor, model) = model_id.trim().split_once('/')?;
    let vendor = match vendor.to_ascii_lowercase().as_str() {
        "openai" | "deepseek" => OpenAi,
        "anthropic" => return Some((Anthropic, dashed_versions(model))),
        "google" => Google,
        _ => return None,
    };
    Some((vendor, Cow::Borrowed(model)))
}

/// `id` with each `.` between two digits written `-` (`claude-3.7-sonnet` → `claude-3-7-sonnet`).
fn dashed_versions(id: &str) -> Cow<'_, str> {
    let bytes = id.as_bytes();
    let dotted = |i: usize| {
        bytes[i] == b'.'
            && i > 0
            && bytes[i - 1].is_ascii_digit()
            && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
    };
    if !(0..bytes.len()).any(dotted) {
        return Cow::Borrowed(id);
    }
    let dashed: Vec<u8> = (0..bytes.len())
        .map(|i| if dotted(i) { b'-' } else { bytes[i] })
        .collect();
    // Only ASCII `.` became ASCII `-`: still UTF-8.
    Cow::Owned(String::from_utf8(dashed).unwrap_or_else(|_| id.to_owned()))
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
    fn replay_defaults_by_family() {
        use ReasoningReplay::{Always, ToolTurns};
        for (provider, id, replay) in [
            (OpenAi, "deepseek-chat", ToolTurns),
            (OpenAi, "deepseek-reasoner", ToolTurns),
            (OpenAi, "DeepSeek-V4-Flash", ToolTurns),
            (OpenAi, "o1", Always),
            (OpenAi, "o1-mini-2024-09-12", Always),
            (OpenAi, "gpt-5.5", Always),
            (OpenAi, "gpt-4o", Always),
            (OpenAi, "gpt-oss-120b", ToolTurns),
            (OpenAi, "kimi-k2-thinking", ToolTurns),
            (Anthropic, "claude-3-7-sonnet", Always),
            (Anthropic, "claude-next", Always),
            (Google, "gemini-2.5-flash", Always),
            (Google, "gemini-4", Always),
            (
                Provider::OpenRouter,
                "anthropic/claude-sonnet-4.5",
                ToolTurns,
            ),
            (Provider::OpenRouter, "openai/o3", ToolTurns),
        ] {
            assert_eq!(
                ModelInfo::lookup(provider, id).reasoning_replay(),
                replay,
                "{id}"
            );
        }
        // A hand-built `ModelInfo` gets its model's policy.
        let info = ModelInfo {
            known: false,
            ..ModelInfo::unknown(OpenAi, "deepseek-v9")
        };
        assert_eq!(info.reasoning_replay(), ToolTurns);
        assert!(info.requires_reasoning_content_on_calls());
        assert!(!ModelInfo::lookup(OpenAi, "qwen3").requires_reasoning_content_on_calls());
        assert!(
            !ModelInfo::lookup(Provider::OpenRouter, "deepseek/deepseek-r1")
                .requires_reasoning_content_on_calls(),
            "OpenRouter takes reasoning_details, not reasoning_content"
        );
    }

    #[test]
    fn system_roles_by_family() {
        for (provider, id, role) in [
            (OpenAi, "o1-mini", SystemRole::User),
            (OpenAi, "O1-Preview-2024-09-12", SystemRole::User),
            (Provider::OpenRouter, "openai/o1-mini", SystemRole::User),
            (OpenAi, "o1", SystemRole::Developer),
            (OpenAi, "o1-2024-12-17", SystemRole::Developer),
            (OpenAi, "o3-mini", SystemRole::Developer),
            (OpenAi, "o4-mini-2025-04-16", SystemRole::Developer),
            (OpenAi, "gpt-5-nano", SystemRole::Developer),
            (OpenAi, "gpt-4o", SystemRole::System),
            (OpenAi, "o1x", SystemRole::System),
            (Anthropic, "o1-mini", SystemRole::System),
            (OpenAi, "deepseek-reasoner", SystemRole::System),
        ] {
            assert_eq!(ModelInfo::lookup(provider, id).system_role(), role, "{id}");
        }
    }

    #[test]
    fn replay_policies_pick_messages() {
        use messages::ToolCall;
        let calls = || Message::ai_tool_calls(None, vec![ToolCall::new("c", "f", "{}")]);
        let messages = [
            Message::system("s"),
            Message::human("no tools"),
            Message::ai("answer"),
            Message::human("tools"),
            Message::ai("thinking aloud"),
            calls(),
            Message::tool_response("c", "f", "done"),
            Message::ai("after the tool"),
            Message::human("again"),
            Message::ai("plain"),
        ];
        let ai: Vec<bool> = messages.iter().map(|m| m.role == Role::Ai).collect();
        assert_eq!(ReasoningReplay::Always.replayed(&messages), ai);
        assert_eq!(ReasoningReplay::Never.replayed(&messages), [false; 10]);
        assert_eq!(
            ReasoningReplay::ToolTurns.replayed(&messages),
            [
                false, false, false, false, true, true, false, true, false, false
            ]
        );
        // A tool call before any human message is a turn too.
        let opening = [Message::system("s"), calls(), Message::ai("x")];
        assert_eq!(
            ReasoningReplay::ToolTurns.replayed(&opening),
            [false, true, true]
        );
        assert!(ReasoningReplay::ToolTurns.replayed(&[]).is_empty());
    }

    #[test]
    fn replay_names() {
        for replay in [
            ReasoningReplay::Never,
            ReasoningReplay::ToolTurns,
            ReasoningReplay::Always,
        ] {
            assert_eq!(
                replay.to_string().parse::<ReasoningReplay>().ok(),
                Some(replay)
            );
            let json = serde_json::to_string(&replay).expect("encodes");
            assert_eq!(json, format!("\"{replay}\""));
        }
        assert_eq!(
            " Tool-Turns ".parse::<ReasoningReplay>().ok(),
            Some(ReasoningReplay::ToolTurns)
        );
        let err = "sometimes".parse::<ReasoningReplay>().unwrap_err();
        assert!(matches!(err, ProviderError::Config { .. }));
        assert!(
            err.to_string()
                .contains("unknown reasoning_replay `sometimes`"),
            "{err}"
        );
    }

    #[test]
    fn every_row_is_reachable_by_its_own_name() {
        for info in ModelInfo::all() {
            assert!(info.known, "{}", info.id);
        }
    }
}
