//! The Gemini adapter against the recorded `generateContent` responses (and the JSON array of
//! `streamGenerateContent` without `alt=sse`) in `tests/fixtures/gemini`, replayed byte for
//! byte through `model_from_config`, with the requests compared with the recordings.
#![cfg(feature = "gemini")]

use crate::gemini_common;
use crate::support;

use gemini_common::{
    call_signature, complete, followup, same_signature, secret_tool, sent_signature, usage,
    wire_ids,
};
use providers::ChatOptions;
use providers::gemini::MINTED_ID_PREFIX;
use providers::{ChatRequest, FinishReason, Message, ToolChoice, ToolSpec};
use serde_json::{Value, json};
use support::{calls, fixture_json, reasoning_parts};

#[tokio::test]
async fn generate_parallel_same_function_calls() {
    let (_, response) = complete(
        "gemini-2.5-flash",
        "gemini/generate_parallel_same_function_2_5_flash.json",
        ChatRequest {
            tools: vec![secret_tool()],
            ..ChatRequest::new(vec![Message::human(
                "Please retrieve the secrets: mellon,radiance",
            )])
        },
    )
    .await;
    let stem = format!("{MINTED_ID_PREFIX}AJnyaJv6GPulqtsP5Z6fgAs");
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
    assert_eq!(response.message.text(), "");
    let signature = call_signature(&response, 0).expect("signed");
    assert_eq!(signature.len(), 456);
    assert!(signature.starts_with("CtICAdHtim9BiyFrJTR8"));
    assert_eq!(call_signature(&response, 1), None);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage(70, 40, 76));
    assert_eq!(response.usage.total_tokens(), 186);
    assert_eq!(response.id.as_deref(), Some("AJnyaJv6GPulqtsP5Z6fgAs"));
    assert_eq!(response.model.as_deref(), Some("gemini-2.5-flash"));
}

#[tokio::test]
async fn generate_three_parallel_calls_with_system_and_tool_config() {
    let model_id = "gemini-3-flash-preview";
    let tools = vec![
        ToolSpec {
            name: "generate_topic".into(),
            description: String::new(),
            parameters: json!({"additionalProperties": false, "properties": {}, "type": "object"}),
        },
        ToolSpec {
            name: "final_result".into(),
            description: "The final response which ends this conversation".into(),
            parameters: json!({"properties": {"response": {"items": {"type": "string"}, "type": "array"}}, "required": ["response"], "type": "object"}),
        },
    ];
    let question = vec![
        Message::system("Tell three jokes. Generate topics with the generate_topic tool."),
        Message::human(""),
    ];
    let request = ChatRequest {
        options: ChatOptions {
            tool_choice: Some(ToolChoice::Required),
            ..ChatOptions::default()
        },
        tools: tools.clone(),
        ..ChatRequest::new(question.clone())
    };
    let (replay, response) = complete(
        model_id,
        "gemini/generate_parallel_function_calls.json",
        request,
    )
    .await;
    let stem = format!("{MINTED_ID_PREFIX}wOd8abGuO5rgz7IP5tLEGA");
    let expected: Vec<(String, String, String)> = (0..3)
        .map(|n| (format!("{stem}_{n}"), "generate_topic".into(), "{}".into()))
        .collect();
    assert_eq!(calls(&response), expected);
    let signature = call_signature(&response, 0).expect("the first call is signed");
    assert_eq!(signature.len(), 964);
    assert!(signature.starts_with("Es8FCswFAXLI2nxF"));
    assert_eq!(
        (call_signature(&response, 1), call_signature(&response, 2)),
        (None, None)
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage(83, 30, 190));
    assert_eq!(response.usage.total_tokens(), 303);
    assert_eq!(response.id.as_deref(), Some("wOd8abGuO5rgz7IP5tLEGA"));
    assert_eq!(response.model.as_deref(), Some("gemini-3-flash-preview"));

    let sent = &replay.requests().await[0];
    let recorded = fixture_json("gemini/generate_parallel_function_calls.request.json");
    assert_eq!(replay.raw_requests().await[0].url.query(), None);
    assert_eq!(sent["contents"], recorded["contents"]);
    assert_eq!(
        sent["systemInstruction"]["parts"],
        recorded["systemInstruction"]["parts"]
    );
    assert_eq!(
        sent["toolConfig"]["functionCallingConfig"]["mode"],
        recorded["toolConfig"]["functionCallingConfig"]["mode"]
    );
    for index in 0..2 {
        let (ours, theirs) = (
            &sent["tools"][0]["functionDeclarations"][index],
            &recorded["tools"][0]["functionDeclarations"][index],
        );
        assert_eq!(
            (&ours["name"], &ours["description"]),
            (&theirs["name"], &theirs["description"])
        );
    }
    assert_eq!(
        sent["tools"][0]["functionDeclarations"][1]["parameters"],
        json!({"type": "OBJECT", "properties": {"response": {"type": "ARRAY", "items": {"type": "STRING"}}}, "required": ["response"]})
    );

    // Follow-up: the three calls in order, the signature on the first only, the three
    // responses in one user turn.
    let results = [
        ("generate_topic", "cars"),
        ("generate_topic", "penguins"),
        ("generate_topic", "cars"),
    ];
    let request = ChatRequest {
        tools,
        ..ChatRequest::new(followup(question, &response, &results))
    };
    let (replay, _) = complete(
        model_id,
        "gemini/generate_text_after_function_responses.json",
        request,
    )
    .await;
    let sent = &replay.requests().await[0];
    let recorded = fixture_json("gemini/generate_parallel_function_calls.followup.request.json");
    assert_eq!(sent["contents"].as_array().map(Vec::len), Some(3));
    for index in 0..3 {
        let (ours, theirs) = (
            &sent["contents"][1]["parts"][index],
            &recorded["contents"][1]["parts"][index],
        );
        assert_eq!(ours["functionCall"]["name"], theirs["functionCall"]["name"]);
        assert_eq!(ours["functionCall"]["args"], theirs["functionCall"]["args"]);
        assert_eq!(
            ours.get("thoughtSignature").is_some(),
            theirs.get("thoughtSignature").is_some(),
            "part {index}"
        );
        let (ours, theirs) = (
            &sent["contents"][2]["parts"][index]["functionResponse"],
            &recorded["contents"][2]["parts"][index]["functionResponse"],
        );
        assert_eq!(ours["name"], theirs["name"]);
        assert_eq!(
            ours["response"]["output"],
            theirs["response"]["return_value"]
        );
    }
    assert!(same_signature(
        sent_signature(sent, 1, 0),
        sent_signature(&recorded, 1, 0)
    ));
    assert_eq!(wire_ids(sent), Vec::<Value>::new());
}

