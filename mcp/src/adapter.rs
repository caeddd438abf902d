//! Everything that touches `rmcp`, the official Rust MCP SDK. It changes often: the rest of the
//! crate speaks only this module's [`Session`] and [`RemoteTool`], and the crate's own
//! [`McpServerInfo`], [`CallOutput`](crate::result::CallOutput) and [`McpError`].
//!
//! - stdio: the command runs in its own process group (so closing kills whatever it started)
//!   with a short allowlist of the environment plus the configured variables, its stderr read
//!   line by line into the `debug` log and a tail kept for errors. The transport
//!   ([`ChildTransport`], `stdio.rs`) is rmcp's line transport over the child's output held to
//!   one message's limit (`frames.rs`: an answer over it fails its call at once with
//!   [`McpError::MessageTooLarge`]), and shuts the child down as the spec says (close stdin,
//!   wait, SIGTERM, SIGKILL); `kill_on_drop` is the last resort when the runtime is gone, and a
//!   watchdog in its group kills it if Skein is killed (see `guard.rs`).
//! - streamable HTTP: a reqwest client (rustls with the `ring` provider) following only
//!   same-origin 307 and 308 redirects (any other is [`McpError::Redirected`], naming where it
//!   pointed), bearer token via `auth_header`, SSE resumption limited to a few quick retries so
//!   that a dead server fails a
//!   call instead of hanging it.
//! - calls: `call_tool_once`, whose future, when dropped before the answer (cancellation,
//!   timeout), makes rmcp send `notifications/cancelled` for the request.

use std::collections::VecDeque;
use std::error::Error as StdError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ContentBlock, CustomNotification, Implementation, ProgressNotificationParam, ResourceContents,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::{ClientInitializeError, NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError,
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::worker::WorkerQuitReason;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, ServiceExt as _};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::ChildStderr;
use tokio::sync::watch;

use crate::config::{McpServerConfig, Transport};
use crate::error::{McpError, redact_url};
use crate::frames::{TOO_LARGE_CODE, TOO_LARGE_MARKER};
use crate::guard::{self, GroupGuard};
use crate::notifications::NotificationLog;
use crate::result::{CallOutput, Part};
use crate::server::McpServerInfo;
use crate::stdio::ChildTransport;

/// Variables a stdio server inherits from Skein's environment (plus every `LC_*`).
const INHERITED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "TZ", "LANG",
];
/// How many stderr lines are kept for error messages, and how long each may be.
const STDERR_LINES: usize = 5;
const STDERR_LINE_CHARS: usize = 300;
/// How long to wait for a dead child's last stderr lines before reporting it.
const STDERR_DRAIN: Duration = Duration::from_millis(300);
/// How long closing may take before it gives up waiting (the child is killed regardless).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(8);

type Client = RunningService<RoleClient, Handler>;
type HttpError = StreamableHttpError<reqwest::Error>;

/// A tool as the server lists it.
#[derive(Clone, Debug)]
pub(crate) struct RemoteTool {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) input_schema: Map<String, Value>,
}

/// Skein's side of a connection: its client information, and what the server notifies
/// written to the [`NotificationLog`] (debug, rate-limited) instead of the SDK's default of
/// dropping it.
struct Handler {
    info: ClientConfig,
    log: NotificationLog,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    #[expect(
        deprecated,
        reason = "servers still send log messages; they are only logged"
    )]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.log.note("notifications/message", || {
            let logger = params.logger.as_deref().unwrap_or("-");
            format!("{:?} {logger} {}", params.level, params.data)
        });
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.log.note("notifications/progress", || {
            let total = params
                .total
                .map(|total| format!(" of {total}"))
                .unwrap_or_default();
            let message = params.message.as_deref().unwrap_or_default();
            format!("{}{total} {message}", params.progress)
        });
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.log
            .note("notifications/resources/updated", || params.uri.clone());
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.log
            .note("notifications/tools/list_changed", String::new);
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        self.log.note(&notification.method, || {
            notification
                .params
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
        });
    }
}

