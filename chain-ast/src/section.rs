//! [`ChainSection`]: a header and the body pairs that follow it.

use messages::Message;

use crate::{BodyPair, Header};

/// One turn of a conversation: a [`Header`] (system and/or human message) and the
/// [`BodyPair`]s that answer it.
///
/// The size (header + body pairs) is cached and exact: the fields are private and every change
/// goes through a method that updates it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChainSection {
    header: Header,
    body: Vec<BodyPair>,
    size: usize,
}

impl ChainSection {
    /// A section from a header and body pairs.
    pub fn new(header: Header, body: Vec<BodyPair>) -> ChainSection {
        let size = header.size() + body.iter().map(BodyPair::size).sum::<usize>();
        ChainSection { header, body, size }
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The body pairs, in order.
    pub fn body(&self) -> &[BodyPair] {
        &self.body
    }

    /// Size in bytes of the header and all body pairs.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The section's messages: the header's, then each body pair's.
    pub fn messages(&self) -> Vec<Message> {
        let mut messages = Vec::with_capacity(self.len());
        messages.extend(self.iter().cloned());
        messages
    }

    /// The section's messages by reference, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Message> {
        self.header
            .iter()
            .chain(self.body.iter().flat_map(BodyPair::iter))
    }

    /// Number of messages in the section.
    pub(crate) fn len(&self) -> usize {
        self.header.len() + self.body.iter().map(BodyPair::len).sum::<usize>()
    }

    /// Replaces the header.
    pub fn set_header(&mut self, header: Header) {
        self.size = self.size - self.header.size() + header.size();
        self.header = header;
    }

    /// Appends a body pair.
    pub fn add_body_pair(&mut self, pair: BodyPair) {
        self.size += pair.size();
        self.body.push(pair);
    }

    /// The header and body pairs, consuming the section.
    pub fn into_parts(self) -> (Header, Vec<BodyPair>) {
        (self.header, self.body)
    }

    /// Lets `edit` change the header, then takes its new size.
    pub(crate) fn edit_header<R>(&mut self, edit: impl FnOnce(&mut Header) -> R) -> R {
        let before = self.header.size();
        let result = edit(&mut self.header);
        self.size = self.size - before + self.header.size();
        result
    }

    /// Lets `edit` change body pair `index` (if it exists), then takes its new size.
    pub(crate) fn edit_pair<R>(
        &mut self,
        index: usize,
        edit: impl FnOnce(&mut BodyPair) -> R,
    ) -> Option<R> {
        let pair = self.body.get_mut(index)?;
        let before = pair.size();
        let result = edit(pair);
        self.size = self.size - before + pair.size();
        Some(result)
    }

    /// Lets `edit` change the last body pair (if any), then takes its new size.
    pub(crate) fn edit_last_pair<R>(&mut self, edit: impl FnOnce(&mut BodyPair) -> R) -> Option<R> {
        let last = self.body.len().checked_sub(1)?;
        self.edit_pair(last, edit)
    }
}
