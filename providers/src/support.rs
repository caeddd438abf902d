//! Which request options each provider API can honour: the one place that decides it, asked
//! through [`ChatModel::unsupported_options`](crate::ChatModel::unsupported_options), and
//! [`ChatOptions::clear_option`], which drops one an operator lets go.
//!
//! An option is *unsupported* when the API can neither send it nor translate it into
//! something with the same effect. Options that only inform (the end user, metadata, the
//! service tier) are never unsupported: an API without a place for them simply does not get
//! them. `providers/COMPAT.md` tabulates the outcome per provider.

use std::collections::BTreeMap;

use crate::ChatOptions;

/// Every option [`ChatOptions::clear_option`] knows, by its OpenAI request-field name, in the
/// order [`ChatModel::unsupported_options`](crate::ChatModel::unsupported_options) lists them.
pub const OPTIONAL_FIELDS: [&str; 10] = [
    "stop",
    "top_p",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "parallel_tool_calls",
    "verbosity",
];

impl ChatOptions {
    /// Whether the option named `field` (an OpenAI request-field name of
    /// [`OPTIONAL_FIELDS`]) asks for something: set at all, or for `parallel_tool_calls`, set
    /// to `false` (`true` is every provider's default).
    #[cfg(any(feature = "__http", test))]
    pub(crate) fn asks_for(&self, field: &str) -> bool {
        match field {
            "stop" => !self.stop.is_empty(),
            "top_p" => self.top_p.is_some(),
            "seed" => self.seed.is_some(),
            "presence_penalty" => self.presence_penalty.is_some(),
            "frequency_penalty" => self.frequency_penalty.is_some(),
            "logit_bias" => !self.logit_bias.is_empty(),
            "logprobs" => self.logprobs,
            "top_logprobs" => self.top_logprobs.is_some(),
            "parallel_tool_calls" => self.parallel_tool_calls == Some(false),
            "verbosity" => self.verbosity.is_some(),
            _ => false,
        }
    }

    /// Resets the option named `field` (an OpenAI request-field name of [`OPTIONAL_FIELDS`])
    /// to its default, so that it is not sent; `false` when no such option exists.
    ///
    /// ```
    /// use providers::ChatOptions;
    ///
    /// let mut options = ChatOptions { seed: Some(7), ..ChatOptions::default() };
    /// assert!(options.clear_option("seed"));
    /// assert_eq!(options.seed, None);
    /// assert!(!options.clear_option("no_such_option"));
    /// ```
    pub fn clear_option(&mut self, field: &str) -> bool {
        match field {
            "stop" => self.stop.clear(),
            "top_p" => self.top_p = None,
            "seed" => self.seed = None,
            "presence_penalty" => self.presence_penalty = None,
            "frequency_penalty" => self.frequency_penalty = None,
            "logit_bias" => self.logit_bias.clear(),
            "logprobs" => self.logprobs = false,
            "top_logprobs" => self.top_logprobs = None,
            "parallel_tool_calls" => self.parallel_tool_calls = None,
            "verbosity" => self.verbosity = None,
            _ => return false,
        }
        true
    }
}

/// `logit_bias` read back: JSON object keys are strings, and a flattened `ChatOptions` hands
/// them over as strings whatever the key type, so each token id is parsed here.
pub(crate) fn token_biases<'de, D>(deserializer: D) -> Result<BTreeMap<u32, i32>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let biases: BTreeMap<String, i32> = serde::Deserialize::deserialize(deserializer)?;
    biases
        .into_iter()
        .map(|(token, bias)| {
            token.parse::<u32>().map(|id| (id, bias)).map_err(|_| {
                serde::de::Error::custom(format!(
                    "logit_bias key `{token}` is not a token id (a non-negative integer)"
                ))
            })
        })
        .collect()
}

/// The options of `options` among `never` (fields an API has no equivalent of) that ask for
/// something, in [`OPTIONAL_FIELDS`] order.
#[cfg(any(feature = "__http", test))]
pub(crate) fn unsupported(options: &ChatOptions, never: &[&'static str]) -> Vec<&'static str> {
    OPTIONAL_FIELDS
        .into_iter()
        .filter(|field| never.contains(field) && options.asks_for(field))
        .collect()
}

/// What OpenAI's Responses API has no place for: stop sequences and the sampling controls of
/// Chat Completions only.
#[cfg(feature = "openai")]
pub(crate) const OPENAI_RESPONSES: &[&str] = &[
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
];

/// What Anthropic's Messages API has no place for (`parallel_tool_calls: false` becomes
/// `tool_choice.disable_parallel_tool_use`).
#[cfg(feature = "anthropic")]
pub(crate) const ANTHROPIC: &[&str] = &[
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "verbosity",
];

/// What Gemini's `generateContent` has no place for: token biases, verbosity, and a way to
/// forbid several calls in one answer.
#[cfg(feature = "gemini")]
pub(crate) const GEMINI: &[&str] = &["logit_bias", "parallel_tool_calls", "verbosity"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_field_can_be_cleared_and_is_asked_for_once_set() {
        let mut options = ChatOptions {
            stop: vec!["END".to_owned()],
            top_p: Some(0.5),
            seed: Some(1),
            presence_penalty: Some(0.1),
            frequency_penalty: Some(0.2),
            logit_bias: [(50256, -100)].into(),
            logprobs: true,
            top_logprobs: Some(2),
            parallel_tool_calls: Some(false),
            verbosity: Some(crate::Verbosity::Low),
            ..ChatOptions::default()
        };
        assert_eq!(unsupported(&options, &OPTIONAL_FIELDS), OPTIONAL_FIELDS);
        for field in OPTIONAL_FIELDS {
            assert!(options.clear_option(field), "{field}");
        }
        assert_eq!(options, ChatOptions::default());
    }

    #[cfg(feature = "gemini")]
    #[test]
    fn parallel_tool_calls_true_is_every_providers_default() {
        let options = ChatOptions {
            parallel_tool_calls: Some(true),
            ..ChatOptions::default()
        };
        assert!(unsupported(&options, GEMINI).is_empty());
    }
}
