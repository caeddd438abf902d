//! Dialects of the Responses, Anthropic Messages, Gemini and Chat Completions streams that the
//! recorded fixtures of the other tests do not show, each in a few events shaped like what the
//! APIs send: event and item types Skein does not model, fields of other shapes on them, a
//! spliced Anthropic stream, blocks `message_start` already holds, Gemini calls streamed in
//! pieces, Mistral's typed content.

#![cfg(feature = "__http")]

use crate::support;

use providers::{ChatResponse, EventStream, ProviderError, Reasoning, ToolCall};
use support::{decoded, jsonl_as_sse, reasoning, tool_calls};

/// The answer of `body`, the same however it is cut into reads.
async fn answer(decode: fn(Vec<Vec<u8>>) -> EventStream, body: &[u8]) -> ChatResponse {
    let (_, whole) = decoded(decode(vec![body.to_vec()]))
        .await
        .expect("the stream decodes");
    for size in [1, 5, 64] {
        let pieces = body.chunks(size).map(<[u8]>::to_vec).collect();
        let (_, split) = decoded(decode(pieces)).await.expect("the stream decodes");
        assert_eq!(split, whole, "in reads of {size}");
    }
    whole
}

/// The first error of `body`'s stream (after any events before it).
async fn failure(decode: fn(Vec<Vec<u8>>) -> EventStream, body: &[u8]) -> ProviderError {
    decoded(decode(vec![body.to_vec()]))
        .await
        .expect_err("the stream fails")
}

/// `data:` events, one per line.
#[cfg(any(feature = "openai", feature = "gemini"))]
fn data_events(lines: &[&str]) -> Vec<u8> {
    lines
        .iter()
        .map(|line| format!("data: {line}\n\n"))
        .collect::<String>()
        .into_bytes()
}

#[cfg(feature = "openai")]
mod responses {
    use super::*;
    use providers::FinishReason;

    fn decode(pieces: Vec<Vec<u8>>) -> EventStream {
        providers::openai::decode_responses_stream(futures::stream::iter(pieces))
    }

    const CREATED: &str = r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-5.2-2025-12-11","output":[],"usage":null}}"#;
    const COMPLETED: &str = r#"{"type":"response.completed","sequence_number":99,"response":{"id":"resp_1","object":"response","status":"completed","model":"gpt-5.2-2025-12-11","output":[],"usage":{"input_tokens":802,"input_tokens_details":{"cached_tokens":0},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":822}}}"#;

    fn stream(events: &[&str]) -> Vec<u8> {
        let mut lines = vec![CREATED];
        lines.extend_from_slice(events);
        lines.push(COMPLETED);
        jsonl_as_sse(&lines.join("\n"))
    }

    /// A shell tool's output streams as `delta` objects; the answer around it is kept.
    #[tokio::test]
    async fn object_deltas_of_events_skein_does_not_read_are_skipped() {
        let body = stream(&[
            r#"{"type":"response.output_item.added","item":{"id":"sho_1","type":"shell_call_output","status":"completed","call_id":"call_abc","max_output_length":null,"output":[]},"output_index":0,"sequence_number":1}"#,
            r#"{"type":"response.shell_call_output_content.delta","command_index":0,"delta":{"stdout":"Hello from container!\n"},"item_id":"sho_1","output_index":0,"sequence_number":2}"#,
            r#"{"type":"response.output_item.done","item":{"id":"sho_1","type":"shell_call_output","status":"completed","call_id":"call_abc","output":[{"outcome":{"type":"exit","exit_code":0},"stderr":"","stdout":"Hello from container!\n"}]},"output_index":0,"sequence_number":3}"#,
            r#"{"type":"response.output_item.added","item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"},"output_index":1,"sequence_number":4}"#,
            r#"{"type":"response.output_text.delta","content_index":0,"delta":"The command ran.","item_id":"msg_1","output_index":1,"sequence_number":5}"#,
        ]);
        let answer = answer(decode, &body).await;
        assert_eq!(answer.message.text(), "The command ran.");
        assert_eq!(answer.finish_reason, FinishReason::Stop);
        assert_eq!(answer.usage.input_tokens, 802);
        assert_eq!(answer.usage.output_tokens, 20);
    }

