//! The request fuzz targets (`fuzz/`), shared with their proptest twins
//! (`tests/fuzz_targets.rs`); not a stable API.
//!
//! [`chat_completion`]: the bytes become a `POST /v1/chat/completions` body, read and checked
//! as the handler does; the answer is a call or an OpenAI-shaped 400. [`responses`]: likewise
//! for a `POST /v1/responses` body.
//!
//! The bytes become a `POST /v1/response` body (raw, or a full request with every field,
//! mutated: arbitrary numbers in every numeric field, dropped members, wrong types), read by
//! the handler's parser and planned under three configurations. Whatever the body, the
//! answer is a plan or an [`ApiError`](crate::ApiError) of status 400, 413 or 422.

use std::sync::OnceLock;

use messages::fuzzing::{Input, mutate};
use serde_json::Value;
use service::ServiceConfig;

use crate::api::openai::error::OpenAiError;
use crate::config::ServerConfig;

const TEMPLATE: &str = r#"{
  "model_config": {
    "model_id": "echo", "model": "echo", "api_key": "sk-test", "base_url": "http://127.0.0.1:9/v1",
    "api_format": "chat", "default_headers": {"x-a": "b"}, "context_window": 128000,
    "max_output_tokens": 4096, "timeout": 30.5, "max_retries": 2, "retry_delay": 0.5
  },
  "temperature": 0.7,
  "max_tokens": 1024,
  "input": {
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "2+2?"}]},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\": \"2+2\"}"}}
      ]},
      {"role": "tool", "tool_call_id": "call_1", "name": "calculator", "content": "4"},
      {"role": "assistant", "content": "4"},
      {"role": "user", "content": "And 3+3?"}
    ]
  },
  "session_id": "conv-1",
  "include_history": true,
  "system": "You are terse.",
  "tools": {
    "builtin": {"calculator": {"enabled": true, "kb_ids": []}},
    "custom": [], "mcp_servers": [], "skills": [],
    "max_tool_calls": 10, "tool_timeout_seconds": 60.0
  },
  "tool_choice": {"type": "function", "function": {"name": "calculator"}},
  "features": {
    "deep_thinking": false, "clarification": false, "streaming": true,
    "message_compression": true, "web_search": false, "search_engine": null
  },
  "metadata": {
    "request_id": "r-1", "conversation_id": "conv-1", "task_id": 7, "user_id": "u-1",
    "user_name": "Ann", "team_id": 3, "team_name": "t", "subtask_id": 1, "user_subtask_id": 2,
    "message_id": 4, "user_message_id": 5, "bot_name": "b", "bot_namespace": "ns",
    "trace_id": "tr", "chat_type": "single", "participants": [], "history_limit": 20,
    "is_subscription": false
  },
  "attachments": [
    {"id": 1, "filename": "a.txt", "mime_type": "text/plain", "content": "text"},
    {"id": "b", "filename": "b.png", "mime_type": "image/png", "data": "iVBORw0KGgo="}
  ],
  "knowledge_context": {
    "contexts": [{"kb_id": 1, "kb_name": "docs", "content": "Skein is a workspace."}],
    "meta_prompt": "Use the excerpts."
  },
  "tool_results": []
}"#;

/// The other two forms of `input` (the template has `messages`).
const INPUTS: [&str; 2] = [
    r#"{"text": "Hello"}"#,
    r#"{"content": [
      {"type": "text", "text": "Hi"},
      {"type": "image", "source": {"data": "iVBORw0KGgo=", "media_type": "image/png"}}
    ]}"#,
];

const WORDS: &[&str] = &[
    "echo",
    "gpt-4o",
    "claude-sonnet-4-5",
    "gemini-2.5-flash",
    "anthropic",
    "responses",
    "auto",
    "none",
    "required",
    "function",
    "user",
    "assistant",
    "system",
    "tool",
    "text",
    "image",
    "image_url",
    "calculator",
    "read_file",
    "list_files",
    "http_get",
    "Authorization",
    "Host",
    "Content-Length",
    "Transfer-Encoding",
    "http://127.0.0.1:9/v1",
    "data:image/png;base64,iVBORw0KGgo=",
];

fn configs() -> &'static [ServerConfig; 3] {
    static CONFIGS: OnceLock<[ServerConfig; 3]> = OnceLock::new();
    CONFIGS.get_or_init(|| {
        let open = ServerConfig {
            service: ServiceConfig {
                allow_request_base_url: true,
                max_tool_rounds: u32::MAX,
                ..ServiceConfig::default()
            },
            ..ServerConfig::default()
        };
        let tight = ServerConfig {
            body_limit: 64,
            concurrency_per_caller: 1,
            service: ServiceConfig {
                max_tool_rounds: 0,
                ..ServiceConfig::default()
            },
            ..ServerConfig::default()
        };
        [ServerConfig::default(), open, tight]
    })
}

