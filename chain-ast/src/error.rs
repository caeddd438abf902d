//! What can be wrong with a chain, and which of the seven rules it breaks.

use std::fmt;

use messages::Role;

use crate::FALLBACK_RESPONSE_CONTENT;

/// The seven structural rules of a chain, numbered 1 to 7 (error messages cite the number).
///
/// [`ChainAst::new`](crate::ChainAst::new) with `force = false` enforces all of them; with
/// `force = true` it repairs every break (see each [`ChainError`] variant for how).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// 1. The first message is a system or human message.
    FirstMessage = 1,
    /// 2. No two human messages follow each other.
    ConsecutiveHumans = 2,
    /// 3. Every tool call has a matching response.
    ToolCallsAnswered = 3,
    /// 4. Every tool response answers a tool call of the AI message before it, once.
    ResponsesMatchCalls = 4,
    /// 5. A system message never comes between tool calls and their responses; anywhere else
    ///    it opens a section.
    SystemOutsideToolRounds = 5,
    /// 6. An AI message's tool calls are answered before the next AI message.
    AnsweredBeforeNextAi = 6,
    /// 7. A summarization body pair has exactly one tool message.
    OneSummarizationResponse = 7,
}

impl Rule {
    /// The rule's number, 1 to 7.
    pub const fn number(self) -> u8 {
        self as u8
    }

    /// What the rule requires, in a few words.
    pub const fn summary(self) -> &'static str {
        match self {
            Rule::FirstMessage => "a chain starts with a system or human message",
            Rule::ConsecutiveHumans => "no two human messages in a row",
            Rule::ToolCallsAnswered => "every tool call has a response",
            Rule::ResponsesMatchCalls => {
                "a tool response answers a tool call of the AI message before it, once"
            }
            Rule::SystemOutsideToolRounds => {
                "a system message never comes between tool calls and their responses"
            }
            Rule::AnsweredBeforeNextAi => "tool calls are answered before the next AI message",
            Rule::OneSummarizationResponse => {
                "a summarization body pair has exactly one tool message"
            }
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rule {} ({})", self.number(), self.summary())
    }
}

/// Tool call ids, shown as `[a, b]`.
struct Ids<'a>(&'a [String]);

impl fmt::Display for Ids<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, id) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(id)?;
        }
        f.write_str("]")
    }
}

