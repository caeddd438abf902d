//! The algorithms both stores share: walking a message array through the tree, and logging a
//! response. They run against [`Tx`], a transaction of either backend, so the rules live once.
//!
//! SQLite's `Tx` is synchronous underneath: its futures are ready on first poll and run on a
//! blocking thread with `now_or_never`; PostgreSQL's are real I/O.

use std::sync::LazyLock;

use jiff::Timestamp;
use messages::{Message, Role};

use crate::record::{NodeRow, SummaryRow, conversation_name};
use crate::{
    CallKind, CallOptions, ConversationId, HashOptions, MatchedTurn, Node, NodeId, PathMatch,
    ResponseStatus, Result, StoreError, prompt_hash, response_hash,
};

/// The statements the shared algorithms need, inside one transaction.
pub(crate) trait Tx {
    /// Serialises writers of one conversation until the transaction ends, where the backend
    /// does not already serialise all writers.
    async fn lock_conversation(&self, conversation: &ConversationId) -> Result<()>;

    /// Creates the conversation row if needed, owned by `owner`, and moves its `updated_utc`
    /// to `at` if later. An existing conversation keeps its owner.
    async fn touch_conversation(
        &self,
        conversation: &ConversationId,
        name: Option<&str>,
        owner: Option<&str>,
        at: Timestamp,
    ) -> Result<()>;

    async fn node(&self, id: NodeId) -> Result<Option<Node>>;

    /// Nodes at (conversation, parent, prompt hash), oldest first.
    async fn candidates(
        &self,
        conversation: &ConversationId,
        parent: Option<NodeId>,
        prompt_hash: &str,
    ) -> Result<Vec<Node>>;

    /// Every node at (conversation, parent), whatever its prompt hash, oldest first.
    async fn at_position(
        &self,
        conversation: &ConversationId,
        parent: Option<NodeId>,
    ) -> Result<Vec<Node>>;

    async fn insert_node(&self, row: &NodeRow) -> Result<NodeId>;

    async fn insert_call(
        &self,
        node: NodeId,
        conversation: &ConversationId,
        kind: CallKind,
        model: Option<&str>,
        at: Timestamp,
    ) -> Result<()>;

    /// Points `label` at `node`, moving it from the node it named before, if any.
    async fn set_label(&self, label: &str, node: NodeId) -> Result<()>;

    /// Stores the summary `node`'s request was sent with.
    async fn set_summary(&self, node: NodeId, summary: &SummaryRow) -> Result<()>;
}

/// A message array cut into turns and hashed: the CPU part of a walk, done once.
#[derive(Debug)]
pub(crate) struct Plan {
    turns: Vec<PlannedTurn>,
    len: usize,
    name: Option<String>,
}

#[derive(Debug)]
struct PlannedTurn {
    /// Index of the turn's first input message.
    start: usize,
    prompt_hash: String,
    /// Index and hash of the AI message answering the turn, if the caller gave one.
    answer: Option<(usize, String)>,
}

impl Plan {
    pub(crate) fn new(messages: &[Message], options: &CallOptions) -> Self {
        let mut turns = Vec::new();
        let mut start = 0;
        for (index, message) in messages.iter().enumerate() {
            if message.role == Role::Ai {
                let input = messages.get(start..index).unwrap_or_default();
                turns.push(PlannedTurn {
                    start,
                    prompt_hash: prompt_hash(input, &options.hash),
                    answer: Some((index, response_hash(message))),
                });
                start = index + 1;
            }
        }
        if let Some(input) = messages.get(start..).filter(|input| !input.is_empty()) {
            turns.push(PlannedTurn {
                start,
                prompt_hash: prompt_hash(input, &options.hash),
                answer: None,
            });
        }
        Plan {
            turns,
            len: messages.len(),
            name: conversation_name(messages),
        }
    }
}

/// How a walk may touch the store.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Mode {
    /// Look only; stop at the first write the walk would need.
    Read,
    /// Hold the conversation's write lock and write what is needed, stamped `at`.
    Write { at: Timestamp },
}

/// How far a walk got: the turns matched so far and the node the next turn hangs from.
///
/// Nodes are never updated or deleted, so a prefix matched without a lock is still matched
/// once a writer holds it: a write walk resumes here instead of starting over.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    turns: Vec<MatchedTurn>,
    parent: Option<Node>,
    next: usize,
    /// The node the walk started below, `None` at the roots.
    after: Option<NodeId>,
}

