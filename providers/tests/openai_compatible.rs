//! The quirks of OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio, Grok,
//! OpenRouter, DeepSeek, SGLang), one small stream each from `tests/fixtures/compat/` (the
//! README there names the issue or document each one is written from). Every test reads the
//! stream whole and cut into reads of 1, 7 and 64 bytes, and asserts every field a user reads
//! (text, reasoning with its opaque fields, calls, finish reason, usage) with values written
//! from the wire.

#![cfg(feature = "openai")]

use crate::support;

use futures::StreamExt;
use providers::{
    ChatResponse, ContentPart, EventStream, FinishReason, ProviderError, Reasoning, ToolCall, Usage,
};
use support::{decoded, fixture, reasoning, tool_calls};

/// How ids minted for calls the server gave no id start (documented in `openai/stream.rs`).
const MINTED: &str = "skein_call_";

fn decode(pieces: Vec<Vec<u8>>) -> EventStream {
    providers::openai::decode_chat_stream(futures::stream::iter(pieces))
}

/// Minted ids differ from one decode to the next (they are unique); for comparing decodes of
/// the same bytes they are masked.
fn masked(mut response: ChatResponse) -> ChatResponse {
    for part in &mut response.message.parts {
        if let ContentPart::ToolCall(call) = part
            && call.id.starts_with(MINTED)
        {
            call.id = MINTED.into();
        }
    }
    response
}

/// The answer of `compat/<name>`, the same however the body is cut into reads.
async fn answer(name: &str) -> ChatResponse {
    let body = fixture(&format!("compat/{name}"));
    let (_, whole) = decoded(decode(vec![body.clone()]))
        .await
        .unwrap_or_else(|err| panic!("{name}: {err}"));
    for size in [1, 7, 64] {
        let pieces = body.chunks(size).map(<[u8]>::to_vec).collect();
        let (_, split) = decoded(decode(pieces))
            .await
            .unwrap_or_else(|err| panic!("{name} in reads of {size}: {err}"));
        assert_eq!(
            masked(split),
            masked(whole.clone()),
            "{name} in reads of {size}"
        );
    }
    whole
}

fn text(response: &ChatResponse) -> String {
    response.message.text()
}

/// The kinds of the message's parts, in order.
fn layout(response: &ChatResponse) -> Vec<&'static str> {
    response
        .message
        .parts
        .iter()
        .map(|part| match part {
            ContentPart::Text { .. } => "text",
            ContentPart::Reasoning(_) => "reasoning",
            ContentPart::ToolCall(_) => "call",
            _ => "other",
        })
        .collect()
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall::new(id, name, arguments)
}

fn text_reasoning(text: &str) -> Reasoning {
    Reasoning {
        text: text.into(),
        ..Default::default()
    }
}

fn usage(input: u64, output: u64, cached: u64, reasoning: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: cached,
        cache_creation_tokens: 0,
        reasoning_tokens: reasoning,
    }
}

/// A minted id: prefixed, and only characters every provider accepts in an id.
fn assert_minted(id: &str) {
    assert!(id.starts_with(MINTED), "{id}");
    assert!(
        id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        "{id}"
    );
}

#[tokio::test]
async fn ollama_parallel_calls_under_one_index_are_two_calls() {
    let answer = answer("ollama/parallel_calls_same_index.sse").await;
    assert_eq!(answer.id.as_deref(), Some("chatcmpl-512"));
    assert_eq!(answer.model.as_deref(), Some("qwen2.5-coder:7b"));
    assert_eq!(text(&answer), "");
    assert_eq!(layout(&answer), ["call", "call"]);
    assert_eq!(
        tool_calls(&answer),
        [
            call(
                "call_lyywui55",
                "file_write",
                r#"{"content":"print(\"hello\")","filePath":"hello.py"}"#
            ),
            call(
                "call_0scw2dos",
                "file_write",
                r#"{"content":"print(\"world\")","filePath":"world.py"}"#
            ),
        ]
    );
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.usage, usage(187, 58, 0, 0));
}

