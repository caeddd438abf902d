//! The Gemini adapter against the recorded `streamGenerateContent?alt=sse` responses in
//! `tests/fixtures/gemini`, replayed byte for byte through `model_from_config`, with the
//! requests it sends compared with the recorded `*.request.json` / `*.followup.request.json`
//! bodies. The `generateContent` fixtures are in `gemini_generate.rs`.
#![cfg(feature = "gemini")]

use crate::gemini_common;
use crate::support;

use gemini_common::{
    call_signature, complete, followup, same_signature, secret_tool, sent_signature, stream, usage,
    wire_ids,
};
use providers::ChatOptions;
use providers::gemini::MINTED_ID_PREFIX;
use providers::{ChatRequest, ContentPart, FinishReason, Message, ToolSpec};
use serde_json::{Value, json};
use support::{calls, delta_text, fixture_json, reasoning_parts};

#[tokio::test]
async fn stream_function_call_with_signature_then_text() {
    let model_id = "gemini-3-pro-preview";
    let tool = ToolSpec {
        name: "get_country".into(),
        description: String::new(),
        parameters: json!({"additionalProperties": false, "properties": {}, "type": "object"}),
    };
    let question = vec![Message::human(
        "What is the capital of the user country? Call the tool",
    )];
    let request = ChatRequest {
        tools: vec![tool.clone()],
        ..ChatRequest::new(question.clone())
    };
    let (replay, events, response) = stream(
        model_id,
        "gemini/stream_function_call_signature.sse",
        request,
    )
    .await;

    assert_eq!(delta_text(&events), "");
    assert!(
        response
            .message
            .parts
            .iter()
            .all(|p| matches!(p, ContentPart::ToolCall(_)))
    );
    let minted = format!("{MINTED_ID_PREFIX}QUVVadTSNJ6_qtsPvN7J8Q0_0");
    assert_eq!(
        calls(&response),
        [(minted.clone(), "get_country".into(), "{}".into())]
    );
    let signature = call_signature(&response, 0).expect("the call is signed");
    assert_eq!(signature.len(), 1408);
    assert!(signature.starts_with("EpwICpkIAXLI2nxlU6gs"));
    // STOP with a call is reported as a tool-call finish.
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage(29, 10, 202));
    assert_eq!(response.usage.total_tokens(), 241);
    assert_eq!(response.id.as_deref(), Some("QUVVadTSNJ6_qtsPvN7J8Q0"));
    assert_eq!(response.model.as_deref(), Some("gemini-3-pro-preview"));

    // The request: what the recorded one said, the key in a header and never in the URL.
    let raw = &replay.raw_requests().await[0];
    assert_eq!(raw.url.query(), Some("alt=sse"));
    assert_eq!(
        raw.headers
            .get("x-goog-api-key")
            .and_then(|v| v.to_str().ok()),
        Some("test-key-123")
    );
    let sent = &replay.requests().await[0];
    let recorded = fixture_json("gemini/stream_function_call_signature.request.json");
    assert_eq!(sent["contents"], recorded["contents"]);
    let (ours, theirs) = (
        &sent["tools"][0]["functionDeclarations"][0],
        &recorded["tools"][0]["functionDeclarations"][0],
    );
    assert_eq!(ours["name"], theirs["name"]);
    assert_eq!(ours["description"], theirs["description"]);
    // The recorded schema declares no properties; Skein then declares no parameters.
    assert_eq!(theirs["parameters_json_schema"]["properties"], json!({}));
    assert_eq!(ours.get("parameters"), None);

    // The follow-up echoes the signature on the call, sends no minted id, and answers by name.
    let messages = followup(question, &response, &[("get_country", "Mexico")]);
    let request = ChatRequest {
        tools: vec![tool],
        ..ChatRequest::new(messages)
    };
    let (replay, events, answer) = stream(
        model_id,
        "gemini/stream_text_after_function_call.sse",
        request,
    )
    .await;
    let sent = &replay.requests().await[0];
    let recorded = fixture_json("gemini/stream_function_call_signature.followup.request.json");
    assert_eq!(sent["contents"][0], recorded["contents"][0]);
    assert_eq!(sent["contents"][1]["role"], "model");
    assert_eq!(
        sent_signature(sent, 1, 0),
        Some(signature.as_str()),
        "echoed byte for byte"
    );
    assert!(same_signature(
        sent_signature(sent, 1, 0),
        sent_signature(&recorded, 1, 0)
    ));
    let (call, recorded_call) = (
        &sent["contents"][1]["parts"][0]["functionCall"],
        &recorded["contents"][1]["parts"][0]["functionCall"],
    );
    assert_eq!(
        (&call["name"], &call["args"]),
        (&recorded_call["name"], &recorded_call["args"])
    );
    let (result, recorded_result) = (
        &sent["contents"][2]["parts"][0]["functionResponse"],
        &recorded["contents"][2]["parts"][0]["functionResponse"],
    );
    assert_eq!(sent["contents"][2]["role"], "user");
    assert_eq!(result["name"], recorded_result["name"]);
    assert_eq!(result["response"], json!({"output": "Mexico"}));
    assert_eq!(recorded_result["response"]["return_value"], "Mexico");
    assert_eq!(
        wire_ids(sent),
        Vec::<Value>::new(),
        "minted ids never leave Skein"
    );

    assert_eq!(delta_text(&events), "The capital of Mexico is Mexico City.");
    assert_eq!(
        answer.message.text(),
        "The capital of Mexico is Mexico City."
    );
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(answer.usage, usage(257, 8, 0));
    assert_eq!(answer.usage.total_tokens(), 265);
    assert_eq!(answer.id.as_deref(), Some("REVVabaiCdq4qtsPnZu96Qo"));
}

