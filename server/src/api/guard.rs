//! What a request must look like before any handler sees it: browser safety (JSON bodies only,
//! no cross-origin callers unless configured, `Host` checked without tokens) and the request
//! body read within the body limit and the body read timeout.
//!
//! A web page the user visits can make the browser POST to `http://127.0.0.1:8080` as a
//! "simple" request (`text/plain` or form bodies, no preflight), and with DNS rebinding read
//! the answers. So: bodies must be `application/json` (which a page can only send after a CORS
//! preflight this server refuses), a request carrying an `Origin` is refused unless that origin
//! is configured (`cors_origins`), and a server without tokens only answers requests whose
//! `Host` names a loopback address or a configured name.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN};
use http::{HeaderName, HeaderValue, Method, StatusCode};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::api::error::{ApiError, ServerError};
use crate::config::ServerConfig;

/// The request rules of one server, shared by its middleware.
#[derive(Debug)]
pub(crate) struct Guard {
    /// No tokens: the `Host` check applies.
    tokenless: bool,
    /// Extra host names (lowercase) or `host:port` pairs accepted without tokens.
    allowed_hosts: Vec<String>,
    /// Allowed origins (lowercase, without a trailing `/`); `*` allows all.
    cors_origins: Vec<String>,
    body_limit: usize,
    body_read_timeout: Duration,
}

impl Guard {
    pub(crate) fn new(config: &ServerConfig) -> Self {
        Guard {
            tokenless: config.tokens.is_empty(),
            allowed_hosts: config
                .allowed_hosts
                .iter()
                .map(|host| host.trim().to_ascii_lowercase())
                .collect(),
            cors_origins: config
                .cors_origins
                .iter()
                .map(|o| normal_origin(o))
                .collect(),
            body_limit: config.body_limit,
            body_read_timeout: config.body_read_timeout(),
        }
    }

    /// Whether `host` (a `Host` header value) names this server for a tokenless server.
    fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let name = host_name(&host);
        if name == "localhost" || name.ends_with(".localhost") {
            return true;
        }
        if let Ok(ip) = name.parse::<IpAddr>()
            && ip.to_canonical().is_loopback()
        {
            return true;
        }
        self.allowed_hosts
            .iter()
            .any(|allowed| *allowed == host || allowed == name)
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = normal_origin(origin);
        self.cors_origins
            .iter()
            .any(|allowed| allowed == "*" || *allowed == origin)
    }
}