#[tokio::test]
async fn ollama_calls_without_index_finishing_with_stop_are_tool_calls() {
    let answer = answer("ollama/calls_without_index_finish_stop.sse").await;
    assert_eq!(answer.id.as_deref(), Some("chatcmpl-219"));
    assert_eq!(answer.model.as_deref(), Some("llama3.1:8b"));
    assert_eq!(text(&answer), "");
    assert_eq!(
        tool_calls(&answer),
        [
            call(
                "call_6fbx9c2m",
                "get_current_weather",
                r#"{"location":"Boston, MA"}"#
            ),
            call(
                "call_q8d1nyzr",
                "get_current_weather",
                r#"{"location":"San Francisco, CA"}"#
            ),
        ]
    );
    // The wire says `stop`; an answer with calls finishes as tool calls.
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.usage, Usage::default());
}

#[tokio::test]
async fn ollama_empty_finish_reason_is_no_reason() {
    let answer = answer("ollama/empty_finish_reason.sse").await;
    assert_eq!(answer.id.as_deref(), Some("chatcmpl-693"));
    assert_eq!(answer.model.as_deref(), Some("mistral:latest"));
    assert_eq!(text(&answer), " Hello there! I'm here.");
    assert_eq!(layout(&answer), ["text"]);
    assert_eq!(answer.finish_reason, FinishReason::Stop);

    // `""` is not a finish: a body cut before the real one is truncated, not complete.
    let body = fixture("compat/ollama/empty_finish_reason.sse");
    let body = String::from_utf8(body).expect("UTF-8");
    let cut: String = body.split_inclusive("\n\n").take(8).collect();
    let err = decoded(decode(vec![cut.into_bytes()]))
        .await
        .expect_err("no finish reason yet");
    assert!(
        matches!(err, ProviderError::StreamTruncated { .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn vllm_reasoning_field_and_a_call_without_id() {
    let answer = answer("vllm/reasoning_then_call_without_id.sse").await;
    assert_eq!(
        answer.id.as_deref(),
        Some("chatcmpl-b2c4c1f6a8d94e0f9d6c1a7e3f5b2d10")
    );
    assert_eq!(answer.model.as_deref(), Some("Qwen/Qwen3-8B"));
    assert_eq!(text(&answer), "");
    assert_eq!(layout(&answer), ["reasoning", "call"]);
    assert_eq!(
        reasoning(&answer),
        [text_reasoning(
            "The user wants the weather in Paris. I'll call get_weather."
        )]
    );
    let calls = tool_calls(&answer);
    assert_eq!(calls.len(), 1);
    assert_minted(&calls[0].id);
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(
        calls[0].arguments,
        r#"{"city": "Paris", "unit": "celsius"}"#
    );
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.usage, usage(291, 58, 0, 0));
}

#[tokio::test]
async fn minted_ids_are_unique_per_call_and_per_answer() {
    let body = fixture("compat/vllm/reasoning_then_call_without_id.sse");
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (_, answer) = decoded(decode(vec![body.clone()])).await.expect("decodes");
        ids.extend(tool_calls(&answer).into_iter().map(|call| call.id));
    }
    // Two calls of one answer, too.
    let two = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"a\",\"arguments\":\"{}\"}},{\"index\":1,\"function\":{\"name\":\"b\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n";
    let (_, answer) = decoded(decode(vec![two.as_bytes().to_vec()]))
        .await
        .expect("decodes");
    let names: Vec<String> = tool_calls(&answer)
        .into_iter()
        .map(|call| call.name)
        .collect();
    assert_eq!(names, ["a", "b"]);
    ids.extend(tool_calls(&answer).into_iter().map(|call| call.id));
    for id in &ids {
        assert_minted(id);
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
}

#[tokio::test]
async fn llamacpp_name_on_every_fragment_is_one_call() {
    let answer = answer("llamacpp/name_on_every_fragment.sse").await;
    assert_eq!(
        answer.id.as_deref(),
        Some("chatcmpl-Xq3sRkT0f6Yb1nHcV8LzPmWdA2uJeG9o")
    );
    assert_eq!(answer.model.as_deref(), Some("gpt-3.5-turbo"));
    assert_eq!(text(&answer), "");
    // The id came inside `function`: it is the server's, not minted.
    assert_eq!(
        tool_calls(&answer),
        [call(
            "iBmQ2Ybs7ouNC4Vn1vPzT8XRaKj5eHdW",
            "final_result",
            r#"{"city":"Berlin"}"#
        )]
    );
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.usage, usage(212, 14, 0, 0));
}

#[tokio::test]
async fn lmstudio_empty_id_is_minted_and_empty_names_keep_the_first() {
    let answer = answer("lmstudio/empty_id_and_names.sse").await;
    assert_eq!(
        answer.id.as_deref(),
        Some("chatcmpl-8cybkqa7743exgha66o2hg")
    );
    assert_eq!(answer.model.as_deref(), Some("qwen3-30b-a3b-128k"));
    assert_eq!(text(&answer), "I'll compile it.");
    assert_eq!(layout(&answer), ["text", "call"]);
    let calls = tool_calls(&answer);
    assert_eq!(calls.len(), 1);
    assert_minted(&calls[0].id);
    assert_eq!(calls[0].name, "bash");
    assert_eq!(
        calls[0].arguments,
        r#"{"command":"g++ -o hello hello.cpp && ./hello"}"#
    );
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.usage, Usage::default());
}

#[tokio::test]
async fn grok_keepalive_data_events_are_skipped_and_reasoning_counts_as_output() {
    let answer = answer("grok/keepalive_as_data.sse").await;
    assert_eq!(
        answer.id.as_deref(),
        Some("f0f0f217-c24d-1fee-5fe3-28fa1d3c8c94")
    );
    assert_eq!(answer.model.as_deref(), Some("grok-3-mini"));
    assert_eq!(
        reasoning(&answer),
        [text_reasoning("First, the user wants one word.")]
    );
    assert_eq!(text(&answer), "Grok");
    assert_eq!(layout(&answer), ["reasoning", "text"]);
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    // completion_tokens 2 leaves out the 340 reasoning tokens: total_tokens 354 = 12 + 2 + 340.
    assert_eq!(answer.usage, usage(12, 342, 11, 340));
}

#[tokio::test]
async fn openrouter_reasoning_details_keep_the_signature_beside_a_tool_call() {
    let answer = answer("openrouter/claude_signed_reasoning_tool_call.sse").await;
    assert_eq!(
        answer.id.as_deref(),
        Some("gen-1771534553-0QhIwCfEXwyf6AWAnFod")
    );
    assert_eq!(answer.model.as_deref(), Some("anthropic/claude-sonnet-4.5"));
    assert_eq!(layout(&answer), ["reasoning", "text", "call"]);
    // The `reasoning` string repeats the details' text: it is read once.
    assert_eq!(
        reasoning(&answer),
        [Reasoning {
            id: None,
            text: "The user wants the weather in Paris.".into(),
            signature: Some("EqQBCkYIBxgCKkDbt8b0kXkQmCJ0X5w4vH9JQmXbq0l7pX3y2JQm7tN0s0Yq1Vg7t5x1b6mW8m3Qv9L8Pz0Kx2uG1aFj4EgwW8Pn5c0G3J2n9kTkaDB3yW8U1l8c2NCb0oiMPrq5R0b7XQx7vL4GgkWYhNnQ1aJm6Z0dqC8sU3fV2ePbHyGAI".into()),
            encrypted: None,
        }]
    );
    assert_eq!(text(&answer), "Let me check.");
    assert_eq!(
        tool_calls(&answer),
        [call(
            "toolu_01RX3qGJd8DZz7wW9fVV5rYV",
            "get_weather",
            r#"{"city": "Paris"}"#
        )]
    );
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.usage, usage(612, 87, 0, 31));
}

