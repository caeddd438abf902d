use std::fmt;

use serde::{Deserialize, Serialize};

/// Who wrote a message.
///
/// The names are provider-neutral (`human`, `ai`) rather than any one provider's
/// (`user`, `assistant`, `model`); adapters translate.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions to the model. Only valid at the start of a chain.
    System,
    /// The user.
    #[default]
    Human,
    /// The model.
    Ai,
    /// Results of tool calls the model asked for.
    Tool,
}

impl Role {
    /// The role's name in the canonical transcript format: `system`, `human`, `ai` or `tool`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Human => "human",
            Role::Ai => "ai",
            Role::Tool => "tool",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
