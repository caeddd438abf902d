//! [`Principal`]: who asks the service for something, whatever protocol carried the request.

use sha2::{Digest, Sha256};

use crate::Secret;
use crate::owner::sha256_hex;

/// Who asks the service for something: the key of the runs it may cancel, the owner of the
/// conversations it starts, and what the configuration offers it (a token's tools and
/// knowledge bases). Opaque: a front end that authenticates a request says which principal it
/// is ([`Principal::token`], [`Principal::SHARED`]); the service knows what that principal may
/// do.
///
/// ```
/// use service::Principal;
///
/// assert_ne!(Principal::token(0), Principal::token(1));
/// assert_ne!(Principal::token(0), Principal::SHARED);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Principal(Kind);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    /// The holder of the token at this index of the service's tokens.
    Token(usize),
    /// The one principal of a service without tokens: its loopback clients, the CLI's user.
    Shared,
}

impl Principal {
    /// The one principal of a service without tokens (a server's loopback clients, the CLI's
    /// user): its conversations are stored under the ids it gives, and it may continue
    /// conversations that have no owner.
    pub const SHARED: Principal = Principal(Kind::Shared);

    /// The holder of the token at `index` of the tokens the service was built with.
    pub const fn token(index: usize) -> Principal {
        Principal(Kind::Token(index))
    }

    /// The index of its token, `None` for [`Principal::SHARED`].
    pub(crate) fn token_index(self) -> Option<usize> {
        match self.0 {
            Kind::Token(index) => Some(index),
            Kind::Shared => None,
        }
    }
}

/// The conversation owner name of the shared principal of a service without tokens.
pub(crate) const SHARED_OWNER: &str = "loopback";

/// The owner names of the holders of `tokens`, in token order: a hash of each token's digest
/// under a label of its own, stable across restarts and token reordering, so the database
/// never holds a token or a digest an authenticator compares.
pub(crate) fn owner_names(tokens: &[Secret]) -> Vec<String> {
    tokens
        .iter()
        .map(|token| {
            let digest: [u8; 32] = Sha256::digest(token.expose().as_bytes()).into();
            let hex = sha256_hex(&[b"skein conversation owner v1\0", &digest]);
            format!("token-sha256:{hex}")
        })
        .collect()
}

/// The owner name of `principal` among `owners` (a service's [`owner_names`]).
pub(crate) fn owner_of(owners: &[String], principal: Principal) -> &str {
    principal
        .token_index()
        .and_then(|index| owners.get(index))
        .map_or(SHARED_OWNER, String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_stable_distinct_and_not_the_token() {
        let owners = owner_names(&[Secret::new("alpha"), Secret::new("beta")]);
        let reordered = owner_names(&[Secret::new("beta"), Secret::new("alpha")]);
        assert_eq!(owners[0], reordered[1]);
        assert_ne!(owners[0], owners[1]);
        assert!(!owners[0].contains("alpha"));
        let digest: [u8; 32] = Sha256::digest(b"alpha").into();
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert!(!owners[0].contains(&hex));
        assert_eq!(Principal::SHARED.token_index(), None);
        assert_eq!(Principal::token(3).token_index(), Some(3));
    }
}
