//! What the Anthropic adapter sends: request bodies compared with the recorded
//! `*.request.json` / `*.followup.request.json` of the same conversations, insta snapshots of
//! a multi-turn tool conversation with thinking and of every option, and the headers.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use providers::ChatOptions;
use providers::{
    CacheBreakpoint, ChatModel, ChatRequest, ContentPart, Message, ModelConfig, PromptCache,
    ProviderError, ReasoningEffort, Role, ToolCall, ToolChoice, ToolSpec, model_from_config,
};
use serde_json::{Value, json};
use support::{Replay, config, fixture_json, streamed};

const PATH: &str = "/v1/messages";

fn model_with(
    replay: &Replay,
    model_id: &str,
    edit: impl FnOnce(&mut ModelConfig),
) -> Box<dyn ChatModel> {
    let mut config = config(model_id, &replay.url());
    edit(&mut config);
    model_from_config(&config).expect("the Anthropic model builds")
}

fn model(replay: &Replay, model_id: &str) -> Box<dyn ChatModel> {
    model_with(replay, model_id, |_| {})
}

fn recorded(name: &str) -> Value {
    fixture_json(&format!("anthropic/{name}"))
}

/// Removes `pointer`'s last key from its object (a field Skein does not model).
fn remove(value: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("a JSON pointer");
    let removed = value
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .and_then(|object| object.remove(key));
    assert!(removed.is_some(), "{pointer} exists in the recording");
}

fn header(request: &wiremock::Request, name: &str) -> Vec<String> {
    request
        .headers
        .get_all(name)
        .iter()
        .map(|value| value.to_str().unwrap_or("<binary>").to_owned())
        .collect()
}

fn fixed_version_tool() -> ToolSpec {
    ToolSpec {
        name: "fixed_version".into(),
        description: "Return a fixed test version string".into(),
        parameters: json!({"properties": {}, "type": "object"}),
    }
}

/// simonw/llm-anthropic's thinking + tool conversation, streamed: the first request, then the
/// follow-up that must echo the thinking block and its signature exactly.
#[tokio::test]
async fn streamed_thinking_tool_conversation_matches_the_recording() {
    let question = "Use the fixed_version tool. Then tell me the version and make one short joke about it. Think about it first.";
    let first = ChatRequest {
        options: ChatOptions {
            temperature: Some(1.0),
            thinking_budget: Some(1024),
            ..ChatOptions::default()
        },
        tools: vec![fixed_version_tool()],
        ..ChatRequest::new(vec![Message::human(question)])
    };
    let replay = Replay::fixture(PATH, "anthropic/stream_thinking_tool_use.sse").await;
    // No max_tokens anywhere: the registry's 64,000 for claude-haiku-4-5 is sent.
    let model_id = "claude-haiku-4-5-20251001";
    let (_, answer) = streamed(model(&replay, model_id).as_ref(), first.clone())
        .await
        .expect("first turn");
    let mut expected = recorded("stream_thinking_tool_use.request.json");
    // `display: "summarized"` is an option of llm-anthropic Skein does not send.
    remove(&mut expected, "/thinking/display");
    assert_eq!(replay.requests().await[0], expected);

    let followup = ChatRequest {
        messages: vec![
            Message::human(question),
            answer.message.clone(),
            Message::tool_response("toolu_01825dXWLSoJwCst1qTsiWdb", "fixed_version", "0.32a0"),
        ],
        ..first
    };
    let replay = Replay::fixture(PATH, "anthropic/stream_text_after_tool.sse").await;
    streamed(model(&replay, model_id).as_ref(), followup)
        .await
        .expect("second turn");
    let sent = replay.requests().await.remove(0);
    let mut expected = recorded("stream_thinking_tool_use.followup.request.json");
    remove(&mut expected, "/thinking/display");
    assert_eq!(
        sent, expected,
        "the thinking block and signature are echoed exactly"
    );
    insta::assert_json_snapshot!("thinking_tool_followup_body", sent);
}

