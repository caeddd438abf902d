//! [`Provider`] and its descriptor, [`ProviderInfo`]: every fact Skein keeps about a provider
//! (its names, the model ids routed to it, its key variable, cargo feature, endpoint, default
//! model, reasoning controls, tool-call id shape and adapter) in one table, which every crate
//! reads instead of keeping its own list. [`detect_provider`] routes a model to one of them.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

use crate::{ChatModel, ModelConfig, ModelInfo, ProviderError};

/// The wire protocol a model speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provider {
    /// OpenAI Chat Completions / Responses, and every OpenAI-compatible server (DeepSeek, vLLM,
    /// Ollama, …).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini (`google` in configuration files).
    Google,
    /// OpenRouter: the OpenAI Chat protocol with its own reasoning controls, reasoning
    /// details and error codes (`openrouter`; model ids name the vendor, `openai/gpt-4o`).
    OpenRouter,
}

/// Every fact Skein keeps about one provider; [`Provider::info`] gives it.
///
/// ```
/// use providers::{Provider, ReasoningStyle};
///
/// let anthropic = Provider::Anthropic.info();
/// assert_eq!(anthropic.name, "anthropic");
/// assert_eq!(anthropic.key_variable, "ANTHROPIC_API_KEY");
/// assert_eq!(anthropic.own_host, "api.anthropic.com");
/// assert_eq!(anthropic.reasoning, ReasoningStyle::Budget);
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct ProviderInfo {
    /// The name in configuration files and on the command line (`openai`, `anthropic`,
    /// `google`, `openrouter`).
    pub name: &'static str,
    /// Other names a configuration's model type may use (`gpt`, `claude`, `gemini`).
    pub aliases: &'static [&'static str],
    /// Model-id prefixes that route a model here when no type is given (`gpt-`, `claude-`, …).
    pub model_prefixes: &'static [&'static str],
    /// The environment variable the CLI and the server read this provider's key from.
    pub key_variable: &'static str,
    /// The cargo feature of this crate that compiles the provider's adapter.
    pub feature: &'static str,
    /// The provider's own endpoint, in its convention (OpenAI `…/v1`, Anthropic the host
    /// without `/v1`, Gemini `…/v1beta`, OpenRouter `…/api/v1`); a `base_url` replaces it.
    pub default_base_url: &'static str,
    /// The host of [`default_base_url`](Self::default_base_url): the only host an
    /// environment key is sent to unless the user says otherwise.
    pub own_host: &'static str,
    /// The model a run uses when it names none but has this provider's key.
    pub default_model: &'static str,
    /// How the provider is asked to think before answering.
    pub reasoning: ReasoningStyle,
    /// The shape of the provider's own tool-call ids, as a `chain_ast::IdTemplate` (ids Skein
    /// writes into a conversation for this provider, e.g. a summary's call, take it).
    pub call_id_template: &'static str,
    /// Builds the provider's model; `None` when [`feature`](Self::feature) is off.
    pub(crate) adapter: Option<Adapter>,
}

/// How a provider is asked to reason before it answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReasoningStyle {
    /// A reasoning effort (`minimal` … `high`): OpenAI's `reasoning_effort`, OpenRouter's
    /// `reasoning.effort` (which it translates for whatever model serves the request).
    Effort,
    /// A budget of thinking tokens: Anthropic's extended thinking, Gemini's thinking budget.
    Budget,
}

/// What builds a provider's model from its configuration and registry entry.
pub(crate) type Adapter = fn(&ModelConfig, ModelInfo) -> Result<Box<dyn ChatModel>, ProviderError>;

/// `Some(build)` when the cargo feature is on, else `None`: the descriptor names the feature
/// once, beside the adapter it compiles.
macro_rules! adapter {
    ($feature:literal, $build:path) => {
        match () {
            #[cfg(feature = $feature)]
            () => Some($build as Adapter),
            #[cfg(not(feature = $feature))]
            () => None,
        }
    };
}

const OPENAI: ProviderInfo = ProviderInfo {
    name: "openai",
    aliases: &["gpt"],
    model_prefixes: &["gpt-", "o1-", "o3-", "chatgpt-"],
    key_variable: "OPENAI_API_KEY",
    feature: "openai",
    default_base_url: "https://api.openai.com/v1",
    own_host: "api.openai.com",
    default_model: "gpt-4o-mini",
    reasoning: ReasoningStyle::Effort,
    call_id_template: "call_{r:24:b}",
    adapter: adapter!("openai", crate::openai::from_config),
};

