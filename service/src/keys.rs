//! [`ProviderKeys`]: the provider API keys a process has, from its environment.

use std::collections::BTreeMap;
use std::fmt;

use messages::Secret;
use providers::Provider;

/// The environment variable holding `provider`'s key (its descriptor's `key_variable`).
pub const fn key_variable(provider: Provider) -> &'static str {
    provider.key_env_var()
}

/// API keys per provider. `Debug` says which are set, never what they are.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ProviderKeys(BTreeMap<Provider, Secret>);

impl ProviderKeys {
    /// The keys in each provider's [`key_variable`] (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
    /// `GEMINI_API_KEY`, `OPENROUTER_API_KEY`; empty values count as unset).
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The keys a lookup function gives for those variable names (for tests and embedders).
    pub fn from_lookup(mut lookup: impl FnMut(&str) -> Option<String>) -> Self {
        let mut keys = ProviderKeys::default();
        for provider in Provider::ALL {
            let variable = key_variable(provider);
            if let Some(value) = lookup(variable).filter(|value| !value.trim().is_empty()) {
                keys.set(provider, Secret::new(value.trim()));
            }
        }
        keys
    }

    /// Sets the key of `provider`.
    pub fn set(&mut self, provider: Provider, key: Secret) {
        self.0.insert(provider, key);
    }

    /// The key of `provider`, if set.
    pub fn get(&self, provider: Provider) -> Option<&Secret> {
        self.0.get(&provider)
    }

    /// A redactor that knows every key set.
    pub fn redactor(&self) -> messages::Redactor {
        let mut redactor = messages::Redactor::new();
        for key in self.0.values() {
            redactor.add(key.expose());
        }
        redactor
    }

    /// Whether any key is set.
    pub fn any(&self) -> bool {
        !self.0.is_empty()
    }
}

impl fmt::Debug for ProviderKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for provider in Provider::ALL {
            let state = if self.get(provider).is_some() {
                "set"
            } else {
                "unset"
            };
            map.entry(&key_variable(provider), &state);
        }
        map.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_four_variables_and_never_shows_them() {
        let keys = ProviderKeys::from_lookup(|name| match name {
            "OPENAI_API_KEY" => Some("sk-very-secret".into()),
            "GEMINI_API_KEY" => Some("   ".into()),
            "OPENROUTER_API_KEY" => Some("sk-or-secret".into()),
            _ => None,
        });
        assert_eq!(
            keys.get(Provider::OpenAi).map(Secret::expose),
            Some("sk-very-secret")
        );
        assert!(keys.get(Provider::Google).is_none());
        assert!(keys.any());
        let shown = format!("{keys:?}");
        assert_eq!(
            shown,
            r#"{"OPENAI_API_KEY": "set", "ANTHROPIC_API_KEY": "unset", "GEMINI_API_KEY": "unset", "OPENROUTER_API_KEY": "set"}"#
        );
        assert!(!shown.contains("secret"));
        assert_eq!(
            keys.get(Provider::OpenRouter).map(Secret::expose),
            Some("sk-or-secret")
        );
        assert_eq!(key_variable(Provider::Anthropic), "ANTHROPIC_API_KEY");
    }
}
