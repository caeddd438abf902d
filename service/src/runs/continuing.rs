//! Where a run taken over goes on: below the last answer it logged in the conversation tree.
//!
//! A model call that was in flight is made again; a tool call that was in flight is answered
//! by the chain's integrity rules (`agent_loop::history::continuation`: the model reads that
//! the call was not handled), never run again behind the model's back. Every protocol that
//! continues agent runs (Chat Shell, Responses) shapes its run's [`RunSpec`] here, so they
//! continue alike.

use conversation_tree::{Node, NodeId, ResponseStatus, Store, StoreError};
use messages::Role;

use crate::spec::{RunInput, RunSpec};

/// What comes next for a run taken over, as [`continue_below`] found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Continuing {
    /// Run the spec as [`continue_below`] left it.
    Run,
    /// The run's last answer was whole (it said something and called no tool): the node that
    /// holds it. No model is asked again.
    Answered(NodeId),
}

/// The last answer a run logged: the node carrying `label` (a run's label moves to each
/// answer it logs), else `last_node` (the one its record names), else none (nothing was
/// logged yet).
///
/// # Errors
///
/// The store's, when it cannot be read.
pub async fn last_answer(
    store: &dyn Store,
    label: &str,
    last_node: Option<NodeId>,
) -> Result<Option<Node>, StoreError> {
    match store.node_by_label(label).await? {
        Some(node) => Ok(Some(node)),
        None => match last_node {
            Some(id) => store.node(id).await,
            None => Ok(None),
        },
    }
}

/// Shapes `spec` (the run as first asked for) to continue below `last`, its last logged
/// answer ([`last_answer`]); with no answer logged the spec is left to run from the start.
///
/// - A completed answer that said something and called no tool: [`Continuing::Answered`].
/// - A completed answer that called tools: the run goes on below it, in its conversation,
///   its open tool calls answered by the integrity rules (a tool whose result was not logged
///   is not run again).
/// - An answer logged as stopped (what had arrived when its worker lost the run, possibly
///   nothing): it is asked again, after what was asked for it (the question, or tool
///   results), which its path holds.
///
/// # Errors
///
/// The store's, when the answer's path cannot be read.
pub async fn continue_below(
    store: &dyn Store,
    spec: &mut RunSpec,
    last: Option<Node>,
) -> Result<Continuing, StoreError> {
    let Some(node) = last else {
        return Ok(Continuing::Run);
    };
    let mut path = store.messages_for_path(node.id()).await?;
    if spec.conversation.is_none() {
        spec.conversation = Some(node.conversation_id().clone());
    }
    if node.status() == ResponseStatus::Completed {
        let whole = path.last().is_some_and(|last| {
            last.role == Role::Ai && !last.parts.is_empty() && last.tool_calls().next().is_none()
        });
        if whole {
            return Ok(Continuing::Answered(node.id()));
        }
        // The question is in the tree already.
        spec.input = RunInput::Parts(Vec::new());
        spec.after = Some(node.id());
        spec.include_history = true;
    } else {
        if path.last().is_some_and(|last| last.role == Role::Ai) {
            path.pop();
        }
        spec.input = RunInput::Messages(agent_loop::history::repair(path).messages);
        spec.after = None;
    }
    Ok(Continuing::Run)
}