    /// A `tool_search_call` item has `arguments` as an object; it is not a client call and
    /// costs nothing of the function call after it.
    #[tokio::test]
    async fn items_skein_does_not_model_are_skipped_with_their_odd_fields() {
        let body = stream(&[
            r#"{"type":"response.output_item.added","item":{"id":"tsc_1","type":"tool_search_call","status":"in_progress","arguments":{},"call_id":null,"execution":"server"},"output_index":0,"sequence_number":1}"#,
            r#"{"type":"response.output_item.done","item":{"id":"tsc_1","type":"tool_search_call","status":"completed","arguments":{"goal":"weather tools"},"call_id":null,"execution":"server"},"output_index":0,"sequence_number":2}"#,
            r#"{"type":"response.output_item.added","item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_Q7","name":"get_weather"},"output_index":1,"sequence_number":3}"#,
            r#"{"type":"response.function_call_arguments.delta","delta":"{\"location\":","item_id":"fc_1","output_index":1,"sequence_number":4}"#,
            r#"{"type":"response.function_call_arguments.delta","delta":"\"Paris\"}","item_id":"fc_1","output_index":1,"sequence_number":5}"#,
            r#"{"type":"response.output_item.done","item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"location\":\"Paris\"}","call_id":"call_Q7","name":"get_weather"},"output_index":1,"sequence_number":6}"#,
        ]);
        let answer = answer(decode, &body).await;
        assert_eq!(
            tool_calls(&answer),
            [ToolCall::new(
                "call_Q7",
                "get_weather",
                r#"{"location":"Paris"}"#
            )]
        );
        assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    }

    /// A field Skein reads that has another shape is an error naming the event type and the
    /// field, not "invalid JSON".
    #[tokio::test]
    async fn a_read_field_of_another_shape_names_the_event_and_field() {
        let body = stream(&[
            r#"{"type":"response.output_text.delta","content_index":0,"delta":{"text":"hi"},"output_index":0,"sequence_number":1}"#,
        ]);
        let err = failure(decode, &body).await;
        assert!(matches!(err, ProviderError::Decode { .. }), "{err:?}");
        let message = err.to_string();
        assert!(message.contains("response.output_text.delta"), "{message}");
        assert!(message.contains("`delta`"), "{message}");
        assert!(!message.contains("invalid JSON"), "{message}");
        // Broken JSON is still called so.
        let err = failure(
            decode,
            &stream(&[r#"{"type":"response.output_text.delta","#]),
        )
        .await;
        assert!(err.to_string().contains("invalid JSON"), "{err}");
    }

    /// Whether a retry may help depends on the error's code, whichever event reported it.
    #[tokio::test]
    async fn retryable_follows_the_code_not_the_event() {
        for (code, retryable) in [
            ("rate_limit_exceeded", true),
            ("server_error", true),
            ("insufficient_quota", false),
            ("invalid_prompt", false),
        ] {
            let error_event = format!(
                r#"{{"type":"error","sequence_number":2,"error":{{"type":"{code}","code":"{code}","message":"m","param":null}}}}"#
            );
            let failed_event = format!(
                r#"{{"type":"response.failed","sequence_number":3,"response":{{"id":"resp_1","status":"failed","error":{{"code":"{code}","message":"m"}},"output":[]}}}}"#
            );
            for event in [error_event, failed_event] {
                let body = jsonl_as_sse(&format!("{CREATED}\n{event}"));
                let err = failure(decode, &body).await;
                assert!(matches!(err, ProviderError::Stream { .. }), "{err:?}");
                assert_eq!(err.is_retryable(), retryable, "{code}: {event}");
                assert_eq!(err.error_type(), Some(code), "{event}");
            }
        }
    }

    /// Custom tools are the caller's: their call is kept with its free-form input.
    #[tokio::test]
    async fn custom_tool_calls_are_client_calls() {
        let body = stream(&[
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"custom_tool_call","id":"ct_1","call_id":"call_sql","name":"write_sql","input":"","status":"in_progress"}}"#,
            r#"{"type":"response.custom_tool_call_input.delta","output_index":0,"item_id":"ct_1","delta":"SELECT * FROM users"}"#,
            r#"{"type":"response.custom_tool_call_input.delta","output_index":0,"item_id":"ct_1","delta":" WHERE age > 25"}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"custom_tool_call","id":"ct_1","call_id":"call_sql","name":"write_sql","input":"SELECT * FROM users WHERE age > 25","status":"completed"}}"#,
        ]);
        let answer = answer(decode, &body).await;
        assert_eq!(
            tool_calls(&answer),
            [ToolCall::new(
                "call_sql",
                "write_sql",
                "SELECT * FROM users WHERE age > 25"
            )]
        );
    }

