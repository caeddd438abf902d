//! The integration tests of `providers`, linked into one test binary: each file under `tests/`
//! is a module of this one, so the workspace links one executable per crate instead of one per
//! file (each is tens of megabytes, and CI machines have little disk to spare).

#[cfg(feature = "anthropic")]
#[path = "anthropic_errors.rs"]
mod anthropic_errors;
#[cfg(feature = "anthropic")]
#[path = "anthropic_replay.rs"]
mod anthropic_replay;
#[cfg(feature = "anthropic")]
#[path = "anthropic_requests.rs"]
mod anthropic_requests;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[path = "chat_options.rs"]
mod chat_options;
#[path = "chat_request_serde.rs"]
mod chat_request_serde;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[path = "compat.rs"]
mod compat;
#[cfg(feature = "openai")]
#[path = "core_http.rs"]
mod core_http;
#[cfg(feature = "openai")]
#[path = "deepseek.rs"]
mod deepseek;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[path = "dialects.rs"]
mod dialects;
#[cfg(feature = "testing")]
#[path = "echo_schema.rs"]
mod echo_schema;
#[cfg(all(feature = "openai", feature = "gemini", feature = "testing"))]
#[path = "embeddings.rs"]
mod embeddings;
#[path = "fuzz_targets.rs"]
mod fuzz_targets;
#[cfg(feature = "gemini")]
#[path = "gemini_common/mod.rs"]
mod gemini_common;
#[path = "gemini_errors.rs"]
mod gemini_errors;
#[path = "gemini_generate.rs"]
mod gemini_generate;
#[path = "gemini_replay.rs"]
mod gemini_replay;
#[path = "gemini_requests.rs"]
mod gemini_requests;
#[cfg(feature = "gemini")]
#[path = "gemini_thinking_levels.rs"]
mod gemini_thinking_levels;
#[path = "hostile_provider.rs"]
mod hostile_provider;
#[cfg(any(feature = "openai", feature = "gemini"))]
#[path = "logprobs.rs"]
mod logprobs;
#[cfg(feature = "openai")]
#[path = "openai_chat.rs"]
mod openai_chat;
#[path = "openai_compatible.rs"]
mod openai_compatible;
#[cfg(feature = "openai")]
#[path = "openai_responses.rs"]
mod openai_responses;
#[cfg(feature = "openai")]
#[path = "openrouter.rs"]
mod openrouter;
#[cfg(feature = "openai")]
#[path = "openrouter_cache.rs"]
mod openrouter_cache;
#[cfg(feature = "openai")]
#[path = "openrouter_model_ids.rs"]
mod openrouter_model_ids;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[path = "reasoning_replay.rs"]
mod reasoning_replay;
#[path = "request_debug_redaction.rs"]
mod request_debug_redaction;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[path = "request_headers.rs"]
mod request_headers;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[path = "request_options.rs"]
mod request_options;
#[cfg(feature = "openai")]
#[path = "responses_stateless_reasoning.rs"]
mod responses_stateless_reasoning;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[path = "structured_output.rs"]
mod structured_output;
#[cfg(any(
    feature = "openai",
    feature = "anthropic",
    feature = "gemini",
    feature = "testing"
))]
#[path = "support/mod.rs"]
mod support;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[path = "system_placement.rs"]
mod system_placement;
#[cfg(feature = "openai")]
#[path = "system_roles.rs"]
mod system_roles;
#[cfg(feature = "testing")]
#[path = "testing_models.rs"]
mod testing_models;
#[path = "wire_corpus.rs"]
mod wire_corpus;
