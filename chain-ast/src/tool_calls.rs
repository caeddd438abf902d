//! [`ToolCallsInfo`]: how the calls of a body pair and its responses pair up.

use std::collections::BTreeMap;

use messages::{Message, ToolCall, ToolResponse};

/// A call and the response that answers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolCallPair<'a> {
    /// The call, from the AI message.
    pub call: &'a ToolCall,
    /// Its response, from a tool message.
    pub response: &'a ToolResponse,
}

/// How the tool calls of a [`BodyPair`](crate::BodyPair) and its tool responses pair up, keyed
/// and ordered by call id.
///
/// Calls are keyed by id, so two calls with one id count once (the later one is kept). A response
/// that answers an id a second time is unmatched, like one that answers an id never called.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolCallsInfo<'a> {
    /// Calls without a response.
    pub pending: BTreeMap<&'a str, &'a ToolCall>,
    /// Responses whose id was not called, or was already answered.
    pub unmatched: BTreeMap<&'a str, &'a ToolResponse>,
    /// Calls with their response.
    pub completed: BTreeMap<&'a str, ToolCallPair<'a>>,
}

impl<'a> ToolCallsInfo<'a> {
    /// Pairs the calls of `ai` with the responses in `tools`.
    pub(crate) fn of(ai: &'a Message, tools: &'a [Message]) -> ToolCallsInfo<'a> {
        let mut info = ToolCallsInfo {
            pending: ai
                .tool_calls()
                .map(|call| (call.id.as_str(), call))
                .collect(),
            ..ToolCallsInfo::default()
        };
        for response in tools.iter().flat_map(Message::tool_responses) {
            let id = response.tool_call_id.as_str();
            match info.pending.remove(id) {
                Some(call) => {
                    info.completed.insert(id, ToolCallPair { call, response });
                }
                None => {
                    info.unmatched.insert(id, response);
                }
            }
        }
        info
    }
}
