//! The seven rules as one state machine over a chain's messages.
//!
//! [`Rules`] reads messages in order and says where each one goes ([`Step`]); in strict mode it
//! stops at the first broken rule, in force mode it records the problem and says how to repair
//! it. The parser (`parse.rs`) builds sections from the steps; `ChainAst::validate` runs the same
//! machine over an AST's messages without building anything, so both always agree.

use std::collections::HashMap;

use messages::{ContentPart, Message, Role};

use crate::{BodyPairKind, ChainError};

/// Where a message goes.
#[derive(Debug, PartialEq)]
pub(crate) enum Action<'m> {
    /// The message (system or human) opens a new section.
    NewSection,
    /// The human message completes the current section's system-only header.
    SetHuman,
    /// Repair: the human message's parts join the header's human message.
    MergeHuman,
    /// The AI message opens a body pair.
    NewPair,
    /// The tool message joins the current body pair.
    Tool(ToolEdit<'m>),
    /// Repair: the message is left out.
    Drop,
}

/// How a tool message joins its pair.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ToolEdit<'m> {
    /// Repair: indexes of duplicate responses to leave out.
    pub(crate) drop_parts: Vec<usize>,
    /// Repair: calls (id, tool name) to add to the AI message for responses to unknown ids.
    pub(crate) add_calls: Vec<(&'m str, &'m str)>,
    /// Repair: the parts join the pair's first tool message (a summarization pair's second tool
    /// message).
    pub(crate) merge: bool,
}

/// Repair: fallback responses for unanswered calls of the current pair, added before the step's
/// message is placed.
#[derive(Debug, PartialEq)]
pub(crate) struct Fallback<'m> {
    /// (id, tool name) of each unanswered call, sorted by id.
    pub(crate) calls: Vec<(&'m str, &'m str)>,
    /// The responses join the pair's one tool message (summarization) instead of one tool
    /// message each.
    pub(crate) into_first_tool: bool,
}

/// What to do with one message.
#[derive(Debug, PartialEq)]
pub(crate) struct Step<'m> {
    pub(crate) fallback: Option<Fallback<'m>>,
    pub(crate) action: Action<'m>,
}

/// Above this many calls' worth of capacity the call map is dropped rather than cleared.
const RESET_CAPACITY: usize = 256;

/// The shape of the current section (it has a system message, a human message, or both).
#[derive(Clone, Copy, Default)]
struct SectionState {
    has_human: bool,
    has_body: bool,
}

/// What ends a body pair.
#[derive(Clone, Copy)]
enum Closer {
    /// The AI message at this index.
    Ai(usize),
    /// The system message at this index.
    System(usize),
    /// A human message.
    Human,
    /// The end of the chain.
    End,
}

/// The current body pair.
struct PairState {
    ai_index: usize,
    kind: BodyPairKind,
    tool_messages: usize,
}

/// One call of the current pair.
struct CallState<'m> {
    name: &'m str,
    answered: bool,
}

/// The rules' state between messages.
pub(crate) struct Rules<'m> {
    force: bool,
    /// Problems repaired so far (force mode).
    repaired: Vec<ChainError>,
    section: Option<SectionState>,
    pair: Option<PairState>,
    /// The current pair's calls by id; kept across pairs so its allocation is reused.
    calls: HashMap<&'m str, CallState<'m>>,
}

