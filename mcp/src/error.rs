//! [`McpError`]: why a server could not be reached or used.

use std::time::Duration;

/// Why an MCP server could not be started, reached or used.
///
/// Each message names the server, says what went wrong and what to do. None contains a bearer
/// token; URLs are shown without credentials or query string. When a server fails during a
/// tool call, the call fails with a [`toolchain::ToolError`] carrying this error (its message is
/// what the model reads) and the run goes on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The child process could not be started.
    #[error("MCP server \"{server}\": cannot start `{command}`: {reason}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The program.
        command: String,
        /// What went wrong and what to do (not found, not executable…).
        reason: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP server could not be reached (connection refused, DNS, TLS…).
    #[error(
        "cannot reach MCP server \"{server}\" at {url}: {reason}; check that it is running and \
         that the URL is right"
    )]
    Unreachable {
        /// The server's name.
        server: String,
        /// The URL, without credentials or query string.
        url: String,
        /// The client's message.
        reason: String,
    },
    /// The HTTP server answered with an error status.
    #[error("MCP server \"{server}\" at {url} answered HTTP {status}{}", status_hint(*status))]
    HttpStatus {
        /// The server's name.
        server: String,
        /// The URL, without credentials or query string.
        url: String,
        /// The HTTP status code.
        status: u16,
    },
    /// The HTTP server answered with a redirect that was not followed: one to another origin
    /// (it would carry the bearer token, session and JSON-RPC message there), or one that
    /// would turn the POST into a GET (301, 302, 303). Nothing was sent to `location`.
    #[error(
        "MCP server \"{server}\" at {url} answered HTTP {status}, a redirect to {location}, which \
         is not followed; configure the URL it should be reached at"
    )]
    Redirected {
        /// The server's name.
        server: String,
        /// The URL, without credentials or query string.
        url: String,
        /// The redirect status.
        status: u16,
        /// Where the server pointed, without credentials or query string.
        location: String,
    },
    /// The server started but the MCP handshake (`initialize`) failed.
    #[error(
        "MCP server \"{server}\" did not complete the MCP handshake: {reason}{}; check that it is \
         an MCP server for this transport{}",
        stderr_suffix(stderr), if stderr.is_some() { "" } else { " (stdio: a program that speaks MCP on stdin/stdout; HTTP: the streamable-HTTP endpoint, often `/mcp`)" }
    )]
    Handshake {
        /// The server's name.
        server: String,
        /// What went wrong.
        reason: String,
        /// The last lines the child process wrote to stderr, if any.
        stderr: Option<String>,
    },
    /// The server sent something that does not follow the protocol.
    #[error("MCP server \"{server}\" broke the MCP protocol: {message}")]
    Protocol {
        /// The server's name.
        server: String,
        /// What was wrong.
        message: String,
    },
    /// The server answered a request with a JSON-RPC error.
    #[error("MCP server \"{server}\" answered with error {code}: {message}")]
    Rejected {
        /// The server's name.
        server: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
    },
    /// The server took longer than its timeout.
    #[error(
        "MCP server \"{server}\" did not finish {during} within {timeout:?}; raise its timeout or \
         check the server"
    )]
    Timeout {
        /// The server's name.
        server: String,
        /// What it was doing (`connecting`, `listing its tools`).
        during: &'static str,
        /// The timeout.
        timeout: Duration,
    },
    /// The server answered with a message larger than a stdio message may be; the message was
    /// discarded unread and the request it answered failed at once.
    #[error(
        "MCP server \"{server}\" answered with a message of more than {limit_bytes} bytes, the \
         most one stdio message may hold; it was discarded: ask for less (narrower arguments, \
         fewer or smaller results), or have the server return large data as a resource link"
    )]
    MessageTooLarge {
        /// The server's name.
        server: String,
        /// The limit, in bytes (its newline included).
        limit_bytes: usize,
    },
    /// The server went away: its process exited, or its connection closed.
    #[error(
        "MCP server \"{server}\" stopped ({detail}); its tools cannot be used for the rest of \
         this run: carry on without them, or ask the user to check the server{}",
        stderr_suffix(stderr)
    )]
    Stopped {
        /// The server's name.
        server: String,
        /// What was seen.
        detail: String,
        /// The last lines the child process wrote to stderr, if any.
        stderr: Option<String>,
    },
}