    /// A message part whose text came only in the finished events (no delta) is kept once.
    #[tokio::test]
    async fn finished_text_counts_when_no_delta_came() {
        let body = stream(&[
            r#"{"type":"response.output_item.added","item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"},"output_index":0,"sequence_number":1}"#,
            r#"{"type":"response.output_text.done","content_index":0,"item_id":"msg_1","output_index":0,"sequence_number":2,"text":"READY"}"#,
            r#"{"type":"response.content_part.done","content_index":0,"item_id":"msg_1","output_index":0,"part":{"type":"output_text","annotations":[],"text":"READY"},"sequence_number":3}"#,
            r#"{"type":"response.output_item.done","item":{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"READY"}],"role":"assistant"},"output_index":0,"sequence_number":4}"#,
        ]);
        let answer = answer(decode, &body).await;
        assert_eq!(answer.message.text(), "READY");
    }

    /// Summary parts are the streamed text; the finished item's id and encrypted content are
    /// kept for sending back.
    #[tokio::test]
    async fn reasoning_summary_parts_join_and_keep_the_finished_opaque_fields() {
        let body = stream(&[
            r#"{"type":"response.output_item.added","item":{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"gAAA-added"},"output_index":0,"sequence_number":1}"#,
            r#"{"type":"response.reasoning_summary_part.added","item_id":"rs_1","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""},"sequence_number":2}"#,
            r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"**One**","sequence_number":3}"#,
            r#"{"type":"response.reasoning_summary_part.added","item_id":"rs_1","output_index":0,"summary_index":1,"part":{"type":"summary_text","text":""},"sequence_number":4}"#,
            r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":1,"delta":"**Two**","sequence_number":5}"#,
            r#"{"type":"response.output_item.done","item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"**One**"},{"type":"summary_text","text":"**Two**"}],"encrypted_content":"gAAA-done"},"output_index":0,"sequence_number":6}"#,
        ]);
        let answer = answer(decode, &body).await;
        assert_eq!(
            reasoning(&answer),
            [Reasoning {
                id: Some("rs_1".into()),
                text: "**One**\n\n**Two**".into(),
                signature: None,
                encrypted: Some("gAAA-done".into()),
            }]
        );
    }
}

#[cfg(feature = "anthropic")]
mod anthropic {
    use super::*;
    use providers::{FinishReason, StreamEvent};

    fn decode(pieces: Vec<Vec<u8>>) -> EventStream {
        providers::anthropic::decode_stream(futures::stream::iter(pieces))
    }

