//! [`ChainAst`]: the whole chain as sections, and the operations on it.

use messages::{ContentPart, Message, Role, ToolResponse};

use crate::rules::Rules;
use crate::{BodyPair, BodyPairKind, ChainError, ChainSection, Header};

/// A message chain as a tree: [`ChainSection`]s, each a [`Header`] and [`BodyPair`]s.
///
/// Build one from messages with [`ChainAst::new`] (strict or repairing), or grow one with
/// [`append_human_message`](ChainAst::append_human_message), [`add_body_pair`](ChainAst::add_body_pair)
/// and [`add_tool_response`](ChainAst::add_tool_response). [`messages`](ChainAst::messages)
/// flattens it back; for a chain that passed strict construction that gives back exactly the
/// input.
///
/// Sizes (see [`message_size`](crate::message_size)) are cached at every level and exact after
/// every operation, force repairs and ID normalisation included: fields are private and each
/// mutator updates the sizes it touches, so a budget check never reads a stale size. The tree may
/// be briefly invalid while an agent works, e.g. a body pair whose calls wait for responses;
/// [`validate`](ChainAst::validate) says whether the flattened chain passes the seven rules.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChainAst {
    sections: Vec<ChainSection>,
    size: usize,
}

impl ChainAst {
    /// An empty chain.
    pub fn empty() -> ChainAst {
        ChainAst::default()
    }

    /// Builds the tree of a chain. The messages are cloned once; `messages` is never changed.
    ///
    /// With `force = false` the chain must follow the seven [rules](crate::Rule); the first
    /// break is the error, naming the rule and the message index. With `force = true` every
    /// break is repaired (see [`ChainError`]'s variants for how) and the result always passes
    /// strict validation; [`ChainAst::repair`] also returns what was repaired.
    ///
    /// # Errors
    ///
    /// With `force = false`, the first [`ChainError`] met. With `force = true`, never.
    pub fn new(messages: &[Message], force: bool) -> Result<ChainAst, ChainError> {
        crate::parse::build(messages, force).map(|(ast, _)| ast)
    }

    /// Builds the tree of a chain, repairing every break of the rules, and returns the problems
    /// that were repaired, in order (empty for a valid chain).
    pub fn repair(messages: &[Message]) -> (ChainAst, Vec<ChainError>) {
        match crate::parse::build(messages, true) {
            Ok(built) => built,
            // Force mode records problems instead of failing; this arm is never taken.
            Err(error) => (ChainAst::default(), vec![error]),
        }
    }

    /// Checks the flattened chain against the seven rules, exactly as
    /// `ChainAst::new(&self.messages(), false)` would, without copying it.
    ///
    /// # Errors
    ///
    /// The first [`ChainError`] met, with indexes into [`ChainAst::messages`].
    pub fn validate(&self) -> Result<(), ChainError> {
        let mut rules = Rules::new(false);
        for (index, message) in self.iter_messages().enumerate() {
            rules.step(index, message)?;
        }
        rules.finish().map(drop)
    }

    /// A chain from sections built by hand.
    pub fn from_sections(sections: Vec<ChainSection>) -> ChainAst {
        let size = sections.iter().map(ChainSection::size).sum();
        ChainAst { sections, size }
    }

    /// The sections, in order.
    pub fn sections(&self) -> &[ChainSection] {
        &self.sections
    }

    /// Size in bytes of all messages (see [`message_size`](crate::message_size)).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether the chain has no sections.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }

    /// The flattened chain: each section's header messages, then its body pairs' messages.
    pub fn messages(&self) -> Vec<Message> {
        let mut messages = Vec::with_capacity(self.message_count());
        messages.extend(self.iter_messages().cloned());
        messages
    }

    /// The flattened chain by reference, in order.
    pub fn iter_messages(&self) -> impl Iterator<Item = &Message> {
        self.sections.iter().flat_map(ChainSection::iter)
    }

    /// Number of messages in the flattened chain.
    pub fn message_count(&self) -> usize {
        self.sections.iter().map(ChainSection::len).sum()
    }

    /// The sections, consuming the chain.
    pub fn into_sections(self) -> Vec<ChainSection> {
        self.sections
    }

    /// The flattened chain, consuming the tree (no copies).
    pub fn into_messages(self) -> Vec<Message> {
        let mut messages = Vec::new();
        for section in self.sections {
            let (header, body) = section.into_parts();
            let (system, human) = header.into_parts();
            messages.extend(system);
            messages.extend(human);
            for pair in body {
                let (ai, tools) = pair.into_parts();
                messages.push(ai);
                messages.extend(tools);
            }
        }
        messages
    }

