//! Logging each response into a conversation-tree [`Store`], and reusing stored answers.

use std::collections::BTreeMap;
use std::sync::Arc;

use conversation_tree::{
    CallOptions, ConversationId, HashOptions, NewResponse, NodeId, PathMatch, PathSummary,
    ResponseStatus, Reuse, Store, TokenUsage, tool_specs_hash,
};
use messages::{Message, Role, ToolSpec};
use providers::Usage;

use crate::{AgentError, CallTiming, ChatOptions};

/// The cache key of a call: the hash of the tools on offer, then the options that change an
/// answer without entering the prompt hash: the tool choice (sent only with tools), the
/// reasoning effort, the thinking budget and the sampling controls beyond the temperature
/// (`top_p`, seed, penalties, token biases, parallel tool calls, verbosity), and the digest of
/// the request's metadata: a stored answer is read back with the metadata it was logged with,
/// so one tagged otherwise is not this request's answer. A call setting none of them keeps the
/// key of its tools alone, as stored before these options counted.
fn cache_key(tools: &[ToolSpec], options: &ChatOptions) -> String {
    use std::fmt::Write as _;

    use providers::ToolChoice;

    let mut key = tool_specs_hash(tools);
    if let Some(choice) = options.tool_choice.as_ref().filter(|_| !tools.is_empty()) {
        let _ = match choice {
            ToolChoice::Auto => write!(key, ";tool_choice=auto"),
            ToolChoice::None => write!(key, ";tool_choice=none"),
            ToolChoice::Required => write!(key, ";tool_choice=required"),
            ToolChoice::Tool(name) => write!(key, ";tool_choice=tool:{name}"),
        };
    }
    if let Some(effort) = options.reasoning_effort {
        let _ = write!(key, ";reasoning_effort={}", effort.as_str());
    }
    if let Some(budget) = options.thinking_budget {
        let _ = write!(key, ";thinking_budget={budget}");
    }
    // Sampling controls beyond the temperature change the answer too.
    if let Some(top_p) = options.top_p {
        let _ = write!(key, ";top_p={top_p}");
    }
    if let Some(seed) = options.seed {
        let _ = write!(key, ";seed={seed}");
    }
    if let Some(penalty) = options.presence_penalty {
        let _ = write!(key, ";presence_penalty={penalty}");
    }
    if let Some(penalty) = options.frequency_penalty {
        let _ = write!(key, ";frequency_penalty={penalty}");
    }
    for (token, bias) in &options.logit_bias {
        let _ = write!(key, ";logit_bias={token}:{bias}");
    }
    if let Some(parallel) = options.parallel_tool_calls.filter(|_| !tools.is_empty()) {
        let _ = write!(key, ";parallel_tool_calls={parallel}");
    }
    if let Some(verbosity) = options.verbosity {
        let _ = write!(key, ";verbosity={}", verbosity.as_str());
    }
    if !options.metadata.is_empty() {
        // A map's JSON has its keys in order, so equal pairs give equal digests.
        use sha2::Digest as _;
        let json = serde_json::to_vec(&options.metadata).unwrap_or_default();
        let _ = write!(key, ";metadata={}", hex::encode(sha2::Sha256::digest(json)));
    }
    key
}

/// A run's place in the store: the conversation and how calls are described to it.
///
/// An [`Agent`](crate::Agent) with a store logs through one; a gateway that makes single model
/// calls on a client's whole message list uses the same one, so both find a resent history's
/// path instead of writing it again, and reuse stored answers under the same rule:
/// [`lookup`](Self::lookup) the transcript, answer from [`cached`](Self::cached) or call the
/// model, then [`log`](Self::log) the answer.
pub struct StoreLog {
    store: Arc<dyn Store>,
    conversation: ConversationId,
    reuse: Reuse,
    /// The node of this run's last answer (logged or reused) and how many messages after the
    /// leading system message the transcript holds up to and including that answer: later
    /// rounds continue below that very node. Two runs that asked the same question at once get
    /// sibling answers with equal hashes, which a walk from the roots could not tell apart.
    /// The system message is not counted because a run may add one between rounds (a prompt
    /// modifier's first addition): counted, it would shift the walk back onto the answer
    /// already logged, storing that answer again as a supplied turn.
    anchor: Option<(NodeId, usize)>,
    /// For an anchor given with the input: the first message of the history it was computed
    /// on. The run may replace the system prompt (the only message it changes); then the
    /// stored path is not what the model reads, and the first walk goes from the roots.
    anchor_first: Option<Option<Message>>,
    /// The label every answer carries, logged or reused: it ends on the last one.
    pub(crate) label: Option<String>,
    /// The conversation's owner, should one of the logged answers create it.
    pub(crate) owner: Option<String>,
    /// A summary the next logged answer's request was sent with, stored with that answer.
    summary: Option<PathSummary>,
}

