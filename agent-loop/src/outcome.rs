//! [`AgentOutcome`] and [`RoundRecord`]: what a run did.

use std::time::Duration;

use chain_ast::ChainAst;
use messages::{Message, ToolCall};
use providers::{FinishReason, Usage};
use serde::Serialize;

use crate::{CompressionReport, StopReason};

#[cfg(feature = "store")]
use conversation_tree::{ConversationId, NodeId};

/// What a finished run produced.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct AgentOutcome {
    /// The final answer's text (for a text-protocol agent, its `answer` section).
    pub text: String,
    /// The whole conversation, uncompressed: the input history, the new human input and every
    /// message of this run (AI answers with their reasoning, tool results). A valid chain;
    /// pass it back as history to continue.
    pub messages: Vec<Message>,
    /// Tokens of every model call of the run, summed (summarizer calls included).
    pub usage: Usage,
    /// Model calls made (summarizer calls excluded).
    pub rounds: usize,
    /// One record per model call, in order.
    pub records: Vec<RoundRecord>,
    /// Why the run ended (`None` when it was cancelled or paused for approval).
    pub stop_reason: Option<StopReason>,
    /// The reason given by a tool that asked for a silent exit.
    pub silent_exit: Option<String>,
    /// The chain as last sent to the model: equal to `messages` unless compression summarised
    /// or pruned it.
    pub chain: ChainAst,
    /// How many of `messages` came in with the input (history and new human input).
    pub input_len: usize,
    /// The paused run, when the run stopped because calls wait for approval
    /// ([`approval`](crate::approval)): `messages` then end before the paused answer, which
    /// the paused run holds. Resume it with [`Agent::resume`](crate::Agent::resume).
    pub approval: Option<crate::approval::PausedRun>,
    /// The tools approved "always" in this conversation, the run's input grants included:
    /// pass them to the next run of the conversation
    /// ([`AgentInput::with_grants`](crate::AgentInput::with_grants)).
    pub grants: crate::approval::ApprovalGrants,
    /// The conversation the responses were logged under (agents with a store).
    #[cfg(feature = "store")]
    pub conversation_id: Option<ConversationId>,
    /// The stored node of each response of this run, in order (cache hits included).
    #[cfg(feature = "store")]
    pub node_ids: Vec<NodeId>,
}

impl AgentOutcome {
    /// The messages this run added after the input.
    pub fn new_messages(&self) -> &[Message] {
        self.messages.get(self.input_len..).unwrap_or_default()
    }

    /// Whether the run is paused until a person decides about some of its tool calls.
    pub fn is_paused(&self) -> bool {
        self.approval.is_some()
    }

    /// Whether a tool ended the run silently.
    pub fn is_silent_exit(&self) -> bool {
        self.silent_exit.is_some()
    }

    /// Time to first token of the run: how long its first model call took to send output
    /// (text, reasoning or a tool call), which is what a user waits before anything appears.
    /// `None` when that call sent none or the answer came from the store.
    pub fn ttft(&self) -> Option<Duration> {
        self.records.first().and_then(|record| record.timing.ttft)
    }

    /// What context compression did to this run's requests, summed over its rounds; `None`
    /// when it never had to act. `response.done` carries it as `compression`, so a client
    /// learns when the model did not read everything (above all, its own prompt).
    pub fn compression_notice(&self) -> Option<CompressionNotice> {
        let mut notice: Option<CompressionNotice> = None;
        for report in self.records.iter().filter_map(|r| r.compression.as_ref()) {
            let notice = notice.get_or_insert_with(CompressionNotice::default);
            notice.prompt_truncated |= report.prompt_truncated;
            notice.texts_truncated += report.attachments_truncated;
            notice.pairs_summarized += report.pairs_summarized;
            notice.summary_reused |= report.summary_reused;
            notice.pairs_pruned += report.pairs_pruned;
            notice.sections_pruned += report.sections_pruned;
        }
        notice
    }
}

/// What context compression did to a run's requests (the `compression` object of
/// `response.done`), summed over its rounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CompressionNotice {
    /// Whether the prompt being answered (the last human message) was cut in the middle to the
    /// attachment limit: the model answered without reading all of it.
    pub prompt_truncated: bool,
    /// Texts of human and tool messages cut to the attachment limit (the prompt's included).
    pub texts_truncated: usize,
    /// Body pairs folded into a model-written summary.
    pub pairs_summarized: usize,
    /// Whether the conversation's opening was read from a summary an earlier run stored in
    /// the conversation tree: the model read that summary, not the turns it stands for.
    pub summary_reused: bool,
    /// Body pairs pruned (those of whole sections not counted).
    pub pairs_pruned: usize,
    /// Whole earlier turns pruned.
    pub sections_pruned: usize,
}

/// When a model call's output began and ended, measured from sending the request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct CallTiming {
    /// Time to first token: until the first piece of output (text, reasoning or a tool call)
    /// arrived. `None` when none did, and for an answer from the store.
    pub ttft: Option<Duration>,
    /// Until the answer ended (zero for an answer from the store).
    pub duration: Duration,
}

impl CallTiming {
    /// A call that sent its first output after `ttft` (if at all) and ended after `duration`.
    pub fn new(ttft: Option<Duration>, duration: Duration) -> Self {
        CallTiming { ttft, duration }
    }
}

/// One model call of a run.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RoundRecord {
    /// 1-based number of the call.
    pub round: usize,
    /// Its token counts (zero for a stored answer).
    pub usage: Usage,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// The tool calls it made, in order.
    pub tool_calls: Vec<ToolCall>,
    /// How many of them failed (the model was told why).
    pub tool_errors: usize,
    /// Whether the calls were executed (`false` past the tool limit or when cut off).
    pub tools_executed: bool,
    /// Estimated tokens of the request sent.
    pub request_tokens: usize,
    /// What compression did before the request, if it ran.
    pub compression: Option<CompressionReport>,
    /// Whether the answer came from the store instead of the model.
    pub cached: bool,
    /// How long the model took to start answering and to finish (zero for a stored answer).
    pub timing: CallTiming,
    /// The stored node of the answer.
    #[cfg(feature = "store")]
    pub node_id: Option<NodeId>,
}