impl Progress {
    /// A walk of messages that follow `after`'s answer: it starts below that node, which must
    /// belong to `conversation`.
    pub(crate) async fn after<T: Tx>(
        tx: &T,
        conversation: &ConversationId,
        after: Option<NodeId>,
    ) -> Result<Progress> {
        let Some(id) = after else {
            return Ok(Progress::default());
        };
        let node = tx.node(id).await?.ok_or(StoreError::UnknownNode { id })?;
        if node.conversation_id() != conversation {
            return Err(StoreError::ParentInOtherConversation {
                parent: id,
                found: node.conversation_id().to_string(),
                expected: conversation.to_string(),
            });
        }
        Ok(Progress {
            parent: Some(node),
            after: Some(id),
            ..Progress::default()
        })
    }
}

/// Where a walk ended.
#[derive(Debug)]
pub(crate) enum Step {
    Done(PathMatch),
    /// [`Mode::Read`] stopped where a write is needed (a branch, or a cache-hit record): resume
    /// in [`Mode::Write`] inside a write transaction.
    NeedsWrite(Progress),
}

/// Walks `messages` (planned as `plan`) through the conversation's tree, from `progress`.
///
/// Stores run it first in [`Mode::Read`] from the start: the common case (a known path and a
/// new question) writes nothing. When that stops, they resume it in [`Mode::Write`] inside a
/// write transaction, which looks the stopping turn up again: rows another writer committed in
/// between are then seen, so a supplied branch is created once.
pub(crate) async fn walk<T: Tx>(
    tx: &T,
    conversation: &ConversationId,
    messages: &[Message],
    plan: &Plan,
    options: &CallOptions,
    mode: Mode,
    progress: Progress,
) -> Result<Step> {
    if let Mode::Write { .. } = mode {
        tx.lock_conversation(conversation).await?;
    }
    let Progress {
        mut turns,
        mut parent,
        next,
        after,
    } = progress;
    for (index, turn) in plan.turns.iter().enumerate().skip(next) {
        let stop = |turns, parent| {
            Ok(Step::NeedsWrite(Progress {
                turns,
                parent,
                next: index,
                after,
            }))
        };
        let parent_id = parent.as_ref().map(Node::id);
        let mut candidates = tx
            .candidates(conversation, parent_id, &turn.prompt_hash)
            .await?;
        let Some((answer_index, answer_hash)) = &turn.answer else {
            // The trailing turn: the model's to answer, unless a stored answer may stand in.
            let hit = candidates
                .iter()
                .position(|node| {
                    reusable(node) && options.may_reuse(node.model(), node.cache_key())
                })
                .map(|index| candidates.remove(index));
            if let Some(hit) = &hit {
                let Mode::Write { at } = mode else {
                    return stop(turns, parent);
                };
                tx.touch_conversation(conversation, plan.name.as_deref(), None, at)
                    .await?;
                tx.insert_call(
                    hit.id(),
                    conversation,
                    CallKind::CacheHit,
                    Some(&options.model),
                    at,
                )
                .await?;
            }
            return Ok(Step::Done(PathMatch {
                after,
                turns,
                first_unmatched: turn.start,
                cache_hit: hit,
                alternatives: candidates,
            }));
        };
        let input = messages.get(turn.start..*answer_index).unwrap_or_default();
        let found = match candidates
            .iter()
            .position(|node| node.response_hash() == answer_hash)
        {
            Some(index) => Some(candidates.swap_remove(index)),
            None => {
                said_with_other_options(tx, conversation, parent_id, input, answer_hash, options)
                    .await?
            }
        };
        if let Some(node) = found {
            turns.push(MatchedTurn {
                node: node.id(),
                start: turn.start,
                created: false,
            });
            parent = Some(node);
            continue;
        }
        // The caller's answer is not stored here: it becomes a branch beside what is.
        let Mode::Write { at } = mode else {
            return stop(turns, parent);
        };
        let answer = messages
            .get(*answer_index)
            .ok_or_else(|| StoreError::InvalidTurn {
                reason: format!("message {answer_index} is missing"),
            })?;
        let mut row = NodeRow::new(
            conversation.clone(),
            parent_id,
            input,
            answer,
            &options.hash,
            at,
        )?;
        row.set_parent_path(parent.as_ref().map(Node::path_hash));
        tx.touch_conversation(conversation, plan.name.as_deref(), None, at)
            .await?;
        let id = tx.insert_node(&row).await?;
        tx.insert_call(id, conversation, CallKind::Supplied, None, at)
            .await?;
        turns.push(MatchedTurn {
            node: id,
            start: turn.start,
            created: true,
        });
        parent = Some(row.into_node(id));
    }
    Ok(Step::Done(PathMatch {
        after,
        turns,
        first_unmatched: plan.len,
        cache_hit: None,
        alternatives: Vec::new(),
    }))
}

