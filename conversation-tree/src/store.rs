//! The `Store` trait and the values that go in and out of it.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use messages::Message;

use crate::{
    Call, CallOptions, ConversationId, ConversationSummary, HashOptions, Node, NodeId,
    ResponseStatus, Result, TokenUsage, Turn, VerifyReport,
};

/// A conversation-tree store: SQLite ([`SqliteStore`](crate::SqliteStore)) or PostgreSQL
/// (`PostgresStore`, feature `postgres`), interchangeable behind `Arc<dyn Store>`.
///
/// Every write (a logged response, a supplied branch, a cache-hit record, a label) is one
/// transaction: a node is stored whole or not at all, whatever happens to the process.
///
/// Every store also keeps run records ([`RunStore`](crate::runs::RunStore), a supertrait):
/// an `Arc<dyn Store>` calls those methods with the trait in scope, or coerces to an
/// `Arc<dyn RunStore>`. Likewise the concurrency slots every replica counts against
/// ([`SlotStore`](crate::slots::SlotStore)).
#[async_trait]
pub trait Store: crate::runs::RunStore + crate::slots::SlotStore + Send + Sync {
    /// Walks `messages` through the tree of `conversation` and reports where they lead.
    ///
    /// The messages are cut into turns: each run of non-AI messages with the AI message that
    /// follows it. Each turn is looked up by (conversation, parent, prompt hash), starting at
    /// the roots. A turn whose AI message matches a stored answer (equal response hash) moves
    /// down to that node; one that matches none becomes a new node beside the stored ones (a
    /// branch, recorded as a [`Supplied`](crate::CallKind::Supplied) call): a stored answer is
    /// never overwritten. A trailing turn without an AI message is the one the model must
    /// answer: a stored answer to it is returned as [`PathMatch::cache_hit`] when
    /// `options` allow reuse (same model and cache key, and a deterministic request or
    /// [`Reuse::Always`](crate::Reuse::Always)), which records a
    /// [`CacheHit`](crate::CallKind::CacheHit) call; the others are listed in
    /// [`PathMatch::alternatives`].
    ///
    /// Earlier turns are matched by what was said: a stored node matches when its input and
    /// answer are the caller's, whatever deterministic options it was asked with (its prompt
    /// hash is recomputed with its own options). `options.hash` hashes the trailing turn and
    /// any branch this call creates; `options` decide only whether a stored answer to the
    /// trailing turn may be reused.
    async fn find_or_create_path(
        &self,
        conversation: &ConversationId,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<PathMatch> {
        self.find_or_create_path_after(conversation, None, messages, options)
            .await
    }

    /// [`Store::find_or_create_path`] for the messages that follow node `after`'s answer
    /// (`None`: the whole conversation, from the roots).
    ///
    /// An agent that logged an answer continues below *that* node: siblings with the same
    /// content (two runs that asked the same question at once, each answered alike) cannot be
    /// told apart by hashes, so a walk from the roots could hang one run's next turn below the
    /// other run's node.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownNode`](crate::StoreError::UnknownNode) or
    /// [`StoreError::ParentInOtherConversation`](crate::StoreError::ParentInOtherConversation) for an
    /// `after` that is not a node of `conversation`, and the store's own errors.
    async fn find_or_create_path_after(
        &self,
        conversation: &ConversationId,
        after: Option<NodeId>,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<PathMatch>;

    /// Stores a model's answer as a new node (and a [`Generated`](crate::CallKind::Generated)
    /// call), computing its hashes. Several answers to the same turn at the same position are
    /// kept side by side. The node's label ([`NewResponse::label`]) and the owner of a
    /// conversation it creates ([`NewResponse::owner`]) are written in the same transaction.
    ///
    /// # Errors
    ///
    /// [`StoreError::InvalidLabel`](crate::StoreError::InvalidLabel) and
    /// [`StoreError::InvalidOwner`](crate::StoreError::InvalidOwner) for an unusable label or
    /// owner, [`StoreError::InvalidTurn`](crate::StoreError::InvalidTurn),
    /// [`StoreError::UnknownNode`](crate::StoreError::UnknownNode) and
    /// [`StoreError::ParentInOtherConversation`](crate::StoreError::ParentInOtherConversation)
    /// for an answer that cannot be stored where it says, and the store's own errors. Nothing
    /// is written when it fails.
    async fn log_response(&self, response: NewResponse) -> Result<Node>;

    /// The node with this id, if the store holds it.
    async fn node(&self, id: NodeId) -> Result<Option<Node>>;

    /// The node `label` names ([`NewResponse::label`], [`Store::label_node`]), in any
    /// conversation; `None` for a label no node was given. A label names one node: the last
    /// one logged or labelled with it.
    ///
    /// A front end that names an answer before it is written (an OpenAI Responses API id,
    /// sent to the client in the first stream event) finds the node again by that name in a
    /// later request, after a restart too. Works on read-only stores.
    ///
    /// ```
    /// use conversation_tree::{CallOptions, ConversationId, Message, NewResponse, SqliteStore, Store};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), conversation_tree::StoreError> {
    /// let store = SqliteStore::open_in_memory().await?;
    /// let conversation = ConversationId::random();
    /// let options = CallOptions::new("echo");
    /// let ask = |parent, question: &str, answer: &str| {
    ///     NewResponse::new(conversation.clone(), parent, vec![Message::human(question)], Message::ai(answer), &options)
    ///         .label("resp_123")
    /// };
    /// let first = store.log_response(ask(None, "Weather in Paris?", "Let me look.")).await?;
    /// assert_eq!(store.node_by_label("resp_123").await?, Some(first.clone()));
    ///
    /// // A later round of the same run moves the label to its answer.
    /// let second = store.log_response(ask(Some(first.id()), "(tool result)", "Sunny.")).await?;
    /// assert_eq!(store.node_by_label("resp_123").await?.map(|node| node.id()), Some(second.id()));
    /// assert_eq!(store.node_by_label("resp_unknown").await?, None);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`StoreError::InvalidLabel`](crate::StoreError::InvalidLabel) for a label no node can
    /// have (empty, longer than 128 characters, or with a control character), and the store's
    /// own errors.
    async fn node_by_label(&self, label: &str) -> Result<Option<Node>>;

    /// Points `label` at `node`, a node the store holds already: what
    /// [`NewResponse::label`] does for a node being written, for one that was written before.
    /// A label names one node, so a label that named another node moves to this one; a node
    /// may have several labels.
    ///
    /// A front end labels an answer it did not write: a stored answer reused for a call
    /// ([`PathMatch::cache_hit`]) is found by the id the client was given like a generated
    /// one. One write transaction; [`Store::node_by_label`] then finds `node`.
    ///
    /// ```
    /// use conversation_tree::{CallOptions, ConversationId, Message, NewResponse, SqliteStore, Store};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), conversation_tree::StoreError> {
    /// let store = SqliteStore::open_in_memory().await?;
    /// let conversation = ConversationId::random();
    /// let options = CallOptions::new("echo");
    /// let question = vec![Message::human("Capital of France?")];
    /// let paris = NewResponse::new(conversation.clone(), None, question, Message::ai("Paris"), &options)
    ///     .label("resp_1");
    /// let node = store.log_response(paris).await?;
    ///
    /// // The same answer reused for a later request, which gave the client another id.
    /// store.label_node("resp_2", node.id()).await?;
    /// assert_eq!(store.node_by_label("resp_2").await?, Some(node.clone()));
    /// assert_eq!(store.node_by_label("resp_1").await?, Some(node));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`StoreError::InvalidLabel`](crate::StoreError::InvalidLabel) for a label no node can
    /// have (checked before anything else), [`StoreError::UnknownNode`](crate::StoreError::UnknownNode)
    /// for a node the store does not hold, [`StoreError::ReadOnly`](crate::StoreError::ReadOnly)
    /// on a read-only store, and the store's own errors. Nothing is written when it fails.
    async fn label_node(&self, label: &str, node: NodeId) -> Result<()>;

    /// The node's input messages and answer.
    async fn turn(&self, id: NodeId) -> Result<Turn>;

    /// The nodes answering after `id`, oldest first.
    async fn children(&self, id: NodeId) -> Result<Vec<Node>>;

    /// The roots of a conversation, oldest first.
    async fn roots(&self, conversation: &ConversationId) -> Result<Vec<Node>>;

    /// The node and its ancestors: `id` first, the root last.
    async fn path_to_root(&self, id: NodeId) -> Result<Vec<Node>>;

    /// The full message list from the root to `id`: every turn's input messages followed by its
    /// answer, exactly as stored (reasoning, tool calls and ids included). Append a new human
    /// message and call [`Store::find_or_create_path`] to continue the conversation there.
    async fn messages_for_path(&self, id: NodeId) -> Result<Vec<Message>>;

    /// The summary stored with the deepest node of the path from the root to `id` that has one
    /// ([`NewResponse::summary`]), `id` included: what the conversation's latest compressed
    /// request put in place of its opening. A run continuing below `id` starts from it instead
    /// of summarising the whole history again; [`PathSummary::apply`] checks it still stands
    /// for the messages it replaces. Works on read-only stores.
    ///
    /// ```
    /// use conversation_tree::{CallOptions, ConversationId, Message, NewResponse, PathSummary, SqliteStore, Store};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), conversation_tree::StoreError> {
    /// let store = SqliteStore::open_in_memory().await?;
    /// let conversation = ConversationId::random();
    /// let options = CallOptions::new("echo");
    /// let old = vec![Message::human("Plan a trip."), Message::ai("To Rome, then Naples.")];
    /// let first = store
    ///     .log_response(NewResponse::new(conversation.clone(), None, old[..1].to_vec(), old[1].clone(), &options))
    ///     .await?;
    /// // The second request was sent with the first exchange summarised.
    /// let summary = PathSummary::new(&old, vec![Message::human("Summary: Rome, then Naples.")]);
    /// let second = store
    ///     .log_response(
    ///         NewResponse::new(conversation, Some(first.id()), vec![Message::human("Hotels?")], Message::ai("Two."), &options)
    ///             .summary(summary.clone()),
    ///     )
    ///     .await?;
    /// assert_eq!(store.path_summary(second.id()).await?, Some(summary));
    /// assert_eq!(store.path_summary(first.id()).await?, None);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownNode`](crate::StoreError::UnknownNode) for a node the store does not
    /// hold, [`StoreError::Corrupt`](crate::StoreError::Corrupt) for a stored summary that
    /// cannot be read, and the store's own errors.
    async fn path_summary(&self, id: NodeId) -> Result<Option<PathSummary>>;

    /// Conversations, most recently answered first, at most `limit`.
    async fn conversations(&self, limit: usize) -> Result<Vec<ConversationSummary>>;

    /// One conversation's summary, if the store holds it.
    async fn conversation(&self, id: &ConversationId) -> Result<Option<ConversationSummary>>;

    /// Every node of a conversation, in id order (parents before children): what a tree view
    /// draws.
    async fn conversation_nodes(&self, conversation: &ConversationId) -> Result<Vec<Node>>;

    /// The node of the conversation's most recent call (generated, cached or supplied): where
    /// "continue this conversation" picks up. `None` for an unknown conversation.
    async fn latest_node(&self, conversation: &ConversationId) -> Result<Option<Node>>;

    /// Every call of a conversation, in the order they were recorded: for cache-hit analysis.
    async fn calls(&self, conversation: &ConversationId) -> Result<Vec<Call>>;

    /// Claims `conversation` for `owner` before a caller of a multi-user front end (the server)
    /// reads or continues it: creates it, empty, owned by `owner` when the store does not hold
    /// it yet, and otherwise says whose it is. One statement, so two callers claiming the same
    /// new id at once cannot both get [`Claim::Created`].
    ///
    /// `owner` is an opaque principal name (1 to 128 characters, none of them control
    /// characters) chosen by the front end; it is stored as given, so it must never be a
    /// secret (a server stores a hash of a bearer token, not the token). Conversations written
    /// without a claim (by the CLI, or before schema version 4) have no owner:
    /// [`Claim::Unowned`]. Writes never change an owner.
    ///
    /// # Errors
    ///
    /// [`StoreError::InvalidOwner`](crate::StoreError::InvalidOwner) for an unusable `owner`,
    /// [`StoreError::ReadOnly`](crate::StoreError::ReadOnly) on a read-only store when the
    /// conversation does not exist yet, and the store's own errors.
    async fn claim_conversation(&self, conversation: &ConversationId, owner: &str)
    -> Result<Claim>;

    /// Every node whose path hash is `path_hash`, in any conversation, in id order.
    async fn lookup_path_hash(&self, path_hash: &str) -> Result<Vec<Node>>;

    /// Recomputes every stored hash from the stored messages and options, and every path hash
    /// from its parent's.
    async fn verify(&self) -> Result<VerifyReport>;
}

/// Whose a conversation is: what [`Store::claim_conversation`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Claim {
    /// The store did not hold the conversation: it now does, empty, owned by the claimant.
    Created,
    /// The conversation already belongs to the claimant.
    Owned,
    /// The conversation exists without an owner (written by the CLI or before owners were
    /// recorded).
    Unowned,
    /// The conversation belongs to someone else. A server answers as if it did not exist.
    OtherOwner,
}

impl Claim {
    /// Whether the claimant may read and continue the conversation: created or owned by it.
    /// An [`Unowned`](Claim::Unowned) conversation is the front end's call.
    pub fn is_own(&self) -> bool {
        matches!(self, Claim::Created | Claim::Owned)
    }