/// pydantic-ai's non-streamed thinking + text + tool_use turn and its follow-up.
#[tokio::test]
async fn non_streamed_thinking_tool_conversation_matches_the_recording() {
    let question = "What is the largest city in the user country?";
    let first = ChatRequest {
        options: ChatOptions {
            tool_choice: Some(ToolChoice::Auto),
            thinking_budget: Some(3000),
            max_tokens: Some(4096),
            ..ChatOptions::default()
        },
        tools: vec![ToolSpec {
            name: "get_user_country".into(),
            description: String::new(),
            parameters: json!({"additionalProperties": false, "properties": {}, "type": "object"}),
        }],
        ..ChatRequest::new(vec![Message::human(question)])
    };
    let replay = Replay::fixture(PATH, "anthropic/message_thinking_tool_use.json").await;
    let answer = model(&replay, "claude-sonnet-4-0")
        .complete(first.clone())
        .await
        .expect("first turn");
    let mut expected = recorded("message_thinking_tool_use.request.json");
    // pydantic-ai spells out `stream: false`; Skein leaves it at the default.
    remove(&mut expected, "/stream");
    assert_eq!(replay.requests().await[0], expected);

    let followup = ChatRequest {
        messages: vec![
            Message::human(question),
            answer.message,
            Message::tool_response(
                "toolu_01YGzqpRE16Vricda3Aqcejo",
                "get_user_country",
                "Mexico",
            ),
        ],
        ..first
    };
    let replay = Replay::fixture(PATH, "anthropic/message_text_after_tool.json").await;
    let answer = model(&replay, "claude-sonnet-4-0")
        .complete(followup)
        .await
        .expect("second turn");
    assert!(answer.message.text().contains("Mexico City"));
    let mut expected = recorded("message_thinking_tool_use.followup.request.json");
    remove(&mut expected, "/stream");
    // `is_error: false` is the API's default; Skein's ToolResponse has no error flag.
    remove(&mut expected, "/messages/2/content/0/is_error");
    assert_eq!(
        replay.requests().await[0],
        expected,
        "the whole assistant content (thinking + signature, text, tool_use) is echoed in order"
    );
}

/// Parallel calls: both `tool_use` blocks in one assistant message, both results in ONE user
/// message, although Skein holds them as two tool messages.
#[tokio::test]
async fn parallel_tool_results_merge_into_one_user_turn() {
    let tool = ToolSpec {
        name: "pelican_name_generator".into(),
        description: String::new(),
        parameters: json!({"properties": {}, "type": "object"}),
    };
    let first = ChatRequest {
        options: ChatOptions {
            temperature: Some(1.0),
            ..ChatOptions::default()
        },
        tools: vec![tool],
        ..ChatRequest::new(vec![Message::human("Two names for a pet pelican")])
    };
    let replay = Replay::fixture(PATH, "anthropic/stream_parallel_tool_use.sse").await;
    let model_id = "claude-haiku-4-5-20251001";
    // `ModelConfig::max_tokens` is the fallback when a request sets none.
    let configured = |config: &mut ModelConfig| config.max_tokens = Some(8192);
    let (_, answer) = streamed(
        model_with(&replay, model_id, configured).as_ref(),
        first.clone(),
    )
    .await
    .expect("first turn");
    assert_eq!(
        replay.requests().await[0],
        recorded("stream_parallel_tool_use.request.json")
    );

    let followup = ChatRequest {
        messages: vec![
            Message::human("Two names for a pet pelican"),
            answer.message,
            Message::tool_response(
                "toolu_01LtHJmixrs9NcWQkK8hu8hj",
                "pelican_name_generator",
                "Charles",
            ),
            Message::tool_response(
                "toolu_01N8a4jWyf116qKTMqKKmjyt",
                "pelican_name_generator",
                "Sammy",
            ),
        ],
        ..first
    };
    let replay = Replay::fixture(PATH, "anthropic/stream_text_after_tool.sse").await;
    streamed(model_with(&replay, model_id, configured).as_ref(), followup)
        .await
        .expect("second turn");
    let mut expected = recorded("stream_parallel_tool_use.followup.request.json");
    // simonw/llm's quirk: a `{"type":"text","text":" "}` block the model never sent.
    let quirk = expected["messages"][1]["content"]
        .as_array_mut()
        .expect("assistant content")
        .remove(0);
    assert_eq!(quirk, json!({"type": "text", "text": " "}));
    assert_eq!(replay.requests().await[0], expected);
}

