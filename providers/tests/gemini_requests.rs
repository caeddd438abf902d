//! The bodies the Gemini adapter sends: a multi-turn tool conversation with thinking (insta
//! snapshot, signatures echoed on the right parts), options, tool choice, the current-turn
//! signature rule, media, and headers.
#![cfg(feature = "gemini")]

use crate::support;

use std::collections::BTreeMap;

use providers::ChatOptions;
use providers::gemini::{MINTED_ID_PREFIX, SKIP_SIGNATURE};
use providers::{
    ChatRequest, ContentPart, Message, ModelConfig, ProviderError, Reasoning, ReasoningEffort,
    Role, ToolCall, ToolChoice, ToolSpec, model_from_config,
};
use serde_json::{Value, json};
use support::{Replay, config};

const TEXT_FIXTURE: &str = "gemini/stream_text.sse";

/// Streams `request` to `model_id` against a recorded text answer and returns the body sent.
async fn sent_with(
    config_for: impl FnOnce(&str) -> ModelConfig,
    model_id: &str,
    request: ChatRequest,
) -> Value {
    let replay = Replay::fixture(
        &format!("/v1beta/models/{model_id}:streamGenerateContent"),
        TEXT_FIXTURE,
    )
    .await;
    let model =
        model_from_config(&config_for(&format!("{}/v1beta", replay.url()))).expect("model builds");
    support::streamed(model.as_ref(), request)
        .await
        .expect("the recorded answer parses");
    replay.requests().await.remove(0)
}

async fn sent(model_id: &str, request: ChatRequest) -> Value {
    sent_with(|url| config(model_id, url), model_id, request).await
}

fn signed(signature: &str) -> Option<Reasoning> {
    Some(Reasoning::signature(signature))
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather of a city.".into(),
        parameters: json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"anyOf": [{"enum": ["celsius", "fahrenheit"]}, {"type": "null"}], "default": null}
            },
            "required": ["city", "unit"]
        }),
    }
}