/// Whether a stored answer may stand in for a model call at all: a cancelled or failed
/// answer is partial, and an empty one (kept for the tool results in its input) says nothing.
fn reusable(node: &Node) -> bool {
    static EMPTY_ANSWER: LazyLock<String> =
        LazyLock::new(|| response_hash(&Message::new(Role::Ai, Vec::new())));
    node.status() == ResponseStatus::Completed && node.response_hash() != EMPTY_ANSWER.as_str()
}

/// The stored node at this position holding `input` answered by `answer_hash`, asked with
/// other deterministic options than the current call's.
///
/// A prompt hash covers the options the turn was asked with, so a conversation continued at
/// another temperature, output limit or stop list would hash its earlier turns differently
/// and fork the whole history into a copy. Earlier turns are matched by what was said: each
/// stored node's prompt hash is recomputed with that node's own options. Only the new turn's
/// options decide whether a stored answer may stand in for a model call.
async fn said_with_other_options<T: Tx>(
    tx: &T,
    conversation: &ConversationId,
    parent: Option<NodeId>,
    input: &[Message],
    answer_hash: &str,
    options: &CallOptions,
) -> Result<Option<Node>> {
    let nodes = tx.at_position(conversation, parent).await?;
    // Siblings usually share their options: hash the input once per distinct set.
    let mut hashed: Vec<(&HashOptions, String)> = Vec::new();
    for node in &nodes {
        if node.response_hash() != answer_hash || node.options() == &options.hash {
            continue;
        }
        let index = match hashed.iter().position(|(seen, _)| *seen == node.options()) {
            Some(index) => index,
            None => {
                hashed.push((node.options(), prompt_hash(input, node.options())));
                hashed.len() - 1
            }
        };
        if hashed[index].1 == node.prompt_hash() {
            return Ok(Some(node.clone()));
        }
    }
    Ok(None)
}

/// Stores a prepared answer: checks its parent, derives its path hash, writes node and call,
/// moves the row's label to the node and writes its summary, all in the caller's transaction.
pub(crate) async fn log<T: Tx>(tx: &T, mut row: NodeRow, name: Option<&str>) -> Result<Node> {
    let parent_path = match row.parent {
        None => None,
        Some(parent) => {
            let node = tx
                .node(parent)
                .await?
                .ok_or(StoreError::UnknownNode { id: parent })?;
            if node.conversation_id() != &row.conversation {
                return Err(StoreError::ParentInOtherConversation {
                    parent,
                    found: node.conversation_id().to_string(),
                    expected: row.conversation.to_string(),
                });
            }
            Some(node.path_hash)
        }
    };
    row.set_parent_path(parent_path.as_deref());
    let at = row.datetime_utc;
    tx.touch_conversation(&row.conversation, name, row.owner.as_deref(), at)
        .await?;
    let id = tx.insert_node(&row).await?;
    tx.insert_call(
        id,
        &row.conversation,
        CallKind::Generated,
        row.model.as_deref(),
        at,
    )
    .await?;
    if let Some(label) = &row.label {
        tx.set_label(label, id).await?;
    }
    if let Some(summary) = &row.summary {
        tx.set_summary(id, summary).await?;
    }
    Ok(row.into_node(id))
}

/// Points `label` at the stored node `node`, in the caller's transaction:
/// [`StoreError::UnknownNode`] when the store does not hold it.
pub(crate) async fn label<T: Tx>(tx: &T, label: &str, node: NodeId) -> Result<()> {
    if tx.node(node).await?.is_none() {
        return Err(StoreError::UnknownNode { id: node });
    }
    tx.set_label(label, node).await
}