/// One live connection to a server.
pub(crate) struct Session {
    server: String,
    peer: Peer<RoleClient>,
    /// Taken by [`close`](Session::close). Dropped with the session, it cancels its task,
    /// which shuts the transport (and child) down; without a runtime, `kill_on_drop` kills the
    /// child when the task is dropped.
    client: tokio::sync::Mutex<Option<Client>>,
    pid: Option<u32>,
    /// Kills the child's process group if this process dies without closing the session
    /// (stdio only); dropped after the client, so after a graceful shutdown.
    _guard: Option<GroupGuard>,
    /// The HTTP endpoint, redacted, for messages.
    url: Option<String>,
    stderr: Option<StderrTail>,
    /// What "stopped" means for this transport, for messages.
    closed_detail: &'static str,
}

impl Session {
    /// Starts or reaches the server, runs the handshake and lists every tool (all pages), all
    /// within `config.timeout`.
    pub(crate) async fn connect(
        config: &McpServerConfig,
    ) -> Result<(Session, Vec<RemoteTool>, McpServerInfo), McpError> {
        let server = config.name.clone();
        let timeout = config.timeout;
        // One deadline for both steps: connecting as a whole takes at most `timeout`.
        let deadline = tokio::time::Instant::now() + timeout;
        let (session, info) = match tokio::time::timeout_at(deadline, Self::start(config)).await {
            Ok(started) => started?,
            Err(_) => {
                return Err(McpError::Timeout {
                    server,
                    during: "connecting (start and MCP handshake)",
                    timeout,
                });
            }
        };
        let tools = match tokio::time::timeout_at(deadline, session.peer.list_all_tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(error)) => {
                let error = session.service_error(error).await;
                session.close().await;
                return Err(error);
            }
            Err(_) => {
                session.close().await;
                return Err(McpError::Timeout {
                    server,
                    during: "listing its tools",
                    timeout,
                });
            }
        };
        let tools = tools
            .into_iter()
            .map(|tool| RemoteTool {
                name: tool.name.into_owned(),
                title: tool
                    .title
                    .or_else(|| tool.annotations.and_then(|annotations| annotations.title)),
                description: tool.description.map(|description| description.into_owned()),
                input_schema: Arc::unwrap_or_clone(tool.input_schema),
            })
            .collect();
        Ok((session, tools, info))
    }

    async fn start(config: &McpServerConfig) -> Result<(Session, McpServerInfo), McpError> {
        let server = config.name.clone();
        let client_config = Handler {
            info: ClientConfig::new(
                ClientCapabilities::default(),
                Implementation::new("skein", env!("CARGO_PKG_VERSION")),
            ),
            log: NotificationLog::new(&server, config.redactor()),
        };
        let (client, pid, guard, url, stderr, closed_detail) = match &config.transport {
            Transport::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).env_clear().kill_on_drop(true);
                for (key, value) in std::env::vars_os() {
                    let inherited = key
                        .to_str()
                        .is_some_and(|key| INHERITED_ENV.contains(&key) || key.starts_with("LC_"));
                    if inherited {
                        cmd.env(key, value);
                    }
                }
                cmd.envs(env);
                let mut wrapped = CommandWrap::from(cmd);
                wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
                let (child, stderr) = ChildTransport::spawn(wrapped)
                    .map_err(|source| spawn_error(&server, command, source))?;
                let pid = child.id();
                let guard = match pid {
                    Some(pid) => guard::watch(pid).await.map_or_else(
                        |error| {
                            tracing::warn!(
                                server = %server,
                                %error,
                                "cannot start the watchdog that stops the MCP server if Skein is \
                                 killed; it may outlive a killed Skein"
                            );
                            None
                        },
                        Some,
                    ),
                    None => None,
                };
                let tail =
                    stderr.map(|stderr| StderrTail::start(&server, stderr, config.redactor()));
                let client = match client_config.serve(child).await {
                    Ok(client) => client,
                    Err(error) => {
                        let stderr = match &tail {
                            Some(tail) => tail.settled().await,
                            None => None,
                        };
                        return Err(McpError::Handshake {
                            server,
                            reason: init_reason(&error),
                            stderr,
                        });
                    }
                };
                (
                    client,
                    pid,
                    guard,
                    None,
                    tail,
                    "its process exited or closed its output",
                )
            }
            Transport::Http { url, bearer } => {
                install_crypto_provider();
                let mut transport_config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(bearer) = bearer {
                    transport_config = transport_config.auth_header(bearer.expose());
                }
                // Resuming a broken response stream: a few quick tries, then the request fails.
                let mut retry = ExponentialBackoff::default();
                retry.max_times = Some(2);
                retry.base_duration = Duration::from_millis(100);
                retry.max_delay = Some(Duration::from_millis(500));
                transport_config.retry_config = Arc::new(retry);
                let transport = StreamableHttpClientTransport::with_client(
                    http_client(&server, url)?,
                    transport_config,
                );
                let client = client_config
                    .serve(transport)
                    .await
                    .map_err(|error| http_init_error(&server, url, &error))?;
                (
                    client,
                    None,
                    None,
                    Some(redact_url(url)),
                    None,
                    "its HTTP connection failed or closed",
                )
            }
        };
        let info = client
            .peer()
            .peer_info()
            .map(|peer| McpServerInfo {
                name: peer.server_info.as_ref().map(|i| i.name.clone()),
                version: peer.server_info.as_ref().map(|i| i.version.clone()),
                instructions: peer.instructions.clone(),
            })
            .unwrap_or_default();
        let session = Session {
            server: config.name.clone(),
            peer: client.peer().clone(),
            client: tokio::sync::Mutex::new(Some(client)),
            pid,
            _guard: guard,
            url,
            stderr,
            closed_detail,
        };
        Ok((session, info))
    }

    /// The child's process id (stdio only).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Whether the connection is known to be gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    /// The error for a session that is known to be gone.
    pub(crate) async fn stopped(&self) -> McpError {
        McpError::Stopped {
            server: self.server.clone(),
            detail: self.closed_detail.to_owned(),
            stderr: self.stderr_tail().await,
        }
    }

    /// Calls `tool` with `arguments`. Dropping the future before it finishes cancels the
    /// request on the server (`notifications/cancelled`).
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallOutput, McpError> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        match self.peer.call_tool_once(params).await {
            Ok(CallToolResponse::Complete(result)) => self.output(result),
            Ok(CallToolResponse::InputRequired(_)) => Err(McpError::Protocol {
                server: self.server.clone(),
                message: format!(
                    "tool `{tool}` asked the client for more input (elicitation or sampling), \
                     which Skein does not support"
                ),
            }),
            Ok(CallToolResponse::Task(_)) => Err(McpError::Protocol {
                server: self.server.clone(),
                message: format!(
                    "tool `{tool}` answered with a task to poll, which Skein does not support"
                ),
            }),
            Ok(_) => Err(McpError::Protocol {
                server: self.server.clone(),
                message: format!(
                    "tool `{tool}` answered with a kind of result Skein does not know"
                ),
            }),
            Err(error) => Err(self.service_error(error).await),
        }
    }

    /// Ends the session: the child process is shut down (stdin closed, then SIGTERM, then
    /// SIGKILL) or the HTTP session deleted. Later calls fail as stopped.
    pub(crate) async fn close(&self) {
        let client = self.client.lock().await.take();
        if let Some(mut client) = client {
            let _ = client.close_with_timeout(CLOSE_TIMEOUT).await;
        }
    }

    async fn stderr_tail(&self) -> Option<String> {
        match &self.stderr {
            Some(tail) => tail.settled().await,
            None => None,
        }
    }

    fn output(&self, result: CallToolResult) -> Result<CallOutput, McpError> {
        let decode = |what: &str, data: &str| {
            lenient_base64(data).map_err(|error| McpError::Protocol {
                server: self.server.clone(),
                message: format!("a tool result's {what} is not valid base64: {error}"),
            })
        };
        let mut parts = Vec::with_capacity(result.content.len());
        for block in result.content {
            parts.push(match block {
                ContentBlock::Text(text) => Part::Text(text.text),
                ContentBlock::Image(image) => Part::Media {
                    data: decode("image", &image.data)?,
                    mime_type: image.mime_type,
                },
                ContentBlock::Audio(audio) => Part::Media {
                    data: decode("audio", &audio.data)?,
                    mime_type: audio.mime_type,
                },
                ContentBlock::Resource(embedded) => match embedded.resource {
                    ResourceContents::TextResourceContents { uri, text, .. } => {
                        Part::ResourceText { uri, text }
                    }
                    ResourceContents::BlobResourceContents {
                        uri,
                        mime_type,
                        blob,
                        ..
                    } => Part::ResourceBlob {
                        data: decode("resource blob", &blob)?,
                        uri,
                        mime_type: mime_type
                            .unwrap_or_else(|| "application/octet-stream".to_owned()),
                    },
                    other => Part::Text(to_json_text(&other)),
                },
                ContentBlock::ResourceLink(link) => Part::Link {
                    uri: link.uri,
                    name: link.title.unwrap_or(link.name),
                    description: link.description,
                    mime_type: link.mime_type,
                },
                other => Part::Text(to_json_text(&other)),
            });
        }
        Ok(CallOutput {
            parts,
            structured: result.structured_content,
            is_error: result.is_error.unwrap_or(false),
        })
    }

    /// An rmcp request error in this crate's terms.
    async fn service_error(&self, error: ServiceError) -> McpError {
        let server = self.server.clone();
        match error {
            ServiceError::McpError(data)
                if data.code.0 == TOO_LARGE_CODE
                    && data
                        .data
                        .as_ref()
                        .is_some_and(|d| d.get(TOO_LARGE_MARKER).is_some()) =>
            {
                McpError::MessageTooLarge {
                    server,
                    limit_bytes: crate::frames::MAX_MESSAGE_BYTES,
                }
            }
            ServiceError::McpError(data) => McpError::Rejected {
                server,
                code: data.code.0,
                message: data.message.into_owned(),
            },
            ServiceError::TransportClosed | ServiceError::Cancelled { .. } => self.stopped().await,
            ServiceError::TransportSend(error) => {
                let error: &(dyn StdError + 'static) = &error;
                let url = self.url.clone().unwrap_or_default();
                if let Some(refused) = refused_redirect(error) {
                    return refused.error(server, url);
                }
                match http_status(error) {
                    Some(status) => McpError::HttpStatus {
                        server,
                        url,
                        status,
                    },
                    None => McpError::Stopped {
                        server,
                        detail: format!("{}: {}", self.closed_detail, innermost_message(error)),
                        stderr: self.stderr_tail().await,
                    },
                }
            }
            ServiceError::Timeout { timeout } => McpError::Timeout {
                server,
                during: "a request",
                timeout,
            },
            other => McpError::Protocol {
                server,
                message: other.to_string(),
            },
        }
    }
}

