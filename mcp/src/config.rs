//! Which MCP server to reach and how: the CLI form (`NAME=COMMAND ARG…`, `NAME=URL`) and the
//! config-file form (serde).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// How long one tool call (and the whole connection handshake) may take unless the
/// configuration says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest server name: it prefixes every tool name, and tool names are at most 64 bytes.
pub const MAX_SERVER_NAME_LEN: usize = 32;

/// One MCP server: its name (the prefix of its tools' names), how to reach it and how long a
/// call may take.
///
/// Build it with [`McpServerConfig::parse`] (the command-line form),
/// [`stdio`](McpServerConfig::stdio) / [`http`](McpServerConfig::http), or deserialize it
/// from a configuration file:
///
/// ```
/// use mcp::{McpServerConfig, Transport};
///
/// let files: McpServerConfig = serde_json::from_str(
///     r#"{"name": "files", "command": "mcp-server-filesystem", "args": ["/tmp"],
///         "env": {"LOG_LEVEL": "warn"}, "timeout_secs": 30}"#,
/// )?;
/// assert!(matches!(files.transport, Transport::Stdio { .. }));
///
/// let docs: McpServerConfig =
///     serde_json::from_str(r#"{"name": "docs", "url": "https://mcp.example.com/mcp"}"#)?;
/// assert!(matches!(docs.transport, Transport::Http { bearer: None, .. }));
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// In the file form, exactly one of `command` (with optional `args` and `env`) and `url` (with
/// optional `bearer_token_env`, the name of an environment variable holding the bearer token,
/// read when the configuration is loaded) is given; `timeout_secs` is optional
/// ([`DEFAULT_TIMEOUT`]). Unknown fields are refused.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "ServerFile")]
pub struct McpServerConfig {
    /// The server's name: 1 to [`MAX_SERVER_NAME_LEN`] ASCII letters, digits, `_` or `-`. Its
    /// tools are offered to the model as `{name}__{tool}`.
    pub name: String,
    /// How to reach the server.
    pub transport: Transport,
    /// The longest a tool call may take (an [`ExecutionContext`](toolchain::ExecutionContext)
    /// with a shorter call timeout or an earlier deadline wins), and the longest connecting
    /// (start, handshake, listing the tools) may take.
    pub timeout: Duration,
}

/// How to reach an MCP server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout (its stderr goes to the `debug`
    /// log, and its last lines into errors).
    ///
    /// The child does not inherit the whole environment: only `PATH`, `HOME`, `USER`,
    /// `LOGNAME`, `SHELL`, `TERM`, `TMPDIR`, `TZ`, `LANG` and `LC_*` (so provider API keys and
    /// tokens never reach a third-party server by accident), plus `env`.
    Stdio {
        /// The program, looked up on `PATH` when it has no `/`.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
    },
    /// A server speaking MCP's streamable HTTP transport at `url`.
    Http {
        /// The endpoint, `http://` or `https://` (e.g. `https://host/mcp`).
        url: String,
        /// Sent as `Authorization: Bearer …` with every request.
        bearer: Option<Secret>,
    },
}

/// A credential (a bearer token): never shown in `Debug` output, errors or logs. The one
/// redacted-secret type of every Skein crate, re-exported here for configurations.
pub use messages::Secret;

/// A server configuration that cannot be used: the message says what to change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ConfigError {
    message: String,
}

impl ConfigError {
    fn new(message: impl Into<String>) -> Self {
        ConfigError {
            message: message.into(),
        }
    }
}

impl McpServerConfig {
    /// A server started as `command args…`, with [`DEFAULT_TIMEOUT`] and no extra
    /// environment.
    pub fn stdio(
        name: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Self, ConfigError> {
        Self::stdio_with_env(
            name.into(),
            command.into(),
            args.into_iter().map(Into::into).collect(),
            BTreeMap::new(),
        )
    }

    /// A server started as `command args…` with the extra environment `env`.
    fn stdio_with_env(
        name: String,
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    ) -> Result<Self, ConfigError> {
        if command.trim().is_empty() {
            return Err(ConfigError::new("the MCP server command is empty"));
        }
        Self::new(name, Transport::Stdio { command, args, env })
    }

    /// A streamable-HTTP server at `url` (`http://` or `https://`), with [`DEFAULT_TIMEOUT`]
    /// and no bearer token.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Result<Self, ConfigError> {
        let url = url.into();
        check_url(&url)?;
        Self::new(name.into(), Transport::Http { url, bearer: None })
    }