impl<'m> Rules<'m> {
    pub(crate) fn new(force: bool) -> Rules<'m> {
        Rules {
            force,
            repaired: Vec::new(),
            section: None,
            pair: None,
            calls: HashMap::new(),
        }
    }

    /// The problems repaired so far, in the order they were met.
    pub(crate) fn into_repaired(self) -> Vec<ChainError> {
        self.repaired
    }

    /// Strict: the problem is the error. Force: it is recorded and the caller repairs it.
    fn problem(&mut self, error: ChainError) -> Result<(), ChainError> {
        if self.force {
            self.repaired.push(error);
            Ok(())
        } else {
            Err(error)
        }
    }

    /// Decides where message `index` goes.
    pub(crate) fn step(
        &mut self,
        index: usize,
        message: &'m Message,
    ) -> Result<Step<'m>, ChainError> {
        let mut fallback = None;
        let action = match (message.role, self.section) {
            (Role::System, None) => {
                self.section = Some(SectionState::default());
                Action::NewSection
            }
            (Role::System, Some(_)) => {
                // Clients add instructions anywhere in a conversation (OpenAI takes them there,
                // and pydantic-ai adds one when it retries a failed validation): a later system
                // message opens a section of its own, so the chain keeps the client's order.
                // Only between tool calls and their responses would it split a round.
                fallback = self.close_pair(Closer::System(index))?;
                self.section = Some(SectionState::default());
                Action::NewSection
            }
            (Role::Human, None) => {
                self.section = Some(SectionState {
                    has_human: true,
                    ..SectionState::default()
                });
                Action::NewSection
            }
            (Role::Human, Some(section)) if section.has_body => {
                // A human message after AI messages opens a new section, also after a system-only
                // header: that keeps the order of the messages, where rejecting it or moving the
                // human message in front of the AI messages would not.
                fallback = self.close_pair(Closer::Human)?;
                self.section = Some(SectionState {
                    has_human: true,
                    ..SectionState::default()
                });
                Action::NewSection
            }
            (Role::Human, Some(mut section)) => {
                if section.has_human {
                    self.problem(ChainError::ConsecutiveHumans { index })?;
                    Action::MergeHuman
                } else {
                    section.has_human = true;
                    self.section = Some(section);
                    Action::SetHuman
                }
            }
            (Role::Ai | Role::Tool, None) => {
                self.problem(ChainError::InvalidFirstMessage {
                    index,
                    role: message.role,
                })?;
                Action::Drop
            }
            (Role::Ai, Some(mut section)) => {
                fallback = self.close_pair(Closer::Ai(index))?;
                section.has_body = true;
                self.section = Some(section);
                self.open_pair(index, message);
                Action::NewPair
            }
            (Role::Tool, Some(_)) => self.tool(index, message)?,
        };
        Ok(Step { fallback, action })
    }

    /// Checks the end of the chain: the last pair's calls need responses.
    pub(crate) fn finish(&mut self) -> Result<Option<Fallback<'m>>, ChainError> {
        self.close_pair(Closer::End)
    }

    fn open_pair(&mut self, index: usize, ai: &'m Message) {
        let kind = BodyPairKind::of(ai);
        // Clearing and walking a map costs its capacity: after a pair with very many calls, start
        // small again so that many small pairs stay cheap.
        if self.calls.capacity() > RESET_CAPACITY {
            self.calls = HashMap::new();
        } else {
            self.calls.clear();
        }
        if kind.has_calls() {
            for call in ai.tool_calls() {
                self.calls.insert(
                    &call.id,
                    CallState {
                        name: &call.name,
                        answered: false,
                    },
                );
            }
        }
        self.pair = Some(PairState {
            ai_index: index,
            kind,
            tool_messages: 0,
        });
    }

    /// Ends the current pair: its calls need responses (rule 3; rule 6 when an AI message closes
    /// it, rule 5 when a system message does).
    fn close_pair(&mut self, closer: Closer) -> Result<Option<Fallback<'m>>, ChainError> {
        let Some(pair) = self.pair.take() else {
            return Ok(None);
        };
        if !pair.kind.has_calls() {
            return Ok(None);
        }
        let mut pending: Vec<(&'m str, &'m str)> = self
            .calls
            .iter()
            .filter(|(_, call)| !call.answered)
            .map(|(id, call)| (*id, call.name))
            .collect();
        if pending.is_empty() {
            return Ok(None);
        }
        pending.sort_unstable();
        let ids = pending.iter().map(|(id, _)| (*id).to_owned()).collect();
        self.problem(match closer {
            Closer::Ai(index) => ChainError::AiBeforeToolResponses {
                index,
                ai_index: pair.ai_index,
                ids,
            },
            Closer::System(index) => ChainError::SystemBeforeToolResponses {
                index,
                ai_index: pair.ai_index,
                ids,
            },
            Closer::Human | Closer::End => ChainError::MissingToolResponses {
                index: pair.ai_index,
                ids,
            },
        })?;
        Ok(Some(Fallback {
            calls: pending,
            into_first_tool: pair.kind == BodyPairKind::Summarization,
        }))
    }

    fn tool(&mut self, index: usize, message: &'m Message) -> Result<Action<'m>, ChainError> {
        let Some(pair) = self.pair.as_ref().filter(|pair| pair.kind.has_calls()) else {
            self.problem(ChainError::UnexpectedToolMessage { index })?;
            return Ok(Action::Drop);
        };
        let (ai_index, kind, tool_messages) = (pair.ai_index, pair.kind, pair.tool_messages);
        let mut edit = ToolEdit::default();
        for (part_index, part) in message.parts.iter().enumerate() {
            let ContentPart::ToolResponse(response) = part else {
                continue;
            };
            let id = response.tool_call_id.as_str();
            match self.calls.get_mut(id) {
                Some(call) if !call.answered => call.answered = true,
                Some(_) => {
                    self.problem(ChainError::DuplicateToolResponse {
                        index,
                        id: id.to_owned(),
                    })?;
                    edit.drop_parts.push(part_index);
                }
                None => {
                    self.problem(ChainError::UnknownToolCall {
                        index,
                        ai_index,
                        id: id.to_owned(),
                    })?;
                    let name = response.name.as_str();
                    self.calls.insert(
                        id,
                        CallState {
                            name,
                            answered: true,
                        },
                    );
                    edit.add_calls.push((id, name));
                }
            }
        }
        if kind == BodyPairKind::Summarization && tool_messages > 0 {
            self.problem(ChainError::SummarizationToolMessages { index, ai_index })?;
            edit.merge = true;
        }
        let emptied = !edit.drop_parts.is_empty() && edit.drop_parts.len() == message.parts.len();
        if emptied {
            return Ok(Action::Drop);
        }
        if !edit.merge
            && let Some(pair) = self.pair.as_mut()
        {
            pair.tool_messages += 1;
        }
        Ok(Action::Tool(edit))
    }
}
