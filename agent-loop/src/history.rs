//! Loading a stored conversation so that it can always be continued.
//!
//! A run can stop at any instant: cancelled, failed, or killed between a model's tool calls
//! and the tools' results. What it logged is then a path whose tail may be unfinished: a
//! tool-call answer with no results after it, or an empty answer kept only for the tool
//! results in its input. [`continuation`] turns any such path into a valid chain, the way
//! `ChainAst` force-repair does, so that a continuation never fails on data Skein wrote.

use chain_ast::{ChainAst, ChainError};
use conversation_tree::{NodeId, Store, StoreError};
use messages::{ContentPart, Message, Role};

/// A stored path made ready to continue, and what had to be repaired.
#[derive(Clone, Debug, PartialEq)]
pub struct Continuation {
    /// The messages from the root to the node, as a valid chain.
    pub messages: Vec<Message>,
    /// The breaks of the chain rules that were repaired (empty for a path that ended cleanly),
    /// e.g. tool calls answered with [`chain_ast::FALLBACK_RESPONSE_CONTENT`] because the run
    /// stopped before its tools returned.
    pub repaired: Vec<ChainError>,
    /// How many unanswered questions of runs that stopped before the model said anything
    /// were left out.
    pub unanswered: usize,
}

/// The messages from the root of its conversation to `node`, ready to continue.
///
/// A turn whose answer has no text and no tool calls (a run cancelled or failed before the
/// model said anything, or one that ended after its tools) contributes the tool results of
/// its input, which answer the calls before it, but neither its empty answer (providers
/// reject an empty assistant message) nor its human question, which the model never
/// answered. Every other break, such as tool calls that were never answered because the
/// process was killed, is repaired as `ChainAst` force-repair does.
///
/// ```
/// use agent_loop::history::continuation;
/// use conversation_tree::{CallOptions, ConversationId, NewResponse, SqliteStore, Store};
/// use messages::{Message, ToolCall};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), conversation_tree::StoreError> {
/// let store = SqliteStore::open_in_memory().await?;
/// let call = ToolCall::new("call_1", "calculator", r#"{"expression":"2+2"}"#);
/// // The model asked for a tool, then the process was killed before the tool returned.
/// let node = store
///     .log_response(NewResponse::new(
///         ConversationId::random(),
///         None,
///         vec![Message::human("What is 2+2?")],
///         Message::ai_tool_calls(None, vec![call]),
///         &CallOptions::new("echo"),
///     ))
///     .await?;
/// let resumed = continuation(&store, node.id()).await?;
/// assert_eq!(resumed.messages.len(), 3); // the question, the call, a fallback result
/// assert_eq!(resumed.repaired.len(), 1);
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// The store's: an unknown node, a database that cannot be read.
pub async fn continuation(store: &dyn Store, node: NodeId) -> Result<Continuation, StoreError> {
    let stored = store.messages_for_path(node).await?;
    Ok(repair(stored))
}

/// [`continuation`] for messages already read.
pub fn repair(stored: Vec<Message>) -> Continuation {
    let mut messages = Vec::with_capacity(stored.len());
    let mut turn_start = 0;
    let mut unanswered = 0;
    for message in stored {
        if message.role != Role::Ai {
            messages.push(message);
            continue;
        }
        if says_something(&message) {
            messages.push(message);
        } else {
            let input = messages.split_off(turn_start);
            let before = input.len();
            messages.extend(input.into_iter().filter(|kept| kept.role != Role::Human));
            unanswered += before - (messages.len() - turn_start);
        }
        turn_start = messages.len();
    }
    let (chain, repaired) = ChainAst::repair(&messages);
    let messages = if repaired.is_empty() {
        messages
    } else {
        tracing::info!(
            repairs = repaired.len(),
            "a stored conversation ended mid-round; repaired it to continue"
        );
        chain.into_messages()
    };
    Continuation {
        messages,
        repaired,
        unanswered,
    }
}

/// Whether an answer holds text or tool calls: reasoning alone, or nothing, is not an answer a
/// provider takes back.
fn says_something(message: &Message) -> bool {
    message.parts.iter().any(|part| match part {
        ContentPart::Text { text, .. } => !text.is_empty(),
        ContentPart::Reasoning(_) => false,
        _ => true,
    })
}

#[cfg(test)]
mod tests {
    use messages::ToolCall;

    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall::new(id, "calculator", "{}")
    }

    #[test]
    fn a_clean_path_is_unchanged() {
        let messages = vec![
            Message::system("s"),
            Message::human("h"),
            Message::ai_tool_calls(None, vec![call("a")]),
            Message::tool_response("a", "calculator", "4"),
            Message::ai("four"),
        ];
        let resumed = repair(messages.clone());
        assert_eq!(resumed.messages, messages);
        assert!(resumed.repaired.is_empty());
        assert_eq!(resumed.unanswered, 0);
    }

    #[test]
    fn unanswered_calls_get_the_fallback() {
        let resumed = repair(vec![
            Message::human("h"),
            Message::ai_tool_calls(Some("checking".into()), vec![call("a"), call("b")]),
            Message::tool_response("a", "calculator", "4"),
        ]);
        assert_eq!(resumed.messages.len(), 4);
        let last = resumed
            .messages
            .last()
            .and_then(|m| m.tool_responses().next());
        assert_eq!(
            last.map(|response| response.content.as_str()),
            Some(chain_ast::FALLBACK_RESPONSE_CONTENT)
        );
        assert!(ChainAst::new(&resumed.messages, false).is_ok());
    }

    #[test]
    fn an_empty_answer_keeps_the_tool_results_and_drops_the_unanswered_question() {
        let resumed = repair(vec![
            Message::human("h1"),
            Message::ai_tool_calls(None, vec![call("a")]),
            Message::tool_response("a", "calculator", "4"),
            Message::new(Role::Ai, Vec::new()),
        ]);
        assert_eq!(resumed.messages.len(), 3);
        assert_eq!(resumed.unanswered, 0);
        assert!(resumed.repaired.is_empty());

        let resumed = repair(vec![
            Message::human("h1"),
            Message::ai("a1"),
            Message::human("h2"),
            Message::new(Role::Ai, Vec::new()),
        ]);
        let texts: Vec<String> = resumed.messages.iter().map(Message::text).collect();
        assert_eq!(texts, ["h1", "a1"]);
        assert_eq!(resumed.unanswered, 1);
    }

    #[test]
    fn a_partial_answer_is_kept() {
        let messages = vec![Message::human("h1"), Message::ai("Once upon a")];
        assert_eq!(repair(messages.clone()).messages, messages);
    }
}