    fn new(name: String, transport: Transport) -> Result<Self, ConfigError> {
        validate_name(&name)?;
        Ok(McpServerConfig {
            name,
            transport,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// Parses the command-line form: `NAME=COMMAND ARG…` for a child process, `NAME=URL` for
    /// a streamable-HTTP server (`http://…` or `https://…`).
    ///
    /// The command line is split into words like a POSIX shell would, without running one:
    /// words are separated by spaces and tabs; `'…'` keeps its text as is; `"…"` keeps its text
    /// except that `\"`, `\\`, `\$` and `` \` `` stand for the second character; outside quotes
    /// `\` keeps the next character as is. There is no variable expansion, globbing or
    /// redirection. Leading `VAR=value` words set environment variables for the server, as in a
    /// shell.
    ///
    /// ```
    /// use mcp::{McpServerConfig, Transport};
    ///
    /// let config = McpServerConfig::parse(
    ///     r#"files=LOG_LEVEL=warn npx -y @modelcontextprotocol/server-filesystem "/home/me/My Documents""#,
    /// )?;
    /// assert_eq!(config.name, "files");
    /// let Transport::Stdio { command, args, env } = &config.transport else { unreachable!() };
    /// assert_eq!(command, "npx");
    /// assert_eq!(args[2], "/home/me/My Documents");
    /// assert_eq!(env["LOG_LEVEL"], "warn");
    ///
    /// let remote = McpServerConfig::parse("docs=https://mcp.example.com/mcp")?;
    /// assert!(matches!(remote.transport, Transport::Http { .. }));
    /// # Ok::<(), mcp::ConfigError>(())
    /// ```
    pub fn parse(spec: &str) -> Result<Self, ConfigError> {
        let Some((name, rest)) = spec.split_once('=') else {
            return Err(ConfigError::new(format!(
                "`{spec}` is not an MCP server: write NAME=COMMAND ARG… (a server started as a \
                 child process) or NAME=URL (a streamable-HTTP server)"
            )));
        };
        let name = name.trim();
        validate_name(name)?;
        let rest = rest.trim();
        if is_http_url(rest) {
            return Self::http(name, rest);
        }
        let mut words = split_words(rest)?.into_iter().peekable();
        let mut env = BTreeMap::new();
        while let Some((key, value)) = words.peek().and_then(|word| env_assignment(word)) {
            env.insert(key, value);
            words.next();
        }
        let Some(command) = words.next() else {
            return Err(ConfigError::new(format!(
                "MCP server `{name}` has no command: write {name}=COMMAND ARG… or {name}=URL"
            )));
        };
        Self::stdio_with_env(name.to_owned(), command, words.collect(), env)
    }

    /// Sets the call (and connection) timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// A redactor that knows this server's secrets: its bearer token, and the values of the
    /// environment variables whose names look like credentials (`GITHUB_TOKEN`, `API_KEY`…).
    /// Errors of this crate are redacted with it; a host that holds other secrets too adds
    /// these to its own (one redactor for everything it logs or shows).
    pub fn redactor(&self) -> messages::Redactor {
        let mut redactor = messages::Redactor::new();
        match &self.transport {
            Transport::Http {
                bearer: Some(token),
                ..
            } => redactor.add(token.expose()),
            Transport::Http { bearer: None, .. } => {}
            Transport::Stdio { env, .. } => {
                for (name, value) in env {
                    if messages::redact::looks_secret(name) {
                        redactor.add(value);
                    }
                }
            }
        }
        redactor
    }

    /// Sets the bearer token of an HTTP server (ignored for a child process).
    #[must_use]
    pub fn with_bearer(mut self, token: Secret) -> Self {
        if let Transport::Http { bearer, .. } = &mut self.transport {
            *bearer = Some(token);
        }
        self
    }

    /// Adds an environment variable for a child process (ignored for an HTTP server).
    #[must_use]
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Transport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }
}

/// The configuration-file form, checked into a [`McpServerConfig`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerFile {
    name: String,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Option<Vec<String>>,
    #[serde(default)]
    env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    bearer_token_env: Option<String>,
    #[serde(default)]
    timeout_secs: Option<f64>,
}

impl TryFrom<ServerFile> for McpServerConfig {
    type Error = ConfigError;

