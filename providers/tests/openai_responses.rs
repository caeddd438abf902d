//! OpenAI Responses API adapter (`api_format = "responses"`) against the recorded fixtures.

use crate::support;

use providers::ChatOptions;
use providers::{
    ChatRequest, ContentPart, FinishReason, Message, ProviderError, ToolSpec, Usage,
    model_from_config,
};
use serde_json::Value;
use support::{
    Canned, Replay, calls, config, decoded, delta_text, fixture_json, fixture_text, jsonl_as_sse,
    reasoning_parts, streamed,
};

const PATH: &str = "/v1/responses";

fn model(replay: &Replay, model_id: &str) -> Box<dyn providers::ChatModel> {
    let mut cfg = config(model_id, &format!("{}/v1", replay.url()));
    cfg.api_format = Some(providers::ApiFormat::Responses);
    model_from_config(&cfg).expect("model builds")
}

fn usage(input: u64, output: u64, reasoning: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        reasoning_tokens: reasoning,
        ..Default::default()
    }
}

fn tool(name: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        parameters,
    }
}

#[tokio::test]
async fn stream_function_call_and_followup() {
    let replay = Replay::fixture(PATH, "openai/responses_stream_function_call.sse").await;
    let recorded = fixture_json("openai/responses_stream_function_call.request.json");
    let multiply = ToolSpec {
        name: "multiply".into(),
        description: "Multiply two numbers.".into(),
        parameters: recorded["tools"][0]["parameters"].clone(),
    };
    let request = ChatRequest {
        options: ChatOptions {
            reasoning_effort: Some(providers::ReasoningEffort::Low),
            ..ChatOptions::default()
        },
        tools: vec![multiply.clone()],
        ..ChatRequest::new(vec![Message::human(
            "What is 1231 * 2331? Use the multiply tool.",
        )])
    };
    let (_, response) = streamed(model(&replay, "gpt-5.5").as_ref(), request)
        .await
        .expect("parses");
    assert_eq!(
        calls(&response),
        [(
            "call_sVidsfFJ6zlzRpelrPkTPlpd".into(),
            "multiply".into(),
            r#"{"a":1231,"b":2331}"#.into()
        )]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage(58, 23, 0));
    assert_eq!(
        response.id.as_deref(),
        Some("resp_00d64fa806f333310169fab1be69d081a08f8285661855594c")
    );
    let sent = &replay.requests().await[0];
    for field in [
        "model",
        "input",
        "tools",
        "reasoning",
        "include",
        "store",
        "stream",
    ] {
        assert_eq!(sent[field], recorded[field], "{field}");
    }

    // Follow-up: function_call + function_call_output; the answer is text with a non-ASCII sign.
    let replay = Replay::fixture(PATH, "openai/responses_stream_text.sse").await;
    let followup = ChatRequest {
        options: ChatOptions {
            reasoning_effort: Some(providers::ReasoningEffort::Low),
            ..ChatOptions::default()
        },
        tools: vec![multiply],
        ..ChatRequest::new(vec![
            Message::human("What is 1231 * 2331? Use the multiply tool."),
            response.message.clone(),
            Message::tool_response("call_sVidsfFJ6zlzRpelrPkTPlpd", "multiply", "2869461"),
        ])
    };
    let (events, answer) = streamed(model(&replay, "gpt-5.5").as_ref(), followup)
        .await
        .expect("parses");
    let sent = &replay.requests().await[0];
    let recorded = fixture_json("openai/responses_stream_function_call.followup.request.json");
    assert_eq!(
        sent["input"][2], recorded["input"][2],
        "function_call_output"
    );
    assert_eq!(sent["input"][1]["call_id"], recorded["input"][1]["call_id"]);
    assert_eq!(sent["input"][1]["type"], "function_call");
    assert_eq!(delta_text(&events), "1231 × 2331 = **2,869,461**");
    assert_eq!(answer.message.text(), "1231 × 2331 = **2,869,461**");
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(answer.usage, usage(94, 18, 0));
}