    /// Appends a section.
    pub fn add_section(&mut self, section: ChainSection) {
        self.size += section.size();
        self.sections.push(section);
    }

    /// Appends a body pair to the last section.
    ///
    /// # Errors
    ///
    /// [`ChainError::NoSection`] if the chain is empty.
    pub fn add_body_pair(&mut self, pair: BodyPair) -> Result<(), ChainError> {
        self.edit_last_section(|section| section.add_body_pair(pair))
            .ok_or(ChainError::NoSection)
    }

    /// Appends a human message with one text part, by four rules:
    ///
    /// 1. an empty chain gets a section with this human message;
    /// 2. if the last section has body pairs, a new section starts with it;
    /// 3. if the last section has no body pairs and no human message (system only), it becomes
    ///    that section's human message;
    /// 4. if the last section has no body pairs but a human message, the text is appended to
    ///    that message as a new part.
    pub fn append_human_message(&mut self, text: impl Into<String>) {
        self.append_human_parts(vec![ContentPart::text(text)]);
    }

    /// Like [`append_human_message`](ChainAst::append_human_message) with any parts (images,
    /// files) instead of one text.
    pub fn append_human_parts(&mut self, parts: Vec<ContentPart>) {
        let extends_last = self
            .sections
            .last()
            .is_some_and(|section| section.body().is_empty());
        if extends_last {
            self.edit_last_section(|section| {
                section.edit_header(|header| header.extend_human(parts))
            });
        } else {
            let header = Header::from_parts(None, Some(Message::new(Role::Human, parts)));
            self.add_section(ChainSection::new(header, Vec::new()));
        }
    }

    /// Answers tool call `id` in the first request-response pair that makes it: replaces the
    /// content of its response if there is one (the name is kept), else appends a response to
    /// the pair's last tool message, or adds a tool message if the pair has none.
    ///
    /// Summarization pairs are not searched: their one response is the summary.
    ///
    /// # Errors
    ///
    /// [`ChainError::ToolCallNotFound`] if no request-response pair calls `id`.
    pub fn add_tool_response(
        &mut self,
        id: &str,
        name: &str,
        content: &str,
    ) -> Result<(), ChainError> {
        let found = self.sections.iter().enumerate().find_map(|(s, section)| {
            section
                .body()
                .iter()
                .position(|pair| {
                    pair.kind() == BodyPairKind::RequestResponse
                        && pair.ai().tool_calls().any(|call| call.id == id)
                })
                .map(|p| (s, p))
        });
        let (s, p) = found.ok_or_else(|| ChainError::ToolCallNotFound { id: id.to_owned() })?;
        self.edit_section(s, |section| {
            section.edit_pair(p, |pair| pair.answer(id, name, content))
        });
        Ok(())
    }

    /// Every response to tool call `id` in request-response pairs, in chain order.
    pub fn find_tool_call_responses(&self, id: &str) -> Vec<&ToolResponse> {
        self.sections
            .iter()
            .flat_map(ChainSection::body)
            .filter(|pair| pair.kind() == BodyPairKind::RequestResponse)
            .flat_map(|pair| pair.responses_to(id))
            .collect()
    }

    /// Lets `edit` change section `index` (if it exists), then takes its new size.
    pub(crate) fn edit_section<R>(
        &mut self,
        index: usize,
        edit: impl FnOnce(&mut ChainSection) -> R,
    ) -> Option<R> {
        let section = self.sections.get_mut(index)?;
        let before = section.size();
        let result = edit(section);
        self.size = self.size - before + section.size();
        Some(result)
    }

    /// Lets `edit` change the last section (if any), then takes its new size.
    pub(crate) fn edit_last_section<R>(
        &mut self,
        edit: impl FnOnce(&mut ChainSection) -> R,
    ) -> Option<R> {
        let last = self.sections.len().checked_sub(1)?;
        self.edit_section(last, edit)
    }

    /// Lets `edit` change every section, then recomputes the total.
    pub(crate) fn edit_sections(&mut self, edit: impl FnMut(&mut ChainSection)) {
        self.sections.iter_mut().for_each(edit);
        self.size = self.sections.iter().map(ChainSection::size).sum();
    }
}