    fn try_from(file: ServerFile) -> Result<Self, ConfigError> {
        let name = file.name;
        let mut config = match (file.command, file.url) {
            (Some(command), None) => {
                if file.bearer_token_env.is_some() {
                    return Err(ConfigError::new(format!(
                        "MCP server `{name}`: `bearer_token_env` is for servers with a `url`; \
                         give a child process its token through `env`"
                    )));
                }
                Self::stdio_with_env(
                    name,
                    command,
                    file.args.unwrap_or_default(),
                    file.env.unwrap_or_default(),
                )?
            }
            (None, Some(url)) => {
                if file.args.is_some() || file.env.is_some() {
                    return Err(ConfigError::new(format!(
                        "MCP server `{name}`: `args` and `env` are for servers with a \
                         `command`, not a `url`"
                    )));
                }
                let mut config = Self::http(&name, url)?;
                if let Some(variable) = file.bearer_token_env {
                    let token = std::env::var(&variable).map_err(|_| {
                        ConfigError::new(format!(
                            "MCP server `{name}`: `bearer_token_env` names `{variable}`, which \
                             is not set (or not UTF-8); export it or remove the field"
                        ))
                    })?;
                    config = config.with_bearer(Secret::new(token));
                }
                config
            }
            (Some(_), Some(_)) => {
                return Err(ConfigError::new(format!(
                    "MCP server `{name}` has both `command` and `url`; give one"
                )));
            }
            (None, None) => {
                return Err(ConfigError::new(format!(
                    "MCP server `{name}` has neither `command` nor `url`; give one"
                )));
            }
        };
        if let Some(seconds) = file.timeout_secs {
            let timeout = Duration::try_from_secs_f64(seconds)
                .ok()
                .filter(|timeout| !timeout.is_zero())
                .ok_or_else(|| {
                    ConfigError::new(format!(
                        "MCP server `{}`: `timeout_secs` must be a positive number of seconds, \
                         got {seconds}",
                        config.name
                    ))
                })?;
            config.timeout = timeout;
        }
        Ok(config)
    }
}

/// Checks a server name: it becomes the prefix of tool names.
fn validate_name(name: &str) -> Result<(), ConfigError> {
    if name.is_empty() || name.len() > MAX_SERVER_NAME_LEN {
        return Err(ConfigError::new(format!(
            "MCP server name `{name}` is {} bytes long; use 1 to {MAX_SERVER_NAME_LEN} ASCII \
             letters, digits, `_` or `-`",
            name.len()
        )));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
    {
        return Err(ConfigError::new(format!(
            "MCP server name `{name}` contains {c:?}; use only ASCII letters, digits, `_` and `-` \
             (it prefixes the server's tool names)"
        )));
    }
    Ok(())
}

fn is_http_url(text: &str) -> bool {
    let lower = text.get(..8).unwrap_or(text).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

fn check_url(url: &str) -> Result<(), ConfigError> {
    if !is_http_url(url) {
        return Err(ConfigError::new(format!(
            "MCP server URL `{}` must start with http:// or https://",
            crate::error::redact_url(url)
        )));
    }
    let host = url.split_once("://").map_or("", |(_, rest)| rest);
    if host.is_empty() || host.starts_with('/') || url.chars().any(char::is_whitespace) {
        return Err(ConfigError::new(format!(
            "MCP server URL `{}` has no host or contains spaces",
            crate::error::redact_url(url)
        )));
    }
    Ok(())
}

/// `KEY=value` with a shell variable name as the key.
fn env_assignment(word: &str) -> Option<(String, String)> {
    let (key, value) = word.split_once('=')?;
    let mut chars = key.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then(|| (key.to_owned(), value.to_owned()))
}

/// Splits a command line into words (see [`McpServerConfig::parse`] for the rules).
fn split_words(line: &str) -> Result<Vec<String>, ConfigError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(unterminated(line, "'")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(unterminated(line, "\"")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(unterminated(line, "\"")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => {
                        return Err(ConfigError::new(format!(
                            "MCP server command `{line}` ends with a lone `\\`"
                        )));
                    }
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

fn unterminated(line: &str, quote: &str) -> ConfigError {
    ConfigError::new(format!(
        "MCP server command `{line}` has an unterminated {quote} quote"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(config: &McpServerConfig) -> (&str, &[String], &BTreeMap<String, String>) {
        match &config.transport {
            Transport::Stdio { command, args, env } => (command, args, env),
            other => panic!("expected stdio, got {other:?}"),
        }
    }

    #[test]
    fn parses_a_command_line_like_a_shell() {
        let config =
            McpServerConfig::parse(r#"fs=A=1 B_2='two words' node "dir/a \"b\"" 'c d' e\ f -x"#)
                .unwrap();
        assert_eq!(config.name, "fs");
        let (command, args, env) = stdio(&config);
        assert_eq!(command, "node");
        assert_eq!(args, ["dir/a \"b\"", "c d", "e f", "-x"]);
        assert_eq!(env["A"], "1");
        assert_eq!(env["B_2"], "two words");
        assert_eq!(config.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn an_argument_with_equals_after_the_command_stays_an_argument() {
        let config = McpServerConfig::parse("x=server --level=3 A=B").unwrap();
        let (command, args, env) = stdio(&config);
        assert_eq!(command, "server");
        assert_eq!(args, ["--level=3", "A=B"]);
        assert!(env.is_empty());
    }

    #[test]
    fn parses_urls() {
        let config = McpServerConfig::parse("docs=HTTPS://example.com/mcp").unwrap();
        assert_eq!(
            config.transport,
            Transport::Http {
                url: "HTTPS://example.com/mcp".into(),
                bearer: None
            }
        );
        assert!(McpServerConfig::parse("docs=http://").is_err());
    }

    #[test]
    fn refuses_bad_specs_with_reasons() {
        for (spec, needle) in [
            ("no-equals", "NAME=COMMAND"),
            ("=node x", "1 to 32"),
            ("a.b=node", "contains '.'"),
            ("abcdefghijabcdefghijabcdefghijabc=node", "33 bytes"),
            ("x=", "no command"),
            ("x=A=1", "no command"),
            ("x=node 'open", "unterminated ' quote"),
            ("x=node \"open", "unterminated \" quote"),
            ("x=node \\", "lone"),
        ] {
            let error = McpServerConfig::parse(spec).unwrap_err().to_string();
            assert!(error.contains(needle), "{spec}: {error}");
        }
    }

    #[test]
    fn deserializes_the_file_form() {
        let config: McpServerConfig = serde_json::from_str(
            r#"{"name": "fs", "command": "node", "args": ["a"], "env": {"K": "v"},
                "timeout_secs": 1.5}"#,
        )
        .unwrap();
        let (command, args, env) = stdio(&config);
        assert_eq!(
            (command, args, env["K"].as_str()),
            ("node", &["a".to_owned()][..], "v")
        );
        assert_eq!(config.timeout, Duration::from_millis(1500));

        let config: McpServerConfig =
            serde_json::from_str(r#"{"name": "web", "url": "http://127.0.0.1:1/mcp"}"#).unwrap();
        assert!(matches!(
            config.transport,
            Transport::Http { bearer: None, .. }
        ));
    }

    #[test]
    fn file_form_errors_name_the_field() {
        for (json, needle) in [
            (
                r#"{"name": "a", "command": "x", "cwd": "/"}"#,
                "unknown field `cwd`",
            ),
            (r#"{"name": "a"}"#, "neither `command` nor `url`"),
            (
                r#"{"name": "a", "command": "x", "url": "http://h/"}"#,
                "both",
            ),
            (
                r#"{"name": "a", "url": "http://h/", "args": []}"#,
                "`args` and `env`",
            ),
            (
                r#"{"name": "a", "command": "x", "bearer_token_env": "T"}"#,
                "bearer_token_env",
            ),
            (
                r#"{"name": "a", "url": "http://h/", "bearer_token_env": "SKEIN_MCP_SURELY_UNSET"}"#,
                "`SKEIN_MCP_SURELY_UNSET`, which is not set",
            ),
            (
                r#"{"name": "a", "command": "x", "timeout_secs": 0}"#,
                "positive",
            ),
            (r#"{"name": "a b", "command": "x"}"#, "contains ' '"),
        ] {
            let error = serde_json::from_str::<McpServerConfig>(json)
                .unwrap_err()
                .to_string();
            assert!(error.contains(needle), "{json}: {error}");
        }
    }

    #[test]
    fn secrets_stay_out_of_debug_output() {
        let config = McpServerConfig::http("web", "https://h/mcp")
            .unwrap()
            .with_bearer(Secret::new("s3cr3t-token"));
        let debug = format!("{config:?}");
        assert!(!debug.contains("s3cr3t"), "{debug}");
        assert!(debug.contains("redacted"), "{debug}");
    }
}