/// Drops `null` fields (SDK noise such as `citations: null`) and spells string content as one
/// text block, the form Skein sends.
fn normalise(value: &mut Value) {
    match value {
        Value::Object(object) => {
            object.retain(|_, field| !field.is_null());
            if let (Some(Value::String(text)), Some(_)) =
                (object.get("content"), object.get("role"))
            {
                let block = json!([{"type": "text", "text": text}]);
                object.insert("content".into(), block);
            }
            object.values_mut().for_each(normalise);
        }
        Value::Array(items) => items.iter_mut().for_each(normalise),
        _ => {}
    }
}

/// Mirascope's cached conversation: `cache_control` on the tools, the system prompt and the
/// last tool result come from `PromptCache` breakpoints.
#[tokio::test]
async fn cache_breakpoints_on_tools_system_and_last_message() {
    let first = ChatRequest::new(vec![
        Message::system("Use parallel tool calling."),
        Message::human(
            "Please retrieve the secrets associated with each of these passwords: mellon,radiance",
        ),
    ]);
    let replay = Replay::fixture(PATH, "anthropic/messages_parallel_tool_use.json").await;
    let answer = model(&replay, "claude-sonnet-4-0")
        .complete(first.clone())
        .await
        .expect("first turn");

    let mut messages = first.messages;
    messages.push(answer.message);
    messages.push(Message::tool_response(
        "toolu_01BUvqBj8Yb34pNAbCJJY1oc",
        "secret_retrieval_tool",
        "Welcome to Moria!",
    ));
    messages.push(Message::tool_response(
        "toolu_01VPuQJ1LonDBYXrr8pqPkqQ",
        "secret_retrieval_tool",
        "Life before Death",
    ));
    let followup = ChatRequest {
        options: ChatOptions {
            max_tokens: Some(16000),
            cache: PromptCache {
                breakpoints: vec![
                    CacheBreakpoint::LastMessage,
                    CacheBreakpoint::System,
                    CacheBreakpoint::Tools,
                ],
                ..Default::default()
            },
            ..ChatOptions::default()
        },
        tools: vec![ToolSpec {
            name: "secret_retrieval_tool".into(),
            description: "A tool that requires a password to retrieve a secret.".into(),
            parameters: json!({"properties": {"password": {"title": "Password", "type": "string"}}, "required": ["password"], "additionalProperties": false, "type": "object"}),
        }],
        ..ChatRequest::new(messages)
    };
    let replay = Replay::fixture(PATH, "anthropic/message_text_after_tool.json").await;
    model(&replay, "claude-sonnet-4-0")
        .complete(followup)
        .await
        .expect("second turn");
    let mut expected = recorded("request_followup_parallel_tool_results_nonstream.json");
    normalise(&mut expected);
    assert_eq!(replay.requests().await[0], expected);
}

/// pydantic-ai's cache prefix request: a system message after the conversation started is
/// hoisted into the top-level `system` (only the newest models take a `system` role in
/// `messages`), so the breakpoint after it lands on the last message block, with the TTL.
#[tokio::test]
async fn mid_conversation_system_message_and_cache_ttl() {
    let recorded = recorded("message_cache.request.json");
    let facts = recorded["messages"][0]["content"][0]["text"]
        .as_str()
        .expect("the facts")
        .to_owned();
    let request = ChatRequest {
        options: ChatOptions {
            max_tokens: Some(4096),
            cache: PromptCache {
                breakpoints: vec![CacheBreakpoint::Message(4)],
                ttl: Some(Duration::from_secs(300)),
                key: None,
            },
            ..ChatOptions::default()
        },
        ..ChatRequest::new(vec![
            Message::system("Reply with OK."),
            Message::human(facts),
            Message::ai("OK"),
            Message::human("context"),
            Message::system("S"),
        ])
    };
    let replay = Replay::fixture(PATH, "anthropic/message_cache_write.json").await;
    let answer = model(&replay, "claude-opus-4-8")
        .complete(request)
        .await
        .expect("answer");
    assert_eq!(answer.usage.cache_creation_tokens, 1590);
    let sent = replay.requests().await.remove(0);
    assert_eq!(sent["model"], recorded["model"]);
    assert_eq!(sent["max_tokens"], recorded["max_tokens"]);
    let ours = sent["messages"].as_array().expect("messages");
    let theirs = recorded["messages"].as_array().expect("messages");
    assert_eq!(ours.len(), 3);
    for (ours, theirs) in ours.iter().zip(theirs) {
        assert_eq!(ours["role"], theirs["role"]);
        assert_eq!(ours["content"][0]["text"], theirs["content"][0]["text"]);
    }
    assert_eq!(
        sent["system"],
        json!([{"type": "text", "text": "Reply with OK."}, {"type": "text", "text": "S"}])
    );
    assert_eq!(
        ours[2]["content"][0]["cache_control"], theirs[3]["content"][0]["cache_control"],
        "the recorded ephemeral 5m control, on the last block of the prefix"
    );
}