    /// What a stored conversation's owner column (`None`: no owner) means to `claimant`.
    pub(crate) fn of_stored(stored: Option<String>, claimant: &str) -> Claim {
        match stored {
            None => Claim::Unowned,
            Some(stored) if stored == claimant => Claim::Owned,
            Some(_) => Claim::OtherOwner,
        }
    }
}

/// What is wrong with a name a front end chose (an owner or a label), as its length in
/// characters and the reason: both are 1 to 128 characters, none of them a control character.
pub(crate) fn name_problem(name: &str) -> Option<(usize, &'static str)> {
    let len = name.chars().count();
    let reason = if name.is_empty() {
        "it is empty"
    } else if len > 128 {
        "it is longer than 128 characters"
    } else if name.chars().any(char::is_control) {
        "it contains a control character"
    } else {
        return None;
    };
    Some((len, reason))
}

/// Checks an owner name for [`Store::claim_conversation`] and [`NewResponse::owner`].
pub(crate) fn check_owner(owner: &str) -> Result<()> {
    match name_problem(owner) {
        Some((owner_len, reason)) => Err(crate::StoreError::InvalidOwner { owner_len, reason }),
        None => Ok(()),
    }
}

/// Checks a label for [`NewResponse::label`], [`Store::node_by_label`] and
/// [`Store::label_node`].
pub(crate) fn check_label(label: &str) -> Result<()> {
    match name_problem(label) {
        Some((label_len, reason)) => Err(crate::StoreError::InvalidLabel { label_len, reason }),
        None => Ok(()),
    }
}

/// Where a message array leads in the tree: what [`Store::find_or_create_path`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct PathMatch {
    /// The node the walk started below ([`Store::find_or_create_path_after`]); `None` when it
    /// started at the roots.
    pub after: Option<NodeId>,
    /// One entry per answered turn (input messages followed by the caller's AI message), root
    /// first: the node holding it, found or created.
    pub turns: Vec<MatchedTurn>,
    /// Index of the first message of the trailing turn that still needs an answer;
    /// `messages.len()` when the array ends with an AI message.
    pub first_unmatched: usize,
    /// A stored answer to the trailing turn that may be returned instead of calling the model.
    pub cache_hit: Option<Node>,
    /// The other stored answers to the trailing turn at this position (other models, sampled
    /// answers, other cache keys, supplied answers), oldest first: siblings, never substitutes.
    pub alternatives: Vec<Node>,
}

