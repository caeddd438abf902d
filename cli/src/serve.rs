//! `skein serve`: the HTTP API.

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use clap::Args;
use providers::Provider;
use server::{Server, ServerConfig};
use service::Secret;
use service::keys::ProviderKeys;
use tokio::net::TcpListener;
use tools::HttpGetPolicy;

use crate::CliError;
use crate::common::db_location;

/// Arguments of `skein serve`.
#[derive(Debug, Args)]
#[command(after_help = "\
Without tokens the server answers loopback clients only, and only requests whose Host is a
loopback address, localhost or an --allow-hostname. Tokens are read from a file (one per line)
or from SKEIN_TOKENS (comma-separated), never from the command line; each token sees only the
conversations it started. Bodies must be JSON (Content-Type: application/json); requests from
web pages (an Origin header) are refused unless --cors-origin lists them. See SECURITY.md.

Examples:
  skein serve
  skein serve --listen 0.0.0.0:8080 --token-file tokens.txt
  skein serve --config skein.yaml        every setting of server::ServerConfig, as YAML
  skein serve --tool-root ./docs --allow-host api.github.com
  skein serve --mcp 'files=npx -y @modelcontextprotocol/server-filesystem .' --skills ./skills \\
    --kb docs

  curl -N http://127.0.0.1:8080/v1/response -H 'content-type: application/json' \\
    -d '{\"model_config\": {\"model_id\": \"echo\"}, \"input\": {\"text\": \"Hello\"}}'")]
pub(crate) struct ServeArgs {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// A YAML file with the server configuration (flags below override it).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A file of bearer tokens, one per line.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Responses one client may stream at once (more get 429).
    #[arg(long)]
    concurrency: Option<usize>,
    /// Largest request body in bytes.
    #[arg(long)]
    body_limit: Option<usize>,
    /// Threads that serve requests (default: one per CPU core). One thread spends the least
    /// CPU per streamed token (no hand-offs between threads); more spread a load heavier than
    /// one core over the cores.
    #[arg(long, value_name = "N")]
    workers: Option<NonZeroUsize>,
    /// Seconds in-flight responses may take to finish on shutdown (default 30); the server
    /// stops at most a second after it, whatever the clients do.
    #[arg(long, value_name = "SECS")]
    shutdown_grace: Option<u64>,
    /// Seconds a client has to send a request's headers, also how long an idle kept-alive
    /// connection stays open (default 10).
    #[arg(long, value_name = "SECS")]
    header_read_timeout: Option<u64>,
    /// Seconds a client has to send a request's body once its headers are in (default 30).
    #[arg(long, value_name = "SECS")]
    body_read_timeout: Option<u64>,
    /// Seconds a write to a client that stopped reading may stall before the connection is
    /// closed (default 60).
    #[arg(long, value_name = "SECS")]
    idle_timeout: Option<u64>,
    /// Client connections served at once; more get 503 (default 1024).
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// Largest server-sent event a provider may send, in bytes (default 8 MiB); a longer one
    /// ends the answer with an error naming this cap.
    #[arg(long, value_name = "BYTES")]
    max_sse_event_bytes: Option<usize>,
    /// Largest part of a provider's error body that is read, in bytes (default 64 KiB).
    #[arg(long, value_name = "BYTES")]
    max_error_body_bytes: Option<usize>,
    /// A `Host` name a server without tokens also answers to, besides loopback addresses and
    /// localhost (repeat for several).
    #[arg(long = "allow-hostname", value_name = "NAME")]
    allowed_hosts: Vec<String>,
    /// A web origin allowed to call the API from a browser, e.g. `https://app.example.com`
    /// (repeat for several; `*` for any). None by default: cross-origin requests get 403.
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    cors_origins: Vec<String>,
    /// Let requests choose `model_config.base_url` (the server's keys never go there).
    #[arg(long)]
    allow_request_base_url: bool,
    /// The endpoint for OpenAI models (any OpenAI-compatible server).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The directory read_file and list_files may read.
    #[arg(long, value_name = "DIR")]
    tool_root: Option<PathBuf>,
    /// A host http_get may fetch from (repeat for several).
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// An MCP server requests may use by name (`tools.mcp_servers: [{"name": NAME}]`):
    /// NAME=COMMAND [ARG…] (a program speaking MCP on stdio, started now) or NAME=https://…
    /// (streamable HTTP). Repeat for several.
    #[arg(long = "mcp", value_name = "NAME=COMMAND|URL")]
    mcp: Vec<String>,
    /// A directory of skills (folders holding a SKILL.md), or one skill folder, that requests
    /// may offer with `tools.skills`. Repeat for several.
    #[arg(long = "skills", value_name = "DIR")]
    skills: Vec<PathBuf>,
    /// A knowledge base every caller may search with knowledge_base_search (all of them when a
    /// request names none; add files with `skein kb add NAME FILES…`). No other base of the
    /// store is offered; a base for one token only is `token_knowledge_bases` in `--config`.
    /// Repeat for several.
    #[arg(long = "kb", value_name = "NAME")]
    knowledge_bases: Vec<String>,
}

