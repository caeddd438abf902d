//! Identifiers of conversations and nodes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::StoreError;

/// A stored response (a node of the tree). Assigned by the store, increasing: a child's id is
/// always greater than its parent's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(i64);

impl NodeId {
    /// The id as stored.
    pub fn get(self) -> i64 {
        self.0
    }

    pub(crate) fn from_db(id: i64) -> Self {
        NodeId(id)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for NodeId {
    type Err = StoreError;

    /// Parses a node id as printed by `Display` (a positive integer), e.g. from a command line.
    fn from_str(text: &str) -> Result<Self, StoreError> {
        match text.trim().parse::<i64>() {
            Ok(id) if id > 0 => Ok(NodeId(id)),
            _ => Err(StoreError::InvalidNodeId {
                text: text.to_owned(),
            }),
        }
    }
}

/// A conversation: one tree of responses (a forest, when several roots were asked).
///
/// 1 to 128 characters, none of them control characters. [`ConversationId::random`] makes a
/// fresh one (a UUID v4); callers may also bring their own (`"support-ticket-4711"`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ConversationId(String);

impl ConversationId {
    /// Longest accepted id, in characters.
    pub const MAX_LEN: usize = 128;

    /// A new, random conversation id.
    pub fn random() -> Self {
        ConversationId(uuid::Uuid::new_v4().to_string())
    }

    /// Checks `id` and wraps it.
    pub fn new(id: impl Into<String>) -> Result<Self, StoreError> {
        let id = id.into();
        let reason = if id.is_empty() {
            Some("it is empty")
        } else if id.chars().count() > Self::MAX_LEN {
            Some("it is longer than 128 characters")
        } else if id.chars().any(char::is_control) {
            Some("it contains a control character")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(StoreError::InvalidConversationId { id, reason }),
            None => Ok(ConversationId(id)),
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// An id read from a damaged row, unchecked: only for listing that row as damaged.
    pub(crate) fn from_damaged_row(id: String) -> Self {
        ConversationId(id)
    }
}

impl fmt::Display for ConversationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for ConversationId {
    type Err = StoreError;

    fn from_str(text: &str) -> Result<Self, StoreError> {
        ConversationId::new(text)
    }
}

impl TryFrom<String> for ConversationId {
    type Error = StoreError;

    fn try_from(text: String) -> Result<Self, StoreError> {
        ConversationId::new(text)
    }
}

impl From<ConversationId> for String {
    fn from(id: ConversationId) -> String {
        id.0
    }
}

impl AsRef<str> for ConversationId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}
