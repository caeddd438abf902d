use messages::{ContentPart, Message, Role};
use serde_json::{Value, json};
use service::RunInput;

use super::*;

fn request(value: Value) -> ResponseRequest {
    serde_json::from_value(value).expect("a well-formed request")
}

fn planned(value: Value) -> Planned {
    plan(request(value), &ServiceConfig::default(), &[], None).expect("a plannable request")
}

/// The fields a refused request names, in order.
fn refused(value: Value) -> Vec<String> {
    refused_with(value, &ServiceConfig::default())
}

fn refused_with(value: Value, config: &ServiceConfig) -> Vec<String> {
    let error =
        plan(request(value), config, &config.knowledge_bases, None).expect_err("a refused request");
    assert_eq!(error.status(), StatusCode::UNPROCESSABLE_ENTITY);
    error.body().details["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|field| field["field"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_minimal_request_gets_the_chat_shell_defaults() {
    let planned =
        planned(json!({"model_config": {"model_id": "echo"}, "input": {"text": "Hello"}}));
    let spec = planned.spec;
    assert!(planned.streaming);
    assert!(
        planned.request_id.starts_with("req-"),
        "{}",
        planned.request_id
    );
    assert_eq!(planned.request_id.len(), 36);
    assert_eq!(
        spec.input,
        RunInput::Parts(vec![ContentPart::text("Hello")])
    );
    assert_eq!(spec.temperature, Some(DEFAULT_TEMPERATURE));
    assert_eq!(spec.max_tokens, Some(DEFAULT_MAX_TOKENS));
    assert_eq!(spec.max_rounds, 10);
    assert_eq!(spec.tool_timeout, Some(Duration::from_secs(60)));
    assert_eq!(
        spec.model.config.timeouts.first_byte,
        Duration::from_secs(120)
    );
    assert_eq!(spec.model.config.retry.max_retries, 3);
    assert!(spec.compression && spec.include_history && spec.log);
    assert!(spec.tools.is_empty() && spec.tool_choice.is_none());
    assert_eq!(spec.conversation, None);
}

#[test]
fn the_seed_example_request() {
    let planned = planned(json!({
        "model_config": {"model_id": "gemini-2.0-flash", "model": "google", "api_key": "k-123"},
        "input": {"text": "Hello, how are you?"},
        "features": {"streaming": true},
    }));
    let config = &planned.spec.model.config;
    assert_eq!(config.provider(), providers::Provider::Google);
    assert_eq!(config.api_key.as_deref(), Some("k-123"));
    // gemini-2.0-flash's output limit is 8 192, below the default of 32 768.
    assert_eq!(planned.spec.max_tokens, Some(8_192));
    assert!(!format!("{planned:?}").contains("k-123"));
}

#[test]
fn every_field_changes_the_run() {
    let planned = plan(
        request(json!({
            "model_config": {
                "model_id": "claude-sonnet-4-5", "api_format": "chat",
                "default_headers": {"x-team": "a"}, "context_window": 50000,
                "max_output_tokens": 2000, "timeout": 30, "max_retries": 1, "retry_delay": 0.5,
            },
            "temperature": 0.2,
            "max_tokens": 999,
            "input": {"content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": {"data": "aGk=", "media_type": "image/png"}},
            ]},
            "session_id": "conv-1",
            "include_history": false,
            "system": "Be brief.",
            "tools": {"builtin": {"calculator": {"enabled": true}, "read_file": {"enabled": false}},
                      "max_tool_calls": 3, "tool_timeout_seconds": 5},
            "tool_choice": {"type": "function", "function": {"name": "calculator"}},
            "features": {"deep_thinking": true, "streaming": false, "message_compression": false},
            "metadata": {"user_id": 7, "task_id": "t-9", "history_limit": 4, "is_subscription": true,
                         "chat_type": "single", "request_id": "req-from-body"},
            "attachments": [{"filename": "notes.txt", "mime_type": "text/plain", "content": "n"}],
            "knowledge_context": {"contexts": [{"kb_id": 1, "kb_name": "faq", "content": "FAQ text"}]},
        })),
        &ServiceConfig::default(),
        &[],
        Some("req-from-header"),
    )
    .unwrap();
    let spec = &planned.spec;
    let config = &spec.model.config;
    assert_eq!(config.default_headers["x-team"], "a");
    assert_eq!(spec.model.context_window, Some(50_000));
    assert_eq!(
        spec.max_tokens,
        Some(2_000),
        "max_output_tokens wins over max_tokens"
    );
    assert_eq!(config.timeouts.first_byte, Duration::from_secs(30));
    assert_eq!(config.retry.max_retries, 1);
    assert_eq!(config.retry.initial_backoff, Duration::from_millis(500));
    assert_eq!(spec.temperature, Some(0.2));
    let RunInput::Parts(parts) = &spec.input else {
        panic!("parts expected")
    };
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[1], ContentPart::binary("image/png", b"hi".to_vec()));
    assert_eq!(
        parts[2].as_text(),
        Some("[Attachment: notes.txt (text/plain)]\nn")
    );
    assert_eq!(
        spec.conversation.as_ref().map(|c| c.as_str()),
        Some("conv-1")
    );
    assert!(!spec.include_history);
    let system = spec.system.as_deref().unwrap();
    assert!(system.starts_with("Be brief.\n\n"), "{system}");
    assert!(system.contains("<knowledge_base name=\"faq\" id=\"1\">\nFAQ text\n</knowledge_base>"));
    assert_eq!(spec.tools, ["calculator"]);
    assert_eq!(
        spec.tool_choice,
        Some(ToolChoice::Tool("calculator".into()))
    );
    assert_eq!(spec.max_rounds, 3);
    assert_eq!(spec.tool_timeout, Some(Duration::from_secs(5)));
    assert!(spec.deep_thinking && !spec.compression && !planned.streaming);
    assert_eq!(spec.history_limit, Some(4));
    assert!(spec.silent_exit_tool);
    assert_eq!(planned.request_id, "req-from-header");
    assert_eq!(
        planned.labels,
        "user_id=7 task_id=t-9 request_id=req-from-body"
    );
}