impl PathMatch {
    /// The node a new answer hangs from: the last answered turn's node, else the node the walk
    /// started below, `None` at the root.
    pub fn parent(&self) -> Option<NodeId> {
        self.turns.last().map(|turn| turn.node).or(self.after)
    }

    /// The node ids of the answered turns, root first.
    pub fn node_ids(&self) -> Vec<NodeId> {
        self.turns.iter().map(|turn| turn.node).collect()
    }

    /// The trailing turn's input: `messages[first_unmatched..]`, the messages to log with the
    /// model's answer.
    pub fn pending_input<'m>(&self, messages: &'m [Message]) -> &'m [Message] {
        messages.get(self.first_unmatched..).unwrap_or_default()
    }

    /// Whether the answered turns were all in the store already (no branch was created).
    pub fn fully_matched(&self) -> bool {
        self.turns.iter().all(|turn| !turn.created)
    }
}

/// One answered turn of a [`PathMatch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchedTurn {
    /// The node holding the turn.
    pub node: NodeId,
    /// Index of the turn's first message in the array.
    pub start: usize,
    /// Whether this call created the node (the caller's AI message matched no stored answer).
    pub created: bool,
}

/// A model's answer to log with [`Store::log_response`].
///
/// ```
/// use std::time::Duration;
/// use conversation_tree::{CallOptions, ConversationId, Message, NewResponse, TokenUsage};
///
/// let options = CallOptions::new("gpt-4o");
/// let entry = NewResponse::new(
///     ConversationId::random(),
///     None,
///     vec![Message::human("Capital of France?")],
///     Message::ai("Paris"),
///     &options,
/// )
/// .usage(TokenUsage { input_tokens: 12, output_tokens: 1, ..Default::default() })
/// .duration(Duration::from_millis(420))
/// .ttft(Duration::from_millis(180));
/// assert_eq!(entry.model(), "gpt-4o");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct NewResponse {
    pub(crate) conversation: ConversationId,
    pub(crate) parent: Option<NodeId>,
    pub(crate) input: Vec<Message>,
    pub(crate) response: Message,
    pub(crate) model: String,
    pub(crate) options: HashOptions,
    pub(crate) cache_key: Option<String>,
    pub(crate) usage: Option<TokenUsage>,
    pub(crate) duration: Option<Duration>,
    pub(crate) ttft: Option<Duration>,
    pub(crate) datetime_utc: Option<Timestamp>,
    pub(crate) status: ResponseStatus,
    pub(crate) label: Option<String>,
    pub(crate) owner: Option<String>,
    pub(crate) summary: Option<PathSummary>,
    pub(crate) metadata: BTreeMap<String, String>,
}