/// The store's view of the next call: where it goes and whether an answer is stored.
#[derive(Debug)]
pub struct Lookup {
    path: PathMatch,
    options: CallOptions,
    /// Where in the transcript the walked messages start (after the anchor's answer).
    offset: usize,
    /// The transcript's length when it was walked, without its leading system message: the
    /// answer's place as the anchor counts it.
    len: usize,
    /// The call's metadata, logged with its answer.
    metadata: BTreeMap<String, String>,
}

impl Lookup {
    /// The answers of `transcript` (the one this lookup walked) that the store already held:
    /// each AI message's index in `transcript`, with the stored node that matched it by
    /// content. Answers the walk had to store as new branches are left out, as are the ones
    /// before an anchor, which the walk did not look at.
    ///
    /// A matched node holds the whole answer as the model gave it, with the reasoning and
    /// signatures a client may have dropped before sending the history back.
    pub fn matched_answers(&self, transcript: &[Message]) -> Vec<(usize, NodeId)> {
        let walked = transcript.get(self.offset..).unwrap_or_default();
        self.path
            .turns
            .iter()
            .filter(|turn| !turn.created)
            .filter_map(|turn| {
                let answer = walked
                    .get(turn.start..)?
                    .iter()
                    .position(|message| message.role == Role::Ai)?;
                Some((self.offset + turn.start + answer, turn.node))
            })
            .collect()
    }
}

impl StoreLog {
    /// A log into `conversation` of `store`; `reuse` says when a stored answer may stand in
    /// for a call; `anchor` is the node a continued history ended at, with the history's length
    /// and first message.
    pub fn new(
        store: Arc<dyn Store>,
        conversation: ConversationId,
        reuse: Reuse,
        anchor: Option<(NodeId, usize, Option<Message>)>,
    ) -> Self {
        let (anchor, anchor_first) = match anchor {
            Some((node, len, first)) => {
                let system = usize::from(first.as_ref().is_some_and(is_system));
                (Some((node, len.saturating_sub(system))), Some(first))
            }
            None => (None, None),
        };
        StoreLog {
            store,
            conversation,
            reuse,
            anchor,
            anchor_first,
            label: None,
            owner: None,
            summary: None,
        }
    }

    /// Labels every answer [`log`](Self::log) stores with `label`
    /// ([`NewResponse::label`]), and every stored answer [`cached`](Self::cached) reuses
    /// ([`Store::label_node`]): a label names one node, so after a run of several rounds it
    /// names the run's last answer, generated or reused, found with
    /// [`Store::node_by_label`]. A front end that sent a response id before the answer existed
    /// finds the answer by that id later. An unusable label (empty, over 128 characters, with
    /// a control character) fails `log` and `cached` with
    /// [`StoreError::InvalidLabel`](conversation_tree::StoreError::InvalidLabel), writing
    /// nothing.
    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Records `owner` as the conversation's owner when an answer [`log`](Self::log) stores
    /// creates it ([`NewResponse::owner`]), instead of a separate
    /// [`Store::claim_conversation`](conversation_tree::Store::claim_conversation) before the
    /// run; a conversation that exists keeps its owner, or its lack of one. That includes one
    /// that [`lookup`](Self::lookup) created by storing answers the caller supplied.
    #[must_use]
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// The conversation this log writes to.
    pub fn conversation(&self) -> &ConversationId {
        &self.conversation
    }

    /// Stores `summary` with the next answer [`log`](Self::log) writes: the request it answers
    /// was sent with the conversation's opening summarised, and runs continuing below it start
    /// from that summary.
    pub(crate) fn attach_summary(&mut self, summary: PathSummary) {
        self.summary = Some(summary);
    }

    /// The summary stored on the path `lookup` walked, if any: the one the conversation's
    /// latest compressed request was sent with. A store that cannot say is only logged: the
    /// run then summarises as if there were none.
    pub(crate) async fn stored_summary(&self, lookup: &Lookup) -> Option<PathSummary> {
        let node = lookup.path.parent()?;
        match self.store.path_summary(node).await {
            Ok(summary) => summary,
            Err(error) => {
                tracing::warn!(%error, "could not read the conversation's stored summary");
                None
            }
        }
    }

