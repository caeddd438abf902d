//! The chaos test's replicas: their configuration and the aliases the runs ask for.

use crate::options::Options;

/// The agent aliases the runs ask for: each runs its model with the server-side `calculator`.
pub(crate) const LOOPBACK_AGENT: &str = "chaos/loopback";
/// The loopback provider's model asked for directly: one model call, no server-side tool.
pub(crate) const PLAIN_MODEL: &str = "chaos-loopback";
/// The alias on the offline `echo` model (it calls each offered tool once, then answers).
pub(crate) const ECHO_AGENT: &str = "chaos/echo";

/// The `--config` of every replica.
pub(crate) fn config_text(options: &Options, provider_url: &str) -> String {
    format!(
        "base_urls:\n  openai: {provider_url}\n\
         agents:\n  \
         {LOOPBACK_AGENT}: {{model: {PLAIN_MODEL}, tools: [calculator], max_rounds: 6}}\n  \
         {ECHO_AGENT}: {{model: echo, tools: [calculator], max_rounds: 4}}\n\
         concurrency_per_caller: 10000\n\
         max_connections: 10000\n\
         shutdown_grace_secs: 2\n\
         runs:\n  lease_ttl: {ttl}s\n",
        ttl = options.lease_ttl.as_secs(),
    )
}