    /// A proxy that lost its upstream mid-generation spliced the retried generation into the
    /// same body: two messages' thinking and a cut tool input must not become one answer.
    #[tokio::test]
    async fn a_second_message_start_for_another_message_is_an_error() {
        let body = jsonl_as_sse(concat!(
            r#"{"type":"message_start","message":{"id":"msg_first","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}"#,
            "\n",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            "\n",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"first thinking"}}"#,
            "\n",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"signature-first"}}"#,
            "\n",
            r#"{"type":"content_block_stop","index":0}"#,
            "\n",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_first","name":"lookup","input":{}}}"#,
            "\n",
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"value\":\"Spark"}}"#,
            "\n",
            r#"{"type":"message_start","message":{"id":"msg_second","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[],"stop_reason":null,"usage":{"input_tokens":20,"output_tokens":1}}}"#,
            "\n",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            "\n",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"second"}}"#,
            "\n",
            r#"{"type":"content_block_stop","index":0}"#,
            "\n",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":30}}"#,
            "\n",
            r#"{"type":"message_stop"}"#,
        ));
        let events: Vec<_> = futures::StreamExt::collect(decode(vec![body.clone()])).await;
        let err = events
            .last()
            .and_then(|last| last.as_ref().err())
            .expect("the stream ends with an error");
        assert!(
            matches!(err, ProviderError::Decode { .. }),
            "a protocol break: {err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains("msg_first") && message.contains("msg_second"),
            "{message}"
        );
        // Nothing of the second generation, and no call with cut arguments, came before it.
        for event in &events {
            assert!(
                !matches!(
                    event,
                    Ok(StreamEvent::TextDelta(_) | StreamEvent::ToolCall(_))
                ),
                "{event:?}"
            );
        }
        // However the body is cut into reads.
        for size in [1, 7] {
            let pieces = body.chunks(size).map(<[u8]>::to_vec).collect();
            let err = decoded(decode(pieces)).await.expect_err("spliced");
            assert!(matches!(err, ProviderError::Decode { .. }), "{err:?}");
        }
    }

    /// The same `message_start` twice is a duplicate: one answer, the later usage counts.
    #[tokio::test]
    async fn a_repeated_message_start_for_the_same_message_is_a_duplicate() {
        let body = jsonl_as_sse(concat!(
            r#"{"type":"message_start","message":{"id":"msg_duplicate","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[],"stop_reason":null,"usage":{"input_tokens":99,"output_tokens":1}}}"#,
            "\n",
            r#"{"type":"message_start","message":{"id":"msg_duplicate","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}"#,
            "\n",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            "\n",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}"#,
            "\n",
            r#"{"type":"content_block_stop","index":0}"#,
            "\n",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}"#,
            "\n",
            r#"{"type":"message_stop"}"#,
        ));
        let (events, answer) = decoded(decode(vec![body])).await.expect("decodes");
        let starts = events
            .iter()
            .filter(|event| matches!(event, StreamEvent::Started { .. }))
            .count();
        assert_eq!(starts, 1);
        assert_eq!(answer.id.as_deref(), Some("msg_duplicate"));
        assert_eq!(answer.message.text(), "ok");
        assert_eq!(answer.usage.input_tokens, 10);
        assert_eq!(answer.usage.output_tokens, 2);
    }

    /// When a turn continues after server tools, `message_start` can hold whole blocks
    /// already, a client `tool_use` among them, and its stop reason.
    #[tokio::test]
    async fn blocks_message_start_already_holds_are_kept() {
        let body = jsonl_as_sse(concat!(
            r#"{"type":"message_start","message":{"id":"msg_prepopulated_content","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"code_execution_tool_result","tool_use_id":"srvtoolu_result_1","content":{"type":"code_execution_result","stdout":"First output\n","stderr":"","return_code":0,"content":[]}},{"type":"tool_use","id":"toolu_followup","name":"lookup_customer","input":{"id":"customer_123"},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_unrelated_caller"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}"#,
            "\n",
            r#"{"type":"message_stop"}"#,
        ));
        let answer = answer(decode, &body).await;
        assert_eq!(
            tool_calls(&answer),
            [ToolCall::new(
                "toolu_followup",
                "lookup_customer",
                r#"{"id":"customer_123"}"#
            )]
        );
        assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    }

    /// Blocks and deltas of types Skein does not model (a model fallback marker, citations)
    /// are skipped; the thinking, text and call around them are kept.
    #[tokio::test]
    async fn unknown_blocks_and_deltas_are_skipped() {
        let body = jsonl_as_sse(concat!(
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-5-5","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":0}}}"#,
            "\n",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            "\n",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Opus thinking"}}"#,
            "\n",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}"#,
            "\n",
            r#"{"type":"content_block_stop","index":0}"#,
            "\n",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"fallback","from":{"model":"claude-opus-5-5"},"to":{"model":"claude-opus-4-8"}}}"#,
            "\n",
            r#"{"type":"content_block_stop","index":1}"#,
            "\n",
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#,
            "\n",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","url":"https://example.com","text":{"odd":true}}}}"#,
            "\n",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Cited."}}"#,
            "\n",
            r#"{"type":"content_block_stop","index":2}"#,
            "\n",
            r#"{"type":"brand_new_event","payload":{"text":{"not":"a string"}}}"#,
            "\n",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":70}}"#,
            "\n",
            r#"{"type":"message_stop"}"#,
        ));
        let answer = answer(decode, &body).await;
        assert_eq!(
            reasoning(&answer),
            [Reasoning {
                text: "Opus thinking".into(),
                signature: Some("SIG".into()),
                ..Default::default()
            }]
        );
        assert_eq!(answer.message.text(), "Cited.");
        assert_eq!(answer.finish_reason, FinishReason::Stop);
    }
}

