//! Reasoning replay on the wire: for each kind of reasoning a provider returns, what the next
//! request carries back under the registry's default policy and under each override in
//! `ModelConfig::reasoning_replay`, as the loopback server received it.
//!
//! Every case sends the same conversation shape: a turn without tools (reasoning R1 on its
//! answer), a turn with a tool call (R2 on the call, R3 on the answer after the tool result),
//! then a new human message. `tool_turns` sends R2 and R3, `always` all three, `never` none.

use crate::support;

use providers::{
    ApiFormat, ChatRequest, ContentPart, Message, ModelConfig, Reasoning, ReasoningReplay, Role,
    ToolCall, model_from_config,
};
use serde_json::{Value, json};
use support::Replay;

/// One API under test: where it is posted, its base-URL convention and a recorded answer.
struct Api {
    path: &'static str,
    base: &'static str,
    answer: &'static str,
    model: Option<&'static str>,
    format: Option<ApiFormat>,
}

const CHAT: Api = Api {
    path: "/v1/chat/completions",
    base: "/v1",
    answer: "openai/chat_text.json",
    model: None,
    format: None,
};
const OPENROUTER: Api = Api {
    path: "/api/v1/chat/completions",
    base: "/api/v1",
    answer: "openai/chat_text.json",
    model: Some("openrouter"),
    format: None,
};
const RESPONSES: Api = Api {
    path: "/v1/responses",
    base: "/v1",
    answer: "openai/responses_reasoning_encrypted.json",
    model: None,
    format: Some(ApiFormat::Responses),
};
const ANTHROPIC: Api = Api {
    path: "/v1/messages",
    base: "",
    answer: "anthropic/message_text_after_tool.json",
    model: None,
    format: None,
};

fn gemini(model_id: &str) -> Api {
    Api {
        path: Box::leak(format!("/v1beta/models/{model_id}:generateContent").into_boxed_str()),
        base: "/v1beta",
        answer: "gemini/generate_text_after_function_responses.json",
        model: None,
        format: None,
    }
}

/// The body `model_id` sends for `messages` over `api`, with `replay` configured.
async fn sent(
    api: &Api,
    model_id: &str,
    replay: Option<ReasoningReplay>,
    messages: Vec<Message>,
) -> Value {
    let server = Replay::fixture(api.path, api.answer).await;
    let config = ModelConfig {
        model: api.model.map(str::to_owned),
        api_format: api.format,
        reasoning_replay: replay,
        ..support::config(model_id, &format!("{}{}", server.url(), api.base))
    };
    let model = model_from_config(&config).expect("builds");
    model
        .complete(ChatRequest::new(messages))
        .await
        .expect("answers");
    server.requests().await.remove(0)
}

/// R1 answers a turn without tools; R2 calls a tool; R3 answers its result; then a new turn.
fn conversation(r1: Vec<ContentPart>, r2: Vec<ContentPart>, r3: Vec<ContentPart>) -> Vec<Message> {
    let with = |mut reasoning: Vec<ContentPart>, rest: Vec<ContentPart>| {
        reasoning.extend(rest);
        Message::new(Role::Ai, reasoning)
    };
    vec![
        Message::system("Be brief."),
        Message::human("Hi"),
        with(r1, vec![ContentPart::text("Hello!")]),
        Message::human("Weather in Paris?"),
        with(
            r2,
            vec![ContentPart::ToolCall(ToolCall::new(
                "call_1",
                "get_weather",
                r#"{"city":"Paris"}"#,
            ))],
        ),
        Message::tool_response("call_1", "get_weather", "sunny"),
        with(r3, vec![ContentPart::text("Sunny.")]),
        Message::human("Thanks!"),
    ]
}

fn thought(text: &str) -> Vec<ContentPart> {
    vec![ContentPart::Reasoning(Reasoning {
        text: text.into(),
        ..Default::default()
    })]
}

// --- DeepSeek `reasoning_content` (Chat Completions) ---------------------------------------

/// `reasoning_content` of the assistant messages, in order (`None` where absent).
fn reasoning_content(body: &Value) -> Vec<Option<&str>> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m.get("reasoning_content").and_then(Value::as_str))
        .collect()
}