impl NewResponse {
    /// The answer `response` of `options.model` to `input`, after `parent` (`None` for a root;
    /// usually [`PathMatch::parent`]). `input` holds the turn's messages only (usually
    /// [`PathMatch::pending_input`]), not the whole history.
    pub fn new(
        conversation: ConversationId,
        parent: Option<NodeId>,
        input: Vec<Message>,
        response: Message,
        options: &CallOptions,
    ) -> Self {
        NewResponse {
            conversation,
            parent,
            input,
            response,
            model: options.model.clone(),
            options: options.hash.clone(),
            cache_key: options.cache_key.clone(),
            usage: None,
            duration: None,
            ttft: None,
            datetime_utc: None,
            status: ResponseStatus::Completed,
            label: None,
            owner: None,
            summary: None,
            metadata: BTreeMap::new(),
        }
    }

    /// Sets how the call ended ([`ResponseStatus::Completed`] unless set): a cancelled or
    /// failed call is logged with what had arrived, so the conversation continues from it.
    #[must_use]
    pub fn status(mut self, status: ResponseStatus) -> Self {
        self.status = status;
        self
    }

    /// Sets the call's token usage.
    pub fn usage(mut self, usage: TokenUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets how long the call took.
    pub fn duration(mut self, duration: Duration) -> Self {
        self.duration = Some(duration);
        self
    }

    /// Sets the call's time to first token: from sending the request to its first output
    /// (text, reasoning or a tool call). Leave it unset when no output arrived.
    pub fn ttft(mut self, ttft: Duration) -> Self {
        self.ttft = Some(ttft);
        self
    }

    /// Sets when the call was made (default: when it is logged).
    pub fn datetime_utc(mut self, at: Timestamp) -> Self {
        self.datetime_utc = Some(at);
        self
    }

    /// Names the node: it is found by this label with [`Store::node_by_label`]. A label names
    /// one node: logging another node with the same label moves it there, so a run of several
    /// rounds keeps one label on its latest answer.
    ///
    /// A label is 1 to 128 characters, none of them a control character
    /// ([`StoreError::InvalidLabel`](crate::StoreError::InvalidLabel) otherwise, and nothing is
    /// written). It is written in the node's own transaction: a label never names a node that
    /// was not written, and a written node never lacks its label. A node written before is
    /// labelled with [`Store::label_node`].
    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The conversation's owner when this write creates it; an existing conversation keeps
    /// its owner (writes never change one). The same principal name as
    /// [`Store::claim_conversation`] takes (1 to 128 characters, no control character, never a
    /// secret; [`StoreError::InvalidOwner`](crate::StoreError::InvalidOwner) otherwise), so a
    /// front end records a new conversation's owner with its first answer instead of claiming
    /// it first; a later claim by `owner` is then [`Claim::Owned`].
    ///
    /// Only [`Store::log_response`] records it: a conversation that
    /// [`Store::find_or_create_path`] created earlier (storing a branch of caller-supplied
    /// answers) already exists, without an owner, and keeps none.
    #[must_use]
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// The summary the request was sent with in place of the conversation's opening, written
    /// in the node's own transaction and found again by [`Store::path_summary`] for every path
    /// through the node.
    #[must_use]
    pub fn summary(mut self, summary: PathSummary) -> Self {
        self.summary = Some(summary);
        self
    }

    /// Tags the answer with the key–value pairs its request carried (OpenAI's `metadata`),
    /// read back with [`Node::metadata`](crate::Node::metadata). They describe this one
    /// exchange: they enter no hash, so tagging changes neither where the node sits nor
    /// which stored answer a walk matches, and an answer continued later does not inherit
    /// them. Empty pairs (the default) store nothing. The store keeps them as given; limits
    /// on their number and size are the front end's.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use conversation_tree::{CallOptions, ConversationId, Message, NewResponse, SqliteStore, Store};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), conversation_tree::StoreError> {
    /// let store = SqliteStore::open_in_memory().await?;
    /// let tags = BTreeMap::from([("ticket".to_owned(), "T-42".to_owned())]);
    /// let entry = NewResponse::new(
    ///     ConversationId::random(),
    ///     None,
    ///     vec![Message::human("Capital of France?")],
    ///     Message::ai("Paris"),
    ///     &CallOptions::new("echo"),
    /// );
    /// let node = store.log_response(entry.clone().metadata(tags.clone())).await?;
    /// assert_eq!(store.node(node.id()).await?.map(|node| node.metadata().clone()), Some(tags));
    /// // The same answer untagged hashes alike.
    /// let untagged = store.log_response(entry).await?;
    /// assert_eq!(untagged.response_hash(), node.response_hash());
    /// assert!(untagged.metadata().is_empty());
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn metadata(mut self, metadata: BTreeMap<String, String>) -> Self {
        self.metadata = metadata;
        self
    }

    /// The model that answered.
    pub fn model(&self) -> &str {
        &self.model
    }
}

/// What a request was sent with in place of the opening of its conversation: a summary that
/// context compression wrote. Stored with the answer to that request ([`NewResponse::summary`])
/// and read back for any path through it ([`Store::path_summary`]), so a conversation
/// continued later starts from the summary instead of summarising its whole history again.
///
/// It replaces the first [`replaces`](Self::replaces) messages of the conversation after its
/// system message, which stays whatever it is (a run may set another one), and remembers their
/// hash, so a history that no longer starts with them (a client that edited it, a history cut
/// to its last turns) is never given a summary of something else.
#[derive(Clone, Debug, PartialEq)]
pub struct PathSummary {
    replaces: usize,
    replaced_hash: String,
    messages: Vec<Message>,
}

impl PathSummary {
    /// A summary standing for `replaced` (the conversation's opening messages after its system
    /// message), read as `messages`: the human message the summary follows and the summary
    /// itself, as the compressed request had them.
    pub fn new(replaced: &[Message], messages: Vec<Message>) -> Self {
        PathSummary {
            replaces: replaced.len(),
            replaced_hash: replaced_hash(replaced),
            messages,
        }
    }