#[tokio::test]
async fn stream_thought_summaries_and_signed_answer() {
    let model_id = "gemini-2.5-pro";
    let request = ChatRequest {
        options: ChatOptions {
            thinking_budget: Some(2048),
            ..ChatOptions::default()
        },
        tools: vec![ToolSpec {
            name: "dummy".into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {}}),
        }],
        ..ChatRequest::new(vec![
            Message::system("You are a helpful assistant."),
            Message::human("How do I cross the street?"),
        ])
    };
    let (replay, events, response) = stream(model_id, "gemini/stream_thinking.sse", request).await;

    let thoughts = reasoning_parts(&response);
    assert_eq!(
        thoughts.len(),
        1,
        "four thought parts in a row are one block"
    );
    assert_eq!(thoughts[0].text.chars().count(), 1575);
    assert!(thoughts[0].text.starts_with("**Clarifying User Goals**"));
    assert_eq!(thoughts[0].signature, None);
    let deltas: String = events
        .iter()
        .filter_map(|e| match e {
            providers::StreamEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, thoughts[0].text);

    // Reasoning first, then one text part carrying the one signature.
    assert!(matches!(
        response.message.parts[0],
        ContentPart::Reasoning(_)
    ));
    let ContentPart::Text { text, reasoning } = &response.message.parts[1] else {
        panic!(
            "the answer follows the thoughts: {:?}",
            response.message.parts
        );
    };
    assert_eq!(response.message.parts.len(), 2);
    assert_eq!(text.chars().count(), 1938);
    assert!(text.starts_with("This is a great question!"));
    assert_eq!(delta_text(&events), *text);
    let signature = reasoning
        .as_ref()
        .and_then(|r| r.signature.as_deref())
        .expect("signed");
    assert_eq!(signature.len(), 6152);
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, usage(34, 469, 787));
    assert_eq!(response.usage.total_tokens(), 1290);
    assert_eq!(response.model.as_deref(), Some("gemini-2.5-pro"));
    assert_eq!(response.id.as_deref(), Some("beHBaJfEMIi-qtsP3769-Q8"));

    let sent = &replay.requests().await[0];
    let recorded = fixture_json("gemini/stream_thinking.request.json");
    assert_eq!(sent["contents"], recorded["contents"]);
    assert_eq!(
        sent["systemInstruction"]["parts"],
        recorded["systemInstruction"]["parts"]
    );
    assert_eq!(
        sent["generationConfig"]["thinkingConfig"]["includeThoughts"],
        recorded["generationConfig"]["thinkingConfig"]["includeThoughts"]
    );
    assert_eq!(
        sent["generationConfig"]["thinkingConfig"]["thinkingBudget"],
        2048
    );
    assert_eq!(sent["tools"][0]["functionDeclarations"][0]["name"], "dummy");

    // Sent back: the signed text unchanged; the unsigned thought summary is not.
    let mut messages = vec![
        Message::human("How do I cross the street?"),
        response.message.clone(),
    ];
    messages.push(Message::human("Thanks"));
    let (replay, _, _) = stream(
        model_id,
        "gemini/stream_text.sse",
        ChatRequest::new(messages),
    )
    .await;
    let sent = &replay.requests().await[0];
    assert_eq!(
        sent["contents"][1],
        json!({"role": "model", "parts": [{"text": text, "thoughtSignature": signature}]})
    );
}

