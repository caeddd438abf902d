//! [`model_from_config`]: a [`ChatModel`] for a [`ModelConfig`].

use crate::{ChatModel, ECHO_MODEL_ID, ModelConfig, ProviderError};

/// Builds the model a configuration describes: [`detect_provider`](crate::detect_provider)
/// picks the provider, whose [`ProviderInfo`](crate::ProviderInfo) holds the adapter, and the
/// registry supplies its [`ModelInfo`](crate::ModelInfo).
///
/// The model id `echo` gives the echo debug model, `testing::EchoModel` (feature `testing`),
/// which needs no key. A provider whose cargo feature is off gives
/// [`ProviderError::FeatureDisabled`] naming the feature to enable.
///
/// ```
/// use providers::{model_from_config, ModelConfig, Provider};
///
/// let config = ModelConfig {
///     api_key: Some("sk-test".into()),
///     ..ModelConfig::new("gpt-4o")
/// };
/// # #[cfg(feature = "openai")] {
/// let model = model_from_config(&config)?;
/// assert_eq!(model.info().provider, Provider::OpenAi);
/// assert_eq!(model.info().context_window, 128_000);
/// # }
/// # Ok::<(), providers::ProviderError>(())
/// ```
pub fn model_from_config(config: &ModelConfig) -> Result<Box<dyn ChatModel>, ProviderError> {
    redacting(config, adapter(config))
}

/// Every error a provider can put text into leaves through the redactor (see `redact.rs`),
/// errors building the model included, since they may quote the configuration.
#[cfg(feature = "__http")]
fn redacting(
    config: &ModelConfig,
    model: Result<Box<dyn ChatModel>, ProviderError>,
) -> Result<Box<dyn ChatModel>, ProviderError> {
    let redactor = crate::redact::for_config(config);
    match model {
        Ok(inner) => Ok(Box::new(crate::redact::Redacting { inner, redactor })),
        Err(err) => Err(crate::redact::error(&redactor, err)),
    }
}

/// Without a provider adapter only the echo model exists, which talks to no one.
#[cfg(not(feature = "__http"))]
fn redacting(
    _config: &ModelConfig,
    model: Result<Box<dyn ChatModel>, ProviderError>,
) -> Result<Box<dyn ChatModel>, ProviderError> {
    model
}

fn adapter(config: &ModelConfig) -> Result<Box<dyn ChatModel>, ProviderError> {
    config.check_headers()?;
    if config.model_id.trim().is_empty() {
        return Err(ProviderError::config(
            "`model_id` is empty: name the model to call, e.g. `gpt-4o` or `echo`",
        ));
    }
    if config.model_id == ECHO_MODEL_ID {
        return echo();
    }
    let provider = config.provider();
    if provider != crate::Provider::OpenAi && config.api_format == Some(crate::ApiFormat::Responses)
    {
        return Err(ProviderError::config(format!(
            "api_format `responses` is OpenAI's Responses API, but model `{}` speaks the {provider} \
             protocol: remove `api_format`, or set `model = \"openai\"` for an OpenAI-compatible endpoint",
            config.model_id
        )));
    }
    // The descriptor holds the adapter when its feature is compiled in.
    let descriptor = provider.info();
    match descriptor.adapter {
        Some(build) => build(config, crate::ModelInfo::lookup(provider, &config.model_id)),
        None => Err(ProviderError::FeatureDisabled {
            provider,
            model_id: config.model_id.clone(),
            feature: descriptor.feature,
        }),
    }
}

#[cfg(feature = "testing")]
fn echo() -> Result<Box<dyn ChatModel>, ProviderError> {
    Ok(Box::new(crate::testing::EchoModel::new()))
}

#[cfg(not(feature = "testing"))]
fn echo() -> Result<Box<dyn ChatModel>, ProviderError> {
    Err(ProviderError::FeatureDisabled {
        provider: crate::Provider::OpenAi,
        model_id: ECHO_MODEL_ID.into(),
        feature: "testing",
    })
}