#[test]
fn unsupported_fields_are_all_named() {
    let fields = refused(json!({
        "model_config": {"model_id": "echo", "model_name": "m", "base_url": "http://x/v1"},
        "input": {"text": "hi"},
        "tools": {"custom": [{"type": "function"}], "mcp_servers": [{"name": "m", "url": "http://x/mcp"}],
                  "skills": [{"name": "s", "version": "1"}], "builtin": {"calculator": {"max_results": 3}}},
        "features": {"clarification": true, "web_search": true, "search_engine": "g"},
        "metadata": {"skill_names": ["a"], "knowledge_base_ids": [1], "auth_token": "secret-token",
                     "chat_type": "group", "task_data": {"a": 1}, "is_user_selected_kb": false},
        "tool_results": [{"id": "1", "output": "x"}],
    }));
    assert_eq!(
        fields,
        [
            "model_config.base_url",
            "model_config.model_name",
            "tool_results",
            "tools.mcp_servers[0].url",
            "tools.custom",
            "tools.builtin.calculator.max_results",
            "tools.skills[0].version",
            "features.clarification",
            "features.search_engine",
            "metadata.skill_names",
            "metadata.knowledge_base_ids",
            "metadata.is_user_selected_kb",
            "metadata.task_data",
            "metadata.chat_type",
            "metadata.auth_token",
        ]
    );
}

#[test]
fn refusals_never_echo_secrets() {
    let error = plan(
        request(json!({
            "model_config": {"model_id": "echo", "api_key": "sk-live-123"},
            "input": {"text": "hi"},
            "metadata": {"auth_token": "tok-456"},
        })),
        &ServiceConfig::default(),
        &[],
        None,
    )
    .unwrap_err();
    let shown = format!("{error:?} {}", serde_json::to_string(error.body()).unwrap());
    assert!(
        !shown.contains("sk-live-123") && !shown.contains("tok-456"),
        "{shown}"
    );
}

#[test]
fn invalid_values_are_named() {
    let fields = refused(json!({
        "model_config": {"model_id": " ", "api_format": "soap", "timeout": -1, "context_window": 0},
        "temperature": 3.5,
        "max_tokens": 0,
        "input": {"text": "hi", "content": [{"type": "text", "text": "x"}]},
        "tools": {"max_tool_calls": 1000, "tool_timeout_seconds": 0},
        "tool_choice": "sometimes",
        "metadata": {"chat_type": "triple"},
    }));
    assert_eq!(
        fields,
        [
            "model_config.model_id",
            "model_config.api_format",
            "model_config.timeout",
            "model_config.context_window",
            "temperature",
            "max_tokens",
            "input",
            "tools.max_tool_calls",
            "tools.tool_timeout_seconds",
            "tool_choice",
            "metadata.chat_type",
        ]
    );
}

