//! [`Header`]: the system and human messages that open a section.

use messages::{ContentPart, Message, Role};

use crate::ChainError;
use crate::size::{message_size, parts_size};

/// The messages that open a [`ChainSection`](crate::ChainSection): an optional system message
/// (only in the first section of a valid chain) and an optional human message.
///
/// The size is cached and exact: the fields are private and every change goes through a method
/// that updates it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Header {
    system: Option<Message>,
    human: Option<Message>,
    size: usize,
}

impl Header {
    /// A header from an optional system and an optional human message.
    ///
    /// # Errors
    ///
    /// [`ChainError::WrongRole`] if `system` is not a system message (index 0) or `human` is not
    /// a human message (index 1).
    pub fn new(system: Option<Message>, human: Option<Message>) -> Result<Header, ChainError> {
        check_role("Header::new", 0, Role::System, system.as_ref())?;
        check_role("Header::new", 1, Role::Human, human.as_ref())?;
        Ok(Header::from_parts(system, human))
    }

    /// A header without the role checks, for callers that know the roles.
    pub(crate) fn from_parts(system: Option<Message>, human: Option<Message>) -> Header {
        let size = system.as_ref().map_or(0, message_size) + human.as_ref().map_or(0, message_size);
        Header {
            system,
            human,
            size,
        }
    }

    /// The system message, if any.
    pub fn system(&self) -> Option<&Message> {
        self.system.as_ref()
    }

    /// The human message, if any.
    pub fn human(&self) -> Option<&Message> {
        self.human.as_ref()
    }

    /// Whether the header has neither a system nor a human message.
    pub fn is_empty(&self) -> bool {
        self.system.is_none() && self.human.is_none()
    }

    /// Size in bytes of the system and human messages (see [`message_size`]).
    pub fn size(&self) -> usize {
        self.size
    }

    /// The header's messages: system first, then human, each if present.
    pub fn messages(&self) -> Vec<Message> {
        self.iter().cloned().collect()
    }

    /// The header's messages by reference, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Message> {
        self.system.iter().chain(self.human.iter())
    }

    /// Number of messages in the header (0 to 2).
    pub(crate) fn len(&self) -> usize {
        usize::from(self.system.is_some()) + usize::from(self.human.is_some())
    }

    /// The system and human messages, consuming the header.
    pub fn into_parts(self) -> (Option<Message>, Option<Message>) {
        (self.system, self.human)
    }

    /// Sets the human message (replacing any).
    pub(crate) fn set_human(&mut self, human: Message) {
        self.size -= self.human.as_ref().map_or(0, message_size);
        self.size += message_size(&human);
        self.human = Some(human);
    }

    /// Appends parts to the human message, creating an empty one first if there is none.
    pub(crate) fn extend_human(&mut self, parts: impl IntoIterator<Item = ContentPart>) {
        let human = self
            .human
            .get_or_insert_with(|| Message::new(Role::Human, Vec::new()));
        self.size += extend_counted(&mut human.parts, parts);
    }

    /// Appends parts to the system message, creating an empty one first if there is none.
    pub(crate) fn extend_system(&mut self, parts: impl IntoIterator<Item = ContentPart>) {
        let system = self
            .system
            .get_or_insert_with(|| Message::new(Role::System, Vec::new()));
        self.size += extend_counted(&mut system.parts, parts);
    }

    /// Applies `edit` to each message and recomputes the size.
    pub(crate) fn edit_messages(&mut self, mut edit: impl FnMut(&mut Message)) {
        self.system
            .iter_mut()
            .chain(self.human.iter_mut())
            .for_each(&mut edit);
        self.size = self.iter().map(message_size).sum();
    }
}

/// Appends `parts` and returns the size they add.
fn extend_counted(
    target: &mut Vec<ContentPart>,
    parts: impl IntoIterator<Item = ContentPart>,
) -> usize {
    let start = target.len();
    target.extend(parts);
    parts_size(&target[start..])
}

/// Checks that an optional message has the role its slot needs.
pub(crate) fn check_role(
    constructor: &'static str,
    index: usize,
    expected: Role,
    message: Option<&Message>,
) -> Result<(), ChainError> {
    match message {
        Some(message) if message.role != expected => Err(ChainError::WrongRole {
            constructor,
            index,
            expected,
            found: message.role,
        }),
        _ => Ok(()),
    }
}
