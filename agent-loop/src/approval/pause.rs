//! A paused run as data ([`PausedRun`]) and what a person decides about it ([`Decision`]).

use std::collections::{BTreeMap, BTreeSet};

use messages::{Message, ToolCall};
use serde::{Deserialize, Serialize};

#[cfg(feature = "store")]
use conversation_tree::{ConversationId, NodeId};

/// The start of what a rejected call's tool response says; the person's reason follows.
pub const TOOL_CALL_DECLINED: &str = "The user declined this tool call.";

/// What a rejected call's tool response says: [`TOOL_CALL_DECLINED`] and the reason given.
pub fn declined_notice(reason: &str) -> String {
    let reason = reason.trim();
    if reason.is_empty() {
        TOOL_CALL_DECLINED.to_owned()
    } else {
        format!("{TOOL_CALL_DECLINED} Reason: {reason}")
    }
}

/// A call waiting for approval: what a person is shown.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The provider's tool-call id: what a [`Decision`] is keyed by.
    pub id: String,
    /// The tool's name, as the model called it.
    pub name: String,
    /// The arguments, as the model wrote them (JSON text).
    pub arguments: String,
}

impl From<&ToolCall> for PendingCall {
    fn from(call: &ToolCall) -> Self {
        PendingCall {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        }
    }
}

/// What a person decided about one pending call.
///
/// Serialised as `{"decision": "approve"}`, `{"decision": "approve_always"}` or
/// `{"decision": "reject", "reason": "…"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run this call.
    Approve,
    /// Run this call, and every later call of the same tool in this conversation without
    /// asking (an [`ApprovalGrants`] entry).
    ApproveAlways,
    /// Do not run it; the model is told the user declined, with the reason.
    Reject {
        /// Why, in the person's words (may be empty).
        #[serde(default)]
        reason: String,
    },
}

impl Decision {
    /// A rejection with `reason`.
    pub fn reject(reason: impl Into<String>) -> Self {
        Decision::Reject {
            reason: reason.into(),
        }
    }

    /// Whether the call runs.
    pub fn approves(&self) -> bool {
        !matches!(self, Decision::Reject { .. })
    }
}

/// The decisions about a paused run's calls, by call id.
///
/// ```
/// use agent_loop::approval::{Decision, Decisions};
///
/// let decisions = Decisions::new()
///     .decide("call_1", Decision::Approve)
///     .decide("call_2", Decision::reject("not that file"));
/// assert_eq!(decisions.get("call_2"), Some(&Decision::reject("not that file")));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Decisions(BTreeMap<String, Decision>);

impl Decisions {
    /// No decisions yet.
    pub fn new() -> Self {
        Decisions::default()
    }

    /// Adds (or replaces) the decision about call `id`.
    #[must_use]
    pub fn decide(mut self, id: impl Into<String>, decision: Decision) -> Self {
        self.0.insert(id.into(), decision);
        self
    }

    /// Every call of `pending` rejected for `reason`: what a pause nobody decided about in
    /// time is answered with.
    ///
    /// ```
    /// use agent_loop::approval::{Decision, Decisions, PendingCall};
    ///
    /// let pending = [PendingCall { id: "call_1".into(), name: "http_get".into(), arguments: "{}".into() }];
    /// let decisions = Decisions::reject_all(&pending, "too late");
    /// assert_eq!(decisions.get("call_1"), Some(&Decision::reject("too late")));
    /// ```
    pub fn reject_all(pending: &[PendingCall], reason: &str) -> Self {
        pending
            .iter()
            .map(|call| (call.id.clone(), Decision::reject(reason)))
            .collect()
    }

    /// The decision about call `id`.
    pub fn get(&self, id: &str) -> Option<&Decision> {
        self.0.get(id)
    }

    /// Every decision, by call id.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Decision)> {
        self.0.iter().map(|(id, decision)| (id.as_str(), decision))
    }
}

impl FromIterator<(String, Decision)> for Decisions {
    fn from_iter<I: IntoIterator<Item = (String, Decision)>>(iter: I) -> Self {
        Decisions(iter.into_iter().collect())
    }
}

/// Tools a person approved "always" for one conversation: their calls run without asking.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ApprovalGrants(BTreeSet<String>);

impl ApprovalGrants {
    /// No grants.
    pub fn new() -> Self {
        ApprovalGrants::default()
    }

    /// Grants the tool the model calls `name`.
    pub fn grant(&mut self, name: impl Into<String>) {
        self.0.insert(name.into());
    }

    /// Whether calls of `name` run without asking.
    pub fn allows(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    /// The granted tools' names, sorted.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// Whether nothing was granted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Why decisions cannot resume a paused run: every problem at once.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the decisions do not fit the paused run: {}", problems.join("; "))]
pub struct DecisionError {
    /// Each problem: a pending call without a decision, a decision about no pending call.
    pub problems: Vec<String>,
}

/// A run stopped before a round's tools ran, because some of its calls need approval: all of
/// it as data (serde), so it can be kept anywhere — in memory, a file, a database — and
/// resumed later by any process with [`Agent::resume`](crate::Agent::resume).
///
/// The paused answer is kept apart from `messages`, exactly as the model sent it (its
/// reasoning blocks, signatures and calls in their order): `messages` is a valid chain by
/// itself, and `messages` + `answer` + the tool responses made on resume is one again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PausedRun {
    /// The conversation up to the paused answer: a valid chain ending with what it answers.
    pub messages: Vec<Message>,
    /// The model's answer whose calls wait, unchanged.
    pub answer: Message,
    /// The calls that need a decision, in the answer's order. The answer's other calls need
    /// none: they run on resume with the approved ones.
    pub pending: Vec<PendingCall>,
    /// The tools approved "always" in this conversation so far.
    pub grants: ApprovalGrants,
    /// Tool rounds executed before the pause: the tool limit goes on counting from there.
    pub tool_rounds: usize,
    /// The conversation the run's answers were logged under (agents with a store).
    #[cfg(feature = "store")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<ConversationId>,
    /// The stored node of the paused answer: the resumed run logs below it.
    #[cfg(feature = "store")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeId>,
    /// The label the run's answers carried ([`AgentInput::labelled`](crate::AgentInput::labelled)):
    /// the resumed run's answers carry it too. A front end that resumes a run under a new id
    /// (a continuation that is a response of its own) sets its own here before resuming.
    #[cfg(feature = "store")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The owner the run's answers were logged for: the resumed run's are too.
    #[cfg(feature = "store")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

impl PausedRun {
    /// Checks that `decisions` decide every pending call and nothing else.
    ///
    /// # Errors
    ///
    /// [`DecisionError`] naming every pending call without a decision and every decision
    /// about a call that is not pending.
    pub fn check(&self, decisions: &Decisions) -> Result<(), DecisionError> {
        let mut problems: Vec<String> = self
            .pending
            .iter()
            .filter(|call| decisions.get(&call.id).is_none())
            .map(|call| format!("call `{}` ({}) has no decision", call.id, call.name))
            .collect();
        problems.extend(
            decisions
                .iter()
                .filter(|(id, _)| !self.pending.iter().any(|call| call.id == *id))
                .map(|(id, _)| format!("`{id}` is not a pending call of this run")),
        );
        if problems.is_empty() {
            Ok(())
        } else {
            Err(DecisionError { problems })
        }
    }
}