/// `model_config.model` names the protocol: a name Skein does not know (a typo of
/// `openrouter`) is refused, not silently replaced by the model id's guess (which sends an
/// OpenRouter id to OpenAI), and `api_format` goes only with the OpenAI protocol.
#[test]
fn the_protocol_is_one_skein_knows() {
    assert_eq!(
        refused(json!({
            "model_config": {"model_id": "anthropic/claude-sonnet-4.5", "model": "openruoter"},
            "input": {"text": "hi"},
        })),
        ["model_config.model"]
    );
    for alias in [
        "openai",
        "GPT",
        "anthropic",
        "claude",
        "google",
        "gemini",
        " OpenRouter ",
    ] {
        planned(json!({
            "model_config": {"model_id": "some-model", "model": alias},
            "input": {"text": "hi"},
        }));
    }
    assert_eq!(
        refused(json!({
            "model_config": {"model_id": "claude-sonnet-4-5", "api_format": "responses"},
            "input": {"text": "hi"},
        })),
        ["model_config.api_format"]
    );
    planned(json!({
        "model_config": {"model_id": "my-proxy", "model": "openai", "api_format": "responses"},
        "input": {"text": "hi"},
    }));
}

#[test]
fn base_urls_only_when_the_server_allows_them() {
    let config = ServiceConfig {
        allow_request_base_url: true,
        ..ServiceConfig::default()
    };
    let planned = plan(
        request(json!({
            "model_config": {"model_id": "gpt-4o", "base_url": "http://127.0.0.1:9/v1"},
            "input": {"text": "hi"},
        })),
        &config,
        &[],
        None,
    )
    .unwrap();
    assert!(planned.spec.model.custom_endpoint);
    assert_eq!(
        planned.spec.model.config.base_url.as_deref(),
        Some("http://127.0.0.1:9/v1")
    );
}

#[test]
fn temperature_defaults_respect_reasoning() {
    let o3 = planned(json!({"model_config": {"model_id": "o3"}, "input": {"text": "hi"}}));
    assert_eq!(o3.spec.temperature, None);
    let thinking = planned(
        json!({"model_config": {"model_id": "echo"}, "input": {"text": "hi"},
                                  "features": {"deep_thinking": true}}),
    );
    assert_eq!(thinking.spec.temperature, None);
}

#[test]
fn conversations_and_their_keys() {
    let by_task = planned(
        json!({"model_config": {"model_id": "echo"}, "input": {"text": "hi"},
                                 "metadata": {"task_id": 42}}),
    );
    assert_eq!(by_task.spec.conversation.unwrap().as_str(), "task-42");
    let by_metadata = planned(
        json!({"model_config": {"model_id": "echo"}, "input": {"text": "hi"},
                                     "session_id": "c", "metadata": {"conversation_id": "c", "task_id": 1}}),
    );
    assert_eq!(by_metadata.spec.conversation.unwrap().as_str(), "c");
    assert_eq!(
        refused(
            json!({"model_config": {"model_id": "echo"}, "input": {"text": "hi"},
                       "session_id": "a", "metadata": {"conversation_id": "b"}})
        ),
        ["session_id"]
    );
    let long = "x".repeat(200);
    assert_eq!(
        refused(
            json!({"model_config": {"model_id": "echo"}, "input": {"text": "hi"}, "session_id": long})
        ),
        ["session_id"]
    );
}

#[test]
fn message_lists_become_valid_chains() {
    let planned = planned(json!({
        "model_config": {"model_id": "echo"},
        "input": {"messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Add 2 and 3."},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\":\"2+3\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "5"},
        ]},
    }));
    let RunInput::Messages(messages) = planned.spec.input else {
        panic!("messages expected")
    };
    assert_eq!(
        messages.iter().map(|m| m.role).collect::<Vec<_>>(),
        [Role::System, Role::Human, Role::Ai, Role::Tool]
    );
    assert_eq!(
        messages[3],
        Message::tool_response("call_1", "calculator", "5")
    );

    // A call without its response breaks rule 3; the answer names it.
    let error = plan(
        request(
            json!({"model_config": {"model_id": "echo"}, "input": {"messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f"}}]},
                {"role": "user", "content": "again"},
            ]}}),
        ),
        &ServiceConfig::default(),
        &[],
        None,
    )
    .unwrap_err();
    assert!(
        error.body().message.contains("rule 3"),
        "{}",
        error.body().message
    );

    assert_eq!(
        refused(
            json!({"model_config": {"model_id": "echo"}, "input": {"messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}})
        ),
        ["input.messages"]
    );
    assert_eq!(
        refused(
            json!({"model_config": {"model_id": "echo"}, "input": {"messages": [
            {"role": "robot", "content": "hi"}]}})
        ),
        ["input.messages[0].role"]
    );
}

#[test]
fn unknown_keys_do_not_deserialize() {
    let error = serde_json::from_value::<ResponseRequest>(json!({
        "model_config": {"model_id": "echo"}, "input": {"text": "hi"}, "temprature": 0.1,
    }))
    .unwrap_err();
    assert!(
        error.to_string().contains("unknown field `temprature`"),
        "{error}"
    );
}
