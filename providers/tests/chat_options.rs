//! `ChatOptions` on the wire: what every adapter sends for the options a caller set.

use crate::support;

use providers::{ApiFormat, ChatOptions, ChatRequest, Message, model_from_config};
use serde_json::Value;
use support::{Replay, config};

/// One API: (model, API format, POST path, base URL suffix, recorded answer, where the
/// temperature sits in the body).
type Case = (
    &'static str,
    Option<ApiFormat>,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

const CASES: &[Case] = &[
    (
        "gpt-4o",
        None,
        "/v1/chat/completions",
        "/v1",
        "openai/chat_text.json",
        "/temperature",
    ),
    (
        "gpt-4o",
        Some(ApiFormat::Responses),
        "/v1/responses",
        "/v1",
        "openai/responses_reasoning_encrypted.json",
        "/temperature",
    ),
    (
        "claude-sonnet-4-5",
        None,
        "/v1/messages",
        "",
        "anthropic/message_text_after_tool.json",
        "/temperature",
    ),
    (
        "gemini-2.5-flash",
        None,
        "/v1beta/models/gemini-2.5-flash:generateContent",
        "/v1beta",
        "gemini/generate_text_after_function_responses.json",
        "/generationConfig/temperature",
    ),
];

/// A temperature of 0.7 goes out as `0.7`, the decimal the caller wrote, not as the nearest
/// `f32` widened to `0.699999988079071`; a server comparing it with 0.7 would disagree.
#[tokio::test]
async fn temperature_is_sent_as_the_decimal_given() {
    for &(model_id, format, path, suffix, answer, pointer) in CASES {
        for temperature in [0.7, 0.1, 1.3] {
            let replay = Replay::fixture(path, answer).await;
            let mut config = config(model_id, &format!("{}{suffix}", replay.url()));
            config.api_format = format;
            let model = model_from_config(&config).expect("builds");
            let request = ChatRequest::new(vec![Message::human("Hi")]).with_options(ChatOptions {
                temperature: Some(temperature),
                ..ChatOptions::default()
            });
            model.complete(request).await.expect("answers");
            let sent = &replay.requests().await[0];
            assert_eq!(
                sent.pointer(pointer),
                Some(&Value::from(temperature)),
                "{model_id} {format:?}: {sent}"
            );
            let raw = String::from_utf8(replay.raw_requests().await[0].body.clone()).unwrap();
            assert!(
                raw.contains(&format!("\"temperature\":{temperature}")),
                "{model_id}: {raw}"
            );
        }
    }
}