/// The last lines of a child's stderr, read in the background.
struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    done: watch::Receiver<bool>,
}

impl StderrTail {
    /// Reads `stderr`, each line redacted by `redactor` before it is logged or cut for the tail
    /// (a cut secret would no longer be recognised).
    fn start(server: &str, stderr: ChildStderr, redactor: messages::Redactor) -> StderrTail {
        let lines = Arc::new(Mutex::new(VecDeque::new()));
        let (done_tx, done) = watch::channel(false);
        let kept = Arc::clone(&lines);
        let server = server.to_owned();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                let line = redactor.redact(&line);
                tracing::debug!(target: "mcp::stderr", server = %server, "{line}");
                let line: String = line.chars().take(STDERR_LINE_CHARS).collect();
                if line.trim().is_empty() {
                    continue;
                }
                let mut kept = kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                if kept.len() == STDERR_LINES {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
            let _ = done_tx.send(true);
        });
        StderrTail { lines, done }
    }

    /// The tail once stderr has closed (waiting briefly for a dying child's last words).
    async fn settled(&self) -> Option<String> {
        let mut done = self.done.clone();
        let _ = tokio::time::timeout(STDERR_DRAIN, done.wait_for(|done| *done)).await;
        let lines = self
            .lines
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        (!lines.is_empty()).then(|| lines.iter().cloned().collect::<Vec<_>>().join(" | "))
    }
}

