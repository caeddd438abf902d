//! `providers/COMPAT.md`, row by row: what each API's request body carries for each option of
//! `ChatOptions`, asserted on the body a loopback server received. Expected keys and shapes are
//! the providers' API references': OpenAI Chat Completions and Responses, Anthropic Messages
//! (`top_p`, `metadata.user_id`, `service_tier`, `tool_choice.disable_parallel_tool_use`),
//! Gemini `generateContent` (`generationConfig.topP`, `seed`, `presencePenalty`,
//! `frequencyPenalty`, `responseLogprobs`, `logprobs`), OpenRouter (OpenAI's Chat fields).
//! A "policy" row is an option the API cannot honour: `unsupported_options` names it, for the
//! server's `drop_unsupported_params` policy.

use crate::support;

use providers::{
    ChatOptions, ChatRequest, Message, ReasoningEffort, ServiceTier, ToolChoice, ToolSpec,
    Verbosity,
};
use serde_json::{Value, json};
use support::apis::{ANTHROPIC, APIS, Api, CHAT, GEMINI, OPENROUTER, RESPONSES, api, weather};

/// What one API does with an option.
enum Outcome {
    /// The body holds `value` at the JSON pointer.
    Sent(&'static str, Value),
    /// The body holds nothing at the pointer: the option only informs and has no place here.
    Kept(&'static str),
    /// The API cannot honour it: `unsupported_options` names it.
    Policy(&'static str),
}
use Outcome::{Kept, Policy, Sent};

/// The body `api` sends for `request`, and what the model says it cannot honour.
async fn sent(api: &Api, request: ChatRequest) -> (Value, Vec<&'static str>) {
    let (replay, model) = api.model().await;
    let unsupported = model.unsupported_options(&request.options);
    // An adapter may refuse an option it cannot honour before sending (the Responses API's
    // stop sequences); a policy row checks only that the option is named.
    let answered = model.complete(request).await;
    let body = replay.requests().await.into_iter().next();
    if unsupported.is_empty() {
        answered.expect("answers");
    }
    (body.unwrap_or(Value::Null), unsupported)
}

/// Sends `options` (with `tools`) to every API in `expected` and checks each outcome.
async fn check(options: ChatOptions, tools: &[ToolSpec], expected: &[(&str, Outcome)]) {
    assert_eq!(expected.len(), APIS.len(), "one outcome per API");
    for (name, outcome) in expected {
        let request = ChatRequest::new(vec![Message::human("Hi")])
            .with_tools(tools.to_vec())
            .with_options(options.clone());
        let (body, unsupported) = sent(api(name), request).await;
        match outcome {
            Sent(pointer, value) => {
                assert_eq!(
                    body.pointer(pointer),
                    Some(value),
                    "{name} {pointer}: {body}"
                );
                assert!(unsupported.is_empty(), "{name}: {unsupported:?}");
            }
            Kept(pointer) => {
                assert_eq!(body.pointer(pointer), None, "{name} {pointer}: {body}");
                assert!(unsupported.is_empty(), "{name}: {unsupported:?}");
            }
            Policy(field) => {
                assert_eq!(unsupported, [*field], "{name}");
            }
        }
    }
}

#[tokio::test]
async fn top_p() {
    let options = ChatOptions {
        top_p: Some(0.9),
        ..ChatOptions::default()
    };
    check(
        options,
        &[],
        &[
            (CHAT, Sent("/top_p", json!(0.9))),
            (RESPONSES, Sent("/top_p", json!(0.9))),
            (ANTHROPIC, Sent("/top_p", json!(0.9))),
            (GEMINI, Sent("/generationConfig/topP", json!(0.9))),
            (OPENROUTER, Sent("/top_p", json!(0.9))),
        ],
    )
    .await;
}

#[tokio::test]
async fn seed() {
    let options = ChatOptions {
        seed: Some(42),
        ..ChatOptions::default()
    };
    check(
        options,
        &[],
        &[
            (CHAT, Sent("/seed", json!(42))),
            (RESPONSES, Policy("seed")),
            (ANTHROPIC, Policy("seed")),
            (GEMINI, Sent("/generationConfig/seed", json!(42))),
            (OPENROUTER, Sent("/seed", json!(42))),
        ],
    )
    .await;
}

#[tokio::test]
async fn presence_penalty() {
    let options = ChatOptions {
        presence_penalty: Some(0.5),
        ..ChatOptions::default()
    };
    check(
        options,
        &[],
        &[
            (CHAT, Sent("/presence_penalty", json!(0.5))),
            (RESPONSES, Policy("presence_penalty")),
            (ANTHROPIC, Policy("presence_penalty")),
            (
                GEMINI,
                Sent("/generationConfig/presencePenalty", json!(0.5)),
            ),
            (OPENROUTER, Sent("/presence_penalty", json!(0.5))),
        ],
    )
    .await;
}

#[tokio::test]
async fn frequency_penalty() {
    let options = ChatOptions {
        frequency_penalty: Some(-0.5),
        ..ChatOptions::default()
    };
    check(
        options,
        &[],
        &[
            (CHAT, Sent("/frequency_penalty", json!(-0.5))),
            (RESPONSES, Policy("frequency_penalty")),
            (ANTHROPIC, Policy("frequency_penalty")),
            (
                GEMINI,
                Sent("/generationConfig/frequencyPenalty", json!(-0.5)),
            ),
            (OPENROUTER, Sent("/frequency_penalty", json!(-0.5))),
        ],
    )
    .await;
}

#[tokio::test]
async fn logit_bias() {
    let options = ChatOptions {
        logit_bias: [(50256, -100)].into(),
        ..ChatOptions::default()
    };
    check(
        options,
        &[],
        &[
            (CHAT, Sent("/logit_bias", json!({"50256": -100}))),
            (RESPONSES, Policy("logit_bias")),
            (ANTHROPIC, Policy("logit_bias")),
            (GEMINI, Policy("logit_bias")),
            (OPENROUTER, Sent("/logit_bias", json!({"50256": -100}))),
        ],
    )
    .await;
}

/// Where each API asks for log probabilities at all: the switch `logprobs` sets, and that
/// `top_logprobs` sends with it. Anthropic has none, so `field` falls to the policy.
fn logprobs_switch(field: &'static str) -> [(&'static str, Outcome); 5] {
    [
        (CHAT, Sent("/logprobs", json!(true))),
        (
            RESPONSES,
            Sent("/include", json!(["message.output_text.logprobs"])),
        ),
        (ANTHROPIC, Policy(field)),
        (
            GEMINI,
            Sent("/generationConfig/responseLogprobs", json!(true)),
        ),
        (OPENROUTER, Sent("/logprobs", json!(true))),
    ]
}

#[tokio::test]
async fn logprobs() {
    let options = ChatOptions {
        logprobs: true,
        ..ChatOptions::default()
    };
    check(options, &[], &logprobs_switch("logprobs")).await;
}

#[tokio::test]
async fn top_logprobs() {
    let options = ChatOptions {
        top_logprobs: Some(3),
        ..ChatOptions::default()
    };
    check(
        options.clone(),
        &[],
        &[
            (CHAT, Sent("/top_logprobs", json!(3))),
            (RESPONSES, Sent("/top_logprobs", json!(3))),
            (ANTHROPIC, Policy("top_logprobs")),
            (GEMINI, Sent("/generationConfig/logprobs", json!(3))),
            (OPENROUTER, Sent("/top_logprobs", json!(3))),
        ],
    )
    .await;
    // Each API takes the count only beside the switch, which goes out with it.
    check(options, &[], &logprobs_switch("top_logprobs")).await;
}

#[tokio::test]
async fn parallel_tool_calls_false() {
    let options = ChatOptions {
        parallel_tool_calls: Some(false),
        ..ChatOptions::default()
    };
    check(
        options.clone(),
        &[weather()],
        &[
            (CHAT, Sent("/parallel_tool_calls", json!(false))),
            (RESPONSES, Sent("/parallel_tool_calls", json!(false))),
            (
                ANTHROPIC,
                Sent(
                    "/tool_choice",
                    json!({"type": "auto", "disable_parallel_tool_use": true}),
                ),
            ),
            (GEMINI, Policy("parallel_tool_calls")),
            (OPENROUTER, Sent("/parallel_tool_calls", json!(false))),
        ],
    )
    .await;
    // A forced choice keeps its mode and gains the flag.
    let forced = ChatOptions {
        tool_choice: Some(ToolChoice::Required),
        ..options
    };
    let request = ChatRequest::new(vec![Message::human("Hi")])
        .with_tools(vec![weather()])
        .with_options(forced);
    let (body, _) = sent(api(ANTHROPIC), request).await;
    assert_eq!(
        body["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
}

/// The API takes `parallel_tool_calls` only with tools: without them, it is not sent.
#[tokio::test]
async fn parallel_tool_calls_without_tools_is_not_sent() {
    let options = ChatOptions {
        parallel_tool_calls: Some(false),
        ..ChatOptions::default()
    };
    for name in [CHAT, RESPONSES, OPENROUTER] {
        let request = ChatRequest::new(vec![Message::human("Hi")]).with_options(options.clone());
        let (body, _) = sent(api(name), request).await;
        assert_eq!(body.get("parallel_tool_calls"), None, "{name}: {body}");
    }
}

#[tokio::test]
async fn verbosity() {
    let options = ChatOptions {
        verbosity: Some(Verbosity::Low),
        ..ChatOptions::default()
    };
    check(
        options,
        &[],
        &[
            (CHAT, Sent("/verbosity", json!("low"))),
            (RESPONSES, Sent("/text/verbosity", json!("low"))),
            (ANTHROPIC, Policy("verbosity")),
            (GEMINI, Policy("verbosity")),
            (OPENROUTER, Sent("/verbosity", json!("low"))),
        ],
    )
    .await;
}

#[tokio::test]
async fn user() {
    let options = ChatOptions {
        user: Some("user-7".to_owned()),
        ..ChatOptions::default()
    };
    check(
        options,
        &[],
        &[
            (CHAT, Sent("/user", json!("user-7"))),
            (RESPONSES, Sent("/user", json!("user-7"))),
            (ANTHROPIC, Sent("/metadata", json!({"user_id": "user-7"}))),
            (GEMINI, Kept("/user")),
            (OPENROUTER, Sent("/user", json!("user-7"))),
        ],
    )
    .await;
}

#[tokio::test]
async fn safety_identifier() {
    let options = ChatOptions {
        safety_identifier: Some("hash-1".to_owned()),
        ..ChatOptions::default()
    };
    check(
        options.clone(),
        &[],
        &[
            (CHAT, Sent("/safety_identifier", json!("hash-1"))),
            (RESPONSES, Sent("/safety_identifier", json!("hash-1"))),
            (ANTHROPIC, Sent("/metadata", json!({"user_id": "hash-1"}))),
            (GEMINI, Kept("/safety_identifier")),
            (OPENROUTER, Kept("/safety_identifier")),
        ],
    )
    .await;
    // With a user too, Anthropic's one field takes the user.
    let both = ChatOptions {
        user: Some("user-7".to_owned()),
        ..options
    };
    let request = ChatRequest::new(vec![Message::human("Hi")]).with_options(both);
    let (body, _) = sent(api(ANTHROPIC), request).await;
    assert_eq!(body["metadata"], json!({"user_id": "user-7"}));
}

#[tokio::test]
async fn service_tier() {
    let options = ChatOptions {
        service_tier: Some(ServiceTier::Flex),
        ..ChatOptions::default()
    };
    check(
        options,
        &[],
        &[
            (CHAT, Sent("/service_tier", json!("flex"))),
            (RESPONSES, Sent("/service_tier", json!("flex"))),
            (ANTHROPIC, Kept("/service_tier")),
            (GEMINI, Kept("/service_tier")),
            (OPENROUTER, Kept("/service_tier")),
        ],
    )
    .await;
    // Anthropic's two tiers: `auto`, and `standard_only` for OpenAI's `default`.
    for (tier, anthropic) in [
        (ServiceTier::Auto, "auto"),
        (ServiceTier::Default, "standard_only"),
    ] {
        let request = ChatRequest::new(vec![Message::human("Hi")]).with_options(ChatOptions {
            service_tier: Some(tier),
            ..ChatOptions::default()
        });
        let (body, _) = sent(api(ANTHROPIC), request).await;
        assert_eq!(body["service_tier"], json!(anthropic));
    }
}

#[tokio::test]
async fn metadata() {
    let options = ChatOptions {
        metadata: [("team".to_owned(), "search".to_owned())].into(),
        ..ChatOptions::default()
    };
    check(
        options,
        &[],
        &[
            (CHAT, Sent("/metadata", json!({"team": "search"}))),
            (RESPONSES, Sent("/metadata", json!({"team": "search"}))),
            (ANTHROPIC, Kept("/metadata")),
            (GEMINI, Kept("/metadata")),
            (OPENROUTER, Kept("/metadata")),
        ],
    )
    .await;
}

#[tokio::test]
async fn prompt_cache_key() {
    let mut options = ChatOptions::default();
    options.cache.key = Some("tenant-1".to_owned());
    check(
        options,
        &[],
        &[
            (CHAT, Sent("/prompt_cache_key", json!("tenant-1"))),
            (RESPONSES, Sent("/prompt_cache_key", json!("tenant-1"))),
            (ANTHROPIC, Kept("/prompt_cache_key")),
            (GEMINI, Kept("/prompt_cache_key")),
            (OPENROUTER, Sent("/prompt_cache_key", json!("tenant-1"))),
        ],
    )
    .await;
}

#[tokio::test]
async fn stop() {
    let options = ChatOptions {
        stop: vec!["END".to_owned()],
        ..ChatOptions::default()
    };
    check(
        options,
        &[],
        &[
            (CHAT, Sent("/stop", json!(["END"]))),
            (RESPONSES, Policy("stop")),
            (ANTHROPIC, Sent("/stop_sequences", json!(["END"]))),
            (
                GEMINI,
                Sent("/generationConfig/stopSequences", json!(["END"])),
            ),
            (OPENROUTER, Sent("/stop", json!(["END"]))),
        ],
    )
    .await;
}

#[tokio::test]
async fn reasoning_effort() {
    let options = ChatOptions {
        reasoning_effort: Some(ReasoningEffort::High),
        ..ChatOptions::default()
    };
    check(
        options,
        &[],
        &[
            (CHAT, Sent("/reasoning_effort", json!("high"))),
            (RESPONSES, Sent("/reasoning/effort", json!("high"))),
            (ANTHROPIC, Sent("/output_config/effort", json!("high"))),
            (
                GEMINI,
                Sent(
                    "/generationConfig/thinkingConfig/thinkingBudget",
                    json!(24576),
                ),
            ),
            (OPENROUTER, Sent("/reasoning/effort", json!("high"))),
        ],
    )
    .await;
}

/// A policy row's option, when a caller sends it anyway, never reaches the provider in a
/// form it would misread: it is simply not in the body.
#[tokio::test]
async fn options_an_api_cannot_honour_are_not_in_its_body() {
    let options = ChatOptions {
        seed: Some(1),
        presence_penalty: Some(0.1),
        frequency_penalty: Some(0.1),
        logit_bias: [(1, 1)].into(),
        ..ChatOptions::default()
    };
    for name in [RESPONSES, ANTHROPIC] {
        let request = ChatRequest::new(vec![Message::human("Hi")]).with_options(options.clone());
        let (body, unsupported) = sent(api(name), request).await;
        assert_eq!(
            unsupported,
            [
                "seed",
                "presence_penalty",
                "frequency_penalty",
                "logit_bias"
            ],
            "{name}"
        );
        for key in [
            "seed",
            "presence_penalty",
            "frequency_penalty",
            "logit_bias",
        ] {
            assert_eq!(body.get(key), None, "{name} {key}: {body}");
        }
    }
}
