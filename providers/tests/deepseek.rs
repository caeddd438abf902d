//! DeepSeek (OpenAI-compatible Chat Completions with `reasoning_content`) against the recorded
//! fixtures in `tests/fixtures/deepseek`.

use crate::support;

use providers::{ChatRequest, FinishReason, Message, ToolSpec, Usage, model_from_config};
use serde_json::Value;
use support::{Replay, calls, config, delta_text, fixture_json, reasoning_parts, streamed};

// DeepSeek's base URL has no `/v1`: `https://api.deepseek.com/chat/completions`.
const PATH: &str = "/chat/completions";

fn model(replay: &Replay, model_id: &str) -> Box<dyn providers::ChatModel> {
    model_from_config(&config(model_id, &replay.url())).expect("model builds")
}

#[tokio::test]
async fn stream_reasoning_content_then_text() {
    let replay = Replay::fixture(PATH, "deepseek/chat_stream_reasoning_content.sse").await;
    let (events, response) = streamed(
        model(&replay, "deepseek-reasoner").as_ref(),
        ChatRequest::new(vec![Message::human("Hello")]),
    )
    .await
    .expect("stream parses");
    let reasoning = reasoning_parts(&response);
    assert_eq!(reasoning.len(), 1);
    assert_eq!(reasoning[0].text.chars().count(), 882);
    assert!(
        reasoning[0]
            .text
            .starts_with("Hmm, the user just said \"Hello\".")
    );
    assert_eq!(
        (reasoning[0].id.as_ref(), reasoning[0].signature.as_ref()),
        (None, None)
    );
    assert_eq!(
        delta_text(&events),
        "Hello there! 😊 How can I help you today?"
    );
    assert_eq!(
        response.message.text(),
        "Hello there! 😊 How can I help you today?"
    );
    // Reasoning comes first in the message, as it was generated.
    assert!(matches!(
        response.message.parts[0],
        providers::ContentPart::Reasoning(_)
    ));
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 6,
            output_tokens: 212,
            cached_input_tokens: 0,
            reasoning_tokens: 198,
            ..Default::default()
        }
    );
    let sent = &replay.requests().await[0];
    let recorded = fixture_json("deepseek/chat_stream_reasoning_content.request.json");
    for field in ["model", "messages", "stream", "stream_options"] {
        assert_eq!(sent[field], recorded[field], "{field}");
    }
}

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        parameters: serde_json::json!({"type": "object", "properties": {}}),
    }
}

#[tokio::test]
async fn reasoning_tool_call_then_parallel_tools_echo_reasoning_content() {
    let recorded = fixture_json("deepseek/chat_reasoning_parallel_tools.followup.request.json");
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();

    // Turn 1: reasoning + text + one tool call.
    let replay = Replay::fixture(PATH, "deepseek/chat_reasoning_tool_call.json").await;
    let history = vec![
        Message::system(text(&recorded["messages"][0]["content"])),
        Message::system(text(&recorded["messages"][1]["content"])),
        Message::human(text(&recorded["messages"][2]["content"])),
    ];
    let first = model(&replay, "deepseek-v4-flash")
        .complete(ChatRequest {
            tools: vec![tool("load_capability")],
            ..ChatRequest::new(history.clone())
        })
        .await
        .expect("parses");
    assert_eq!(
        first.message.text(),
        "Let me load the dice rolling capability!"
    );
    assert_eq!(reasoning_parts(&first)[0].text.chars().count(), 233);
    assert_eq!(
        reasoning_parts(&first)[0].text,
        text(&recorded["messages"][3]["reasoning_content"])
    );
    assert_eq!(
        calls(&first),
        [(
            "call_00_sXqYgMESDht75NCLLZtt9804".into(),
            "load_capability".into(),
            r#"{"id": "DICE_ROLL"}"#.into()
        )]
    );
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        first.usage,
        Usage {
            input_tokens: 563,
            output_tokens: 116,
            cached_input_tokens: 512,
            ..first.usage
        }
    );
    assert_eq!(first.usage.total_tokens(), 679);

    // Turn 2: the follow-up carries turn 1 back WITH its reasoning_content.
    let replay = Replay::fixture(PATH, "deepseek/chat_reasoning_parallel_tools.json").await;
    let mut history2 = history.clone();
    history2.push(first.message.clone());
    history2.push(Message::tool_response(
        "call_00_sXqYgMESDht75NCLLZtt9804",
        "load_capability",
        text(&recorded["messages"][4]["content"]),
    ));
    let second = model(&replay, "deepseek-v4-flash")
        .complete(ChatRequest {
            tools: vec![tool("load_capability")],
            ..ChatRequest::new(history2.clone())
        })
        .await
        .expect("parses");
    let sent = &replay.requests().await[0]["messages"];
    for field in ["role", "content", "reasoning_content"] {
        assert_eq!(sent[3][field], recorded["messages"][3][field], "{field}");
    }
    assert_eq!(
        sent[3]["tool_calls"][0]["id"],
        recorded["messages"][3]["tool_calls"][0]["id"]
    );
    assert_eq!(sent[4], recorded["messages"][4]);
    assert_eq!(
        calls(&second),
        [
            (
                "call_00_6edlnw3Z1MgeMfey687g8451".into(),
                "get_player_name".into(),
                "{}".into()
            ),
            (
                "call_01_km02sac7sHxNDPATKLZy7705".into(),
                "roll_dice".into(),
                "{}".into()
            ),
        ]
    );
    assert_eq!(reasoning_parts(&second)[0].text.chars().count(), 105);
    assert_eq!(second.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        (second.usage.input_tokens, second.usage.output_tokens),
        (875, 79)
    );

    // A tool-call turn without reasoning is sent with `reasoning_content: ""`.
    let replay = Replay::fixture(PATH, "deepseek/chat_reasoning_parallel_tools.json").await;
    let bare = vec![
        Message::human("roll"),
        Message::ai_tool_calls(
            None,
            vec![providers::ToolCall::new("call_9", "roll_dice", "{}")],
        ),
        Message::tool_response("call_9", "roll_dice", "4"),
    ];
    model(&replay, "deepseek-v4-flash")
        .complete(ChatRequest::new(bare))
        .await
        .expect("parses");
    assert_eq!(
        replay.requests().await[0]["messages"][1]["reasoning_content"],
        ""
    );
}