fn normal_origin(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// The name part of a `Host` value: without its port, an IPv6 literal without brackets.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(name, _)| name);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// The CORS layer for the configured origins; `None` when none are (the default).
pub(crate) fn cors(config: &ServerConfig) -> Result<Option<CorsLayer>, ServerError> {
    if config.cors_origins.is_empty() {
        return Ok(None);
    }
    let allow = if config
        .cors_origins
        .iter()
        .any(|origin| origin.trim() == "*")
    {
        AllowOrigin::any()
    } else {
        let origins = config
            .cors_origins
            .iter()
            .map(|origin| {
                HeaderValue::from_str(origin.trim().trim_end_matches('/')).map_err(|_| {
                    ServerError::Config(format!(
                        "`cors_origins` holds `{origin}`, which is not an origin; write one as \
                         `https://app.example.com`"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        AllowOrigin::list(origins)
    };
    let request_id = HeaderName::from_static("x-request-id");
    Ok(Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST])
            .allow_headers([
                http::header::AUTHORIZATION,
                CONTENT_TYPE,
                request_id.clone(),
            ])
            .expose_headers([request_id, http::header::RETRY_AFTER])
            .max_age(Duration::from_secs(600)),
    ))
}

/// Middleware on every route: refuses cross-origin requests (unless their origin is
/// configured) and, without tokens, requests for another host (DNS rebinding).
pub(crate) async fn check_origin_and_host(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(origin) = request.headers().get(ORIGIN) {
        let text = origin.to_str().unwrap_or("<not text>");
        if !guard.origin_allowed(text) {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "cross_origin_forbidden",
                format!(
                    "requests from the web origin `{text}` are refused: this server allows no \
                     cross-origin callers unless its operator lists them in `cors_origins` \
                     (`skein serve --cors-origin`)"
                ),
            )
            .into_response();
        }
    }
    if guard.tokenless {
        let host = request
            .headers()
            .get(HOST)
            .map(|value| value.to_str().unwrap_or("<not text>").to_owned())
            .or_else(|| request.uri().authority().map(ToString::to_string));
        if let Some(host) = host
            && !guard.host_allowed(&host)
        {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "host_not_allowed",
                format!(
                    "this server has no tokens, so it only answers requests for a loopback \
                     address or a configured name, and `Host: {host}` is neither; connect to \
                     127.0.0.1 or localhost, or list the name in `allowed_hosts` \
                     (`skein serve --allow-hostname`)"
                ),
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// Middleware on routes with a JSON body: the content type must be JSON (415), and the whole
/// body must arrive within the body limit (413) and the body read timeout (408).
pub(crate) async fn read_json_body(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let content_type = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok());
    if !content_type.is_some_and(is_json) {
        return ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!(
                "the body must be JSON sent as `Content-Type: application/json`, not {}",
                content_type.map_or("a body without a content type".to_owned(), |t| format!(
                    "`{t}`"
                ))
            ),
        )
        .into_response();
    }
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > guard.body_limit as u64) {
        return too_large(guard.body_limit).into_response();
    }
    let (parts, body) = request.into_parts();
    let limit = guard.body_limit;
    let read = async move {
        let mut stream = body.into_data_stream();
        let mut buffer = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|err| {
                if over_limit(&err) {
                    too_large(limit)
                } else {
                    ApiError::invalid_request(format!("the request body could not be read: {err}"))
                }
            })?;
            if buffer.len().saturating_add(chunk.len()) > limit {
                return Err(too_large(limit));
            }
            buffer.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(buffer))
    };
    match tokio::time::timeout(guard.body_read_timeout, read).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Ok(Err(error)) => error.into_response(),
        Err(_) => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!(
                "the request body did not arrive within {} s (`body_read_timeout_secs`); send \
                 it at once",
                guard.body_read_timeout.as_secs()
            ),
        )
        .into_response(),
    }
}

/// Whether a body error is the body limit layer's (a chunked body over the limit).
fn over_limit(err: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(error) = source {
        if error.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = error.source();
    }
    false
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        format!(
            "the request body is larger than this server accepts ({limit} bytes, `body_limit`)"
        ),
    )
}

/// `application/json` or `application/…+json`, with any parameters.
fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|subtype| subtype.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        for good in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/problem+json",
        ] {
            assert!(is_json(good), "{good}");
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "text/json",
            "",
        ] {
            assert!(!is_json(bad), "{bad}");
        }
    }

    #[test]
    fn hosts_of_a_tokenless_server() {
        let config = ServerConfig {
            allowed_hosts: vec!["skein.internal".to_owned(), "box:9000".to_owned()],
            ..ServerConfig::default()
        };
        let guard = Guard::new(&config);
        for good in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "localhost:8080",
            "LOCALHOST",
            "app.localhost:1",
            "[::1]:8080",
            "skein.internal:8080",
            "box:9000",
        ] {
            assert!(guard.host_allowed(good), "{good}");
        }
        for bad in [
            "evil.example:8080",
            "192.168.1.2:8080",
            "box:9001",
            "",
            "[::2]",
        ] {
            assert!(!guard.host_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn origins() {
        let none = Guard::new(&ServerConfig::default());
        assert!(!none.origin_allowed("https://evil.example"));
        assert!(!none.origin_allowed("null"));
        let listed = Guard::new(&ServerConfig {
            cors_origins: vec!["https://App.example.com/".to_owned()],
            ..ServerConfig::default()
        });
        assert!(listed.origin_allowed("https://app.example.com"));
        assert!(!listed.origin_allowed("https://evil.example"));
    }
}