impl ServeArgs {
    /// The threads to serve with, when given.
    pub(crate) fn workers(&self) -> Option<NonZeroUsize> {
        self.workers
    }
}

/// The log filter: `RUST_LOG` (else `info`), with the MCP SDK (`rmcp`) at `warn` unless
/// `RUST_LOG` names it. The SDK logs at info each server's whole handshake (one screenful per
/// server at every start) and every notification a server sends, whole: a server sending a
/// million of them would write a million lines. Skein logs notifications itself, at debug
/// and rate-limited (target `mcp::notification`).
fn log_filter(rust_log: Option<&str>) -> tracing_subscriber::EnvFilter {
    const DEFAULT: &str = "info,rmcp=warn";
    let directives = match rust_log.map(str::trim).filter(|given| !given.is_empty()) {
        Some(given) if given.contains("rmcp") => given.to_owned(),
        Some(given) => format!("{given},rmcp=warn"),
        None => DEFAULT.to_owned(),
    };
    tracing_subscriber::EnvFilter::try_new(directives)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT))
}

pub(crate) async fn run(args: &ServeArgs, db: Option<&str>) -> Result<(), CliError> {
    let config = config(args, db)?;
    let rust_log = std::env::var("RUST_LOG").ok();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(log_filter(rust_log.as_deref()))
        .with_writer(crate::redacted_log::RedactedStderr::new(config.redactor()))
        // Colour codes are for a terminal: in a log file or a journal they are noise.
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
    let access = if config.tokens.is_empty() {
        "no tokens: loopback clients only".to_owned()
    } else {
        format!("{} token(s)", config.tokens.len())
    };
    let store = service::store::redact(&config.service.store);
    let server = Server::new(config).await?;
    // Built before the first client arrives: otherwise its answer waits ~0.2 s while an async
    // worker builds tiktoken's encodings, and a few milliseconds more while the providers'
    // HTTP client reads the system's root certificates.
    let _ = tokio::task::spawn_blocking(|| {
        agent_loop::TokenCounter::preload();
        // A client that cannot be built now fails the first request instead, with the error.
        let _ = providers::preload_http_client();
    })
    .await;
    let listener = TcpListener::bind(args.listen).await?;
    let address = listener.local_addr()?;
    // Caught from before the server says it serves: a stop sent on that line is graceful.
    let stop = crate::signal::interrupted();
    let replica = server
        .service()
        .run_records()
        .map_or("none", |records| records.replica())
        .to_owned();
    say(format_args!(
        "skein: serving http://{address} ({access}; log: {store}; replica: {replica})"
    ));
    say(format_args!(
        "skein: POST /v1/response (Chat Shell), POST /v1/chat/completions, POST /v1/responses, \
         GET /v1/models, POST /v1/embeddings, GET /health, GET /openapi.json; Ctrl-C stops"
    ));
    server.serve(listener, shutdown_signal(stop)).await?;
    say(format_args!("skein: stopped"));
    Ok(())
}