    /// How many messages after the system message it stands for.
    pub fn replaces(&self) -> usize {
        self.replaces
    }

    /// What stands in their place.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// `history` with its opening read as this summary: the system message (if any), the
    /// summary's messages, then what came after the replaced messages. `None` when `history`
    /// does not start with the messages the summary stands for, or nothing follows them (the
    /// summary never stands for the message being answered).
    pub fn apply(&self, history: &[Message]) -> Option<Vec<Message>> {
        let system = usize::from(
            history
                .first()
                .is_some_and(|message| message.role == messages::Role::System),
        );
        let end = system.checked_add(self.replaces)?;
        if end >= history.len() || replaced_hash(&history[system..end]) != self.replaced_hash {
            return None;
        }
        let mut applied = Vec::with_capacity(system + self.messages.len() + history.len() - end);
        applied.extend_from_slice(&history[..system]);
        applied.extend(self.messages.iter().cloned());
        applied.extend_from_slice(&history[end..]);
        Some(applied)
    }

    /// The parts a store writes, and reads back with [`PathSummary::from_stored`].
    pub(crate) fn stored(&self) -> (usize, &str, &[Message]) {
        (self.replaces, &self.replaced_hash, &self.messages)
    }

    /// A summary read back from a store.
    pub(crate) fn from_stored(
        replaces: usize,
        replaced_hash: String,
        messages: Vec<Message>,
    ) -> Self {
        PathSummary {
            replaces,
            replaced_hash,
            messages,
        }
    }
}

/// The hash of replaced messages: their prompt hash, which covers roles, text, tool calls and
/// results and attachments, and leaves out ids and reasoning, as the tree's own matching does.
fn replaced_hash(messages: &[Message]) -> String {
    crate::prompt_hash(messages, &HashOptions::default())
}