/// Every option and part kind the adapter maps, in one request.
fn everything_request() -> ChatRequest {
    let mut extra_headers = BTreeMap::new();
    extra_headers.insert("anthropic-beta".into(), "files-api-2025-04-14".into());
    extra_headers.insert("x-trace".into(), "t-1".into());
    ChatRequest {
        messages: vec![
            Message::system("You are terse."),
            Message::system(""),
            Message::human("Look at these."),
            Message::new(
                Role::Human,
                vec![
                    ContentPart::image_url("https://example.com/cat.png"),
                    ContentPart::image_url("data:image/gif;base64,R0lGODlhAQABAAAAACw="),
                    ContentPart::binary("application/pdf", b"%PDF-1.4".to_vec()),
                    ContentPart::binary("text/plain", b"plain notes".to_vec()),
                ],
            ),
            Message::new(
                Role::Ai,
                vec![
                    // Another provider's reasoning: nothing Anthropic could verify.
                    ContentPart::Reasoning(providers::Reasoning {
                        id: Some("rs_1".into()),
                        encrypted: Some("gAAAA".into()),
                        ..Default::default()
                    }),
                    ContentPart::Reasoning(providers::Reasoning {
                        text: "unsigned".into(),
                        ..Default::default()
                    }),
                    ContentPart::Reasoning(providers::Reasoning {
                        encrypted: Some("EqkECkYIBxgC".into()),
                        ..Default::default()
                    }),
                    ContentPart::text(""),
                    ContentPart::text("Checking."),
                    ContentPart::ToolCall(ToolCall::new(
                        "toolu_a",
                        "screenshot",
                        r#"{"zoom": 2, "area": "top"}"#,
                    )),
                    ContentPart::ToolCall(ToolCall::new("toolu_b", "screenshot", r#"{"zoom": "#)),
                ],
            ),
            Message::new(
                Role::Tool,
                vec![
                    ContentPart::ToolResponse(providers::ToolResponse::new(
                        "toolu_a",
                        "screenshot",
                        "Here it is",
                    )),
                    ContentPart::binary("image/png", vec![0x89, b'P', b'N', b'G']),
                ],
            ),
            Message::tool_response("toolu_b", "screenshot", "bad arguments"),
            Message::human("Thanks."),
            Message::ai("Done."),
            Message::ai("Anything else?"),
            Message::human("No."),
        ],
        tools: vec![
            ToolSpec {
                name: "screenshot".into(),
                description: "Take a screenshot.".into(),
                parameters: json!({"type": "object", "properties": {"zoom": {"type": "integer"}}}),
            },
            ToolSpec {
                name: "noop".into(),
                description: "Does nothing.".into(),
                parameters: Value::Null,
            },
        ],
        options: ChatOptions {
            tool_choice: Some(ToolChoice::Tool("screenshot".into())),
            response_format: None,
            temperature: Some(0.2),
            max_tokens: Some(1000),
            stop: vec!["END".into()],
            reasoning_effort: Some(ReasoningEffort::Minimal),
            thinking_budget: None,
            cache: PromptCache {
                breakpoints: vec![
                    CacheBreakpoint::Message(2),
                    CacheBreakpoint::Tools,
                    CacheBreakpoint::Message(5),
                    CacheBreakpoint::System,
                    CacheBreakpoint::LastMessage,
                    CacheBreakpoint::LastMessage,
                ],
                ttl: Some(Duration::from_secs(3600)),
                key: Some("routing-only".into()),
            },
            extra_headers,
        },
    }
}

#[tokio::test]
async fn every_option_and_part_kind() {
    let replay = Replay::fixture(PATH, "anthropic/message_text_after_tool.json").await;
    let configured = |config: &mut ModelConfig| {
        config.default_headers.insert(
            "Anthropic-Beta".into(),
            "files-api-2025-04-14, token-efficient-tools-2025-02-19".into(),
        );
    };
    let model = model_with(&replay, "claude-sonnet-4-5", configured);
    model.complete(everything_request()).await.expect("answer");
    let raw = replay.raw_requests().await.remove(0);
    let sent: Value = serde_json::from_slice(&raw.body).expect("JSON body");
    insta::assert_json_snapshot!("every_option_body", sent);

    // Breakpoints: five distinct places asked for (tools, system, messages 2 and 5, the last
    // message); the API takes four, so the earliest (tools) is dropped.
    let text = String::from_utf8(raw.body.clone()).expect("UTF-8");
    assert_eq!(text.matches("cache_control").count(), 4);
    // Valid arguments go back as the model wrote them; a cut-off call's input becomes `{}`.
    assert!(
        text.contains(r#""input":{"zoom": 2, "area": "top"}"#),
        "{text}"
    );
    assert!(
        text.contains(r#""id":"toolu_b","name":"screenshot","input":{}"#),
        "{text}"
    );
    assert!(!sent["tools"].to_string().contains("cache_control"));
    let control = json!({"type": "ephemeral", "ttl": "1h"});
    assert_eq!(sent["system"][0]["cache_control"], control);
    let turns = &sent["messages"];
    assert_eq!(turns[0]["content"][0]["text"], "Look at these.");
    assert_eq!(turns[0]["content"][0]["cache_control"], control);
    assert_eq!(turns[2]["content"][0]["tool_use_id"], "toolu_a");
    assert_eq!(turns[2]["content"][0]["cache_control"], control);
    assert_eq!(turns[4]["content"][0]["text"], "No.");
    assert_eq!(turns[4]["content"][0]["cache_control"], control);
    // With thinking off the temperature is sent as asked; effort `minimal` is `low`.
    assert_eq!(sent["temperature"], json!(0.2));
    assert_eq!(sent["output_config"], json!({"effort": "low"}));

    // Headers: the key, the version, ONE beta header joining configured, requested and needed
    // betas without repeats, and the request's own extra header.
    assert_eq!(header(&raw, "x-api-key"), ["test-key-123"]);
    assert_eq!(header(&raw, "anthropic-version"), ["2023-06-01"]);
    assert_eq!(
        header(&raw, "anthropic-beta"),
        ["files-api-2025-04-14,token-efficient-tools-2025-02-19,extended-cache-ttl-2025-04-11"]
    );
    assert_eq!(header(&raw, "x-trace"), ["t-1"]);
    assert!(header(&raw, "authorization").is_empty());
}

#[tokio::test]
async fn thinking_forces_temperature_one_and_sets_the_budget() {
    let replay = Replay::fixture(PATH, "anthropic/messages_thinking_text.json").await;
    let request = ChatRequest {
        options: ChatOptions {
            temperature: Some(0.3),
            thinking_budget: Some(6400),
            reasoning_effort: Some(ReasoningEffort::High),
            stop: vec!["\n\nHuman:".into()],
            tool_choice: Some(ToolChoice::None),
            ..ChatOptions::default()
        },
        ..ChatRequest::new(vec![Message::human(
            "How many primes below 400 contain 79?",
        )])
    };
    model(&replay, "claude-sonnet-4-20250514")
        .complete(request)
        .await
        .expect("answer");
    let sent = replay.requests().await.remove(0);
    assert_eq!(sent["temperature"], json!(1.0));
    assert_eq!(
        sent["thinking"],
        json!({"type": "enabled", "budget_tokens": 6400})
    );
    assert_eq!(sent["output_config"], json!({"effort": "high"}));
    assert_eq!(sent["stop_sequences"], json!(["\n\nHuman:"]));
    // No tools on offer, so no tool choice: the API refuses `tool_choice` without `tools`.
    assert!(sent.get("tool_choice").is_none());
    // claude-sonnet-4's registry output limit.
    assert_eq!(sent["max_tokens"], 64_000);
    assert!(sent.get("stream").is_none());
    assert!(sent.get("tools").is_none());
}

#[tokio::test]
async fn tool_choice_forms() {
    for (choice, wire) in [
        (ToolChoice::Auto, json!({"type": "auto"})),
        (ToolChoice::None, json!({"type": "none"})),
        (ToolChoice::Required, json!({"type": "any"})),
        (
            ToolChoice::Tool("f".into()),
            json!({"type": "tool", "name": "f"}),
        ),
    ] {
        let replay = Replay::fixture(PATH, "anthropic/message_cache_read.json").await;
        let request = ChatRequest {
            tools: vec![fixed_version_tool()],
            options: ChatOptions {
                tool_choice: Some(choice),
                ..ChatOptions::default()
            },
            ..ChatRequest::new(vec![Message::human("Hi")])
        };
        model(&replay, "claude-opus-4-5")
            .complete(request)
            .await
            .expect("answer");
        assert_eq!(replay.requests().await[0]["tool_choice"], wire);
    }
}

#[tokio::test]
async fn custom_base_url_with_or_without_v1_and_a_dummy_key() {
    for suffix in ["", "/", "/v1", "/v1/"] {
        let replay = Replay::fixture(PATH, "anthropic/message_cache_read.json").await;
        let config = ModelConfig {
            model: Some("anthropic".into()),
            base_url: Some(format!("{}{suffix}", replay.url())),
            retry: support::fast_retries(),
            ..ModelConfig::new("my-proxy-model")
        };
        let model = model_from_config(&config).expect("a proxy needs no key");
        assert_eq!(model.info().provider, providers::Provider::Anthropic);
        let answer = model
            .complete(ChatRequest::new(vec![Message::human("Hi")]))
            .await
            .unwrap_or_else(|err| panic!("base URL with `{suffix}`: {err}"));
        assert_eq!(answer.message.text(), "OK");
        let raw = replay.raw_requests().await.remove(0);
        assert_eq!(raw.url.path(), "/v1/messages");
        assert_eq!(header(&raw, "x-api-key"), ["dummy"]);
        let sent: Value = serde_json::from_slice(&raw.body).expect("JSON");
        assert_eq!(sent["model"], "my-proxy-model");
        // An unknown model gets the registry's default output limit.
        assert_eq!(sent["max_tokens"], providers::DEFAULT_MAX_OUTPUT_TOKENS);
    }
}

#[tokio::test]
async fn configured_headers_override_the_version_and_are_sent() {
    let replay = Replay::fixture(PATH, "anthropic/message_cache_read.json").await;
    let model = model_with(&replay, "claude-opus-4-5", |config| {
        config
            .default_headers
            .insert("anthropic-version".into(), "2099-01-01".into());
        config
            .default_headers
            .insert("x-org".into(), "skein".into());
    });
    model
        .complete(ChatRequest::new(vec![Message::human("Hi")]))
        .await
        .expect("answer");
    let raw = replay.raw_requests().await.remove(0);
    assert_eq!(header(&raw, "anthropic-version"), ["2099-01-01"]);
    assert_eq!(header(&raw, "x-org"), ["skein"]);
    assert!(
        header(&raw, "anthropic-beta").is_empty(),
        "no beta when none is needed"
    );
    assert_eq!(header(&raw, "content-type"), ["application/json"]);
}

#[test]
fn missing_key_without_a_proxy_is_a_config_error() {
    let Err(err) = model_from_config(&ModelConfig::new("claude-sonnet-4-5")) else {
        panic!("a model without key or base URL must not build");
    };
    assert!(matches!(err, ProviderError::Config { .. }), "{err:?}");
    assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
}

#[tokio::test]
async fn bad_requests_fail_before_sending() {
    let replay = Replay::fixture(PATH, "anthropic/message_cache_read.json").await;
    let model = model(&replay, "claude-opus-4-5");
    let out_of_range = ChatRequest {
        options: ChatOptions {
            cache: PromptCache {
                breakpoints: vec![CacheBreakpoint::Message(7)],
                ..Default::default()
            },
            ..ChatOptions::default()
        },
        ..ChatRequest::new(vec![Message::human("Hi")])
    };
    let err = model
        .complete(out_of_range)
        .await
        .expect_err("no message 7");
    assert!(matches!(err, ProviderError::Config { .. }), "{err:?}");
    assert!(err.to_string().contains("message 7"), "{err}");

    let audio = ChatRequest::new(vec![Message::new(
        Role::Human,
        vec![ContentPart::binary("audio/wav", vec![1, 2, 3])],
    )]);
    let err = model.stream(audio).await.err().expect("no audio");
    assert!(
        matches!(&err, ProviderError::Unsupported { what, .. } if what.contains("audio/wav")),
        "{err:?}"
    );
    let not_base64 = ChatRequest::new(vec![Message::new(
        Role::Human,
        vec![ContentPart::image_url("data:image/svg+xml,%3Csvg%3E")],
    )]);
    let err = model.complete(not_base64).await.expect_err("not base64");
    assert!(matches!(err, ProviderError::Unsupported { .. }), "{err:?}");
    assert!(replay.requests().await.is_empty(), "nothing was sent");
}

/// pydantic-ai's redacted-thinking request, and the next turn echoing both opaque `data`
/// blocks, in order, before the text.
#[tokio::test]
async fn redacted_thinking_request_and_echo() {
    let magic = "ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING_46C9A13E193C177646C7398A98432ECCCE4C1253D5E2D82641AC0E52CC2876CB";
    let first = ChatRequest {
        options: ChatOptions {
            max_tokens: Some(4096),
            thinking_budget: Some(1024),
            ..ChatOptions::default()
        },
        ..ChatRequest::new(vec![Message::human(magic)])
    };
    let replay = Replay::fixture(PATH, "anthropic/stream_redacted_thinking.sse").await;
    let model_id = "claude-sonnet-4-5-20250929";
    let (_, answer) = streamed(model(&replay, model_id).as_ref(), first.clone())
        .await
        .expect("first turn");
    assert_eq!(
        replay.requests().await[0],
        recorded("stream_redacted_thinking.request.json")
    );

    let followup = ChatRequest {
        messages: vec![
            Message::human(magic),
            answer.message.clone(),
            Message::human("Thanks."),
        ],
        ..first
    };
    let replay = Replay::fixture(PATH, "anthropic/stream_text.sse").await;
    streamed(model(&replay, model_id).as_ref(), followup)
        .await
        .expect("second turn");
    let sent = replay.requests().await.remove(0);
    let echoed = sent["messages"][1]["content"]
        .as_array()
        .expect("assistant content");
    let data: Vec<&str> = answer
        .message
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Reasoning(r) => r.encrypted.as_deref(),
            _ => None,
        })
        .collect();
    assert_eq!(data.len(), 2);
    assert_eq!(
        echoed[..2],
        [
            json!({"type": "redacted_thinking", "data": data[0]}),
            json!({"type": "redacted_thinking", "data": data[1]}),
        ]
    );
    assert_eq!(echoed[2]["type"], "text");
    assert_eq!(echoed[2]["text"], answer.message.text());
    assert_eq!(echoed.len(), 3);
}

/// pydantic-ai's tool-search request: the client tools and options Skein models are sent as
/// recorded; the server tool and `defer_loading` are Anthropic-side features `ToolSpec` does
/// not describe.
#[tokio::test]
async fn server_tool_request_client_fields_match_the_recording() {
    let recorded = recorded("stream_server_tool_then_tool_use.request.json");
    let tools: Vec<ToolSpec> = recorded["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter(|tool| tool.get("input_schema").is_some())
        .map(|tool| ToolSpec {
            name: tool["name"].as_str().unwrap_or_default().into(),
            description: tool["description"].as_str().unwrap_or_default().into(),
            parameters: tool["input_schema"].clone(),
        })
        .collect();
    assert_eq!(tools.len(), 2);
    let request = ChatRequest {
        options: ChatOptions {
            tool_choice: Some(ToolChoice::Auto),
            max_tokens: Some(4096),
            ..ChatOptions::default()
        },
        tools,
        ..ChatRequest::new(vec![Message::human(
            "What is the current USD to EUR exchange rate?",
        )])
    };
    let replay = Replay::fixture(PATH, "anthropic/stream_server_tool_then_tool_use.sse").await;
    streamed(model(&replay, "claude-sonnet-4-6").as_ref(), request)
        .await
        .expect("stream");
    let sent = replay.requests().await.remove(0);
    for field in ["model", "max_tokens", "messages", "tool_choice", "stream"] {
        assert_eq!(sent[field], recorded[field], "{field}");
    }
    for (ours, theirs) in sent["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .zip(recorded["tools"].as_array().expect("tools"))
    {
        for field in ["name", "description", "input_schema"] {
            assert_eq!(ours[field], theirs[field], "{field}");
        }
    }
}
