//! What the tools that make HTTP requests (`http_get`, `web_search`) share: reading a body up
//! to a limit, and an error message that says why a request failed.

use futures::StreamExt as _;

/// The body of `response`, at most `max` bytes, and whether more followed: reading stops at
/// the limit, so an endless or huge answer costs no more than `max` bytes of memory.
pub(crate) async fn read_capped(
    response: reqwest::Response,
    max: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// `error` and each of its causes, joined by `: `: reqwest's own message names only the step
/// that failed, the reason (a refused redirect, a timeout, a refused connection) is in its
/// sources.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