#[tokio::test]
async fn deepseek_reasoning_content_goes_back_on_tool_turns_by_default() {
    let messages = conversation(thought("R1"), thought("R2"), thought("R3"));
    let body = sent(&CHAT, "deepseek-reasoner", None, messages).await;
    assert_eq!(
        reasoning_content(&body),
        [None, Some("R2"), Some("R3")],
        "{body}"
    );
}

#[tokio::test]
async fn deepseek_reasoning_content_overridden() {
    let messages = conversation(thought("R1"), thought("R2"), thought("R3"));
    let always = sent(
        &CHAT,
        "deepseek-reasoner",
        Some(ReasoningReplay::Always),
        messages.clone(),
    )
    .await;
    assert_eq!(
        reasoning_content(&always),
        [Some("R1"), Some("R2"), Some("R3")]
    );
    // `never` leaves the field out entirely, even the empty one tool calls otherwise get.
    let never = sent(
        &CHAT,
        "deepseek-v4-flash",
        Some(ReasoningReplay::Never),
        messages,
    )
    .await;
    assert_eq!(reasoning_content(&never), [None, None, None], "{never}");
}

// --- OpenRouter `reasoning_details` (Chat Completions) -------------------------------------

/// `reasoning_details` of the assistant messages, in order (`Null` where absent).
fn reasoning_details(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m.get("reasoning_details").cloned().unwrap_or(Value::Null))
        .collect()
}

/// A signed thinking block and a redacted one, as the stream parser keeps OpenRouter's
/// `reasoning.text` and `reasoning.encrypted` entries.
fn detailed(name: &str) -> Vec<ContentPart> {
    vec![
        ContentPart::Reasoning(Reasoning {
            id: Some(format!("rd_{name}")),
            text: format!("{name} text"),
            signature: Some(format!("{name}-sig")),
            ..Default::default()
        }),
        ContentPart::Reasoning(Reasoning {
            encrypted: Some(format!("{name}-data")),
            ..Default::default()
        }),
    ]
}

fn details_of(name: &str) -> Value {
    json!([
        {"type": "reasoning.text", "text": format!("{name} text"), "signature": format!("{name}-sig"),
         "id": format!("rd_{name}"), "index": 0},
        {"type": "reasoning.encrypted", "data": format!("{name}-data"), "index": 1},
    ])
}

#[tokio::test]
async fn openrouter_reasoning_details_go_back_on_tool_turns_by_default() {
    let messages = conversation(detailed("R1"), detailed("R2"), detailed("R3"));
    let body = sent(&OPENROUTER, "anthropic/claude-sonnet-4.5", None, messages).await;
    assert_eq!(
        reasoning_details(&body),
        [Value::Null, details_of("R2"), details_of("R3")],
        "{body}"
    );
    // OpenRouter reads `reasoning_details`, never `reasoning_content`.
    assert_eq!(reasoning_content(&body), [None, None, None]);
}

#[tokio::test]
async fn openrouter_reasoning_details_overridden() {
    let messages = conversation(detailed("R1"), detailed("R2"), detailed("R3"));
    let always = sent(
        &OPENROUTER,
        "google/gemini-2.5-pro",
        Some(ReasoningReplay::Always),
        messages.clone(),
    )
    .await;
    assert_eq!(
        reasoning_details(&always),
        [details_of("R1"), details_of("R2"), details_of("R3")]
    );
    let never = sent(
        &OPENROUTER,
        "deepseek/deepseek-r1",
        Some(ReasoningReplay::Never),
        messages,
    )
    .await;
    assert_eq!(
        reasoning_details(&never),
        [Value::Null, Value::Null, Value::Null]
    );
}

// --- Anthropic thinking and redacted-thinking blocks ---------------------------------------

fn signed(name: &str) -> Vec<ContentPart> {
    vec![
        ContentPart::Reasoning(Reasoning {
            text: format!("{name} thinking"),
            signature: Some(format!("{name}-sig")),
            ..Default::default()
        }),
        ContentPart::Reasoning(Reasoning {
            encrypted: Some(format!("{name}-redacted")),
            ..Default::default()
        }),
    ]
}