impl McpError {
    /// The `McpError` behind a failed MCP tool call (a [`ToolError::Failed`] whose source is
    /// one), e.g. to tell [`McpError::Stopped`] from a tool's own failure.
    ///
    /// [`ToolError::Failed`]: toolchain::ToolError::Failed
    pub fn from_tool_error(error: &toolchain::ToolError) -> Option<&McpError> {
        let toolchain::ToolError::Failed {
            source: Some(source),
            ..
        } = error
        else {
            return None;
        };
        let source: &(dyn std::error::Error + 'static) = source.as_ref();
        source.downcast_ref::<McpError>()
    }

    /// This error with every secret `redactor` knows (and any credential header value)
    /// removed from its text: a server may echo its bearer token in a JSON-RPC error, an HTTP
    /// error or its stderr.
    #[must_use]
    pub fn redacted(mut self, redactor: &messages::Redactor) -> McpError {
        let texts: Vec<&mut String> = match &mut self {
            McpError::Spawn {
                command, reason, ..
            } => vec![command, reason],
            McpError::Unreachable { url, reason, .. } => vec![url, reason],
            McpError::HttpStatus { url, .. } => vec![url],
            McpError::Redirected { url, location, .. } => vec![url, location],
            McpError::Handshake { reason, stderr, .. }
            | McpError::Stopped {
                detail: reason,
                stderr,
                ..
            } => {
                let mut texts = vec![reason];
                texts.extend(stderr.as_mut());
                texts
            }
            McpError::Protocol { message, .. } | McpError::Rejected { message, .. } => {
                vec![message]
            }
            McpError::Timeout { .. } | McpError::MessageTooLarge { .. } => Vec::new(),
        };
        for text in texts {
            redactor.redact_in_place(text);
        }
        self
    }

    /// The name of the server this error is about.
    pub fn server(&self) -> &str {
        match self {
            McpError::Spawn { server, .. }
            | McpError::Unreachable { server, .. }
            | McpError::HttpStatus { server, .. }
            | McpError::Redirected { server, .. }
            | McpError::Handshake { server, .. }
            | McpError::Protocol { server, .. }
            | McpError::Rejected { server, .. }
            | McpError::Timeout { server, .. }
            | McpError::MessageTooLarge { server, .. }
            | McpError::Stopped { server, .. } => server,
        }
    }
}

fn status_hint(status: u16) -> &'static str {
    match status {
        401 | 403 => "; check its bearer token",
        404 => "; check the URL's path (MCP endpoints are often at /mcp)",
        429 => "; it is rate limiting, try again later",
        500..=599 => "; the server failed, check its logs",
        _ => "",
    }
}

fn stderr_suffix(stderr: &Option<String>) -> String {
    match stderr {
        Some(lines) => format!("; its stderr ended with: {lines}"),
        None => String::new(),
    }
}

/// `url` without `user:password@` and without its query string and fragment, for messages.
pub(crate) fn redact_url(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_credentials_and_queries() {
        assert_eq!(
            redact_url("https://user:pw@host:8/mcp?token=x#f"),
            "https://host:8/mcp"
        );
        assert_eq!(redact_url("http://host/a@b"), "http://host/a@b");
        assert_eq!(redact_url("http://host"), "http://host");
    }

    #[test]
    fn messages_say_what_to_do() {
        let error = McpError::HttpStatus {
            server: "web".into(),
            url: "http://h/mcp".into(),
            status: 401,
        };
        assert_eq!(
            error.to_string(),
            "MCP server \"web\" at http://h/mcp answered HTTP 401; check its bearer token"
        );
        let error = McpError::Stopped {
            server: "fs".into(),
            detail: "the connection closed".into(),
            stderr: Some("boom".into()),
        };
        assert!(
            error
                .to_string()
                .contains("stopped (the connection closed)")
        );
        assert!(error.to_string().ends_with("its stderr ended with: boom"));
    }
}