#[tokio::test]
async fn stream_reasoning_commentary_and_call_echoed_on_followup() {
    let replay = Replay::fixture(PATH, "openai/responses_stream_reasoning_function_call.sse").await;
    let recorded =
        fixture_json("openai/responses_stream_reasoning_function_call.followup.request.json");
    let instructions = recorded["instructions"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let get_capital = tool("get_capital", recorded["tools"][0]["parameters"].clone());
    let history = vec![
        Message::system(instructions.clone()),
        Message::human("What is the capital of PotatoLand?"),
    ];
    let (_, response) = streamed(
        model(&replay, "gpt-5.5").as_ref(),
        ChatRequest {
            tools: vec![get_capital.clone()],
            ..ChatRequest::new(history.clone())
        },
    )
    .await
    .expect("parses");

    let parts = &response.message.parts;
    assert_eq!(
        parts.len(),
        3,
        "reasoning, commentary text, call: {parts:?}"
    );
    let ContentPart::Reasoning(reasoning) = &parts[0] else {
        panic!("reasoning first")
    };
    assert_eq!(
        reasoning.id.as_deref(),
        Some("rs_0fabc13af1ee0049006a691dfe60b081a1baa444d3cf19afba")
    );
    let encrypted = reasoning.encrypted.as_deref().unwrap_or_default();
    assert_eq!(encrypted.len(), 1080);
    assert!(encrypted.starts_with("gAAAAABqaR3-pGgSyJcPT3y2"));
    assert_eq!(
        Some(encrypted),
        recorded["input"][1]["encrypted_content"].as_str(),
        "the .done token, as echoed"
    );
    assert_eq!(
        parts[1].as_text(),
        Some("I’ll check the capital lookup tool for “PotatoLand.”")
    );
    assert_eq!(
        calls(&response),
        [(
            "call_LabG58Uhrq9kZvR52BYKjToD".into(),
            "get_capital".into(),
            r#"{"country":"PotatoLand"}"#.into()
        )]
    );
    assert_eq!(response.usage, usage(63, 69, 26));
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);

    // The next request sends the reasoning item back verbatim, before the narration and call.
    let replay = Replay::fixture(PATH, "openai/responses_stream_reasoning_followup_text.sse").await;
    let mut history2 = history;
    history2.push(response.message.clone());
    history2.push(Message::tool_response(
        "call_LabG58Uhrq9kZvR52BYKjToD",
        "get_capital",
        "Potato City",
    ));
    let (_, answer) = streamed(
        model(&replay, "gpt-5.5").as_ref(),
        ChatRequest {
            tools: vec![get_capital],
            ..ChatRequest::new(history2)
        },
    )
    .await
    .expect("parses");
    let sent = &replay.requests().await[0];
    assert_eq!(sent["instructions"], recorded["instructions"]);
    assert_eq!(sent["include"], recorded["include"]);
    assert_eq!(sent["input"][0], recorded["input"][0]);
    assert_eq!(
        sent["input"][1], recorded["input"][1],
        "reasoning item verbatim"
    );
    assert_eq!(sent["input"][2]["role"], "assistant");
    assert_eq!(sent["input"][2]["content"][0]["type"], "output_text");
    for field in ["type", "call_id", "name", "arguments"] {
        assert_eq!(
            sent["input"][3][field], recorded["input"][3][field],
            "{field}"
        );
    }
    assert_eq!(sent["input"][4], recorded["input"][4]);
    assert_eq!(
        answer.message.text(),
        "The capital of PotatoLand is **Potato City**."
    );
    assert_eq!(answer.usage, usage(147, 16, answer.usage.reasoning_tokens));
    assert_eq!(answer.finish_reason, FinishReason::Stop);
}