/// The thinking blocks of each assistant turn, in order.
fn thinking_blocks(body: &Value) -> Vec<Vec<Value>> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| {
            m["content"]
                .as_array()
                .expect("blocks")
                .iter()
                .filter(|b| matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
                .cloned()
                .collect()
        })
        .collect()
}

fn blocks_of(name: &str) -> Vec<Value> {
    vec![
        json!({"type": "thinking", "thinking": format!("{name} thinking"), "signature": format!("{name}-sig")}),
        json!({"type": "redacted_thinking", "data": format!("{name}-redacted")}),
    ]
}

#[tokio::test]
async fn anthropic_thinking_goes_back_always_by_default() {
    let messages = conversation(signed("R1"), signed("R2"), signed("R3"));
    let body = sent(&ANTHROPIC, "claude-sonnet-4-5", None, messages).await;
    assert_eq!(
        thinking_blocks(&body),
        [blocks_of("R1"), blocks_of("R2"), blocks_of("R3")]
    );
}

#[tokio::test]
async fn anthropic_thinking_overridden() {
    let messages = conversation(signed("R1"), signed("R2"), signed("R3"));
    let tool_turns = sent(
        &ANTHROPIC,
        "claude-sonnet-4-5",
        Some(ReasoningReplay::ToolTurns),
        messages.clone(),
    )
    .await;
    assert_eq!(
        thinking_blocks(&tool_turns),
        [Vec::new(), blocks_of("R2"), blocks_of("R3")]
    );
    let never = sent(
        &ANTHROPIC,
        "claude-sonnet-4-5",
        Some(ReasoningReplay::Never),
        messages,
    )
    .await;
    assert_eq!(
        thinking_blocks(&never),
        [Vec::<Value>::new(), Vec::new(), Vec::new()]
    );
    // The rest of each turn is untouched.
    assert_eq!(
        never["messages"][1]["content"],
        json!([{"type": "text", "text": "Hello!"}])
    );
}

// --- Gemini thought signatures -------------------------------------------------------------