#[tokio::test]
async fn openrouter_summary_and_encrypted_details_are_two_reasoning_parts() {
    let answer = answer("openrouter/openai_summary_and_encrypted.sse").await;
    assert_eq!(
        answer.id.as_deref(),
        Some("gen-1771534555-Qm3kq0tGm1Yf9RrUu2Xa")
    );
    assert_eq!(answer.model.as_deref(), Some("openai/gpt-5-nano"));
    assert_eq!(layout(&answer), ["reasoning", "reasoning", "text"]);
    let item = "rs_0c72b1033351981300690ccf7c6ea4819383a27ac8faae82a2";
    assert_eq!(
        reasoning(&answer),
        [
            Reasoning {
                id: Some(item.into()),
                text: "**Planning a short answer**".into(),
                signature: None,
                encrypted: None,
            },
            Reasoning {
                id: Some(item.into()),
                text: String::new(),
                signature: None,
                encrypted: Some("gAAAAABpl3jdtUeb-r7leqAE91FNOR7V7sNUGWG_75YlrsYrzq7FeVfUjopWfeg1Kdf_QiEzod2D50ovRwlo8WFiC2GUiiilY7aiu8gOJBzjdTO58Z8vbBlNmYveycCiwn0s0xj6xYyCd848agVdR9Kyun6fv2FPDXf1bmxtoqnW_MuXUfCaLqYaEgXGYMC3mC4OYcd6L8Ju9AWjNLGoeyoWdSxOYNfsPscSCCfuiBTMrxFno8IHjN6F1wi6wNUFCtbw8PwGTHUkaLm6kBLg==".into()),
            },
        ]
    );
    assert_eq!(text(&answer), "Four.");
    assert_eq!(tool_calls(&answer), []);
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(answer.usage, usage(1090, 76, 0, 64));
}

