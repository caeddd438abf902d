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
    /// The deepest stored node whose answer is kept as stored, and how many of `messages` lead
    /// up to and include that answer. A run given this
    /// ([`AgentInput::with_continuation`](crate::AgentInput::with_continuation)) logs its first
    /// answer below that very node: equal sibling answers (two runs that asked the same thing
    /// at once) cannot be told apart by a walk from the roots.
    pub anchor: Option<Anchor>,
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
    let mut path: Vec<NodeId> = store
        .path_to_root(node)
        .await?
        .iter()
        .map(conversation_tree::Node::id)
        .collect();
    path.reverse();
    Ok(repair_path(stored, &path))
}

/// Where a stored path ends in a [`Continuation`]'s messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    /// The node.
    pub node: NodeId,
    /// How many messages lead up to and include its answer.
    pub len: usize,
}

/// [`continuation`] for messages already read (no anchor: the nodes are not known).
pub fn repair(stored: Vec<Message>) -> Continuation {
    repair_path(stored, &[])
}

/// Repairs `stored`, the messages of the path whose nodes are `path` (root first, one per AI
/// message; empty when unknown).
fn repair_path(stored: Vec<Message>, path: &[NodeId]) -> Continuation {
    let mut messages = Vec::with_capacity(stored.len());
    let mut turn_start = 0;
    let mut unanswered = 0;
    let mut nodes = path.iter();
    // The deepest node whose answer was kept, and the messages up to it.
    let mut kept: Option<Anchor> = None;
    for message in stored {
        if message.role != Role::Ai {
            messages.push(message);
            continue;
        }
        let node = nodes.next();
        if says_something(&message) {
            messages.push(message);
            kept = node.map(|&node| Anchor {
                node,
                len: messages.len(),
            });
        } else {
            let input = messages.split_off(turn_start);
            let before = input.len();
            messages.extend(input.into_iter().filter(|kept| kept.role != Role::Human));
            unanswered += before - (messages.len() - turn_start);
        }
        turn_start = messages.len();
    }
    let (chain, repaired) = ChainAst::repair(&messages);
    let (messages, anchor) = if repaired.is_empty() {
        (messages, kept)
    } else {
        tracing::info!(
            repairs = repaired.len(),
            "a stored conversation ended mid-round; repaired it to continue"
        );
        let repaired_messages = chain.into_messages();
        // Repair only appends answers to open calls for what Skein wrote; should it have
        // touched anything before the anchor, the anchor no longer describes the messages.
        let anchor =
            kept.filter(|anchor| repaired_messages.get(..anchor.len) == messages.get(..anchor.len));
        (repaired_messages, anchor)
    };
    // The path had as many answers as nodes, or the nodes are not the path's.
    let anchor = anchor.filter(|_| nodes.next().is_none() && !path.is_empty());
    Continuation {
        messages,
        anchor,
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

    fn ids(ids: &[&str]) -> Vec<NodeId> {
        ids.iter()
            .map(|id| id.parse().expect("a node id"))
            .collect()
    }

    #[test]
    fn the_anchor_is_the_deepest_answer_kept_as_stored() {
        let path = ids(&["1", "2"]);
        // A clean path: the anchor is its last node, after all of its messages.
        let clean = repair_path(
            vec![
                Message::human("h1"),
                Message::ai("a1"),
                Message::human("h2"),
                Message::ai("a2"),
            ],
            &path,
        );
        assert_eq!(
            clean.anchor,
            Some(Anchor {
                node: path[1],
                len: 4
            })
        );
        // Open calls repaired: the anchor stays on the call node; the fallback comes after.
        let open = repair_path(
            vec![
                Message::human("h1"),
                Message::ai("a1"),
                Message::human("h2"),
                Message::ai_tool_calls(None, vec![call("a")]),
            ],
            &path,
        );
        assert_eq!(open.messages.len(), 5);
        assert_eq!(
            open.anchor,
            Some(Anchor {
                node: path[1],
                len: 4
            })
        );
        // An empty answer left out: the anchor is the node before it.
        let empty = repair_path(
            vec![
                Message::human("h1"),
                Message::ai("a1"),
                Message::human("h2"),
                Message::new(Role::Ai, Vec::new()),
            ],
            &path,
        );
        assert_eq!(
            empty.anchor,
            Some(Anchor {
                node: path[0],
                len: 2
            })
        );
        // Nodes that do not match the messages give no anchor.
        assert_eq!(
            repair_path(vec![Message::human("h"), Message::ai("a")], &path).anchor,
            None
        );
        assert_eq!(
            repair(vec![Message::human("h"), Message::ai("a")]).anchor,
            None
        );
    }

    #[test]
    fn a_partial_answer_is_kept() {
        let messages = vec![Message::human("h1"), Message::ai("Once upon a")];
        assert_eq!(repair(messages.clone()).messages, messages);
    }
}