/// The configuration: the file, then the flags, then the tokens and keys.
fn config(args: &ServeArgs, db: Option<&str>) -> Result<ServerConfig, CliError> {
    let mut config = match &args.config {
        Some(path) => {
            let text = read(path)?;
            serde_saphyr::from_str::<ServerConfig>(&text).map_err(|err| {
                CliError::Usage(format!(
                    "`{}` is not a server configuration: {err}",
                    path.display()
                ))
            })?
        }
        None => ServerConfig::default(),
    };
    // The store: --db wins, then the file, then the default log file.
    if db.is_some() || args.config.is_none() {
        config.service.store = db_location(db)?;
    }
    if let Some(n) = args.concurrency {
        config.concurrency_per_caller = n;
    }
    if let Some(limit) = args.body_limit {
        config.body_limit = limit;
    }
    if let Some(secs) = args.shutdown_grace {
        config.shutdown_grace_secs = secs;
    }
    if let Some(secs) = args.header_read_timeout {
        config.header_read_timeout_secs = secs;
    }
    if let Some(secs) = args.body_read_timeout {
        config.body_read_timeout_secs = secs;
    }
    if let Some(secs) = args.idle_timeout {
        config.idle_timeout_secs = secs;
    }
    if let Some(n) = args.max_connections {
        config.max_connections = n;
    }
    if let Some(bytes) = args.max_sse_event_bytes {
        config.service.provider_limits.max_sse_event_bytes = bytes;
    }
    if let Some(bytes) = args.max_error_body_bytes {
        config.service.provider_limits.max_error_body_bytes = bytes;
    }
    config
        .allowed_hosts
        .extend(args.allowed_hosts.iter().cloned());
    config
        .cors_origins
        .extend(args.cors_origins.iter().cloned());
    config.service.allow_request_base_url |= args.allow_request_base_url;
    if let Some(url) = &args.base_url {
        config.service.base_urls.set(Provider::OpenAi, url.clone());
    }
    if let Some(root) = &args.tool_root {
        config.service.tools.files_root = Some(root.clone());
    }
    if !args.allow_hosts.is_empty() {
        config.service.tools.http_get = Some(HttpGetPolicy::allow(args.allow_hosts.clone()));
    }
    #[cfg(feature = "mcp")]
    config
        .service
        .mcp_servers
        .extend(crate::common::mcp_configs(&args.mcp)?);
    #[cfg(not(feature = "mcp"))]
    crate::common::refuse_mcp(&args.mcp)?;
    config
        .service
        .skills_dirs
        .extend(args.skills.iter().cloned());
    config
        .service
        .knowledge_bases
        .extend(args.knowledge_bases.iter().cloned());
    if let Some(path) = &args.token_file {
        config.tokens.extend(tokens(&read(path)?, '\n'));
    }
    if let Ok(text) = std::env::var("SKEIN_TOKENS") {
        config.tokens.extend(tokens(&text, ','));
    }
    config.service.keys = ProviderKeys::from_env();
    Ok(config)
}

fn tokens(text: &str, separator: char) -> Vec<Secret> {
    text.split(separator)
        .map(str::trim)
        .filter(|token| !token.is_empty() && !token.starts_with('#'))
        .map(Secret::new)
        .collect()
}

fn read(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|source| CliError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// A line on stderr. A server outlives its stderr: a closed pipe (`skein serve | head -1` in a
/// start-up script) must not stop it, as `eprintln!` would by panicking.
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// `stop` (Ctrl-C, or SIGTERM on Unix: what service managers send), said on stderr.
async fn shutdown_signal(stop: impl Future<Output = ()>) {
    stop.await;
    say(format_args!(
        "skein: shutting down: finishing the responses in flight"
    ));
}

#[cfg(test)]
mod tests {
    use super::tokens;

    #[test]
    fn token_lists() {
        let parsed = tokens("alpha\n# a comment\n\n beta \n", '\n');
        assert_eq!(
            parsed.iter().map(|t| t.expose()).collect::<Vec<_>>(),
            ["alpha", "beta"]
        );
        assert_eq!(tokens("a, b,,", ',').len(), 2);
    }
}
