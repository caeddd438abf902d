//! The request fields Chat Completions and Responses share beyond the conversation (sampling,
//! log probabilities, the end user, metadata, caching hints), checked once here and read into
//! [`ChatOptions`], and the fields the gateway carries to no provider.

use std::collections::BTreeMap;

use providers::{ChatOptions, ServiceTier};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::api::openai::error::OpenAiError;

/// Most `metadata` pairs, and their longest key and value, as OpenAI limits them.
const METADATA_PAIRS: usize = 16;
const METADATA_KEY_CHARS: usize = 64;
const METADATA_VALUE_CHARS: usize = 512;

/// The request fields Chat Completions and Responses both define, with the same name and
/// meaning, as the client sent them: flattened into both requests. Fields whose name or place
/// differs per endpoint (the output limit, `verbosity`, the reasoning effort, log
/// probabilities) stay in each request.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct SharedFields {
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Nucleus sampling, 0 to 1.
    #[serde(default)]
    pub top_p: Option<f64>,
    /// 0 to 20: the most likely tokens to report at each position, where log probabilities
    /// are asked for (`logprobs` on Chat Completions, `include` of
    /// `message.output_text.logprobs` on Responses).
    #[serde(default)]
    pub top_logprobs: Option<u32>,
    /// Whether the model may call several tools at once (default true); `false` is sent to
    /// OpenAI and OpenRouter, becomes Anthropic's `disable_parallel_tool_use`, and Gemini has
    /// no equivalent (the operator's policy applies).
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// The end user (OpenAI `user`, Anthropic `metadata.user_id`).
    #[serde(default)]
    pub user: Option<String>,
    /// A stable, hashed id of the end user for the provider's safety checks.
    #[serde(default)]
    pub safety_identifier: Option<String>,
    /// `auto`, `default`, `flex`, `scale`, `priority` or `fast`.
    #[serde(default)]
    pub service_tier: Option<String>,
    /// Up to 16 string pairs describing the request.
    #[schema(value_type = Option<Object>)]
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    /// A routing key for OpenAI's prompt caching.
    #[serde(default)]
    pub prompt_cache_key: Option<String>,
    /// `in_memory` or `24h`: how long OpenAI keeps a cached prompt; informs only.
    #[serde(default)]
    pub prompt_cache_retention: Option<String>,
    /// Prompt-cache options; inform only.
    #[schema(value_type = Option<Object>)]
    #[serde(default)]
    pub prompt_cache_options: Option<Value>,
    /// OpenAI's moderation policy; not served (the operator's policy applies).
    #[schema(value_type = Option<Object>)]
    #[serde(default)]
    pub moderation: Option<Value>,
}

