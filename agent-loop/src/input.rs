//! [`AgentInput`]: what a run answers, and where it is logged.

use messages::{ContentPart, Message};

#[cfg(feature = "store")]
use conversation_tree::ConversationId;

/// What one run answers: an optional earlier conversation, the new human input (text or any
/// content parts, such as images) and per-run identifiers.
///
/// Strings, content parts and message lists convert into it, so `agent.run("Hi")` works:
///
/// ```
/// use agent_loop::AgentInput;
/// use messages::{ContentPart, Message};
///
/// // A new question.
/// let input = AgentInput::from("What is the capital of France?");
/// assert_eq!(input.history().len(), 0);
///
/// // Continuing a stored conversation with a question about an image.
/// let stored = vec![Message::human("Hi"), Message::ai("Hello! How can I help?")];
/// let input = AgentInput::parts(vec![
///     ContentPart::text("What is in this picture?"),
///     ContentPart::image_url("https://example.com/cat.png"),
/// ])
/// .with_history(stored);
/// assert_eq!(input.history().len(), 2);
///
/// // A whole message list whose last message is the one to answer.
/// let input = AgentInput::from(vec![Message::human("Ping?")]);
/// assert!(input.human_parts().is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentInput {
    history: Vec<Message>,
    human: Vec<ContentPart>,
    response_id: Option<String>,
    grants: crate::approval::ApprovalGrants,
    #[cfg(feature = "store")]
    conversation: Option<ConversationId>,
    #[cfg(feature = "store")]
    anchor: Option<crate::history::Anchor>,
    #[cfg(feature = "store")]
    label: Option<String>,
    #[cfg(feature = "store")]
    owner: Option<String>,
}

impl AgentInput {
    /// A new human message with one text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::parts(vec![ContentPart::text(text)])
    }

    /// A new human message with these parts (text, images, files).
    pub fn parts(parts: Vec<ContentPart>) -> Self {
        AgentInput {
            human: parts,
            ..Self::default()
        }
    }

    /// A whole conversation to answer, as stored or sent by a client: it must be a valid chain
    /// ending with a human message or with tool results.
    pub fn messages(messages: Vec<Message>) -> Self {
        AgentInput {
            history: messages,
            ..Self::default()
        }
    }

    /// Puts `history` (an earlier conversation, e.g. from
    /// `Store::messages_for_path`) before the new input. A system message at its start is
    /// replaced by the agent's system prompt when the agent has one.
    #[must_use]
    pub fn with_history(mut self, history: Vec<Message>) -> Self {
        self.history = history;
        #[cfg(feature = "store")]
        {
            self.anchor = None;
        }
        self
    }

    /// The earlier conversation loaded from the store
    /// ([`history::continuation`](crate::history::continuation)): its messages, and the node
    /// they end at, so the run's first answer is logged below that node.
    #[cfg(feature = "store")]
    pub fn with_continuation(mut self, continuation: crate::history::Continuation) -> Self {
        self.history = continuation.messages;
        self.anchor = continuation.anchor;
        self
    }

    /// The id of the `response.*` events (default: `resp-` and 12 random hex digits), e.g. the
    /// server's request id.
    #[must_use]
    pub fn with_response_id(mut self, id: impl Into<String>) -> Self {
        self.response_id = Some(id.into());
        self
    }

    /// Tools a person approved "always" earlier in this conversation
    /// ([`AgentOutcome::grants`](crate::AgentOutcome::grants)): their calls run without asking.
    #[must_use]
    pub fn with_grants(mut self, grants: crate::approval::ApprovalGrants) -> Self {
        self.grants = grants;
        self
    }

    /// Logs the run's responses under this conversation (the agent needs a store). Without it,
    /// an agent with a store logs under a new random conversation id.
    #[cfg(feature = "store")]
    #[must_use]
    pub fn in_conversation(mut self, conversation: ConversationId) -> Self {
        self.conversation = Some(conversation);
        self
    }

    /// Labels the run's last answer in the store (the label moves to each answer the run
    /// logs), so that a front end that named the answer before it existed (an OpenAI
    /// Responses id) finds it with `Store::node_by_label`.
    #[cfg(feature = "store")]
    #[must_use]
    pub fn labelled(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Records `owner` as the conversation's owner when the run's first answer creates it
    /// (an existing conversation keeps its owner): no separate claim before the run.
    #[cfg(feature = "store")]
    #[must_use]
    pub fn owned_by(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// The earlier conversation.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The new human input's parts (empty when the history ends with what to answer).
    pub fn human_parts(&self) -> &[ContentPart] {
        &self.human
    }

    /// The response id asked for.
    pub fn response_id(&self) -> Option<&str> {
        self.response_id.as_deref()
    }

    /// The conversation asked for.
    #[cfg(feature = "store")]
    pub fn conversation(&self) -> Option<&ConversationId> {
        self.conversation.as_ref()
    }

    pub(crate) fn into_parts(self) -> InputParts {
        InputParts {
            history: self.history,
            human: self.human,
            grants: self.grants,
            #[cfg(feature = "store")]
            conversation: self.conversation,
            #[cfg(feature = "store")]
            anchor: self.anchor,
            #[cfg(feature = "store")]
            label: self.label,
            #[cfg(feature = "store")]
            owner: self.owner,
        }
    }
}

/// An input taken apart by the run.
pub(crate) struct InputParts {
    pub(crate) history: Vec<Message>,
    pub(crate) human: Vec<ContentPart>,
    pub(crate) grants: crate::approval::ApprovalGrants,
    #[cfg(feature = "store")]
    pub(crate) conversation: Option<ConversationId>,
    #[cfg(feature = "store")]
    pub(crate) anchor: Option<crate::history::Anchor>,
    #[cfg(feature = "store")]
    pub(crate) label: Option<String>,
    #[cfg(feature = "store")]
    pub(crate) owner: Option<String>,
}

impl From<&str> for AgentInput {
    fn from(text: &str) -> Self {
        AgentInput::text(text)
    }
}

impl From<String> for AgentInput {
    fn from(text: String) -> Self {
        AgentInput::text(text)
    }
}

impl From<Vec<ContentPart>> for AgentInput {
    fn from(parts: Vec<ContentPart>) -> Self {
        AgentInput::parts(parts)
    }
}

impl From<Vec<Message>> for AgentInput {
    fn from(messages: Vec<Message>) -> Self {
        AgentInput::messages(messages)
    }
}

impl From<Message> for AgentInput {
    fn from(message: Message) -> Self {
        AgentInput::messages(vec![message])
    }
}
