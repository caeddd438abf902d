//! `reasoning_effort` as Gemini 3's `thinkingLevel`: each model takes only some levels
//! (Gemini 3 Pro `low` and `high`; Gemini 3.1 Pro no `minimal`; Gemini 3 Flash all four), and
//! answers 400 to the others. An effort a model has no level for goes as its nearest level.

use crate::support;

use providers::{ChatOptions, ChatRequest, Message, ReasoningEffort, model_from_config};
use support::Replay;

async fn level_sent(model_id: &str, effort: ReasoningEffort) -> String {
    let path = format!("/v1beta/models/{model_id}:generateContent");
    let replay = Replay::fixture(&path, "gemini/generate_text_after_function_responses.json").await;
    let model = model_from_config(&support::config(
        model_id,
        &format!("{}/v1beta", replay.url()),
    ))
    .expect("builds");
    let request = ChatRequest::new(vec![Message::human("Hi")]).with_options(ChatOptions {
        reasoning_effort: Some(effort),
        ..ChatOptions::default()
    });
    model.complete(request).await.expect("answers");
    let sent = &replay.requests().await[0];
    sent.pointer("/generationConfig/thinkingConfig/thinkingLevel")
        .and_then(|level| level.as_str())
        .unwrap_or_else(|| panic!("{model_id}: no thinkingLevel in {sent}"))
        .to_owned()
}

#[tokio::test]
async fn each_model_gets_a_level_it_takes() {
    use ReasoningEffort::{High, Low, Medium, Minimal};
    for (model_id, expected) in [
        (
            "gemini-3-pro-preview",
            [
                (Minimal, "low"),
                (Low, "low"),
                (Medium, "high"),
                (High, "high"),
            ],
        ),
        (
            "gemini-3.1-pro-preview",
            [
                (Minimal, "low"),
                (Low, "low"),
                (Medium, "medium"),
                (High, "high"),
            ],
        ),
        (
            "gemini-3-flash-preview",
            [
                (Minimal, "minimal"),
                (Low, "low"),
                (Medium, "medium"),
                (High, "high"),
            ],
        ),
    ] {
        for (effort, level) in expected {
            assert_eq!(
                level_sent(model_id, effort).await,
                level,
                "{model_id} {effort:?}"
            );
        }
    }
}