/// The option fields each endpoint names its own way, or has alone, as the client sent them.
#[derive(Debug, Default)]
pub(crate) struct EndpointFields {
    /// Chat Completions only.
    pub(crate) seed: Option<i64>,
    /// Chat Completions only.
    pub(crate) presence_penalty: Option<f64>,
    /// Chat Completions only.
    pub(crate) frequency_penalty: Option<f64>,
    /// Chat Completions only.
    pub(crate) logit_bias: Option<BTreeMap<String, i32>>,
    /// `logprobs` (Chat Completions) or `include` of `message.output_text.logprobs`
    /// (Responses).
    pub(crate) logprobs: bool,
    /// The verbosity, and the field it came in (`verbosity`, `text.verbosity`).
    pub(crate) verbosity: Option<(&'static str, String)>,
}

impl SharedFields {
    /// `options` with these fields and the endpoint's `own`, or the first field out of its
    /// documented range. The temperature is the caller's to read (it is checked with the
    /// model), and the unserved `prompt_cache_options` and `moderation` are not options.
    pub(crate) fn into_options(
        self,
        own: EndpointFields,
        mut options: ChatOptions,
    ) -> Result<ChatOptions, OpenAiError> {
        options.top_p = within("top_p", self.top_p, 0.0, 1.0)?;
        options.presence_penalty = within("presence_penalty", own.presence_penalty, -2.0, 2.0)?;
        options.frequency_penalty = within("frequency_penalty", own.frequency_penalty, -2.0, 2.0)?;
        options.seed = own.seed;
        options.logit_bias = logit_bias(own.logit_bias.unwrap_or_default())?;
        options.logprobs = own.logprobs;
        options.top_logprobs = match self.top_logprobs {
            Some(count) if count > 20 => {
                return Err(OpenAiError::invalid(
                    "top_logprobs",
                    format!("`top_logprobs` is {count}; it must be between 0 and 20"),
                ));
            }
            count => count,
        };
        options.parallel_tool_calls = self.parallel_tool_calls;
        options.verbosity = own
            .verbosity
            .map(|(field, value)| named(field, &value, "low, medium or high"))
            .transpose()?;
        options.user = self.user.filter(|user| !user.is_empty());
        options.safety_identifier = self.safety_identifier.filter(|id| !id.is_empty());
        options.service_tier = self
            .service_tier
            .map(|tier| {
                named::<ServiceTier>(
                    "service_tier",
                    &tier,
                    "auto, default, flex, scale, priority or fast",
                )
            })
            .transpose()?;
        options.metadata = metadata(self.metadata.unwrap_or_default())?;
        if let Some(retention) = self.prompt_cache_retention
            && !matches!(retention.as_str(), "in_memory" | "24h")
        {
            return Err(OpenAiError::invalid(
                "prompt_cache_retention",
                format!("`prompt_cache_retention` is `{retention}`; use in_memory or 24h"),
            ));
        }
        options.cache.key = self.prompt_cache_key.filter(|key| !key.is_empty());
        Ok(options)
    }
}

/// `value` when it lies within `low..=high`.
fn within(
    field: &str,
    value: Option<f64>,
    low: f64,
    high: f64,
) -> Result<Option<f64>, OpenAiError> {
    match value {
        Some(number) if !(low..=high).contains(&number) => Err(OpenAiError::invalid(
            field,
            format!("`{field}` is {number}; it must be between {low} and {high}"),
        )),
        value => Ok(value),
    }
}

/// A lowercase enum value of `field`, one of `choices`.
fn named<T: serde::de::DeserializeOwned>(
    field: &str,
    value: &str,
    choices: &str,
) -> Result<T, OpenAiError> {
    serde_json::from_value(serde_json::Value::String(value.to_owned()))
        .map_err(|_| OpenAiError::invalid(field, format!("`{field}` is `{value}`; use {choices}")))
}

/// `logit_bias` with its token ids read as numbers, each bias within -100..=100.
fn logit_bias(biases: BTreeMap<String, i32>) -> Result<BTreeMap<u32, i32>, OpenAiError> {
    biases
        .into_iter()
        .map(|(token, bias)| {
            let field = format!("logit_bias.{token}");
            let id = token.parse::<u32>().map_err(|_| {
                OpenAiError::invalid(
                    &field,
                    format!("`logit_bias` key `{token}` is not a token id; keys are token ids"),
                )
            })?;
            if !(-100..=100).contains(&bias) {
                return Err(OpenAiError::invalid(
                    &field,
                    format!("`{field}` is {bias}; a bias must be between -100 and 100"),
                ));
            }
            Ok((id, bias))
        })
        .collect()
}

/// `metadata` within OpenAI's limits: 16 pairs, keys of 64 characters, values of 512.
fn metadata(pairs: BTreeMap<String, String>) -> Result<BTreeMap<String, String>, OpenAiError> {
    if pairs.len() > METADATA_PAIRS {
        return Err(OpenAiError::invalid(
            "metadata",
            format!(
                "`metadata` has {} pairs; at most {METADATA_PAIRS} are allowed",
                pairs.len()
            ),
        ));
    }
    for (key, value) in &pairs {
        if key.chars().count() > METADATA_KEY_CHARS {
            return Err(OpenAiError::invalid(
                "metadata",
                format!("a `metadata` key is longer than {METADATA_KEY_CHARS} characters"),
            ));
        }
        if value.chars().count() > METADATA_VALUE_CHARS {
            return Err(OpenAiError::invalid(
                format!("metadata.{key}"),
                format!("`metadata.{key}` is longer than {METADATA_VALUE_CHARS} characters"),
            ));
        }
    }
    Ok(pairs)
}

/// The names of `fields` whose flag is set: request fields the client asked for that the
/// gateway carries to no provider, for the operator's policy.
pub(crate) fn unserved<const N: usize>(fields: [(&'static str, bool); N]) -> Vec<&'static str> {
    fields
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
}

/// Whether an optional JSON value asks for something (present, not `null`).
pub(crate) fn given(value: Option<&serde_json::Value>) -> bool {
    value.is_some_and(|value| !value.is_null())
}

#[cfg(test)]
mod tests {
    use providers::Verbosity;

    use super::*;

    #[test]
    fn out_of_range_values_are_named() {
        let fields = SharedFields {
            top_p: Some(1.5),
            ..SharedFields::default()
        };
        let error = fields
            .into_options(EndpointFields::default(), ChatOptions::default())
            .unwrap_err();
        assert_eq!(error.body().error.param.as_deref(), Some("top_p"));

        let own = EndpointFields {
            logit_bias: Some([("abc".to_owned(), 1)].into()),
            ..EndpointFields::default()
        };
        let error = SharedFields::default()
            .into_options(own, ChatOptions::default())
            .unwrap_err();
        assert!(error.body().error.message.contains("not a token id"));

        let fields = SharedFields {
            service_tier: Some("gold".to_owned()),
            ..SharedFields::default()
        };
        let error = fields
            .into_options(EndpointFields::default(), ChatOptions::default())
            .unwrap_err();
        assert!(error.body().error.message.contains("auto, default, flex"));
    }

    #[test]
    fn every_field_reaches_the_options() {
        let own = EndpointFields {
            seed: Some(42),
            presence_penalty: Some(0.5),
            frequency_penalty: Some(-0.5),
            logit_bias: Some([("50256".to_owned(), -100)].into()),
            logprobs: true,
            verbosity: Some(("verbosity", "low".to_owned())),
        };
        let fields = SharedFields {
            top_p: Some(0.9),
            top_logprobs: Some(3),
            parallel_tool_calls: Some(false),
            user: Some("u-1".to_owned()),
            safety_identifier: Some("s-1".to_owned()),
            service_tier: Some("flex".to_owned()),
            metadata: Some([("k".to_owned(), "v".to_owned())].into()),
            prompt_cache_key: Some("key".to_owned()),
            prompt_cache_retention: Some("24h".to_owned()),
            ..SharedFields::default()
        };
        let options = fields.into_options(own, ChatOptions::default()).unwrap();
        assert_eq!(options.top_p, Some(0.9));
        assert_eq!(options.seed, Some(42));
        assert_eq!(options.logit_bias, [(50256, -100)].into());
        assert_eq!(options.verbosity, Some(Verbosity::Low));
        assert_eq!(options.service_tier, Some(ServiceTier::Flex));
        assert_eq!(options.cache.key.as_deref(), Some("key"));
        assert_eq!(options.metadata.get("k").map(String::as_str), Some("v"));
    }
}