const ANTHROPIC: ProviderInfo = ProviderInfo {
    name: "anthropic",
    aliases: &["claude"],
    model_prefixes: &["claude-"],
    key_variable: "ANTHROPIC_API_KEY",
    feature: "anthropic",
    default_base_url: "https://api.anthropic.com",
    own_host: "api.anthropic.com",
    default_model: "claude-haiku-4-5",
    reasoning: ReasoningStyle::Budget,
    call_id_template: "toolu_{r:24:b}",
    adapter: adapter!("anthropic", crate::anthropic::from_config),
};

const GOOGLE: ProviderInfo = ProviderInfo {
    name: "google",
    aliases: &["gemini"],
    model_prefixes: &["gemini-"],
    key_variable: "GEMINI_API_KEY",
    feature: "gemini",
    default_base_url: "https://generativelanguage.googleapis.com/v1beta",
    own_host: "generativelanguage.googleapis.com",
    default_model: "gemini-2.5-flash",
    reasoning: ReasoningStyle::Budget,
    call_id_template: "{r:8:x}",
    adapter: adapter!("gemini", crate::gemini::from_config),
};

const OPENROUTER: ProviderInfo = ProviderInfo {
    name: "openrouter",
    aliases: &[],
    // Its ids (`vendor/model`) look like no one's in particular: it is chosen by name only.
    model_prefixes: &[],
    key_variable: "OPENROUTER_API_KEY",
    // A dialect of OpenAI's Chat protocol, built on that adapter.
    feature: "openai",
    default_base_url: "https://openrouter.ai/api/v1",
    own_host: "openrouter.ai",
    // Used with `--provider openrouter` only: without it, detection sends this id to OpenAI.
    default_model: "openai/gpt-4o-mini",
    reasoning: ReasoningStyle::Effort,
    call_id_template: "call_{r:24:b}",
    adapter: adapter!("openai", crate::openrouter::from_config),
};

impl Provider {
    /// Every provider, in the order Skein tries them (for a default model) and lists them.
    pub const ALL: [Provider; 4] = [
        Provider::OpenAi,
        Provider::Anthropic,
        Provider::Google,
        Provider::OpenRouter,
    ];

    /// The provider's descriptor. A new provider is one variant, its descriptor here and its
    /// place in [`Provider::ALL`]: this match has no catch-all arm, so a variant without a
    /// descriptor does not compile.
    pub const fn info(self) -> &'static ProviderInfo {
        match self {
            Provider::OpenAi => &OPENAI,
            Provider::Anthropic => &ANTHROPIC,
            Provider::Google => &GOOGLE,
            Provider::OpenRouter => &OPENROUTER,
        }
    }

    /// The protocol's name in configuration files: `openai`, `anthropic`, `google` or
    /// `openrouter`.
    pub const fn as_str(self) -> &'static str {
        self.info().name
    }

    /// The environment variable the CLI and the server read this provider's key from.
    pub const fn key_env_var(self) -> &'static str {
        self.info().key_variable
    }

    /// The cargo feature of this crate that compiles the provider's adapter.
    pub const fn feature(self) -> &'static str {
        self.info().feature
    }

    /// Whether `name` is this provider's name or one of its aliases, ignoring ASCII case.
    fn is_named(self, name: &str) -> bool {
        let info = self.info();
        std::iter::once(&info.name)
            .chain(info.aliases)
            .any(|known| known.eq_ignore_ascii_case(name))
    }
}

impl ProviderInfo {
    /// Whether this build has the provider's adapter ([`feature`](Self::feature) is on).
    pub fn compiled(&self) -> bool {
        self.adapter.is_some()
    }
}

/// The names of [`Provider::ALL`], in order (what serde's errors list).
const NAMES: [&str; Provider::ALL.len()] = {
    let mut names = [""; Provider::ALL.len()];
    let mut at = 0;
    while at < names.len() {
        names[at] = Provider::ALL[at].as_str();
        at += 1;
    }
    names
};

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Provider {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Exactly a provider's name (`openai`, …): aliases and other cases are for
/// [`FromStr`](std::str::FromStr), which reads what people type.
impl<'de> Deserialize<'de> for Provider {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl de::Visitor<'_> for Name {
            type Value = Provider;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a provider name")
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<Provider, E> {
                Provider::ALL
                    .into_iter()
                    .find(|provider| provider.as_str() == name)
                    .ok_or_else(|| E::unknown_variant(name, &NAMES))
            }
        }
        deserializer.deserialize_str(Name)
    }
}

