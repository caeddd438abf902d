use messages::{Reasoning, ToolCall};
use providers::{FinishReason, StreamEvent, Usage};
use serde_json::{Value, json};

use super::*;

fn begun() -> ResponseObject {
    ResponseObject::begun("resp_abc".into(), 1_700_000_000, "echo".into())
}

fn encode(events: Vec<StreamEvent>) -> (Vec<Value>, ResponseObject) {
    let mut encoder = ResponseEncoder::new(begun());
    let mut out = encoder.start();
    for event in events {
        out.extend(encoder.encode(event));
    }
    let json = out
        .iter()
        .map(|event| serde_json::to_value(event).unwrap())
        .collect();
    (json, encoder.into_response())
}

fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect()
}

#[test]
fn text_streams_as_one_message_item_with_numbered_events() {
    let usage = Usage {
        input_tokens: 5,
        output_tokens: 2,
        ..Usage::default()
    };
    let (events, response) = encode(vec![
        StreamEvent::TextDelta("Hel".into()),
        StreamEvent::TextDelta("lo".into()),
        StreamEvent::Usage(usage),
        StreamEvent::Done {
            finish: FinishReason::Stop,
        },
    ]);
    assert_eq!(
        types(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (index, event) in events.iter().enumerate() {
        assert_eq!(event["sequence_number"], json!(index));
    }
    // The shape the Responses API documents for a text delta.
    assert_eq!(
        events[4],
        json!({
            "type": "response.output_text.delta",
            "item_id": "msg_abc_0",
            "output_index": 0,
            "content_index": 0,
            "delta": "Hel",
            "logprobs": [],
            "sequence_number": 4,
        })
    );
    assert_eq!(events[0]["response"]["status"], "in_progress");
    assert_eq!(events[2]["item"]["status"], "in_progress");
    assert_eq!(events[2]["item"]["content"], json!([]));
    assert_eq!(events[8]["item"]["content"][0]["text"], "Hello");
    let completed = &events[9]["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"][0]["content"][0]["text"], "Hello");
    assert_eq!(
        completed["usage"],
        json!({
            "input_tokens": 5,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 2,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 7,
        })
    );
    assert_eq!(serde_json::to_value(&response).unwrap(), *completed);
}

#[test]
fn reasoning_then_a_streamed_call_are_two_items_in_order() {
    let call = ToolCall::new("call_1", "get_weather", r#"{"city":"Paris"}"#);
    let (events, response) = encode(vec![
        StreamEvent::ReasoningDelta {
            text: "The user wants ".into(),
        },
        StreamEvent::ReasoningDelta {
            text: "weather.".into(),
        },
        StreamEvent::Reasoning(Reasoning {
            text: "The user wants weather.".into(),
            signature: Some("sig==".into()),
            ..Reasoning::default()
        }),
        StreamEvent::ToolCallDelta {
            index: 0,
            id: Some("call_1".into()),
            name: Some("get_weather".into()),
            arguments: String::new(),
        },
        StreamEvent::ToolCallDelta {
            index: 0,
            id: None,
            name: None,
            arguments: r#"{"city":"#.into(),
        },
        StreamEvent::ToolCallDelta {
            index: 0,
            id: None,
            name: None,
            arguments: r#""Paris"}"#.into(),
        },
        StreamEvent::ToolCall(call),
        StreamEvent::Done {
            finish: FinishReason::ToolCalls,
        },
    ]);
    assert_eq!(
        types(&events)[2..],
        [
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let reasoning = &events[8]["item"];
    assert_eq!(reasoning["id"], "rs_abc_0");
    assert_eq!(reasoning["summary"][0]["text"], "The user wants weather.");
    let opaque = reasoning["encrypted_content"].as_str().unwrap();
    assert_eq!(
        reasoning_block("The user wants weather.".into(), Some(opaque.into())).signature,
        Some("sig==".into())
    );
    assert_eq!(
        events[9]["item"],
        json!({"type": "function_call", "id": "fc_abc_1", "call_id": "call_1",
               "name": "get_weather", "arguments": "", "status": "in_progress"})
    );
    assert_eq!(events[12]["arguments"], r#"{"city":"Paris"}"#);
    assert_eq!(events[13]["item"]["status"], "completed");
    assert_eq!(response.output.len(), 2);
    assert_eq!(response.status, ResponseState::Completed);
}

#[test]
fn a_call_that_arrives_whole_is_added_and_done_at_once() {
    let (events, response) = encode(vec![
        StreamEvent::TextDelta("Let me look.".into()),
        StreamEvent::ToolCall(ToolCall::new("c1", "lookup", "{}")),
        StreamEvent::Done {
            finish: FinishReason::ToolCalls,
        },
    ]);
    assert_eq!(
        types(&events)[5..],
        [
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(response.output[1].id(), "fc_abc_1");
}

#[test]
fn the_output_limit_ends_incomplete_and_a_failure_ends_failed() {
    let (events, response) = encode(vec![
        StreamEvent::TextDelta("Once upon".into()),
        StreamEvent::Done {
            finish: FinishReason::Length,
        },
    ]);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(
        last["response"]["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
    assert_eq!(response.output[0].id(), "msg_abc_0");
    assert_eq!(last["response"]["output"][0]["status"], "incomplete");

    let mut encoder = ResponseEncoder::new(begun());
    encoder.start();
    encoder.encode(StreamEvent::TextDelta("Half".into()));
    let failed: Vec<Value> = encoder
        .fail(
            ResponseState::Failed,
            ResponseFailure {
                code: "server_error".into(),
                message: "the provider failed".into(),
            },
        )
        .iter()
        .map(|event| serde_json::to_value(event).unwrap())
        .collect();
    assert_eq!(
        types(&failed),
        [
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.failed",
        ]
    );
    assert_eq!(failed[2]["item"]["status"], "incomplete");
    assert_eq!(failed[3]["response"]["status"], "failed");
    assert_eq!(
        failed[3]["response"]["error"],
        json!({"code": "server_error", "message": "the provider failed"})
    );
    assert_eq!(failed[3]["sequence_number"], 8);
}

/// `events` encoded for a response created with `store: false`.
fn encode_unstored(events: Vec<StreamEvent>) -> (Vec<Value>, ResponseObject) {
    let mut encoder = ResponseEncoder::new(ResponseObject {
        store: false,
        ..begun()
    });
    let mut out = encoder.start();
    for event in events {
        out.extend(encoder.encode(event));
    }
    let json = out
        .iter()
        .map(|event| serde_json::to_value(event).unwrap())
        .collect();
    (json, encoder.into_response())
}

/// The `call_id` of every event that shows a function call item.
fn call_ids(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|event| event["item"]["call_id"].as_str())
        .collect()
}

#[test]
fn an_unstored_signed_call_is_announced_and_closed_with_the_id_that_carries_its_signature() {
    // As the Gemini adapter streams a call: its opening piece whole, then the call signed.
    let call = ToolCall {
        reasoning: Some(Reasoning::signature("EpwICpkI")),
        ..ToolCall::new("gemini_call_r_0", "get_country", "{}")
    };
    let stream = vec![
        StreamEvent::ToolCallDelta {
            index: 0,
            id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            arguments: "{}".into(),
        },
        StreamEvent::ToolCall(call),
        StreamEvent::Done {
            finish: FinishReason::ToolCalls,
        },
    ];
    let (events, response) = encode_unstored(stream.clone());
    // `EpwICpkI` is standard base64; its bytes in base64url read the same.
    let carried = "gemini_call_r_0~s1.EpwICpkI";
    assert_eq!(call_ids(&events), [carried, carried]);
    let OutputItem::FunctionCall { call_id, .. } = &response.output[0] else {
        panic!("{response:?}")
    };
    assert_eq!(call_id, carried);
    // A kept response gives the signature back from the tree: the id stays the provider's.
    let (kept, _) = encode(stream);
    assert_eq!(call_ids(&kept), ["gemini_call_r_0", "gemini_call_r_0"]);
    assert_eq!(types(&kept), types(&events));
}

#[test]
fn unsigned_calls_stream_their_arguments_as_before_when_unstored() {
    let stream = vec![
        StreamEvent::ToolCallDelta {
            index: 0,
            id: Some("call_1".into()),
            name: Some("lookup".into()),
            arguments: String::new(),
        },
        StreamEvent::ToolCallDelta {
            index: 0,
            id: None,
            name: None,
            arguments: "{\"q\":".into(),
        },
        StreamEvent::ToolCallDelta {
            index: 0,
            id: None,
            name: None,
            arguments: "1}".into(),
        },
        StreamEvent::ToolCall(ToolCall::new("call_1", "lookup", "{\"q\":1}")),
        StreamEvent::Done {
            finish: FinishReason::ToolCalls,
        },
    ];
    let (unstored, _) = encode_unstored(stream.clone());
    let (kept, _) = encode(stream);
    let without_store = |events: Vec<Value>| -> Vec<Value> {
        events
            .into_iter()
            .map(|mut event| {
                if let Some(response) = event.get_mut("response") {
                    response["store"] = json!(null);
                }
                event
            })
            .collect()
    };
    assert_eq!(without_store(unstored), without_store(kept));
}

#[test]
fn a_held_opening_piece_is_not_lost_when_the_answer_fails() {
    let mut encoder = ResponseEncoder::new(ResponseObject {
        store: false,
        ..begun()
    });
    encoder.start();
    encoder.encode(StreamEvent::ToolCallDelta {
        index: 0,
        id: Some("call_1".into()),
        name: Some("lookup".into()),
        arguments: "{\"q\"".into(),
    });
    encoder.fail(
        ResponseState::Failed,
        ResponseFailure {
            code: "server_error".into(),
            message: "gone".into(),
        },
    );
    let response = encoder.into_response();
    let OutputItem::FunctionCall {
        call_id,
        arguments,
        status,
        ..
    } = &response.output[0]
    else {
        panic!("{response:?}")
    };
    assert_eq!((call_id.as_str(), arguments.as_str()), ("call_1", "{\"q\""));
    assert_eq!(*status, ItemStatus::Incomplete);
}