/// A model message whose text and call carry signatures, after a signed thought.
fn gemini_conversation() -> Vec<Message> {
    let signed_text = |name: &str, text: &str| ContentPart::Text {
        text: text.into(),
        reasoning: Some(Reasoning::signature(format!("{name}-sig"))),
    };
    let thought = |name: &str| {
        ContentPart::Reasoning(Reasoning {
            text: format!("{name} thought"),
            signature: Some(format!("{name}-thought-sig")),
            ..Default::default()
        })
    };
    let mut call = ToolCall::new("gemini_call_r_0", "get_weather", r#"{"city":"Paris"}"#);
    call.reasoning = Some(Reasoning::signature("R2-sig"));
    vec![
        Message::human("Hi"),
        Message::new(Role::Ai, vec![thought("R1"), signed_text("R1", "Hello!")]),
        Message::human("Weather in Paris?"),
        Message::new(Role::Ai, vec![thought("R2"), ContentPart::ToolCall(call)]),
        Message::tool_response("gemini_call_r_0", "get_weather", "sunny"),
        Message::new(Role::Ai, vec![signed_text("R3", "Sunny.")]),
        Message::human("Thanks!"),
    ]
}

/// The model turns' parts.
fn model_parts(body: &Value) -> Vec<Value> {
    body["contents"]
        .as_array()
        .expect("contents")
        .iter()
        .filter(|c| c["role"] == "model")
        .map(|c| c["parts"].clone())
        .collect()
}

fn gemini_turns(signatures: [bool; 3]) -> Vec<Value> {
    let [r1, r2, r3] = signatures;
    let call = json!({"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}});
    vec![
        if r1 {
            json!([{"text": "R1 thought", "thought": true, "thoughtSignature": "R1-thought-sig"},
                   {"text": "Hello!", "thoughtSignature": "R1-sig"}])
        } else {
            json!([{"text": "Hello!"}])
        },
        if r2 {
            json!([{"text": "R2 thought", "thought": true, "thoughtSignature": "R2-thought-sig"},
                   {"functionCall": call["functionCall"], "thoughtSignature": "R2-sig"}])
        } else {
            json!([call])
        },
        if r3 {
            json!([{"text": "Sunny.", "thoughtSignature": "R3-sig"}])
        } else {
            json!([{"text": "Sunny."}])
        },
    ]
}

#[tokio::test]
async fn gemini_signatures_go_back_always_by_default() {
    let api = gemini("gemini-2.5-flash");
    let body = sent(&api, "gemini-2.5-flash", None, gemini_conversation()).await;
    assert_eq!(model_parts(&body), gemini_turns([true, true, true]));
}

#[tokio::test]
async fn gemini_signatures_overridden() {
    let api = gemini("gemini-2.5-flash");
    let tool_turns = sent(
        &api,
        "gemini-2.5-flash",
        Some(ReasoningReplay::ToolTurns),
        gemini_conversation(),
    )
    .await;
    assert_eq!(model_parts(&tool_turns), gemini_turns([false, true, true]));
    let never = sent(
        &api,
        "gemini-2.5-flash",
        Some(ReasoningReplay::Never),
        gemini_conversation(),
    )
    .await;
    assert_eq!(model_parts(&never), gemini_turns([false, false, false]));
}

/// Without its own signature, the current turn's first call still gets the sentinel Gemini
/// documents: Gemini 3 rejects the request otherwise, whatever the policy.
#[tokio::test]
async fn gemini_never_keeps_the_sentinel_on_the_current_turn() {
    let api = gemini("gemini-3-pro-preview");
    let mut messages = gemini_conversation();
    messages.truncate(5); // ends with the tool result: the call is in the current turn
    let never = sent(
        &api,
        "gemini-3-pro-preview",
        Some(ReasoningReplay::Never),
        messages,
    )
    .await;
    assert_eq!(
        model_parts(&never)[1],
        json!([{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                "thoughtSignature": providers::gemini::SKIP_SIGNATURE}])
    );
}

// --- Responses API encrypted reasoning items -----------------------------------------------

fn item(name: &str) -> Vec<ContentPart> {
    vec![ContentPart::Reasoning(Reasoning {
        id: Some(format!("rs_{name}")),
        text: format!("{name} summary"),
        encrypted: Some(format!("{name}-enc")),
        ..Default::default()
    })]
}

/// The ids of the reasoning items in `input`, in order.
fn reasoning_items(body: &Value) -> Vec<&str> {
    body["input"]
        .as_array()
        .expect("input")
        .iter()
        .filter(|i| i["type"] == "reasoning")
        .map(|i| i["id"].as_str().expect("id"))
        .collect()
}

#[tokio::test]
async fn responses_reasoning_items_go_back_always_by_default() {
    let messages = conversation(item("R1"), item("R2"), item("R3"));
    let body = sent(&RESPONSES, "o3", None, messages).await;
    assert_eq!(reasoning_items(&body), ["rs_R1", "rs_R2", "rs_R3"]);
    let first = body["input"]
        .as_array()
        .expect("input")
        .iter()
        .find(|i| i["type"] == "reasoning")
        .expect("an item");
    assert_eq!(
        first,
        &json!({"type": "reasoning", "id": "rs_R1", "encrypted_content": "R1-enc",
                "summary": [{"type": "summary_text", "text": "R1 summary"}]})
    );
}

#[tokio::test]
async fn responses_reasoning_items_overridden() {
    let messages = conversation(item("R1"), item("R2"), item("R3"));
    let tool_turns = sent(
        &RESPONSES,
        "o3",
        Some(ReasoningReplay::ToolTurns),
        messages.clone(),
    )
    .await;
    assert_eq!(reasoning_items(&tool_turns), ["rs_R2", "rs_R3"]);
    let never = sent(&RESPONSES, "o3", Some(ReasoningReplay::Never), messages).await;
    assert!(reasoning_items(&never).is_empty(), "{never}");
    // Only the reasoning items went: the calls and texts are all there.
    assert_eq!(
        never["input"].as_array().map(Vec::len),
        tool_turns["input"].as_array().map(|items| items.len() - 2)
    );
}