/// The target: `data` read as a request body (and an `X-Request-ID` header), parsed and
/// planned as the handler does. Returns how many of the configurations planned it.
pub fn request(data: &[u8]) -> usize {
    let mut input = Input::new(data);
    let mode = input.byte();
    let header = match input.byte() % 4 {
        0 => None,
        _ => Some(input.text(40)),
    };
    let body = if mode.is_multiple_of(4) {
        input.rest().to_vec()
    } else {
        let mut template: Value = serde_json::from_str(TEMPLATE).expect("the template is JSON");
        if let Some(other) = INPUTS.get(usize::from(mode / 4 % 3)) {
            template["input"] = serde_json::from_str(other).expect("the input is JSON");
        }
        mutate(&template, &mut input, WORDS).into_bytes()
    };
    let mut planned = 0;
    for config in configs() {
        let request = match crate::api::chat_shell::handlers::parse(&body) {
            Ok(request) => request,
            Err(error) => {
                let status = error.status().as_u16();
                assert!(matches!(status, 400 | 413 | 415 | 422), "parse: {status}");
                return 0;
            }
        };
        let service = &config.service;
        match crate::api::chat_shell::plan::plan(
            request,
            service,
            &service.knowledge_bases,
            header.as_deref(),
        ) {
            Ok(_) => planned += 1,
            Err(error) => {
                let status = error.status().as_u16();
                assert!(matches!(status, 400 | 422), "plan: {status}");
            }
        }
    }
    planned
}

const CHAT_TEMPLATE: &str = r#"{
  "model": "claude-sonnet-4-5", "stream": true, "stream_options": {"include_usage": true},
  "temperature": 0.2, "max_tokens": 100, "max_completion_tokens": 200, "stop": ["\n\n"],
  "n": 1, "reasoning_effort": "low", "user": "u-1", "parallel_tool_calls": true,
  "tool_choice": {"type": "function", "function": {"name": "lookup"}},
  "tools": [{"type": "function", "function": {"name": "lookup", "description": "d",
             "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}, "strict": true}}],
  "messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "developer", "content": [{"type": "text", "text": "Really."}]},
    {"role": "user", "content": [{"type": "text", "text": "Look it up."},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}}]},
    {"role": "assistant", "content": null, "reasoning_content": "Thinking.",
     "reasoning_details": [{"type": "reasoning.text", "text": "Thinking.", "signature": "c2ln"},
                           {"type": "reasoning.encrypted", "data": "ZW5j", "id": "rs_1"}],
     "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": \"x\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "found"},
    {"role": "assistant", "content": "Found.", "refusal": null, "name": "bot"},
    {"role": "user", "content": "Thanks."}
  ]
}"#;

/// The Chat Completions target: `data` read as a `POST /v1/chat/completions` body (raw, or
/// the template mutated), parsed and checked as the handler does. Returns whether it became
/// a call.
pub fn chat_completion(data: &[u8]) -> bool {
    openai_target(data, CHAT_TEMPLATE, |body| {
        crate::api::openai::gateway::parse(body)
            .and_then(crate::api::openai::chat_completions::plan::chat_completion)
            .map(drop)
    })
}

/// An OpenAI-compatible endpoint's target: `data` becomes a body (raw when its first byte is a
/// multiple of 4, else `template` mutated) that `check` reads as the handler does; `true`
/// when it becomes a call, `false` when it is refused with a 400 `invalid_request_error`,
/// and a panic when it is refused with anything else.
fn openai_target(
    data: &[u8],
    template: &str,
    check: impl FnOnce(&[u8]) -> Result<(), OpenAiError>,
) -> bool {
    let mut input = Input::new(data);
    let body = if input.byte().is_multiple_of(4) {
        input.rest().to_vec()
    } else {
        let template: Value = serde_json::from_str(template).expect("the template is JSON");
        mutate(&template, &mut input, WORDS).into_bytes()
    };
    match check(&body) {
        Ok(()) => true,
        Err(error) => {
            let status = error.status().as_u16();
            assert_eq!(status, 400, "{:?}", error.body());
            assert_eq!(error.body().error.kind, "invalid_request_error");
            false
        }
    }
}

/// A Responses request exercising every item type, part and option the endpoint takes (a
/// call id carrying a thought signature too).
const RESPONSES_TEMPLATE: &str = r#"{
  "model": "gemini-2.5-flash", "stream": true, "store": true, "temperature": 0.3,
  "max_output_tokens": 300, "instructions": "Be brief.", "user": "u-1",
  "parallel_tool_calls": true, "reasoning": {"effort": "low", "summary": "auto"},
  "tool_choice": {"type": "function", "name": "lookup"},
  "tools": [{"type": "function", "name": "lookup", "description": "d", "strict": true,
             "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}],
  "input": [
    {"role": "developer", "content": "Really."},
    {"role": "user", "content": [{"type": "input_text", "text": "Look it up."},
                                 {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Thinking."}],
     "encrypted_content": "skein1.eyJzaWduYXR1cmUiOiJjMmxuIn0"},
    {"type": "function_call", "call_id": "call_1~s1.c2ln", "name": "lookup", "arguments": "{\"q\": \"x\"}", "id": "fc_1", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1~s1.c2ln", "output": "found"},
    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
     "content": [{"type": "output_text", "text": "Found."}]},
    {"role": "user", "content": "Thanks."}
  ]
}"#;

/// One `POST /v1/responses` body through the handler's parser and the request's checks:
/// `true` when it becomes a call, `false` when it is refused, and a panic when it is refused
/// with anything but a 400 `invalid_request_error` or the call's tool outputs answer nothing.
///
/// Like [`chat_completion`]: raw bytes or a mutated template, picked by the first byte.
pub fn responses(data: &[u8]) -> bool {
    openai_target(data, RESPONSES_TEMPLATE, |body| {
        crate::api::openai::gateway::parse(body)
            .and_then(crate::api::openai::responses::plan::response_call)
            .and_then(|mut planned| {
                crate::api::openai::responses::plan::name_outputs(
                    &mut planned.call.request.messages,
                )
            })
    })
}