impl std::str::FromStr for Provider {
    type Err = ProviderError;

    /// A model type as configuration files name it: a protocol name or one of its aliases
    /// (`openai`/`gpt`, `anthropic`/`claude`, `google`/`gemini`, `openrouter`), ignoring ASCII
    /// case and surrounding spaces. [`detect_provider`] reads the same names.
    ///
    /// ```
    /// use providers::Provider;
    ///
    /// assert_eq!("Claude".parse::<Provider>().unwrap(), Provider::Anthropic);
    /// assert_eq!("openrouter".parse::<Provider>().unwrap(), Provider::OpenRouter);
    /// assert!("soap".parse::<Provider>().unwrap_err().to_string().contains("openrouter"));
    /// ```
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        Provider::ALL
            .into_iter()
            .find(|provider| provider.is_named(text))
            .ok_or_else(|| {
                ProviderError::config(format!("unknown provider `{text}`: use {}", choices()))
            })
    }
}

/// `openai (or gpt), anthropic (or claude), google (or gemini) or openrouter`.
fn choices() -> String {
    let named: Vec<String> = Provider::ALL
        .into_iter()
        .map(|provider| {
            let info = provider.info();
            match info.aliases {
                [] => info.name.to_owned(),
                aliases => format!("{} (or {})", info.name, aliases.join(", ")),
            }
        })
        .collect();
    match named.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Which protocol a model speaks: the explicit `model_type` alias wins, then the model-id
/// prefix, then OpenAI (the protocol of every OpenAI-compatible server).
///
/// Both checks ignore ASCII case and surrounding spaces. The prefixes are each provider's
/// [`model_prefixes`](ProviderInfo::model_prefixes): `gpt-`, `o1-`, `o3-`, `chatgpt-`,
/// `claude-` and `gemini-`, so a bare `o1` falls through to the OpenAI default (same answer).
/// An unknown `model_type` is not an error. The explicit type wins because one model id can be
/// served over several protocols (a Claude model behind an OpenAI-compatible proxy), so the id
/// is only a fallback.
///
/// ```
/// use providers::{detect_provider, Provider};
///
/// assert_eq!(detect_provider(Some("claude"), "my-proxy-model"), Provider::Anthropic);
/// assert_eq!(detect_provider(None, "gemini-2.0-flash"), Provider::Google);
/// assert_eq!(detect_provider(Some("openai"), "claude-sonnet-4"), Provider::OpenAi);
/// assert_eq!(detect_provider(None, "deepseek-reasoner"), Provider::OpenAi);
/// assert_eq!(detect_provider(Some("openrouter"), "anthropic/claude-sonnet-4.5"), Provider::OpenRouter);
/// ```
pub fn detect_provider(model_type: Option<&str>, model_id: &str) -> Provider {
    if let Some(provider) = model_type.and_then(|model_type| model_type.parse().ok()) {
        return provider;
    }
    let id = model_id.trim().to_ascii_lowercase();
    Provider::ALL
        .into_iter()
        .find(|provider| {
            provider
                .info()
                .model_prefixes
                .iter()
                .any(|prefix| id.starts_with(prefix))
        })
        .unwrap_or(Provider::OpenAi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_each_provider_once_in_declaration_order() {
        for (at, provider) in Provider::ALL.into_iter().enumerate() {
            assert_eq!(provider as usize, at, "{provider}");
        }
    }

    #[test]
    fn own_host_is_the_host_of_the_default_endpoint() {
        for provider in Provider::ALL {
            let info = provider.info();
            let rest = info.default_base_url.strip_prefix("https://").unwrap();
            assert_eq!(rest.split('/').next(), Some(info.own_host), "{provider}");
        }
    }

    #[test]
    fn the_refusal_lists_every_name() {
        assert_eq!(
            choices(),
            "openai (or gpt), anthropic (or claude), google (or gemini) or openrouter"
        );
    }

    #[test]
    fn serde_takes_exactly_the_names() {
        for provider in Provider::ALL {
            let json = serde_json::to_string(&provider).unwrap();
            assert_eq!(json, format!("\"{provider}\""));
            assert_eq!(serde_json::from_str::<Provider>(&json).unwrap(), provider);
        }
        let err = serde_json::from_str::<Provider>("\"gpt\"").unwrap_err();
        assert!(err.to_string().contains("`openrouter`"), "{err}");
    }
}