#[tokio::test]
async fn complete_encrypted_reasoning_round_trip() {
    let replay = Replay::sequence(
        PATH,
        vec![
            Canned::fixture("openai/responses_reasoning_encrypted.json"),
            Canned::fixture("openai/responses_reasoning_encrypted.followup.json"),
        ],
    )
    .await;
    let recorded = fixture_json("openai/responses_reasoning_encrypted.followup.request.json");
    let tools = vec![
        tool(
            "lookup_population",
            recorded["tools"][0]["parameters"].clone(),
        ),
        tool(
            "can_have_dragons",
            recorded["tools"][1]["parameters"].clone(),
        ),
    ];
    let model = model(&replay, "gpt-5.5");
    let prompt = recorded["input"][0]["content"].as_str().unwrap_or_default();
    let request = |messages| ChatRequest {
        options: ChatOptions {
            reasoning_effort: Some(providers::ReasoningEffort::High),
            ..ChatOptions::default()
        },
        tools: tools.clone(),
        ..ChatRequest::new(messages)
    };

    let first = model
        .complete(request(vec![Message::human(prompt)]))
        .await
        .expect("parses");
    let reasoning = reasoning_parts(&first);
    assert_eq!(reasoning.len(), 1);
    assert_eq!(
        reasoning[0].id.as_deref(),
        Some("rs_0f4809b27460351d0169fab21897dc8196960e8680fb72a88d")
    );
    assert_eq!(reasoning[0].encrypted.as_deref().map(str::len), Some(1356));
    assert_eq!(reasoning[0].text, "", "summary []");
    assert_eq!(
        calls(&first),
        [(
            "call_uy7tfNVokIN7NjFF6k7OtLyl".into(),
            "lookup_population".into(),
            r#"{"country":"Pundora"}"#.into()
        )]
    );
    assert_eq!(first.usage, usage(94, 85, 63));
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);

    let second = model
        .complete(request(vec![
            Message::human(prompt),
            first.message.clone(),
            Message::tool_response(
                "call_uy7tfNVokIN7NjFF6k7OtLyl",
                "lookup_population",
                "123124",
            ),
        ]))
        .await
        .expect("parses");
    let sent = &replay.requests().await[1];
    assert_eq!(
        sent["input"][1], recorded["input"][1],
        "reasoning item verbatim"
    );
    assert_eq!(sent["input"][3], recorded["input"][3]);
    for field in ["include", "store", "reasoning", "model"] {
        assert_eq!(sent[field], recorded[field], "{field}");
    }
    assert_eq!(sent["stream"], false);
    assert_eq!(
        calls(&second),
        [(
            "call_jwY8kllWAsnoSXtjXZQ5KR6i".into(),
            "can_have_dragons".into(),
            r#"{"population":123124}"#.into()
        )]
    );
    assert_eq!(
        (second.usage.input_tokens, second.usage.output_tokens),
        (192, 21)
    );
}

#[tokio::test]
async fn stream_parallel_function_calls_and_followup() {
    let replay = Replay::fixture(PATH, "openai/responses_stream_parallel_function_calls.sse").await;
    let recorded = fixture_json("openai/request_responses_followup_function_outputs.json");
    let (_, response) = streamed(
        model(&replay, "gpt-4o").as_ref(),
        ChatRequest::new(vec![Message::human("secrets")]),
    )
    .await
    .expect("parses");
    assert_eq!(
        calls(&response),
        [
            (
                "call_sKC7OABqf2A2PTLCm0CLeRWV".into(),
                "secret_retrieval_tool".into(),
                r#"{"password":"mellon"}"#.into()
            ),
            (
                "call_OdR3s3xop0vtgkDyWRMLafuH".into(),
                "secret_retrieval_tool".into(),
                r#"{"password":"radiance"}"#.into()
            ),
        ]
    );
    assert_eq!(response.usage, usage(36, 54, 0));
    assert_eq!(response.message.text(), "");

    let replay = Replay::fixture(PATH, "openai/responses_stream_text.sse").await;
    let history = vec![
        Message::human(recorded["input"][1]["content"].as_str().unwrap_or_default()),
        response.message.clone(),
        Message::tool_response(
            "call_sKC7OABqf2A2PTLCm0CLeRWV",
            "secret_retrieval_tool",
            "Welcome to Moria!",
        ),
        Message::tool_response(
            "call_OdR3s3xop0vtgkDyWRMLafuH",
            "secret_retrieval_tool",
            "Life before Death",
        ),
    ];
    streamed(model(&replay, "gpt-4o").as_ref(), ChatRequest::new(history))
        .await
        .expect("parses");
    let sent = &replay.requests().await[0];
    assert_eq!(
        sent["include"],
        Value::Null,
        "gpt-4o has no reasoning to include"
    );
    for i in [1, 2] {
        for field in ["type", "call_id", "name", "arguments"] {
            assert_eq!(
                sent["input"][i][field],
                recorded["input"][i + 1][field],
                "input {i} {field}"
            );
        }
    }
    assert_eq!(sent["input"][3], recorded["input"][4]);
    assert_eq!(sent["input"][4], recorded["input"][5]);
}