fn spawn_error(server: &str, command: &str, source: std::io::Error) -> McpError {
    let reason = match source.kind() {
        std::io::ErrorKind::NotFound => {
            "no such program; install it, or give its full path (it is looked up on PATH)"
                .to_owned()
        }
        std::io::ErrorKind::PermissionDenied => {
            "permission denied; check that it is an executable file".to_owned()
        }
        _ => source.to_string(),
    };
    McpError::Spawn {
        server: server.to_owned(),
        command: command.to_owned(),
        reason,
        source,
    }
}

fn init_reason(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::ConnectionClosed(_) => {
            "it closed the connection before answering `initialize`".to_owned()
        }
        ClientInitializeError::JsonRpcError(data) => format!(
            "it answered `initialize` with error {}: {}",
            data.code.0, data.message
        ),
        ClientInitializeError::TransportError { error, .. } => {
            let error: &(dyn StdError + 'static) = error;
            innermost_message(error)
        }
        other => other.to_string(),
    }
}

fn http_init_error(server: &str, url: &str, error: &ClientInitializeError) -> McpError {
    let shown_url = redact_url(url);
    let transport_error = match error {
        ClientInitializeError::TransportError { error, .. } => Some(error),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => match fallback.as_ref() {
            ClientInitializeError::TransportError { error, .. } => Some(error),
            _ => None,
        },
        _ => None,
    };
    if let Some(error) = transport_error {
        let error: &(dyn StdError + 'static) = error;
        if let Some(refused) = refused_redirect(error) {
            return refused.error(server.to_owned(), shown_url);
        }
        if let Some(status) = http_status(error) {
            return McpError::HttpStatus {
                server: server.to_owned(),
                url: shown_url,
                status,
            };
        }
        if let Some(reason) = unreachable_reason(error) {
            return McpError::Unreachable {
                server: server.to_owned(),
                url: shown_url,
                reason,
            };
        }
    }
    McpError::Handshake {
        server: server.to_owned(),
        reason: init_reason(error),
        stderr: None,
    }
}

/// How many same-origin redirects one request may follow.
const MAX_REDIRECTS: usize = 10;

/// The client for a streamable-HTTP server. It follows only same-origin 307 and 308 redirects
/// (they keep the method and body, so the message arrives intact, and reach the same server);
/// any other redirect fails the request with a [`RefusedRedirect`]: one to another origin would
/// carry the bearer token, the session id and the message there, and a 301, 302 or 303 would
/// turn the POST into a GET without its message. Idle connections are not kept (as rmcp's own
/// client does: reusing one whose last body was not read to the end stalls on delayed ACKs).
fn http_client(server: &str, url: &str) -> Result<reqwest::Client, McpError> {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let status = attempt.status();
        let keeps_body = matches!(
            status,
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            let refused = RefusedRedirect {
                status: status.as_u16(),
                location: redact_url(attempt.url().as_str()),
            };
            attempt.error(refused)
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(policy)
        .build()
        .map_err(|error| McpError::Unreachable {
            server: server.to_owned(),
            url: redact_url(url),
            reason: format!("the HTTP client cannot be built ({error})"),
        })
}

/// A redirect [`http_client`] did not follow.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status} redirect to {location} not followed")]
struct RefusedRedirect {
    status: u16,
    /// Without credentials or query string.
    location: String,
}

impl RefusedRedirect {
    fn error(&self, server: String, url: String) -> McpError {
        McpError::Redirected {
            server,
            url,
            status: self.status,
            location: self.location.clone(),
        }
    }
}

/// The redirect an error chain says was refused, if any.
fn refused_redirect<'a>(error: &'a (dyn StdError + 'static)) -> Option<&'a RefusedRedirect> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(refused) = error.downcast_ref::<RefusedRedirect>() {
            return Some(refused);
        }
        let client = match error.downcast_ref::<HttpError>() {
            Some(StreamableHttpError::Client(client)) => Some(client),
            _ => match error.downcast_ref::<WorkerQuitReason<HttpError>>() {
                Some(WorkerQuitReason::Fatal {
                    error: StreamableHttpError::Client(client),
                    ..
                }) => Some(client),
                _ => None,
            },
        };
        if let Some(client) = client {
            let client: &(dyn StdError + 'static) = client;
            if let Some(refused) = refused_redirect(client) {
                return Some(refused);
            }
        }
        current = error.source();
    }
    None
}

/// The HTTP status an error chain carries, if it is an HTTP status error.
fn http_status(error: &(dyn StdError + 'static)) -> Option<u16> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(status) = http_status_of(error) {
            return Some(status);
        }
        if let Some(WorkerQuitReason::Fatal { error, .. }) =
            error.downcast_ref::<WorkerQuitReason<HttpError>>()
            && let Some(status) = http_status_of(error)
        {
            return Some(status);
        }
        current = error.source();
    }
    None
}

fn http_status_of(error: &(dyn StdError + 'static)) -> Option<u16> {
    if let Some(error) = error.downcast_ref::<HttpError>() {
        return match error {
            StreamableHttpError::AuthRequired(_) => Some(401),
            StreamableHttpError::InsufficientScope(_) => Some(403),
            StreamableHttpError::SessionExpired => Some(404),
            StreamableHttpError::HttpStatus(status) => Some(status.status),
            StreamableHttpError::UnexpectedServerResponse(text) => status_in_text(text),
            StreamableHttpError::Client(error) => error.status().map(|status| status.as_u16()),
            _ => None,
        };
    }
    if let Some(status) = error.downcast_ref::<HttpStatusError>() {
        return Some(status.status);
    }
    if error.downcast_ref::<AuthRequiredError>().is_some() {
        return Some(401);
    }
    if error.downcast_ref::<InsufficientScopeError>().is_some() {
        return Some(403);
    }
    if let Some(error) = error.downcast_ref::<reqwest::Error>() {
        return error.status().map(|status| status.as_u16());
    }
    None
}

/// `HTTP 401 Unauthorized: …` → 401.
fn status_in_text(text: &str) -> Option<u16> {
    let rest = text.strip_prefix("HTTP ")?;
    let code = rest.get(..3)?;
    code.parse().ok().filter(|code| (100..600).contains(code))
}

/// Why a server could not be reached, if that is what the error chain says.
fn unreachable_reason(error: &(dyn StdError + 'static)) -> Option<String> {
    let mut current = Some(error);
    while let Some(error) = current {
        let client = error
            .downcast_ref::<reqwest::Error>()
            .or_else(|| match error.downcast_ref::<HttpError>() {
                Some(StreamableHttpError::Client(error)) => Some(error),
                _ => None,
            })
            .or_else(
                || match error.downcast_ref::<WorkerQuitReason<HttpError>>() {
                    Some(WorkerQuitReason::Fatal {
                        error: StreamableHttpError::Client(error),
                        ..
                    }) => Some(error),
                    _ => None,
                },
            );
        if let Some(client) = client
            && (client.is_connect() || client.is_timeout() || client.is_request())
        {
            let error: &(dyn StdError + 'static) = client;
            return Some(innermost_message(error));
        }
        current = error.source();
    }
    None
}

/// The most specific message of an error chain (the root cause, e.g. `Connection refused`),
/// with URLs in it redacted.
fn innermost_message(error: &(dyn StdError + 'static)) -> String {
    let mut innermost = error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    let message = innermost.to_string();
    message
        .split(' ')
        .map(|word| {
            if word.contains("://") {
                redact_url(word.trim_matches(|c| matches!(c, '(' | ')' | ',')))
            } else {
                word.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn lenient_base64(data: &str) -> Result<Vec<u8>, base64::DecodeError> {
    const ENGINE: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    ENGINE.decode(compact)
}

fn to_json_text(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// reqwest is built without a TLS crypto provider of its own (to avoid aws-lc); install
/// rustls' `ring` provider for the process, unless one is installed already.
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race with another installer is fine: a provider is installed either way.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_read_from_messages() {
        assert_eq!(status_in_text("HTTP 401 Unauthorized: nope"), Some(401));
        assert_eq!(status_in_text("HTTP 9"), None);
        assert_eq!(status_in_text("nothing"), None);
    }

    #[test]
    fn base64_is_read_leniently() {
        assert_eq!(lenient_base64("aGk=").unwrap(), b"hi");
        assert_eq!(lenient_base64("aGk").unwrap(), b"hi");
        assert_eq!(lenient_base64("aG\nk=").unwrap(), b"hi");
        assert!(lenient_base64("!!").is_err());
    }
}
