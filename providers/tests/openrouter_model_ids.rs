//! OpenRouter model ids (`vendor/model`) in the registry: OpenRouter spells Anthropic's
//! versions with dots (`anthropic/claude-opus-4.5`, `anthropic/claude-3.7-sonnet`) where
//! Anthropic's own ids have dashes (`claude-opus-4-5`, `claude-3-7-sonnet`), and odd ids never
//! panic or borrow another model's figures.

use providers::{ModelInfo, Provider};

fn lookup(id: &str) -> ModelInfo {
    ModelInfo::lookup(Provider::OpenRouter, id)
}

/// Each id OpenRouter lists gets the figures of the model Anthropic documents under its own
/// id, not those of an older model whose id happens to be a prefix.
#[test]
fn anthropic_ids_with_dotted_versions_are_the_vendors_models() {
    for (openrouter_id, anthropic_id) in [
        ("anthropic/claude-opus-4.5", "claude-opus-4-5"),
        ("anthropic/claude-opus-4.1", "claude-opus-4-1"),
        ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("anthropic/claude-haiku-4.5", "claude-haiku-4-5"),
        ("anthropic/claude-3.7-sonnet", "claude-3-7-sonnet"),
        ("anthropic/claude-3.7-sonnet:thinking", "claude-3-7-sonnet"),
        ("anthropic/claude-3.5-sonnet", "claude-3-5-sonnet"),
        ("anthropic/claude-3.5-haiku", "claude-3-5-haiku"),
        ("Anthropic/Claude-Opus-4.5", "claude-opus-4-5"),
    ] {
        let info = lookup(openrouter_id);
        let vendor = ModelInfo::lookup(Provider::Anthropic, anthropic_id);
        assert!(vendor.known, "{anthropic_id}");
        assert!(info.known, "{openrouter_id} is {anthropic_id}");
        assert_eq!(
            (
                info.context_window,
                info.max_output_tokens,
                info.supports_reasoning,
                info.supports_vision
            ),
            (
                vendor.context_window,
                vendor.max_output_tokens,
                vendor.supports_reasoning,
                vendor.supports_vision
            ),
            "{openrouter_id} is {anthropic_id}"
        );
        assert_eq!(info.id, openrouter_id, "the id sent stays OpenRouter's");
        assert_eq!(info.provider, Provider::OpenRouter);
    }
}

/// Vendors whose own ids have dots keep them.
#[test]
fn other_vendors_ids_are_looked_up_as_written() {
    for (openrouter_id, vendor, id) in [
        ("openai/gpt-4.1", Provider::OpenAi, "gpt-4.1"),
        ("openai/gpt-4.1-mini", Provider::OpenAi, "gpt-4.1-mini"),
        ("openai/gpt-4o", Provider::OpenAi, "gpt-4o"),
        ("google/gemini-2.5-pro", Provider::Google, "gemini-2.5-pro"),
        (
            "google/gemini-2.5-flash-lite",
            Provider::Google,
            "gemini-2.5-flash-lite",
        ),
        ("deepseek/deepseek-chat", Provider::OpenAi, "deepseek-chat"),
    ] {
        let info = lookup(openrouter_id);
        let expected = ModelInfo::lookup(vendor, id);
        assert!(info.known, "{openrouter_id}");
        assert_eq!(
            (info.context_window, info.max_output_tokens),
            (expected.context_window, expected.max_output_tokens),
            "{openrouter_id}"
        );
    }
}

/// Ids without a known vendor, or without a model after it, are unknown OpenRouter models.
#[test]
fn odd_ids_are_unknown_models() {
    for id in [
        "openrouter/auto",
        "/gpt-4o",
        "openai/",
        "anthropic/",
        "",
        " ",
        "/",
        "anthropic",
        "meta-llama/llama-3.3-70b-instruct",
        "anthropic/claude-4.5.",
        "anthropic/.5",
        "anthropic/claude-sonnet-4.5/extra",
    ] {
        let info = lookup(id);
        assert_eq!(info.provider, Provider::OpenRouter, "{id:?}");
        assert_eq!(info.id, id, "{id:?}");
        let _ = info.reasoning_replay();
    }
    assert!(!lookup("openrouter/auto").known);
    assert!(!lookup("openai/").known);
    assert!(!lookup("/gpt-4o").known);
}
