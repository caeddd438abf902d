//! Request options: what enters the prompt hash, and when a stored answer may be reused.

use serde::{Deserialize, Serialize};

/// The request options the prompt hash looks at.
///
/// Only the deterministic part enters [`prompt_hash`](crate::prompt_hash): a temperature of
/// exactly zero, `max_tokens` and the stop sequences. A temperature above zero, or none at all
/// (providers default to 1), leaves the hash as if no temperature was given: the answer is one
/// sample among many and belongs beside its siblings, not on its own branch. The store keeps
/// the temperature that was asked for, for display.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HashOptions {
    /// Sampling temperature as requested; `None` when the provider default applies.
    pub temperature: Option<f64>,
    /// Output token limit, when one was set.
    pub max_tokens: Option<u32>,
    /// Stop sequences (a set: order and duplicates do not change the hash).
    pub stop: Vec<String>,
}

impl HashOptions {
    /// Options of a deterministic request: temperature zero, no other limit.
    pub fn deterministic() -> Self {
        HashOptions {
            temperature: Some(0.0),
            ..Default::default()
        }
    }

    /// Whether the request asks for greedy decoding: a temperature of exactly zero.
    pub fn is_deterministic(&self) -> bool {
        self.temperature == Some(0.0)
    }
}

/// When [`Store::find_or_create_path`](crate::Store::find_or_create_path) may hand back a stored
/// answer instead of the caller calling the model.
///
/// Whatever the policy, a stored answer is only reused for the **same model id** and the same
/// [`CallOptions::cache_key`]; tree position alone never makes a cache hit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reuse {
    /// Reuse only for a deterministic request (temperature exactly zero). The default.
    #[default]
    Deterministic,
    /// The caller opts in: reuse a stored answer of the same model even when sampling.
    Always,
    /// Never reuse: always call the model (stored answers are still listed as alternatives).
    Never,
}

/// Everything about a model call that the store needs besides the messages.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallOptions {
    /// The model id the call goes to (`gpt-4o`, `claude-sonnet-4`, `echo`). Not part of any
    /// hash: the same conversation with another model shares the tree.
    pub model: String,
    /// Options that enter the prompt hash.
    pub hash: HashOptions,
    /// Whether a stored answer may stand in for a call.
    pub reuse: Reuse,
    /// Anything else that changes the answer but not the tree position, such as the tools on
    /// offer ([`tool_specs_hash`](crate::tool_specs_hash)), `top_p` or a seed. A stored answer is
    /// reused only when its key equals this one.
    pub cache_key: Option<String>,
}

impl CallOptions {
    /// Options for a call to `model` with default sampling and [`Reuse::Deterministic`].
    pub fn new(model: impl Into<String>) -> Self {
        CallOptions {
            model: model.into(),
            ..Default::default()
        }
    }

    /// Sets the hashed options.
    pub fn with_hash(mut self, hash: HashOptions) -> Self {
        self.hash = hash;
        self
    }

    /// Sets the reuse policy.
    pub fn with_reuse(mut self, reuse: Reuse) -> Self {
        self.reuse = reuse;
        self
    }

    /// Sets the cache key.
    pub fn with_cache_key(mut self, key: impl Into<String>) -> Self {
        self.cache_key = Some(key.into());
        self
    }

    /// Whether a stored answer from `model` with `cache_key` may be returned for this call.
    pub(crate) fn may_reuse(&self, model: Option<&str>, cache_key: Option<&str>) -> bool {
        let policy_allows = match self.reuse {
            Reuse::Deterministic => self.hash.is_deterministic(),
            Reuse::Always => true,
            Reuse::Never => false,
        };
        policy_allows
            && model == Some(self.model.as_str())
            && cache_key == self.cache_key.as_deref()
    }
}