#[cfg(feature = "gemini")]
mod gemini {
    use super::*;
    use providers::FinishReason;
    use providers::gemini::MINTED_ID_PREFIX;
    use serde_json::Value;

    fn decode(pieces: Vec<Vec<u8>>) -> EventStream {
        providers::gemini::decode_stream(futures::stream::iter(pieces))
    }

    fn args(call: &ToolCall) -> Value {
        serde_json::from_str(&call.arguments).expect("arguments are JSON")
    }

    fn event(parts: &str) -> String {
        format!(
            r#"{{"candidates":[{{"content":{{"role":"model","parts":[{parts}]}}}}],"usageMetadata":{{"trafficType":"ON_DEMAND"}},"modelVersion":"gemini-3.1-pro-preview","responseId":"dqHOab6xGLzWodAPkPuViA4"}}"#
        )
    }

    const FINISH: &str = r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":26,"candidatesTokenCount":23,"totalTokenCount":181,"thoughtsTokenCount":132},"modelVersion":"gemini-3.1-pro-preview","responseId":"dqHOab6xGLzWodAPkPuViA4"}"#;

    /// Calls streamed in pieces: a named piece with `willContinue`, `partialArgs` pieces (a
    /// string arriving in pieces), and a piece without `willContinue` ending the call.
    #[tokio::test]
    async fn calls_streamed_in_pieces_are_one_call_each() {
        let lines = [
            event(
                r#"{"functionCall":{"name":"getWeather","willContinue":true},"thoughtSignature":"CiMBjz1rX25K"}"#,
            ),
            event(
                r#"{"functionCall":{"partialArgs":[{"jsonPath":"$.location","stringValue":"Bos","willContinue":true}],"willContinue":true}}"#,
            ),
            event(
                r#"{"functionCall":{"partialArgs":[{"jsonPath":"$.location","stringValue":"ton","willContinue":true}],"willContinue":true}}"#,
            ),
            event(
                r#"{"functionCall":{"partialArgs":[{"jsonPath":"$.location","stringValue":""}],"willContinue":true}}"#,
            ),
            event(r#"{"functionCall":{}}"#),
            event(r#"{"functionCall":{"name":"getWeather","willContinue":true}}"#),
            event(
                r#"{"functionCall":{"partialArgs":[{"jsonPath":"$.location","stringValue":"San Francisco","willContinue":true}],"willContinue":true}}"#,
            ),
            event(
                r#"{"functionCall":{"partialArgs":[{"jsonPath":"$.location","stringValue":""}],"willContinue":true}}"#,
            ),
            FINISH.to_owned(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let answer = answer(decode, &data_events(&lines)).await;
        let calls = tool_calls(&answer);
        assert_eq!(calls.len(), 2, "{calls:?}");
        for call in &calls {
            assert_eq!(call.name, "getWeather");
            assert!(call.id.starts_with(MINTED_ID_PREFIX), "{}", call.id);
        }
        assert_ne!(calls[0].id, calls[1].id);
        assert_eq!(args(&calls[0]), serde_json::json!({"location": "Boston"}));
        assert_eq!(
            args(&calls[1]),
            serde_json::json!({"location": "San Francisco"})
        );
        assert_eq!(
            calls[0].reasoning,
            Some(Reasoning::signature("CiMBjz1rX25K"))
        );
        assert_eq!(calls[1].reasoning, None);
        assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    }

    /// Nested paths, array elements and numbers; the last piece has no `willContinue` and
    /// no `{}` terminator follows.
    #[tokio::test]
    async fn partial_args_build_nested_objects_and_arrays() {
        let lines = [
            event(r#"{"functionCall":{"name":"writeItems","willContinue":true}}"#),
            event(r#"{"functionCall":{"partialArgs":[{"jsonPath":"$.operations[0].action","stringValue":"add","willContinue":true}],"willContinue":true}}"#),
            event(r#"{"functionCall":{"partialArgs":[{"jsonPath":"$.operations[0].action","stringValue":""}],"willContinue":true}}"#),
            event(r#"{"functionCall":{"partialArgs":[{"jsonPath":"$.operations[0].price","numberValue":0.5}],"willContinue":true}}"#),
            event(r#"{"functionCall":{"willContinue":true}}"#),
            event(r#"{"functionCall":{"partialArgs":[{"jsonPath":"$.operations[1]['item id']","stringValue":"banana_001","willContinue":true}],"willContinue":true}}"#),
            event(r#"{"functionCall":{"partialArgs":[{"jsonPath":"$.operations[1].count","numberValue":3},{"jsonPath":"$.dryRun","boolValue":false},{"jsonPath":"$.note","nullValue":"NULL_VALUE"}]}}"#),
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP"}],"modelVersion":"gemini-3-flash-preview","responseId":"3noMaojQL_2s6tkPiO26qQ4"}"#.to_owned(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let answer = answer(decode, &data_events(&lines)).await;
        let calls = tool_calls(&answer);
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0].name, "writeItems");
        assert_eq!(
            args(&calls[0]),
            serde_json::json!({
                "operations": [
                    {"action": "add", "price": 0.5},
                    {"item id": "banana_001", "count": 3}
                ],
                "dryRun": false,
                "note": null
            })
        );
        // An integer stays an integer.
        assert!(
            calls[0].arguments.contains(r#""count":3"#),
            "{}",
            calls[0].arguments
        );
    }

    /// Pieces that never name a tool cannot be a call: nothing with an empty name comes out.
    #[tokio::test]
    async fn a_call_without_a_name_is_never_handed_out() {
        let lines = [
            event(r#"{"functionCall":{"args":{"a":1}}}"#),
            event(r#"{"text":"Done."}"#),
            FINISH.to_owned(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let answer = answer(decode, &data_events(&lines)).await;
        assert_eq!(tool_calls(&answer), []);
        assert_eq!(answer.message.text(), "Done.");
        assert_eq!(answer.finish_reason, FinishReason::Stop);
    }

    /// A path Skein cannot read, or an array index past the cap, is an error, not a guess.
    #[tokio::test]
    async fn unreadable_paths_are_errors() {
        for path in ["location", "$.a[99999999]", "$..a"] {
            let lines = [
                event(r#"{"functionCall":{"name":"f","willContinue":true}}"#),
                event(&format!(
                    r#"{{"functionCall":{{"partialArgs":[{{"jsonPath":"{path}","stringValue":"x"}}],"willContinue":true}}}}"#
                )),
                FINISH.to_owned(),
            ];
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            let err = failure(decode, &data_events(&lines)).await;
            assert!(
                matches!(err, ProviderError::Decode { .. }),
                "{path}: {err:?}"
            );
        }
    }
}

#[cfg(feature = "openai")]
mod chat {
    use super::*;
    use providers::FinishReason;

    fn decode(pieces: Vec<Vec<u8>>) -> EventStream {
        providers::openai::decode_chat_stream(futures::stream::iter(pieces))
    }

    /// Mistral streams reasoning as typed content chunks.
    #[tokio::test]
    async fn mistral_thinking_chunks_are_reasoning() {
        let body = data_events(&[
            r#"{"id":"ed56a5f5","object":"chat.completion.chunk","created":1784737087,"model":"mistral-small-latest","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
            r#"{"id":"ed56a5f5","object":"chat.completion.chunk","created":1784737087,"model":"mistral-small-latest","choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"Okay, the"}],"closed":true}]},"finish_reason":null}],"p":"abcd"}"#,
            r#"{"id":"ed56a5f5","object":"chat.completion.chunk","created":1784737087,"model":"mistral-small-latest","choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":" user asks."}]}]},"finish_reason":null}],"p":"abcdefgh"}"#,
            r#"{"id":"ed56a5f5","object":"chat.completion.chunk","created":1784737087,"model":"mistral-small-latest","choices":[{"index":0,"delta":{"content":"391"},"finish_reason":null}]}"#,
            r#"{"id":"ed56a5f5","object":"chat.completion.chunk","created":1784737087,"model":"mistral-small-latest","choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"total_tokens":60,"completion_tokens":50}}"#,
            "[DONE]",
        ]);
        let answer = answer(decode, &body).await;
        assert_eq!(
            reasoning(&answer),
            [Reasoning {
                text: "Okay, the user asks.".into(),
                ..Default::default()
            }]
        );
        assert_eq!(answer.message.text(), "391");
        assert_eq!(answer.finish_reason, FinishReason::Stop);
        assert_eq!(answer.usage.output_tokens, 50);
    }

    /// An empty `content` beside each `reasoning_content` piece is no text: the reasoning stays
    /// one block.
    #[tokio::test]
    async fn empty_content_does_not_split_reasoning() {
        let body = data_events(&[
            r#"{"id":"chatcmpl-issue-20203","model":"test-model","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":"Think ","tool_calls":[]},"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-issue-20203","model":"test-model","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"","reasoning_content":"more...","tool_calls":[]},"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-issue-20203","model":"test-model","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hello","reasoning_content":"","tool_calls":[]},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        let answer = answer(decode, &body).await;
        assert_eq!(
            reasoning(&answer),
            [Reasoning {
                text: "Think more...".into(),
                ..Default::default()
            }]
        );
        assert_eq!(answer.message.text(), "Hello");
    }
}

/// Types Skein does not model are named once at `debug` level.
#[cfg(feature = "openai")]
mod logging {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Level, Metadata, Subscriber};

    /// Keeps the message of every `debug` event.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<String>>>);

    struct Message<'a>(&'a mut String);

    impl Visit for Message<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.0.push_str(&format!("{value:?}"));
            }
        }
    }

    impl Subscriber for Lines {
        fn enabled(&self, metadata: &Metadata<'_>) -> bool {
            *metadata.level() == Level::DEBUG
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut line = String::new();
            event.record(&mut Message(&mut line));
            self.0.lock().expect("lock").push(line);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    #[test]
    fn skipped_types_are_named_once() {
        let body = jsonl_as_sse(concat!(
            r#"{"type":"response.created","response":{"id":"resp_1","model":"m"}}"#,
            "\n",
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"web_search_call","id":"ws_1"}}"#,
            "\n",
            r#"{"type":"response.web_search_call.searching","output_index":0}"#,
            "\n",
            r#"{"type":"response.web_search_call.searching","output_index":0}"#,
            "\n",
            r#"{"type":"response.completed","response":{"status":"completed"}}"#,
        ));
        let lines = Lines::default();
        tracing::subscriber::with_default(lines.clone(), || {
            let stream = providers::openai::decode_responses_stream(futures::stream::iter([body]));
            let events: Vec<_> = futures::executor::block_on(futures::StreamExt::collect(stream));
            assert!(events.iter().all(Result::is_ok), "{events:?}");
        });
        let lines = lines.0.lock().expect("lock").clone();
        let named = |kind: &str| lines.iter().filter(|line| line.contains(kind)).count();
        assert_eq!(named("`web_search_call`"), 1, "{lines:?}");
        assert_eq!(
            named("`response.web_search_call.searching`"),
            1,
            "{lines:?}"
        );
    }
}