#[tokio::test]
async fn stream_plain_text_split_mid_number() {
    let (_, events, response) = stream(
        "gemini-2.5-flash",
        "gemini/stream_text.sse",
        ChatRequest::new(vec![Message::human("Count to 30, one number per line")]),
    )
    .await;
    let expected: Vec<String> = (1..=30).map(|n| n.to_string()).collect();
    assert_eq!(delta_text(&events), expected.join("\n"));
    assert_eq!(
        response.message.parts,
        [ContentPart::text(expected.join("\n"))]
    );
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, usage(18, 80, 35));
    assert_eq!(response.usage.total_tokens(), 133);
    assert_eq!(response.id.as_deref(), Some("ru1garvBEoOiqtsP2fznmQw"));
}

#[tokio::test]
async fn stream_parallel_same_function_calls_and_ordered_responses() {
    let model_id = "gemini-2.5-flash";
    let question = vec![
        Message::system("Use parallel tool calling."),
        Message::human(
            "Please retrieve the secrets associated with each of these passwords: mellon,radiance",
        ),
    ];
    let request = ChatRequest {
        tools: vec![secret_tool()],
        ..ChatRequest::new(question.clone())
    };
    let (_, _, response) = stream(
        model_id,
        "gemini/stream_parallel_function_calls.sse",
        request,
    )
    .await;
    let stem = format!("{MINTED_ID_PREFIX}G5nyaJuGE-yrqtsPmJHUoAs");
    assert_eq!(
        calls(&response),
        [
            (
                format!("{stem}_0"),
                "secret_retrieval_tool".into(),
                r#"{"password":"mellon"}"#.into()
            ),
            (
                format!("{stem}_1"),
                "secret_retrieval_tool".into(),
                r#"{"password":"radiance"}"#.into()
            ),
        ]
    );
    let signature = call_signature(&response, 0).expect("the first call is signed");
    assert_eq!(signature.len(), 484);
    assert!(signature.starts_with("CikB0e2Kbw5tJ9dwYB9m"));
    assert_eq!(
        call_signature(&response, 1),
        None,
        "only the first call of a group is signed"
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage(70, 40, 61));
    assert_eq!(response.usage.total_tokens(), 171);
    assert_eq!(response.id.as_deref(), Some("G5nyaJuGE-yrqtsPmJHUoAs"));

    // The results arrive in the other order, one tool message each: Gemini gets them in ONE
    // turn, in the order of the calls, matched through the minted ids.
    let mut messages = question;
    messages.push(response.message.clone());
    messages.push(Message::tool_response(
        format!("{stem}_1"),
        "secret_retrieval_tool",
        "Life before Death",
    ));
    messages.push(Message::tool_response(
        format!("{stem}_0"),
        "secret_retrieval_tool",
        "Welcome to Moria!",
    ));
    let request = ChatRequest {
        tools: vec![secret_tool()],
        ..ChatRequest::new(messages)
    };
    let (replay, answer) = complete(
        model_id,
        "gemini/generate_text_after_function_responses.json",
        request,
    )
    .await;
    let sent = &replay.requests().await[0];
    let recorded = fixture_json("gemini/request_followup_parallel_function_responses.json");
    assert_eq!(
        sent["systemInstruction"]["parts"],
        recorded["systemInstruction"]["parts"]
    );
    assert_eq!(sent["contents"][0], recorded["contents"][0]);
    assert_eq!(sent["contents"].as_array().map(Vec::len), Some(3));
    for (index, _) in recorded["contents"][1]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let (ours, theirs) = (
            &sent["contents"][1]["parts"][index],
            &recorded["contents"][1]["parts"][index],
        );
        assert_eq!(ours["functionCall"], theirs["functionCall"], "call {index}");
    }
    assert_eq!(sent_signature(sent, 1, 0), Some(signature.as_str()));
    assert!(same_signature(
        sent_signature(sent, 1, 0),
        sent_signature(&recorded, 1, 0)
    ));
    assert_eq!(sent_signature(sent, 1, 1), None);
    assert_eq!(
        sent["contents"][2], recorded["contents"][2],
        "responses in call order, by name"
    );
    assert_eq!(wire_ids(sent), Vec::<Value>::new());
    // The JSON Schema became exactly the Gemini schema the recording used.
    assert_eq!(sent["tools"], recorded["tools"]);

    assert_eq!(
        answer.message.text(),
        "The secrets have been retrieved. For the password \"mellon\", the secret is \"Welcome to Moria!\". For the password \"radiance\", the secret is \"Life before Death\"."
    );
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(answer.usage, usage(152, 37, 0));
    assert_eq!(answer.usage.total_tokens(), 189);
    assert_eq!(answer.id.as_deref(), Some("AZnyaNDpA8mcqtsP7cWI8Qo"));
}