/// A chain that breaks a rule, or a ChainAST operation that cannot be done.
///
/// Every variant of a broken [`Rule`] carries the index of the offending message in the input
/// slice, and its message says how `ChainAst::new(messages, true)` repairs it. The repairs keep the
/// order of the messages and always give a chain that passes strict validation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// Rule 1: a message other than system or human comes before any system or human message.
    /// Repair: the message is dropped.
    #[error(
        "{rule}: message {index} ({role}) comes before any system or human message; put a \
         system or human message first, or repair with ChainAst::new(messages, true), which drops \
         it",
        rule = Rule::FirstMessage
    )]
    InvalidFirstMessage {
        /// Index of the message.
        index: usize,
        /// Its role (`ai` or `tool`).
        role: Role,
    },

    /// Rule 2: a human message right after another human message. Repair: its parts are appended
    /// to the first human message.
    #[error(
        "{rule}: message {index} is a human message right after another human message; join \
         them, or repair with ChainAst::new(messages, true), which appends its parts to the first \
         one",
        rule = Rule::ConsecutiveHumans
    )]
    ConsecutiveHumans {
        /// Index of the second human message.
        index: usize,
    },

    /// Rule 3: the chain ends, or a new human message comes, while tool calls of an AI message
    /// have no response. Repair: a tool message answering each of them with
    /// [`FALLBACK_RESPONSE_CONTENT`] is added after the pair's tool messages (in id order).
    #[error(
        "{rule}: tool calls {ids} of the AI message at index {index} have no response; add tool \
         messages answering them, or repair with ChainAst::new(messages, true), which answers \
         them with {fallback:?}",
        rule = Rule::ToolCallsAnswered,
        ids = Ids(ids),
        fallback = FALLBACK_RESPONSE_CONTENT
    )]
    MissingToolResponses {
        /// Index of the AI message that made the calls.
        index: usize,
        /// The unanswered call ids, sorted.
        ids: Vec<String>,
    },

    /// Rule 4: a tool message with no AI message with tool calls before it (after a human
    /// message, or after a completion). Repair: the tool message is dropped.
    #[error(
        "{rule}: message {index} is a tool message, but no AI message with tool calls comes \
         before it; remove it, or repair with ChainAst::new(messages, true), which drops it",
        rule = Rule::ResponsesMatchCalls
    )]
    UnexpectedToolMessage {
        /// Index of the tool message.
        index: usize,
    },

    /// Rule 4: a tool response answers an id that the AI message of its body pair did not call.
    /// Repair: a call with that id, the response's tool name and arguments
    /// [`FALLBACK_REQUEST_ARGS`](crate::FALLBACK_REQUEST_ARGS) is appended to the AI message.
    #[error(
        "{rule}: tool message {index} answers tool call {id:?}, which the AI message at index \
         {ai_index} did not make; fix the id, or repair with ChainAst::new(messages, true), which \
         adds that call to the AI message",
        rule = Rule::ResponsesMatchCalls
    )]
    UnknownToolCall {
        /// Index of the tool message.
        index: usize,
        /// Index of the AI message of the body pair.
        ai_index: usize,
        /// The id the response names.
        id: String,
    },

    /// Rule 4: a tool call is answered a second time. Repair: the second response is dropped
    /// (and its tool message too if nothing else is left in it).
    #[error(
        "{rule}: tool message {index} answers tool call {id:?} a second time; remove the \
         duplicate, or repair with ChainAst::new(messages, true), which drops it",
        rule = Rule::ResponsesMatchCalls
    )]
    DuplicateToolResponse {
        /// Index of the tool message with the second response.
        index: usize,
        /// The call id answered twice.
        id: String,
    },

    /// Rule 5: a system message comes while tool calls of the AI message before it have no
    /// response. Repair: as for rule 3, fallback responses are added before the system message,
    /// which opens a section.
    #[error(
        "{rule}: system message {index} comes before tool calls {ids} of the AI message at \
         index {ai_index} were answered; move it after their tool messages, or repair with \
         ChainAst::new(messages, true), which answers them with {fallback:?}",
        rule = Rule::SystemOutsideToolRounds,
        ids = Ids(ids),
        fallback = FALLBACK_RESPONSE_CONTENT
    )]
    SystemBeforeToolResponses {
        /// Index of the system message.
        index: usize,
        /// Index of the AI message whose calls are unanswered.
        ai_index: usize,
        /// Ids of the unanswered calls, sorted.
        ids: Vec<String>,
    },

    /// Rule 6: an AI message comes while tool calls of the previous AI message have no response.
    /// Repair: as for rule 3, fallback responses are added before the new AI message.
    #[error(
        "{rule}: AI message {index} comes before tool calls {ids} of the AI message at index \
         {ai_index} were answered; add tool messages answering them, or repair with \
         ChainAst::new(messages, true), which answers them with {fallback:?}",
        rule = Rule::AnsweredBeforeNextAi,
        ids = Ids(ids),
        fallback = FALLBACK_RESPONSE_CONTENT
    )]
    AiBeforeToolResponses {
        /// Index of the AI message that came too early.
        index: usize,
        /// Index of the AI message whose calls are unanswered.
        ai_index: usize,
        /// The unanswered call ids, sorted.
        ids: Vec<String>,
    },

    /// Rule 7: a second tool message in a summarization body pair. Repair: its parts are
    /// appended to the pair's first tool message.
    #[error(
        "{rule}: message {index} is a second tool message for the summarization call of the AI \
         message at index {ai_index}; put all responses in one tool message, or repair with \
         ChainAst::new(messages, true), which merges them",
        rule = Rule::OneSummarizationResponse
    )]
    SummarizationToolMessages {
        /// Index of the extra tool message.
        index: usize,
        /// Index of the summarization AI message.
        ai_index: usize,
    },

    /// A constructor got a message of the wrong role for its place.
    #[error(
        "message {index} given to {constructor} has role {found} where role {expected} belongs; \
         pass messages of the right role"
    )]
    WrongRole {
        /// Which constructor: `Header::new`, `BodyPair::new` or `BodyPair::from_messages`.
        constructor: &'static str,
        /// Position among the constructor's messages: for `Header::new` 0 is the system slot and
        /// 1 the human slot; for `BodyPair::new` 0 is the AI message and `i + 1` tool message
        /// `i`; for `BodyPair::from_messages` the index in the slice.
        index: usize,
        /// The role that belongs there.
        expected: Role,
        /// The role the message has.
        found: Role,
    },

    /// `BodyPair::from_messages` got no messages.
    #[error("cannot make a body pair from no messages; pass an AI message and its tool messages")]
    EmptyBodyPair,

    /// `add_tool_response` found no request-response body pair that calls this id.
    #[error(
        "no request-response body pair has a tool call with id {id:?}; add_tool_response answers \
         calls already in the chain (summarization pairs are not searched)"
    )]
    ToolCallNotFound {
        /// The id looked for.
        id: String,
    },

    /// `add_body_pair` on a chain without sections.
    #[error(
        "the chain has no section to add a body pair to; start one first with \
         append_human_message or add_section"
    )]
    NoSection,
}

impl ChainError {
    /// The rule this error breaks; `None` for errors of constructors and mutators.
    pub fn rule(&self) -> Option<Rule> {
        match self {
            ChainError::InvalidFirstMessage { .. } => Some(Rule::FirstMessage),
            ChainError::ConsecutiveHumans { .. } => Some(Rule::ConsecutiveHumans),
            ChainError::MissingToolResponses { .. } => Some(Rule::ToolCallsAnswered),
            ChainError::UnexpectedToolMessage { .. }
            | ChainError::UnknownToolCall { .. }
            | ChainError::DuplicateToolResponse { .. } => Some(Rule::ResponsesMatchCalls),
            ChainError::SystemBeforeToolResponses { .. } => Some(Rule::SystemOutsideToolRounds),
            ChainError::AiBeforeToolResponses { .. } => Some(Rule::AnsweredBeforeNextAi),
            ChainError::SummarizationToolMessages { .. } => Some(Rule::OneSummarizationResponse),
            ChainError::WrongRole { .. }
            | ChainError::EmptyBodyPair
            | ChainError::ToolCallNotFound { .. }
            | ChainError::NoSection => None,
        }
    }

    /// Index of the offending message in the input, for errors that break a rule.
    pub fn index(&self) -> Option<usize> {
        match self {
            ChainError::InvalidFirstMessage { index, .. }
            | ChainError::ConsecutiveHumans { index }
            | ChainError::MissingToolResponses { index, .. }
            | ChainError::UnexpectedToolMessage { index }
            | ChainError::UnknownToolCall { index, .. }
            | ChainError::DuplicateToolResponse { index, .. }
            | ChainError::SystemBeforeToolResponses { index, .. }
            | ChainError::AiBeforeToolResponses { index, .. }
            | ChainError::SummarizationToolMessages { index, .. } => Some(*index),
            ChainError::WrongRole { .. }
            | ChainError::EmptyBodyPair
            | ChainError::ToolCallNotFound { .. }
            | ChainError::NoSection => None,
        }
    }
}