/// Two rounds of parallel calls with thinking, across two user turns.
fn conversation() -> Vec<Message> {
    let minted = |n: usize| format!("{MINTED_ID_PREFIX}RESP1_{n}");
    vec![
        Message::system("You are a weather assistant."),
        Message::system("Answer briefly."),
        Message::human("Weather in Paris and Rome?"),
        Message::new(
            Role::Ai,
            vec![
                // A thought summary (not sent back) and a signed thought (sent back).
                ContentPart::Reasoning(Reasoning {
                    text: "The user wants two cities.".into(),
                    ..Default::default()
                }),
                ContentPart::Reasoning(Reasoning {
                    text: "Signed thought.".into(),
                    signature: Some("SIG_THOUGHT".into()),
                    ..Default::default()
                }),
                ContentPart::Text {
                    text: "Checking both.".into(),
                    reasoning: signed("SIG_TEXT"),
                },
                ContentPart::ToolCall(ToolCall {
                    reasoning: signed("SIG_CALL_0"),
                    ..ToolCall::new(minted(0), "get_weather", r#"{"city":"Paris"}"#)
                }),
                ContentPart::ToolCall(ToolCall::new(
                    minted(1),
                    "get_weather",
                    r#"{"city":"Rome","unit":"celsius"}"#,
                )),
            ],
        ),
        // Out of order, and the second carries a chart: one user turn, in call order.
        Message::new(
            Role::Tool,
            vec![
                ContentPart::ToolResponse(providers::ToolResponse::new(
                    minted(1),
                    "get_weather",
                    "22C sunny",
                )),
                ContentPart::binary("image/png", vec![0x89, b'P', b'N', b'G']),
            ],
        ),
        Message::tool_response(minted(0), "", "18C cloudy"),
        Message::new(
            Role::Ai,
            vec![ContentPart::Text {
                text: "Paris 18C, Rome 22C.".into(),
                reasoning: signed("SIG_ANSWER"),
            }],
        ),
        Message::human("And Oslo? Use your tool."),
        // The current turn: a call from history Gemini did not sign (another provider's id),
        // and a summarised pair carrying chain-ast's fake signature.
        Message::ai_tool_calls(
            None,
            vec![ToolCall::new(
                "call_foreign_1",
                "get_weather",
                r#"{"city":"Oslo"}"#,
            )],
        ),
        Message::tool_response("call_foreign_1", "get_weather", "-3C snow"),
        Message::new(
            Role::Ai,
            vec![ContentPart::ToolCall(ToolCall {
                reasoning: signed(SKIP_SIGNATURE),
                ..ToolCall::new(
                    "call_summary",
                    "execute_task_and_return_summary",
                    r#"{"question": "summarise"}"#,
                )
            })],
        ),
        Message::tool_response(
            "call_summary",
            "execute_task_and_return_summary",
            "Oslo is cold.",
        ),
    ]
}

#[tokio::test]
async fn multi_turn_tool_conversation_with_thinking() {
    let request = ChatRequest {
        options: ChatOptions {
            tool_choice: Some(ToolChoice::Auto),
            temperature: Some(0.5),
            max_tokens: Some(2048),
            stop: vec!["END".into()],
            thinking_budget: Some(1024),
            ..ChatOptions::default()
        },
        tools: vec![weather_tool()],
        ..ChatRequest::new(conversation())
    };
    let body = sent("gemini-2.5-flash", request).await;
    insta::assert_json_snapshot!("gemini_multi_turn_tool_conversation", body);

    // Each signature on its own part, byte for byte.
    let contents = &body["contents"];
    let model_turn = &contents[1]["parts"];
    assert_eq!(
        model_turn[0],
        json!({"text": "Signed thought.", "thought": true, "thoughtSignature": "SIG_THOUGHT"})
    );
    assert_eq!(
        model_turn[1],
        json!({"text": "Checking both.", "thoughtSignature": "SIG_TEXT"})
    );
    assert_eq!(model_turn[2]["thoughtSignature"], "SIG_CALL_0");
    assert_eq!(
        model_turn[2]["functionCall"],
        json!({"name": "get_weather", "args": {"city": "Paris"}})
    );
    assert_eq!(
        model_turn[3].get("thoughtSignature"),
        None,
        "an earlier turn is left as it was"
    );
    assert_eq!(
        model_turn.as_array().map(Vec::len),
        Some(4),
        "the unsigned summary is not sent"
    );
    // Both responses in one turn, in call order, the nameless one named after its call.
    let responses = &contents[2]["parts"];
    assert_eq!(
        responses[0]["functionResponse"]["response"],
        json!({"output": "18C cloudy"})
    );
    assert_eq!(responses[0]["functionResponse"]["name"], "get_weather");
    assert_eq!(
        responses[1]["functionResponse"]["response"],
        json!({"output": "22C sunny"})
    );
    assert_eq!(
        responses[1]["functionResponse"]["parts"],
        json!([{"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}}])
    );
    assert_eq!(contents[3]["parts"][0]["thoughtSignature"], "SIG_ANSWER");
    // Current turn: the foreign call gets the documented placeholder; the summary keeps its own.
    assert_eq!(contents[5]["parts"][0]["thoughtSignature"], SKIP_SIGNATURE);
    assert_eq!(
        contents[5]["parts"][0]["functionCall"]["id"],
        "call_foreign_1"
    );
    assert_eq!(
        contents[6]["parts"][0]["functionResponse"]["id"],
        "call_foreign_1"
    );
    assert_eq!(contents[7]["parts"][0]["thoughtSignature"], SKIP_SIGNATURE);
    // No minted id anywhere.
    assert!(!body.to_string().contains(MINTED_ID_PREFIX));
}

#[tokio::test]
async fn models_known_not_to_think_get_no_placeholder_signature() {
    let messages = vec![
        Message::human("Weather in Oslo?"),
        Message::ai_tool_calls(
            None,
            vec![ToolCall::new("call_1", "get_weather", r#"{"city":"Oslo"}"#)],
        ),
        Message::tool_response("call_1", "get_weather", "-3C"),
    ];
    let body = sent("gemini-2.0-flash", ChatRequest::new(messages.clone())).await;
    assert_eq!(
        body["contents"][1]["parts"][0].get("thoughtSignature"),
        None
    );
    let body = sent("gemini-3-pro-preview", ChatRequest::new(messages)).await;
    assert_eq!(
        body["contents"][1]["parts"][0]["thoughtSignature"],
        SKIP_SIGNATURE
    );
}

#[tokio::test]
async fn generation_config_and_thinking() {
    let human = || vec![Message::human("Hi")];
    // Gemini 3 takes the effort as a thinking level.
    let body = sent(
        "gemini-3-pro-preview",
        ChatRequest {
            options: ChatOptions {
                reasoning_effort: Some(ReasoningEffort::Low),
                ..ChatOptions::default()
            },
            ..ChatRequest::new(human())
        },
    )
    .await;
    assert_eq!(
        body["generationConfig"],
        json!({"thinkingConfig": {"thinkingLevel": "low", "includeThoughts": true}})
    );
    // Gemini 2.5 takes budgets only: the effort becomes Google's documented budget.
    let body = sent(
        "gemini-2.5-flash",
        ChatRequest {
            options: ChatOptions {
                reasoning_effort: Some(ReasoningEffort::High),
                ..ChatOptions::default()
            },
            ..ChatRequest::new(human())
        },
    )
    .await;
    assert_eq!(
        body["generationConfig"],
        json!({"thinkingConfig": {"thinkingBudget": 24576, "includeThoughts": true}})
    );
    // An explicit budget wins over the effort; 0 turns thinking (and its summaries) off.
    let body = sent(
        "gemini-3-flash-preview",
        ChatRequest {
            options: ChatOptions {
                reasoning_effort: Some(ReasoningEffort::High),
                thinking_budget: Some(0),
                ..ChatOptions::default()
            },
            ..ChatRequest::new(human())
        },
    )
    .await;
    assert_eq!(
        body["generationConfig"],
        json!({"thinkingConfig": {"thinkingBudget": 0, "includeThoughts": false}})
    );
    // Nothing set: no generationConfig at all; the configured max tokens otherwise.
    let body = sent("gemini-2.5-flash", ChatRequest::new(human())).await;
    assert_eq!(body.get("generationConfig"), None);
    assert_eq!(body.get("systemInstruction"), None);
    assert_eq!(body.get("tools"), None);
    let body = sent_with(
        |url| ModelConfig {
            max_tokens: Some(8192),
            ..config("gemini-2.5-flash", url)
        },
        "gemini-2.5-flash",
        ChatRequest {
            options: ChatOptions {
                temperature: Some(1.0),
                ..ChatOptions::default()
            },
            ..ChatRequest::new(human())
        },
    )
    .await;
    assert_eq!(
        body["generationConfig"],
        json!({"temperature": 1.0, "maxOutputTokens": 8192})
    );
}

#[tokio::test]
async fn tool_choice_is_tool_config() {
    let cases = [
        (ToolChoice::Auto, json!({"mode": "AUTO"})),
        (ToolChoice::None, json!({"mode": "NONE"})),
        (ToolChoice::Required, json!({"mode": "ANY"})),
        (
            ToolChoice::Tool("get_weather".into()),
            json!({"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
        ),
    ];
    for (choice, expected) in cases {
        let request = ChatRequest {
            options: ChatOptions {
                tool_choice: Some(choice.clone()),
                ..ChatOptions::default()
            },
            tools: vec![weather_tool()],
            ..ChatRequest::new(vec![Message::human("Hi")])
        };
        let body = sent("gemini-2.5-flash", request).await;
        assert_eq!(
            body["toolConfig"]["functionCallingConfig"], expected,
            "{choice:?}"
        );
    }
}

#[tokio::test]
async fn user_media_inline_and_by_url() {
    let message = Message::new(
        Role::Human,
        vec![
            ContentPart::text("What is in these?"),
            ContentPart::image_url("data:image/jpeg;base64,/9j/4AAQ"),
            ContentPart::image_url("https://example.test/cat.png"),
            ContentPart::binary("application/pdf", b"%PDF".to_vec()),
        ],
    );
    let body = sent("gemini-2.5-flash", ChatRequest::new(vec![message])).await;
    assert_eq!(
        body["contents"][0]["parts"],
        json!([
            {"text": "What is in these?"},
            {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQ"}},
            {"fileData": {"fileUri": "https://example.test/cat.png", "mimeType": "image/png"}},
            {"inlineData": {"mimeType": "application/pdf", "data": "JVBERg=="}}
        ])
    );
}

#[tokio::test]
async fn broken_arguments_in_history_are_wrapped_not_fatal() {
    let messages = vec![
        Message::human("Go"),
        Message::ai_tool_calls(
            Some("Calling.".into()),
            vec![ToolCall::new("c1", "f", "{not json")],
        ),
        Message::tool_response("c1", "f", "error: bad arguments"),
    ];
    let body = sent("gemini-2.5-flash", ChatRequest::new(messages)).await;
    assert_eq!(body["contents"][1]["parts"][0], json!({"text": "Calling."}));
    assert_eq!(
        body["contents"][1]["parts"][1]["functionCall"]["args"],
        json!({"arguments": "{not json"})
    );
}

#[tokio::test]
async fn a_nameless_response_to_no_call_is_a_config_error() {
    let replay = Replay::fixture(
        "/v1beta/models/gemini-2.5-flash:generateContent",
        TEXT_FIXTURE,
    )
    .await;
    let model = model_from_config(&config(
        "gemini-2.5-flash",
        &format!("{}/v1beta", replay.url()),
    ))
    .expect("builds");
    let request = ChatRequest::new(vec![
        Message::human("Hi"),
        Message::tool_response("nowhere", "", "x"),
    ]);
    let error = model
        .complete(request)
        .await
        .expect_err("cannot name the function");
    assert!(
        matches!(&error, ProviderError::Config { message } if message.contains("`nowhere`")),
        "{error}"
    );
    assert!(replay.requests().await.is_empty(), "nothing was sent");
}

#[tokio::test]
async fn headers_proxy_key_and_model_prefix() {
    // A custom base URL needs no key (a proxy may hold it): `dummy` is sent.
    let model_id = "models/gemini-2.5-flash";
    let replay = Replay::fixture(
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        TEXT_FIXTURE,
    )
    .await;
    let config = ModelConfig {
        base_url: Some(format!("{}/v1beta/", replay.url())),
        model: Some("google".into()),
        default_headers: BTreeMap::from([("x-goog-user-project".to_owned(), "skein".to_owned())]),
        ..ModelConfig::new(model_id)
    };
    let model = model_from_config(&config).expect("a proxy needs no key");
    let request = ChatRequest {
        options: ChatOptions {
            extra_headers: BTreeMap::from([("x-request-tag".to_owned(), "t1".to_owned())]),
            ..ChatOptions::default()
        },
        ..ChatRequest::new(vec![Message::human("Hi")])
    };
    support::streamed(model.as_ref(), request)
        .await
        .expect("parses");
    let raw = &replay.raw_requests().await[0];
    let header = |name: &str| {
        raw.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(header("x-goog-api-key").as_deref(), Some("dummy"));
    assert_eq!(header("x-goog-user-project").as_deref(), Some("skein"));
    assert_eq!(header("x-request-tag").as_deref(), Some("t1"));
    assert_eq!(header("content-type").as_deref(), Some("application/json"));

    // Without key and proxy there is nothing to authenticate with.
    let error = model_from_config(&ModelConfig::new("gemini-2.5-flash"))
        .err()
        .expect("no key");
    assert!(
        matches!(&error, ProviderError::Config { message } if message.contains("GEMINI_API_KEY")),
        "{error}"
    );
    let error = model_from_config(&ModelConfig {
        api_key: Some("k".into()),
        ..ModelConfig::new("gemini-2.5-flash?alt=json")
    })
    .err()
    .expect("not an id");
    assert!(matches!(error, ProviderError::Config { .. }));
}