#[tokio::test]
async fn stream_reasoning_summary_parts() {
    let replay = Replay::fixture(PATH, "openai/responses_stream_reasoning_summary.sse").await;
    let (events, response) = streamed(
        model(&replay, "gpt-5").as_ref(),
        ChatRequest::new(vec![Message::human("primes")]),
    )
    .await
    .expect("parses");
    let reasoning = reasoning_parts(&response);
    assert_eq!(reasoning.len(), 1);
    assert_eq!(
        reasoning[0].id.as_deref(),
        Some("rs_0a1097cbfef27a8c00696afa2459008196a08a4261aba00f56")
    );
    assert_eq!(
        reasoning[0].encrypted, None,
        "stored response: no encrypted content"
    );
    let summaries: Vec<&str> = reasoning[0].text.split("\n\n**").collect();
    assert!(reasoning[0].text.starts_with("**Exploring prime numbers**"));
    assert!(
        reasoning[0]
            .text
            .contains("\n\n**Testing prime candidates**")
    );
    assert!(reasoning[0].text.contains("\n\n**Final count of primes**"));
    assert!(summaries.len() >= 3);
    let delta_chars: usize = events
        .iter()
        .filter_map(|e| match e {
            providers::StreamEvent::ReasoningDelta { text } if text != "\n\n" => {
                Some(text.chars().count())
            }
            _ => None,
        })
        .sum();
    assert_eq!(delta_chars, 1399);
    assert_eq!(response.message.text(), "3");
    assert_eq!(response.usage, usage(32, 839, 832));
    assert_eq!(response.finish_reason, FinishReason::Stop);
}

/// The vercel/ai chunks file holds four responses of one multi-step run back to back; each
/// is served as its own SSE response.
#[tokio::test]
async fn stream_reasoning_summary_multi_step_payloads() {
    let text = fixture_text("openai/responses_stream_reasoning_summary.jsonl");
    let mut responses = vec![String::new()];
    for line in text.lines() {
        if let Some(last) = responses.last_mut() {
            last.push_str(line);
            last.push('\n');
        }
        if line.contains("\"type\":\"response.completed\"") {
            responses.push(String::new());
        }
    }
    responses.retain(|r| !r.trim().is_empty());
    assert_eq!(responses.len(), 4);
    let mut results = Vec::new();
    for body in &responses {
        let sse = jsonl_as_sse(body);
        let stream = providers::openai::decode_responses_stream(futures::stream::iter(vec![sse]));
        results.push(decoded(stream).await.expect("parses").1);
    }
    let reasoning = reasoning_parts(&results[0]);
    assert_eq!(
        reasoning[0].id.as_deref(),
        Some("rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9")
    );
    assert_eq!(reasoning[0].text.chars().count(), 163);
    assert!(
        reasoning[0]
            .text
            .starts_with("**Calculating step-by-step using calculator**")
    );
    assert!(reasoning[0].encrypted.is_some());
    let all_calls: Vec<_> = results.iter().flat_map(calls).collect();
    assert_eq!(
        all_calls,
        [
            (
                "call_AB6AaRZ1FYZB2RwS6A5vbdqn".into(),
                "calculator".into(),
                r#"{"a":12,"b":7,"op":"add"}"#.into()
            ),
            (
                "call_Q6pW65MUgW9vF59BmItYGos3".into(),
                "calculator".into(),
                r#"{"a":19,"b":3,"op":"multiply"}"#.into()
            ),
            (
                "call_Zl5vIMnD7dVAjgU6FkhmiCZh".into(),
                "calculator".into(),
                r#"{"a":57,"b":10,"op":"multiply"}"#.into()
            ),
        ]
    );
    assert_eq!(results[3].message.text(), "The final result is **570**.");
    assert_eq!(results[3].finish_reason, FinishReason::Stop);
    assert_eq!(
        results[0].usage,
        usage(134, 28, results[0].usage.reasoning_tokens)
    );
}

#[tokio::test]
async fn in_stream_error_is_one_terminal_typed_error() {
    let replay = Replay::fixture(PATH, "openai/responses_stream_error.jsonl").await;
    let error = streamed(
        model(&replay, "gpt-5-nano").as_ref(),
        ChatRequest::new(vec![Message::human("x")]),
    )
    .await
    .expect_err("fails");
    match error {
        ProviderError::Stream {
            error_type,
            message,
            retryable,
            ..
        } => {
            assert_eq!(error_type.as_deref(), Some("insufficient_quota"));
            assert!(message.starts_with("You exceeded your current quota"));
            assert!(!retryable);
        }
        other => panic!("expected an in-stream error, got {other:?}"),
    }
}

