//! Bearer-token authentication, and the loopback-only rule when no token is configured.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::header::AUTHORIZATION;
use service::{Principal, Secret};
use sha2::{Digest, Sha256};

use crate::api::error::ApiError;

/// The configured tokens, kept as SHA-256 digests: the tokens themselves are not held, and
/// comparing digests takes the same time whatever prefix of a token a guess gets right.
#[derive(Clone)]
pub(crate) struct Auth {
    digests: Vec<[u8; 32]>,
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
        Auth {
            digests: tokens.iter().map(|token| digest(token.expose())).collect(),
        }
    }

    /// Who the request is from (the holder of a token, or the shared principal of a server
    /// without tokens), or why it is refused.
    pub(crate) fn check(
        &self,
        authorization: Option<&str>,
        peer: Option<SocketAddr>,
    ) -> Result<Principal, ApiError> {
        if self.digests.is_empty() {
            return match peer {
                Some(peer) if peer.ip().to_canonical().is_loopback() => Ok(Principal::SHARED),
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
            .map(Principal::token)
            .ok_or_else(|| ApiError::unauthorized("invalid bearer token"))
    }
}

/// Middleware: authenticates the request and stores its [`Principal`] as an extension.
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
            Principal::SHARED
        );
        assert_eq!(
            auth.check(None, addr("[::1]:5000")).unwrap(),
            Principal::SHARED
        );
        assert_eq!(
            auth.check(None, addr("[::ffff:127.0.0.1]:5000")).unwrap(),
            Principal::SHARED
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
            Principal::token(1)
        );
        assert_eq!(
            auth.check(Some("bearer alpha"), remote).unwrap(),
            Principal::token(0)
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
}
