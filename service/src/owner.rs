//! Who a conversation belongs to, and what a client's conversation id is in the store.
//!
//! - A conversation belongs to the principal that started it (a token, or the shared
//!   principal of a server without tokens): the store records its owner name
//!   ([`Store::claim_conversation`]) and any other principal naming it is told it does not
//!   exist ([`OwnerError::NotYours`]), never its content.
//! - Ids the server mints (`conv-` and 32 hex digits, 122 random bits) are stored as they are.
//! - Ids a client chooses (`session_id`, `metadata.conversation_id`, `metadata.task_id`) are
//!   namespaced per caller when there are tokens: the stored id is a hash of the caller's owner
//!   name and the client's id, so two tokens using `session_id: "a"` get two conversations.
//!   The client still sees its own id in every answer.
//! - A server without tokens has one principal, which is also the CLI's user: its ids are
//!   stored as given, and it may continue conversations the CLI wrote (which have no owner).

use std::fmt::Write as _;

use conversation_tree::{Claim, ConversationId, Store};
use sha2::{Digest, Sha256};

use conversation_tree::StoreError;

/// Why a conversation cannot be used by the principal that names it.
#[derive(Debug, thiserror::Error)]
pub enum OwnerError {
    /// The conversation is another principal's (or, with tokens, one written without an
    /// owner): as far as this principal knows, it does not exist.
    #[error(
        "no conversation `{client}` of this caller: conversations are visible to the token that \
         started them only; omit `session_id` to start a new one"
    )]
    NotYours {
        /// The id the client named.
        client: String,
    },
    /// The store could not say whose the conversation is.
    #[error("cannot check the conversation: {0}")]
    Store(#[source] StoreError),
    /// A conversation id could not be minted or namespaced (a bug: the ids built here are
    /// valid).
    #[error("cannot {what} a conversation id: {source}")]
    Id {
        /// `mint` or `namespace`.
        what: &'static str,
        /// Why the id was refused.
        #[source]
        source: StoreError,
    },
}

/// How server-minted conversation ids start.
const MINTED_PREFIX: &str = "conv-";

/// A new conversation id: `conv-` and the 32 hex digits of a random UUID v4 (122 random bits).
pub(crate) fn mint() -> String {
    format!("{MINTED_PREFIX}{}", uuid::Uuid::new_v4().simple())
}

/// Whether `id` has the form of an id this server mints.
fn is_minted(id: &str) -> bool {
    id.strip_prefix(MINTED_PREFIX).is_some_and(|hex| {
        hex.len() == 32
            && hex
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    })
}

/// A conversation as a request names it, and as the store holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedConversation {
    /// The id the client sent or was given: what every answer shows.
    pub client: String,
    /// The id in the store.
    pub stored: ConversationId,
}

/// The stored id of the client's `client` for the caller `owner`. `shared` (a server without
/// tokens) stores client ids as they are.
pub(crate) fn stored_id(
    owner: &str,
    shared: bool,
    client: &ConversationId,
) -> Result<ConversationId, OwnerError> {
    if shared || is_minted(client.as_str()) {
        return Ok(client.clone());
    }
    let hex = sha256_hex(&[
        b"skein conversation id v1\0",
        owner.as_bytes(),
        b"\0",
        client.as_str().as_bytes(),
    ]);
    ConversationId::new(format!("ns-{hex}")).map_err(|source| OwnerError::Id {
        what: "namespace",
        source,
    })
}

/// The SHA-256 of `parts` (fed in order) as 64 lowercase hex digits.
pub(crate) fn sha256_hex(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    let mut hex = String::with_capacity(64);
    for byte in hasher.finalize() {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// Claims `conversation` for `owner` before it is read or continued:
/// [`OwnerError::NotYours`] when it is another principal's (or, with tokens, one written
/// without an owner), as if it did not exist.
pub(crate) async fn claim(
    store: &dyn Store,
    conversation: &OwnedConversation,
    owner: &str,
    shared: bool,
) -> Result<(), OwnerError> {
    let claim = store
        .claim_conversation(&conversation.stored, owner)
        .await
        .map_err(OwnerError::Store)?;
    match claim {
        Claim::Created | Claim::Owned => Ok(()),
        Claim::Unowned if shared => Ok(()),
        _ => Err(OwnerError::NotYours {
            client: conversation.client.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_are_long_random_and_recognised() {
        let a = mint();
        let b = mint();
        assert_ne!(a, b);
        assert_eq!(a.len(), MINTED_PREFIX.len() + 32);
        assert!(is_minted(&a));
        for other in ["conv-1", "conv-ABCDEF0123456789ABCDEF0123456789", "a", ""] {
            assert!(!is_minted(other), "{other}");
        }
    }

    #[test]
    fn client_ids_are_namespaced_per_owner_with_tokens_only() {
        let id = ConversationId::new("a").unwrap();
        let alice = stored_id("alice", false, &id).unwrap();
        let bob = stored_id("bob", false, &id).unwrap();
        assert_ne!(alice, bob);
        assert_ne!(alice, id);
        assert_eq!(alice, stored_id("alice", false, &id).unwrap());
        // The stored id of a namespaced id is namespaced again: no way to name another's.
        assert_ne!(stored_id("bob", false, &alice).unwrap(), alice);
        // Minted ids are stored as they are (their owner is checked instead).
        let minted = ConversationId::new(mint()).unwrap();
        assert_eq!(stored_id("bob", false, &minted).unwrap(), minted);
        // One principal: ids as given.
        assert_eq!(stored_id("loopback", true, &id).unwrap(), id);
    }
}
