//! System messages after the conversation began, as OpenAI clients send them (pydantic-ai
//! adds one after a tool round when it retries a failed validation), in the body each adapter
//! sends: OpenAI gets them where they stand (Chat Completions and Responses take a system
//! message anywhere); Anthropic and Gemini, which take one system prompt, get the opening
//! ones as that prompt and a later one as marked text of a user turn, after the tool results
//! (Anthropic wants `tool_result` blocks first in their user turn).

use crate::support;

use providers::{ApiFormat, ChatRequest, Message, ToolCall, model_from_config};
use serde_json::{Value, json};
use support::{Replay, config};

const RETRY: &str = "Fix the errors and try again.";
const MARKED_RETRY: &str =
    "<system_instruction>\nFix the errors and try again.\n</system_instruction>";
const ERRORS: &str = "city: Input should be a valid string";

/// A structured-output retry: the model answered through the output tool, validation failed,
/// and the client says so in a system message after the tool result.
fn retry() -> ChatRequest {
    ChatRequest::new(vec![
        Message::system("You extract cities."),
        Message::human("Where is the Eiffel Tower?"),
        Message::ai_tool_calls(
            None,
            vec![ToolCall::new("call_1", "final_result", r#"{"city": 1}"#)],
        ),
        Message::tool_response("call_1", "final_result", ERRORS),
        Message::system(RETRY),
    ])
}

async fn sent(path: &str, fixture: &str, model_id: &str, format: Option<ApiFormat>) -> Value {
    let replay = Replay::fixture(path, fixture).await;
    let base = if path.starts_with("/v1/") && model_id.starts_with("gpt") {
        format!("{}/v1", replay.url())
    } else if path.starts_with("/v1beta") {
        format!("{}/v1beta", replay.url())
    } else {
        replay.url()
    };
    let mut cfg = config(model_id, &base);
    cfg.api_format = format;
    let model = model_from_config(&cfg).expect("model builds");
    support::streamed(model.as_ref(), retry())
        .await
        .expect("the recorded answer parses");
    replay.requests().await.remove(0)
}

#[tokio::test]
async fn openai_chat_gets_the_system_message_where_it_stands() {
    let body = sent(
        "/v1/chat/completions",
        "openai/chat_stream_text_after_tool.sse",
        "gpt-4o",
        None,
    )
    .await;
    let messages = body["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().expect("role"))
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "system"]);
    assert_eq!(messages[4], json!({"role": "system", "content": RETRY}));
}

#[tokio::test]
async fn openai_responses_gets_opening_instructions_and_a_later_system_item() {
    let body = sent(
        "/v1/responses",
        "openai/responses_stream_text.sse",
        "gpt-4o",
        Some(ApiFormat::Responses),
    )
    .await;
    assert_eq!(body["instructions"], "You extract cities.");
    let input = body["input"].as_array().expect("input");
    assert_eq!(input[input.len() - 2]["type"], "function_call_output");
    assert_eq!(
        input[input.len() - 1],
        json!({"role": "system", "content": RETRY}),
        "an input message item of role system, as the Responses API takes anywhere"
    );
}

#[tokio::test]
async fn anthropic_gets_the_later_system_message_as_marked_user_text_after_the_results() {
    let body = sent(
        "/v1/messages",
        "anthropic/stream_text.sse",
        "claude-sonnet-4-5",
        None,
    )
    .await;
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You extract cities."}])
    );
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3, "user, assistant, user: roles alternate");
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": ERRORS},
            {"type": "text", "text": MARKED_RETRY},
        ]})
    );
}

#[tokio::test]
async fn gemini_gets_the_later_system_message_as_a_user_turn_after_the_responses() {
    let body = sent(
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        "gemini/stream_text.sse",
        "gemini-2.5-flash",
        None,
    )
    .await;
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "You extract cities."}]})
    );
    let contents = body["contents"].as_array().expect("contents");
    let roles: Vec<&str> = contents
        .iter()
        .map(|c| c["role"].as_str().expect("role"))
        .collect();
    assert_eq!(roles, ["user", "model", "user", "user"]);
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"]["response"],
        json!({"output": ERRORS})
    );
    assert_eq!(
        contents[3],
        json!({"role": "user", "parts": [{"text": MARKED_RETRY}]})
    );
}
