//! `ChatOptions::extra_headers` on every API: sent with the request, and a request header
//! named like a configured default header replaces it for that request (one value on the
//! wire, the request's), as "extra headers for this request only, after the configured
//! default headers" promises. Anthropic's betas merge instead, into one `anthropic-beta`.

use crate::support;

use std::collections::BTreeMap;

use providers::{ApiFormat, ChatOptions, ChatRequest, Message, ModelConfig, model_from_config};
use support::Replay;

/// One API: (model, alias, format, POST path, base URL suffix, recorded answer).
type Api = (
    &'static str,
    Option<&'static str>,
    Option<ApiFormat>,
    &'static str,
    &'static str,
    &'static str,
);

const APIS: &[Api] = &[
    (
        "gpt-4o",
        None,
        None,
        "/v1/chat/completions",
        "/v1",
        "openai/chat_text.json",
    ),
    (
        "gpt-4o",
        None,
        Some(ApiFormat::Responses),
        "/v1/responses",
        "/v1",
        "openai/responses_reasoning_encrypted.json",
    ),
    (
        "openai/gpt-4o",
        Some("openrouter"),
        None,
        "/api/v1/chat/completions",
        "/api/v1",
        "openai/chat_text.json",
    ),
    (
        "claude-sonnet-4-5",
        None,
        None,
        "/v1/messages",
        "",
        "anthropic/message_text_after_tool.json",
    ),
    (
        "gemini-2.5-flash",
        None,
        None,
        "/v1beta/models/gemini-2.5-flash:generateContent",
        "/v1beta",
        "gemini/generate_text_after_function_responses.json",
    ),
];

#[tokio::test]
async fn request_headers_are_sent_and_replace_configured_ones() {
    for &(model_id, alias, format, path, suffix, answer) in APIS {
        let replay = Replay::fixture(path, answer).await;
        let config = ModelConfig {
            model: alias.map(str::to_owned),
            api_format: format,
            default_headers: BTreeMap::from([
                ("X-Team".to_owned(), "configured".to_owned()),
                ("X-Kept".to_owned(), "kept".to_owned()),
            ]),
            ..support::config(model_id, &format!("{}{suffix}", replay.url()))
        };
        let model = model_from_config(&config).expect("builds");
        let request = ChatRequest::new(vec![Message::human("Hi")]).with_options(ChatOptions {
            extra_headers: BTreeMap::from([
                ("x-team".to_owned(), "per-request".to_owned()),
                ("X-Trace".to_owned(), "t-1".to_owned()),
            ]),
            ..ChatOptions::default()
        });
        model.complete(request).await.expect("answers");
        let raw = &replay.raw_requests().await[0];
        let values = |name: &str| -> Vec<String> {
            raw.headers
                .get_all(name)
                .iter()
                .map(|v| v.to_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(values("x-team"), ["per-request"], "{model_id} {format:?}");
        assert_eq!(values("x-trace"), ["t-1"], "{model_id} {format:?}");
        assert_eq!(values("x-kept"), ["kept"], "{model_id} {format:?}");
        assert_eq!(values("content-type"), ["application/json"], "{model_id}");
    }
}
