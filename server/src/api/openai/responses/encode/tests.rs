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
