//! The replicas' configuration and the model the runs ask for.

/// The model the runs ask for; the configuration points OpenAI at the loopback provider.
pub(crate) const MODEL: &str = "gpt-4o-mini";

/// The `--config` of both replicas.
pub(crate) fn config_text(provider_url: &str) -> String {
    format!(
        "base_urls:\n  openai: {provider_url}\n\
         concurrency_per_caller: 10000\n\
         max_connections: 10000\n\
         shutdown_grace_secs: 2\n"
    )
}