#[tokio::test]
async fn stream_generate_content_array_body() {
    // `streamGenerateContent` without `alt=sse` answers with a JSON array of responses; the
    // adapter reads that form wherever it meets it (here, a proxy returning it for
    // `generateContent`).
    let model_id = "gemini-2.5-flash";
    let tool = ToolSpec {
        name: "pelican_name_generator".into(),
        description: String::new(),
        parameters: json!({"properties": {}, "type": "object"}),
    };
    let question = vec![Message::human("Two names for a pet pelican")];
    let request = ChatRequest {
        options: ChatOptions {
            thinking_budget: Some(1024),
            ..ChatOptions::default()
        },
        tools: vec![tool.clone()],
        ..ChatRequest::new(question.clone())
    };
    let (replay, response) = complete(
        model_id,
        "gemini/stream_array_thought_function_call.json",
        request,
    )
    .await;

    let thoughts = reasoning_parts(&response);
    assert_eq!(thoughts.len(), 1);
    assert_eq!(thoughts[0].text.chars().count(), 236);
    assert!(thoughts[0].text.starts_with("**Generating Pelican Names**"));
    let id = format!("{MINTED_ID_PREFIX}OYpyaqycKd2V_uMP65TsgA0_0");
    assert_eq!(
        calls(&response),
        [(id, "pelican_name_generator".into(), "{}".into())]
    );
    let signature = call_signature(&response, 0).expect("signed");
    assert_eq!(signature.len(), 336);
    assert!(signature.starts_with("ClgBEU0yD8z3"));
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, usage(32, 12, 42));
    assert_eq!(response.usage.total_tokens(), 86);
    assert_eq!(response.id.as_deref(), Some("OYpyaqycKd2V_uMP65TsgA0"));

    let sent = &replay.requests().await[0];
    let recorded = fixture_json("gemini/stream_array_thought_function_call.request.json");
    assert_eq!(sent["contents"], recorded["contents"]);
    assert_eq!(
        sent["generationConfig"]["thinkingConfig"]["includeThoughts"],
        recorded["generationConfig"]["thinkingConfig"]["includeThoughts"]
    );

    // The follow-up: the signature identical to the recorded echo, the thought summary not
    // echoed (as llm-gemini does), the result by name.
    let request = ChatRequest {
        tools: vec![tool],
        ..ChatRequest::new(followup(
            question,
            &response,
            &[("pelican_name_generator", "Charles")],
        ))
    };
    let (replay, _) = complete(
        model_id,
        "gemini/generate_text_after_function_responses.json",
        request,
    )
    .await;
    let sent = &replay.requests().await[0];
    let recorded = fixture_json("gemini/stream_array_thought_function_call.followup.request.json");
    let (ours, theirs) = (
        &sent["contents"][1]["parts"],
        &recorded["contents"][1]["parts"],
    );
    assert_eq!(
        ours.as_array().map(Vec::len),
        Some(1),
        "only the call: {ours}"
    );
    assert_eq!(ours[0]["thoughtSignature"], theirs[0]["thoughtSignature"]);
    assert_eq!(
        ours[0]["functionCall"]["name"],
        theirs[0]["function_call"]["name"]
    );
    assert_eq!(
        ours[0]["functionCall"]["args"],
        theirs[0]["function_call"]["args"]
    );
    let (ours, theirs) = (
        &sent["contents"][2]["parts"][0]["functionResponse"],
        &recorded["contents"][2]["parts"][0]["function_response"],
    );
    assert_eq!(
        (&ours["name"], &ours["response"]),
        (&theirs["name"], &theirs["response"])
    );
    assert_eq!(wire_ids(sent), Vec::<Value>::new());
}
