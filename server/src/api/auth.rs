//! Bearer-token authentication, and the loopback-only rule when no token is configured.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::header::AUTHORIZATION;
use sha2::{Digest, Sha256};

use crate::api::error::ApiError;
use crate::schema::Secret;

/// Who sent a request: the key of its concurrency limit and of the runs it may cancel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Caller {
    /// The holder of the configured token at this index.
    Token(usize),
    /// A loopback client of a server without tokens.
    Loopback,
}

/// The configured tokens, kept as SHA-256 digests: the tokens themselves are not held, and
/// comparing digests takes the same time whatever prefix of a token a guess gets right.
#[derive(Clone)]
pub(crate) struct Auth {
    digests: Vec<[u8; 32]>,
    /// Each token's conversation owner name (see [`Auth::owner`]), in token order.
    owners: Vec<String>,
}

/// The conversation owner name of the loopback principal of a server without tokens.
pub(crate) const LOOPBACK_OWNER: &str = "loopback";

/// The owner name stored for the holder of a token: a hash of the token's digest under a
/// label of its own, so the database never holds the token or the digest `Auth` compares.
fn owner_name(digest: &[u8; 32]) -> String {
    let hex = crate::service::owner::sha256_hex(&[b"skein conversation owner v1\0", digest]);
    format!("token-sha256:{hex}")
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Auth {{ tokens: {} }}", self.digests.len())
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Auth {
    pub(crate) fn new(tokens: &[Secret]) -> Self {
        let digests: Vec<[u8; 32]> = tokens.iter().map(|token| digest(token.expose())).collect();
        Auth {
            owners: digests.iter().map(owner_name).collect(),
            digests,
        }
    }

    /// Whether this server has no tokens (loopback clients only, one principal).
    pub(crate) fn is_tokenless(&self) -> bool {
        self.digests.is_empty()
    }

    /// The name `caller`'s conversations are stored under: stable across restarts and token
    /// reordering (it derives from the token itself), never the token.
    pub(crate) fn owner(&self, caller: Caller) -> &str {
        match caller {
            Caller::Token(index) => self
                .owners
                .get(index)
                .map_or(LOOPBACK_OWNER, String::as_str),
            Caller::Loopback => LOOPBACK_OWNER,
        }
    }

    /// Who the request is from, or why it is refused.
    pub(crate) fn check(
        &self,
        authorization: Option<&str>,
        peer: Option<SocketAddr>,
    ) -> Result<Caller, ApiError> {
        if self.digests.is_empty() {
            return match peer {
                Some(peer) if peer.ip().to_canonical().is_loopback() => Ok(Caller::Loopback),
                _ => Err(ApiError::forbidden(
                    "this server has no tokens configured, so it only serves loopback clients; \
                     configure `tokens` to serve other hosts",
                )),
            };
        }
        let Some(value) = authorization else {
            return Err(ApiError::unauthorized(
                "missing bearer token: send `Authorization: Bearer <token>`",
            ));
        };
        let token = value
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .ok_or_else(|| {
                ApiError::unauthorized("the Authorization header must be `Bearer <token>`")
            })?;
        let presented = digest(token);
        self.digests
            .iter()
            .position(|known| *known == presented)
            .map(Caller::Token)
            .ok_or_else(|| ApiError::unauthorized("invalid bearer token"))
    }
}

/// Middleware: authenticates the request and stores its [`Caller`] as an extension.
pub(crate) async fn require_caller(
    State(auth): State<Auth>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0);
    let authorization = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok());
    let caller = auth.check(authorization, peer)?;
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}

#[cfg(test)]
mod tests {
    use http::StatusCode;

    use super::*;

    fn addr(text: &str) -> Option<SocketAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn without_tokens_only_loopback_is_served() {
        let auth = Auth::new(&[]);
        assert_eq!(
            auth.check(None, addr("127.0.0.1:5000")).unwrap(),
            Caller::Loopback
        );
        assert_eq!(
            auth.check(None, addr("[::1]:5000")).unwrap(),
            Caller::Loopback
        );
        assert_eq!(
            auth.check(None, addr("[::ffff:127.0.0.1]:5000")).unwrap(),
            Caller::Loopback
        );
        let refused = auth.check(None, addr("192.168.1.20:5000")).unwrap_err();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        // Without connection info (an embedder that did not provide it) nothing is served.
        assert_eq!(
            auth.check(None, None).unwrap_err().status(),
            StatusCode::FORBIDDEN
        );
    }

    #[test]
    fn tokens_are_required_and_matched() {
        let auth = Auth::new(&[Secret::new("alpha"), Secret::new("beta")]);
        let remote = addr("10.1.2.3:4000");
        assert_eq!(
            auth.check(Some("Bearer beta"), remote).unwrap(),
            Caller::Token(1)
        );
        assert_eq!(
            auth.check(Some("bearer alpha"), remote).unwrap(),
            Caller::Token(0)
        );
        for bad in [
            None,
            Some("Bearer gamma"),
            Some("Basic YWxwaGE="),
            Some("alpha"),
        ] {
            let err = auth.check(bad, remote).unwrap_err();
            assert_eq!(err.status(), StatusCode::UNAUTHORIZED, "{bad:?}");
        }
        // Loopback needs a token too once tokens exist.
        assert!(auth.check(None, addr("127.0.0.1:1")).is_err());
        assert!(!format!("{auth:?}").contains("alpha"));
    }

    #[test]
    fn owners_are_stable_distinct_and_not_the_token() {
        let auth = Auth::new(&[Secret::new("alpha"), Secret::new("beta")]);
        let reordered = Auth::new(&[Secret::new("beta"), Secret::new("alpha")]);
        assert_eq!(
            auth.owner(Caller::Token(0)),
            reordered.owner(Caller::Token(1))
        );
        assert_ne!(auth.owner(Caller::Token(0)), auth.owner(Caller::Token(1)));
        assert!(!auth.owner(Caller::Token(0)).contains("alpha"));
        let hex: String = digest("alpha").iter().map(|b| format!("{b:02x}")).collect();
        assert!(!auth.owner(Caller::Token(0)).contains(&hex));
        assert_eq!(Auth::new(&[]).owner(Caller::Loopback), LOOPBACK_OWNER);
    }
}
