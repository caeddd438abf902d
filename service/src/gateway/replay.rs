//! Whole answers as the events a model would have streamed, so every encoder serves them
//! like live ones.

use messages::{ContentPart, Message};
use providers::{ChatResponse, FinishReason, StreamEvent};

/// A whole answer as the events a model would have streamed, so every encoder serves it like
/// a live one and the log rebuilds it part for part.
///
/// The answer's log probabilities, when it has them, come just before its first text, where a
/// stream puts those of the text it brings.
pub fn answer_events(answer: &ChatResponse) -> Vec<StreamEvent> {
    let mut events = replay_events(&answer.message);
    events.pop();
    if let Some(tokens) = &answer.logprobs {
        let first_text = events
            .iter()
            .position(|event| matches!(event, StreamEvent::TextDelta(_)))
            .unwrap_or(events.len());
        events.insert(first_text, StreamEvent::Logprobs(tokens.clone()));
    }
    events.push(StreamEvent::Usage(answer.usage));
    events.push(StreamEvent::Done {
        finish: answer.finish_reason.clone(),
    });
    events
}

/// A stored answer as the events a model would have streamed, so every encoder serves it
/// like a live one.
pub fn replay_events(message: &Message) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    let mut called = false;
    for part in &message.parts {
        match part {
            ContentPart::Reasoning(block) => {
                if !block.text.is_empty() {
                    events.push(StreamEvent::ReasoningDelta {
                        text: block.text.clone(),
                    });
                }
                events.push(StreamEvent::Reasoning(block.clone()));
            }
            ContentPart::Text { text, reasoning } => {
                if !text.is_empty() {
                    events.push(StreamEvent::TextDelta(text.clone()));
                }
                // Gemini refuses a continued turn whose text lost its thought signature.
                if let Some(reasoning) = reasoning {
                    events.push(StreamEvent::TextReasoning(reasoning.clone()));
                }
            }
            ContentPart::ToolCall(call) => {
                called = true;
                events.push(StreamEvent::ToolCall(call.clone()));
            }
            _ => {}
        }
    }
    let finish = if called {
        FinishReason::ToolCalls
    } else {
        FinishReason::Stop
    };
    events.push(StreamEvent::Done { finish });
    events
}