    /// Walks the conversation so far (`transcript`, ending with the turn to answer) through
    /// the tree for a call to `model` with `tools` and `options`. Answers the caller supplied
    /// that the store lacks become branches.
    pub async fn lookup(
        &mut self,
        transcript: &[Message],
        model: &str,
        tools: &[ToolSpec],
        options: &ChatOptions,
    ) -> Result<Lookup, AgentError> {
        let call = CallOptions {
            model: model.to_owned(),
            hash: HashOptions {
                temperature: options.temperature,
                max_tokens: options.max_tokens,
                stop: options.stop.clone(),
            },
            reuse: self.reuse,
            // The tools on offer and the options outside the prompt hash change the answer but
            // not the tree position.
            cache_key: Some(cache_key(tools, options)),
        };
        if let Some(first) = self.anchor_first.take()
            && transcript.first() != first.as_ref()
        {
            self.anchor = None;
        }
        let system = leading_system(transcript);
        let (after, offset) = match self.anchor {
            Some((node, len)) if system + len <= transcript.len() => (Some(node), system + len),
            _ => (None, 0),
        };
        let walked = transcript.get(offset..).unwrap_or_default();
        let path = self
            .store
            .find_or_create_path_after(&self.conversation, after, walked, &call)
            .await
            .map_err(AgentError::Store)?;
        Ok(Lookup {
            path,
            options: call,
            offset,
            len: transcript.len() - system,
            metadata: options.metadata.clone(),
        })
    }

    /// The stored answer that may stand in for the call `lookup` describes, if the reuse
    /// policy allows one, with its node, which takes this log's [`label`](Self::label).
    pub async fn cached(
        &mut self,
        lookup: &Lookup,
    ) -> Result<Option<(Message, NodeId)>, AgentError> {
        let Some(node) = &lookup.path.cache_hit else {
            return Ok(None);
        };
        let turn = self
            .store
            .turn(node.id())
            .await
            .map_err(AgentError::Store)?;
        // The reused node is the answer the client gets: it carries the label a generated one
        // would. Nothing to do for the owner: a cache hit is a node of the conversation, which
        // exists already and keeps its owner.
        if let Some(label) = &self.label {
            self.store
                .label_node(label, node.id())
                .await
                .map_err(AgentError::Store)?;
        }
        self.anchor = Some((node.id(), lookup.len + 1));
        Ok(Some((turn.response, node.id())))
    }

    /// Stores `answer` to the trailing turn of `transcript`, with this log's
    /// [`label`](Self::label) and [`owner`](Self::owner), and the metadata of the options
    /// `lookup` was made with ([`NewResponse::metadata`]).
    pub async fn log(
        &mut self,
        lookup: &Lookup,
        transcript: &[Message],
        answer: &Message,
        usage: Usage,
        timing: CallTiming,
        status: ResponseStatus,
    ) -> Result<NodeId, AgentError> {
        let walked = transcript.get(lookup.offset..).unwrap_or_default();
        let input = lookup.path.pending_input(walked).to_vec();
        let entry = NewResponse::new(
            self.conversation.clone(),
            lookup.path.parent(),
            input,
            answer.clone(),
            &lookup.options,
        )
        .usage(TokenUsage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cached_input_tokens: usage.cached_input_tokens,
            cache_creation_tokens: usage.cache_creation_tokens,
            reasoning_tokens: usage.reasoning_tokens,
        })
        .duration(timing.duration)
        .status(status)
        .metadata(lookup.metadata.clone());
        let entry = match timing.ttft {
            Some(ttft) => entry.ttft(ttft),
            None => entry,
        };
        let entry = match &self.label {
            Some(label) => entry.label(label.as_str()),
            None => entry,
        };
        let entry = match &self.owner {
            Some(owner) => entry.owner(owner.as_str()),
            None => entry,
        };
        let summary = self.summary.take();
        let entry = match &summary {
            Some(summary) => entry.summary(summary.clone()),
            None => entry,
        };
        let node = match self.store.log_response(entry).await {
            Ok(node) => node,
            Err(error) => {
                // Not written: the summary goes with the next answer that is.
                self.summary = summary;
                return Err(AgentError::Store(error));
            }
        };
        self.anchor = Some((node.id(), lookup.len + 1));
        Ok(node.id())
    }
}

fn is_system(message: &Message) -> bool {
    message.role == Role::System
}

/// 1 when `transcript` opens with a system message, else 0.
fn leading_system(transcript: &[Message]) -> usize {
    usize::from(transcript.first().is_some_and(is_system))
}