#[tokio::test]
async fn deepseek_keep_alive_comments_and_reasoning_content() {
    let answer = answer("deepseek/keep_alive_reasoning_content.sse").await;
    assert_eq!(
        answer.id.as_deref(),
        Some("0f3c2a4e-9b1d-4c5e-8f7a-6d2b1e0c9a8f")
    );
    assert_eq!(answer.model.as_deref(), Some("deepseek-reasoner"));
    assert_eq!(layout(&answer), ["reasoning", "text"]);
    assert_eq!(
        reasoning(&answer),
        [text_reasoning("9.11 vs 9.8: 0.80 > 0.11.")]
    );
    assert_eq!(text(&answer), "9.8 is greater.");
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(answer.usage, usage(18, 121, 0, 112));
}

#[tokio::test]
async fn sglang_null_tool_calls_and_empty_finish_reasons() {
    let answer = answer("sglang/null_tool_calls_empty_finish.sse").await;
    assert_eq!(
        answer.id.as_deref(),
        Some("fe1d2314cd94482a8820a506a5361d72")
    );
    assert_eq!(answer.model.as_deref(), Some("Qwen/Qwen3"));
    assert_eq!(layout(&answer), ["reasoning", "text"]);
    assert_eq!(reasoning(&answer), [text_reasoning(" both integers")]);
    assert_eq!(text(&answer), "Sum: 5");
    assert_eq!(tool_calls(&answer), []);
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(answer.usage, usage(30, 22, 0, 0));
}

/// Shapes no fixture above has, each in one chunk: a negative `index` (what some proxies
/// send), arguments as a JSON object, a `content` object, `delta: null`.
#[tokio::test]
async fn odd_shapes_in_one_chunk_do_not_cost_the_answer() {
    let body = concat!(
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":null,\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":{\"unexpected\":true}}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":-1,\"id\":\"call_1\",\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let (_, answer) = decoded(decode(vec![body.as_bytes().to_vec()]))
        .await
        .expect("decodes");
    assert_eq!(text(&answer), "ok");
    assert_eq!(tool_calls(&answer), [call("call_1", "f", r#"{"a":1}"#)]);
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
}

/// Azure and compatible servers open with `"id": ""` and `"model": ""`: placeholders, not values.
#[tokio::test]
async fn the_first_non_empty_id_and_model_are_the_answers() {
    let body = concat!(
        "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\"}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"Hello\",\"role\":\"assistant\"},\"finish_reason\":null,\"index\":0}],\"id\":\"chatcmpl-123\",\"model\":\"actual-model-name\"}\n\n",
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\",\"index\":0}],\"id\":\"chatcmpl-123\",\"model\":\"actual-model-name\"}\n\n",
        "data: [DONE]\n\n",
    );
    let events: Vec<_> = decode(vec![body.as_bytes().to_vec()]).collect().await;
    let started: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            Ok(providers::StreamEvent::Started { id, model }) => Some((id.clone(), model.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [(
            Some("chatcmpl-123".to_owned()),
            Some("actual-model-name".to_owned())
        )]
    );
}

/// Some servers keep a slow stream alive with events of their own: a named event, an empty
/// `data:`, or an empty chunk (`choices: []`). None of them is content, and none ends the
/// answer.
#[tokio::test]
async fn keep_alive_events_are_not_content() {
    let body = concat!(
        "event: ping\ndata: {}\n\n",
        "data:\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[]}\n\n",
        ": ping - 2024-02-23 06:52:12.876102\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n",
        "event: ping\ndata: {}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let (_, answer) = decoded(decode(vec![body.as_bytes().to_vec()]))
        .await
        .expect("decodes");
    assert_eq!(answer.id.as_deref(), Some("chatcmpl-1"));
    assert_eq!(text(&answer), "Hi");
    assert_eq!(answer.finish_reason, FinishReason::Stop);
}