#[tokio::test]
async fn http_errors_are_typed() {
    for (status, fixture, code, param_message) in [
        (
            400,
            "openai/responses_error_400_invalid_value.json",
            "decimal_below_min_value",
            "temperature",
        ),
        (
            400,
            "openai/error_400_responses_model_not_found.json",
            "model_not_found",
            "this-model-does-not-exist-12345",
        ),
    ] {
        let replay = Replay::sequence(PATH, vec![Canned::error(status, fixture)]).await;
        let error = model(&replay, "gpt-5.5")
            .complete(ChatRequest::new(vec![Message::human("x")]))
            .await
            .expect_err("fails");
        match &error {
            ProviderError::Http {
                status: s,
                error_type,
                code: c,
                message,
                retryable,
                ..
            } => {
                assert_eq!(*s, status);
                assert_eq!(error_type.as_deref(), Some("invalid_request_error"));
                assert_eq!(c.as_deref(), Some(code));
                assert!(message.contains(param_message), "{message}");
                assert!(!retryable);
            }
            other => panic!("{fixture}: {other:?}"),
        }
        assert_eq!(replay.requests().await.len(), 1);
    }
}

#[tokio::test]
async fn stop_sequences_are_refused_not_ignored() {
    let replay = Replay::fixture(PATH, "openai/responses_stream_text.sse").await;
    let request = ChatRequest {
        options: ChatOptions {
            stop: vec!["END".into()],
            ..ChatOptions::default()
        },
        ..ChatRequest::new(vec![Message::human("x")])
    };
    let error = model(&replay, "gpt-5.5")
        .complete(request)
        .await
        .expect_err("refused");
    assert!(
        matches!(error, ProviderError::Unsupported { .. }),
        "{error:?}"
    );
    assert!(replay.requests().await.is_empty(), "nothing was sent");
}

/// The request body of a multi-turn tool conversation with reasoning items (sent back with
/// id, summary and encrypted content unchanged), narration, media in a tool result.
#[tokio::test]
async fn request_body_snapshot() {
    let replay = Replay::fixture(PATH, "openai/responses_stream_text.sse").await;
    let mut photo = Message::tool_response("call_a", "camera", "taken");
    photo
        .parts
        .push(ContentPart::binary("image/jpeg", vec![255, 216, 255]));
    let messages = vec![
        Message::system("Narrate before each tool call."),
        Message::human("Take a photo, then tell me the time."),
        Message::new(
            providers::Role::Ai,
            vec![
                ContentPart::Reasoning(providers::Reasoning {
                    id: Some("rs_1".into()),
                    text: "**Plan**\n\nPhoto first.\n\n**Then**\n\nClock.".into(),
                    encrypted: Some("gAAAAAB-opaque-1".into()),
                    ..Default::default()
                }),
                ContentPart::text("Taking the photo."),
                ContentPart::ToolCall(providers::ToolCall::new(
                    "call_a",
                    "camera",
                    r#"{"flash":false}"#,
                )),
            ],
        ),
        photo,
        Message::new(
            providers::Role::Ai,
            vec![
                ContentPart::Reasoning(providers::Reasoning {
                    id: Some("rs_2".into()),
                    encrypted: Some("gAAAAAB-opaque-2".into()),
                    ..Default::default()
                }),
                // Reasoning from another provider has no Responses form and is left out.
                ContentPart::Reasoning(providers::Reasoning {
                    text: "thinking".into(),
                    signature: Some("anthropic-sig".into()),
                    ..Default::default()
                }),
                ContentPart::ToolCall(providers::ToolCall::new("call_b", "clock", "{}")),
            ],
        ),
        Message::tool_response("call_b", "clock", "noon"),
    ];
    let request = ChatRequest {
        options: ChatOptions {
            tool_choice: Some(providers::ToolChoice::Tool("camera".into())),
            temperature: Some(1.0),
            max_tokens: Some(1024),
            reasoning_effort: Some(providers::ReasoningEffort::Medium),
            ..ChatOptions::default()
        },
        tools: vec![tool(
            "camera",
            serde_json::json!({"type": "object", "properties": {"flash": {"type": "boolean"}}}),
        )],
        ..ChatRequest::new(messages)
    };
    streamed(model(&replay, "gpt-5").as_ref(), request)
        .await
        .expect("parses");
    insta::assert_json_snapshot!(replay.requests().await[0]);
}
