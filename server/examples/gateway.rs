//! Gateway scenario (`cargo xtask bench gateway`): `skein serve` and LiteLLM's proxy in front of
//! the same loopback provider, driven by the same client, beside the provider alone.
//!
//! ```text
//! cargo build --release -p cli --bin skein
//! cargo run --release -p server --features testing --example gateway -- \
//!     --skein target/release/skein --litellm target/xtask-litellm/venv/bin/litellm \
//!     --seconds 20 --concurrency 50,200
//! ```
//!
//! Every row of the report starts its processes afresh: the provider (a child process of this
//! example started with `--provider`, streaming `deltas` OpenAI Chat Completions chunks per
//! answer, `delay-ms` apart: the bytes of `server::testing::StreamingProvider`) and, unless the
//! row is the provider itself, the gateway in front of it. Then the client sends one request
//! alone (the first after start), five more one after another (the same request once
//! everything is warm), and then keeps `concurrency` streams going on keep-alive connections
//! for `seconds`, their starts spread over one answer's duration.
//!
//! The provider sets `TCP_NODELAY` on its connections; `StreamingProvider` does not, and then
//! every delta written while the previous one is unacknowledged waits for the reader's delayed
//! ACK (about 40 ms on Linux), which would make the floor itself 40 ms. `--provider-nagle on`
//! runs `StreamingProvider` as it is, to see that.
//!
//! A target is a name, a URL, a body builder and a reader of its server-sent events (which
//! events carry answer text, which one ends the stream, which one is an error). A stream counts
//! as complete only when its text is exactly the provider's (`w0 w1 … `) and its end marker
//! came; anything else (an HTTP error, an error event, a short or reordered text, a stream cut
//! early, no answer within two minutes) is a failure. Time to first token is measured from
//! sending the request to the first event that carries answer text; time to first event (any
//! event: Skein's `response.start` comes before the provider answers) is reported beside it.
//! `--samples-dir DIR` writes both for every stream, with its start time, to `DIR/<row>.tsv`.
//!
//! Server CPU time is the user and system time of the server's whole process tree (the
//! process, every live descendant, and the children it has reaped), from `/proc/<pid>/stat`
//! before and after the load; per delta means divided by the answer pieces the clients
//! received. Peak RSS is the sum of `VmHWM` over the tree at the end of the load. For the
//! direct row the server is the provider's process. The client's own CPU time is reported too:
//! client, provider and server share the machine's cores.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::serve::ListenerExt as _;
use serde::Deserialize;
use server::testing::StreamingProvider;

/// How long a gateway may take to answer its health check after it starts.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long one stream may take, from sending the request to its last byte.
const STREAM_TIMEOUT: Duration = Duration::from_secs(120);
/// Requests sent one after another after the first, once everything is warm.
const WARM_REQUESTS: usize = 5;
/// Failure messages printed per row (the rest are only counted).
const SHOWN_FAILURES: usize = 5;
/// The model name every target is asked for; each gateway maps it to the loopback provider.
const MODEL: &str = "gpt-4o-mini";
/// Variables removed from the gateways' environment besides every `*_API_KEY` (each provider's
/// key variable, whatever providers there are), so that no real key is sent anywhere, even to
/// loopback, and no gateway reaches past it.
const KEY_VARIABLES: &[&str] = &[
    "SKEIN_TOKENS",
    "SKEIN_DB",
    "DATABASE_URL",
    "LITELLM_MASTER_KEY",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];
/// The dummy key the gateways send to the loopback provider (it accepts any).
const DUMMY_KEY: &str = "sk-loopback-bench";

#[derive(Debug, Clone)]
struct Options {
    seconds: u64,
    concurrency: Vec<usize>,
    deltas: usize,
    delay_ms: u64,
    skein: Option<PathBuf>,
    litellm: Option<PathBuf>,
    litellm_note: Option<String>,
    only: Option<Vec<String>>,
    work_dir: Option<PathBuf>,
    provider_nagle: bool,
    samples_dir: Option<PathBuf>,
}

const USAGE: &str = "usage: gateway [--seconds S] [--concurrency 50,200] [--deltas N] [--delay-ms MS] \
[--skein PATH] [--litellm PATH | --litellm-note TEXT] [--only direct,skein,skein-chat,skein-responses,litellm] \
[--work-dir DIR] [--provider-nagle on|off] [--samples-dir DIR]";

fn options(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        seconds: 20,
        concurrency: vec![50, 200],
        deltas: 500,
        delay_ms: 1,
        skein: None,
        litellm: None,
        litellm_note: None,
        only: None,
        work_dir: None,
        provider_nagle: false,
        samples_dir: None,
    };
    for pair in args.chunks(2) {
        let [name, value] = pair else {
            return Err(format!("`{}` needs a value\n{USAGE}", pair[0]));
        };
        let number = |text: &str| {
            text.trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{name}: `{text}` is not a positive number"))
        };
        match name.as_str() {
            "--seconds" => options.seconds = number(value)?,
            "--concurrency" => {
                options.concurrency = value
                    .split(',')
                    .map(|n| number(n).map(|n| n as usize))
                    .collect::<Result<_, _>>()?;
            }
            "--deltas" => options.deltas = number(value)? as usize,
            "--delay-ms" => options.delay_ms = number(value)?,
            "--skein" => options.skein = Some(PathBuf::from(value)),
            "--litellm" => options.litellm = Some(PathBuf::from(value)),
            "--litellm-note" => options.litellm_note = Some(value.clone()),
            "--only" => options.only = Some(value.split(',').map(str::to_owned).collect()),
            "--work-dir" => options.work_dir = Some(PathBuf::from(value)),
            "--samples-dir" => options.samples_dir = Some(PathBuf::from(value)),
            "--provider-nagle" => {
                options.provider_nagle = match value.as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(format!("--provider-nagle: `{value}` is not on or off")),
                }
            }
            other => return Err(format!("unknown option `{other}`\n{USAGE}")),
        }
    }
    Ok(options)
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("--provider") {
        provider(&args[1..])
    } else if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{USAGE}");
        Ok(())
    } else {
        options(&args).and_then(drive)
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("gateway: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The provider process

/// The child: the loopback provider, its base URL printed on stdout, until stdin closes.
fn provider(args: &[String]) -> Result<(), String> {
    let options = options(args)?;
    let delay = Duration::from_millis(options.delay_ms);
    let runtime = runtime()?;
    runtime.block_on(async {
        let stdin_closed = async {
            let _ = tokio::task::spawn_blocking(|| {
                let mut sink = String::new();
                while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
            })
            .await;
        };
        if options.provider_nagle {
            let provider = StreamingProvider::start(options.deltas, delay)
                .await
                .map_err(|err| format!("cannot start the loopback provider: {err}"))?;
            announce(&provider.base_url())?;
            stdin_closed.await;
            return Ok(());
        }
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|err| format!("cannot start the loopback provider: {err}"))?;
        let address = listener.local_addr().map_err(|err| err.to_string())?;
        announce(&format!("http://{address}/v1"))?;
        let deltas = options.deltas;
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            axum::routing::post(move || stream_answer(deltas, delay)),
        );
        // Each delta is written as soon as it is produced: without TCP_NODELAY a delta that
        // follows an unacknowledged write waits for the peer's delayed ACK (up to 40 ms).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(stdin_closed)
            .await
            .map_err(|err| format!("the loopback provider failed: {err}"))
    })
}

fn announce(base_url: &str) -> Result<(), String> {
    println!("{base_url}");
    std::io::stdout().flush().map_err(|err| err.to_string())
}

/// `StreamingProvider`'s answer, byte for byte: `deltas` chunks `"w0 "`, `"w1 "`, … each after
/// `delay`, a finish chunk, a usage chunk and `data: [DONE]`.
async fn stream_answer(deltas: usize, delay: Duration) -> axum::response::Response {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value, usage: serde_json::Value| {
        let payload = serde_json::json!({
            "id": "chatcmpl-loopback",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "loopback",
            "choices": if usage.is_null() {
                serde_json::json!([{"index": 0, "delta": delta, "finish_reason": finish}])
            } else {
                serde_json::json!([])
            },
            "usage": usage,
        });
        bytes::Bytes::from(format!("data: {payload}\n\n"))
    };
    let body = futures::stream::unfold(0usize, move |step| async move {
        use serde_json::json;
        let frame = match step {
            _ if step < deltas => {
                tokio::time::sleep(delay).await;
                chunk(
                    json!({"content": format!("w{step} ")}),
                    json!(null),
                    json!(null),
                )
            }
            _ if step == deltas => chunk(json!({}), json!("stop"), json!(null)),
            _ if step == deltas + 1 => chunk(
                json!({}),
                json!(null),
                json!({"prompt_tokens": 1, "completion_tokens": deltas, "total_tokens": deltas + 1}),
            ),
            _ if step == deltas + 2 => bytes::Bytes::from_static(b"data: [DONE]\n\n"),
            _ => return None,
        };
        Some((Ok::<_, std::convert::Infallible>(frame), step + 1))
    });
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from_stream(body))
        .unwrap_or_default()
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("cannot start the async runtime: {err}"))
}

// ---------------------------------------------------------------------------------------------
// Targets

/// What one server-sent event meant to the client.
enum Seen {
    /// A piece of answer text.
    Text(String),
    /// The stream's end marker.
    Done,
    /// An error event (its payload).
    Error(String),
    /// Anything else (a start event, usage, a comment).
    Other,
}

/// A server under test: how to ask it for an answer and how to read its stream.
#[derive(Clone)]
struct Target {
    /// The row's name.
    name: &'static str,
    /// The streaming endpoint.
    url: String,
    /// The JSON body of a request asking `prompt`.
    body: BodyFn,
    /// How its events are read.
    read: Reader,
}

/// Builds the JSON body of a request asking a prompt.
type BodyFn = fn(&str) -> String;

/// How a target's server-sent events say what they carry.
#[derive(Clone, Copy)]
enum Reader {
    /// OpenAI Chat Completions: unnamed `data:` chunks, text in `choices[].delta.content`,
    /// ended by `data: [DONE]`.
    Chunks,
    /// Named events (Skein's Chat Shell, OpenAI Responses): the text is one field of one
    /// event's JSON payload, one event ends the stream, others are errors.
    Named(NamedEvents),
}

#[derive(Clone, Copy)]
struct NamedEvents {
    /// The event that carries a piece of answer text.
    delta: &'static str,
    /// Its payload's field that holds the text.
    field: TextField,
    /// The event that ends a whole answer.
    done: &'static str,
    /// Events that end the stream with an error.
    errors: &'static [&'static str],
}

#[derive(Clone, Copy)]
enum TextField {
    Text,
    Delta,
}

/// Skein's Chat Shell events (`POST /v1/response`).
const CHAT_SHELL_EVENTS: NamedEvents = NamedEvents {
    delta: "content.delta",
    field: TextField::Text,
    done: "response.done",
    errors: &["response.error", "response.cancelled"],
};

/// OpenAI Responses events (`POST /v1/responses` with `"stream": true`).
const RESPONSES_EVENTS: NamedEvents = NamedEvents {
    delta: "response.output_text.delta",
    field: TextField::Delta,
    done: "response.completed",
    errors: &["response.failed", "response.incomplete", "error"],
};

impl Reader {
    /// Reads one server-sent event: its `event:` name (empty when it has none) and `data:`
    /// text.
    fn read(self, event: &str, data: &str) -> Seen {
        match self {
            Reader::Chunks => chat_completions_read(event, data),
            Reader::Named(named) => named.read(event, data),
        }
    }
}

/// The text fields a named event's payload may carry.
#[derive(Deserialize)]
struct TextPayload<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
}

impl NamedEvents {
    fn read(self, event: &str, data: &str) -> Seen {
        if event == self.delta {
            return match serde_json::from_str::<TextPayload<'_>>(data) {
                Ok(payload) => {
                    let text = match self.field {
                        TextField::Text => payload.text,
                        TextField::Delta => payload.delta,
                    };
                    match text {
                        Some(text) => Seen::Text(text.into_owned()),
                        None => Seen::Error(format!("{event} without its text: {data}")),
                    }
                }
                Err(err) => Seen::Error(format!("unreadable {event} ({err}): {data}")),
            };
        }
        if event == self.done {
            Seen::Done
        } else if self.errors.contains(&event) {
            Seen::Error(format!("{event}: {data}"))
        } else {
            Seen::Other
        }
    }
}

/// `POST /v1/response` (Skein's Chat Shell API).
fn chat_shell_body(prompt: &str) -> String {
    serde_json::json!({
        "model_config": {"model_id": MODEL},
        "input": {"text": prompt},
    })
    .to_string()
}

/// `POST /v1/responses` (OpenAI's Responses API), streaming.
fn responses_body(prompt: &str) -> String {
    serde_json::json!({
        "model": MODEL,
        "input": prompt,
        "stream": true,
    })
    .to_string()
}

/// `POST /v1/chat/completions` (OpenAI's Chat Completions API), streaming.
fn chat_completions_body(prompt: &str) -> String {
    serde_json::json!({
        "model": MODEL,
        "messages": [{"role": "user", "content": prompt}],
        "stream": true,
    })
    .to_string()
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
}

fn chat_completions_read(event: &str, data: &str) -> Seen {
    if event == "error" {
        return Seen::Error(data.to_owned());
    }
    if data == "[DONE]" {
        return Seen::Done;
    }
    match serde_json::from_str::<Chunk<'_>>(data) {
        Ok(Chunk {
            error: Some(error), ..
        }) => Seen::Error(error.to_string()),
        Ok(chunk) => {
            let text: String = chunk
                .choices
                .iter()
                .filter_map(|choice| choice.delta.as_ref()?.content.as_deref())
                .collect();
            if text.is_empty() {
                Seen::Other
            } else {
                Seen::Text(text)
            }
        }
        Err(err) => Seen::Error(format!("unreadable chunk ({err}): {data}")),
    }
}

/// The rows, in report order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Direct,
    SkeinResponse,
    SkeinChat,
    SkeinResponses,
    LiteLlm,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Direct,
        Kind::SkeinResponse,
        Kind::SkeinChat,
        Kind::SkeinResponses,
        Kind::LiteLlm,
    ];

    /// The `skein serve` rows.
    const SKEIN: [Kind; 3] = [Kind::SkeinResponse, Kind::SkeinChat, Kind::SkeinResponses];

    fn id(self) -> &'static str {
        match self {
            Kind::Direct => "direct",
            Kind::SkeinResponse => "skein",
            Kind::SkeinChat => "skein-chat",
            Kind::SkeinResponses => "skein-responses",
            Kind::LiteLlm => "litellm",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Direct => "provider direct (floor)",
            Kind::SkeinResponse => "skein serve /v1/response",
            Kind::SkeinChat => "skein serve /v1/chat/completions",
            Kind::SkeinResponses => "skein serve /v1/responses",
            Kind::LiteLlm => "LiteLLM proxy /v1/chat/completions",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The driver

/// One row of the report.
struct Row {
    name: &'static str,
    concurrency: usize,
    measured: Option<Measured>,
    /// Why the row has no figures, or what to know about them.
    note: Option<String>,
}

struct Measured {
    completed: usize,
    failed: usize,
    deltas: usize,
    wall: Duration,
    ttft_ms: Vec<f64>,
    /// Time to the first event of any kind (a start event, a role chunk), sorted.
    ttfe_ms: Vec<f64>,
    cpu: Option<Cpu>,
    /// CPU seconds of the client (this process) over the load.
    client_cpu_seconds: Option<f64>,
    peak_rss_kib: Option<u64>,
    first_ttft_ms: f64,
    warm_ttft_ms: Vec<f64>,
}

fn drive(options: Options) -> Result<(), String> {
    let runtime = runtime()?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let work_dir = match &options.work_dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("skein-gateway-{}", std::process::id())),
    };
    std::fs::create_dir_all(&work_dir)
        .map_err(|err| format!("cannot create {}: {err}", work_dir.display()))?;
    let wanted = |kind: Kind| {
        options
            .only
            .as_ref()
            .is_none_or(|only| only.iter().any(|id| id == kind.id()))
    };
    println!(
        "gateway: {} deltas per answer {} ms apart; {} s of load per row at {:?} concurrent \
         streams; logs in {}",
        options.deltas,
        options.delay_ms,
        options.seconds,
        options.concurrency,
        work_dir.display()
    );
    let expected: Arc<str> = Arc::from(
        (0..options.deltas)
            .map(|i| format!("w{i} "))
            .collect::<String>(),
    );
    let mut rows = Vec::new();
    for &concurrency in &options.concurrency {
        for kind in Kind::ALL.into_iter().filter(|kind| wanted(*kind)) {
            eprintln!("\n==> {} at {concurrency} streams", kind.name());
            let row = match run_row(&runtime, &options, &work_dir, kind, concurrency, &expected) {
                Ok(row) => row,
                Err(message) => Row {
                    name: kind.name(),
                    concurrency,
                    measured: None,
                    note: Some(message),
                },
            };
            print_row_line(&row);
            rows.push(row);
        }
    }
    println!();
    print_table(&rows);
    print_goals(&rows, &options);
    let skein_failures: usize = rows
        .iter()
        .filter(|row| row.name.starts_with("skein") || row.name.starts_with("provider"))
        .filter_map(|row| row.measured.as_ref())
        .map(|measured| measured.failed)
        .sum();
    let unmeasured: Vec<&str> = rows
        .iter()
        .filter(|row| {
            row.measured.is_none()
                && (row.name == Kind::Direct.name() || row.name == Kind::SkeinResponse.name())
        })
        .map(|row| row.name)
        .collect();
    if !unmeasured.is_empty() {
        return Err(format!(
            "could not measure: {} (see the notes above and the logs in {})",
            unmeasured.join(", "),
            work_dir.display()
        ));
    }
    if skein_failures > 0 {
        return Err(format!(
            "{skein_failures} streams of the provider or of skein serve failed (logs in {})",
            work_dir.display()
        ));
    }
    if options.work_dir.is_none() {
        let _ = std::fs::remove_dir_all(&work_dir);
    }
    Ok(())
}

/// Starts the row's processes, measures, stops them.
fn run_row(
    runtime: &tokio::runtime::Runtime,
    options: &Options,
    work_dir: &Path,
    kind: Kind,
    concurrency: usize,
    expected: &Arc<str>,
) -> Result<Row, String> {
    let tag = format!("{}-{concurrency}", kind.id());
    let skip = |note: String| {
        Ok(Row {
            name: kind.name(),
            concurrency,
            measured: None,
            note: Some(note),
        })
    };
    let skein = match kind {
        Kind::SkeinResponse | Kind::SkeinChat | Kind::SkeinResponses => match &options.skein {
            Some(path) => Some(path.clone()),
            None => return skip("not measured: no --skein binary given".to_owned()),
        },
        _ => None,
    };
    let litellm =
        match kind {
            Kind::LiteLlm => match &options.litellm {
                Some(path) => Some(path.clone()),
                None => {
                    return skip(options.litellm_note.clone().unwrap_or_else(|| {
                        "not measured: no --litellm executable given".to_owned()
                    }));
                }
            },
            _ => None,
        };

    let provider = Process::provider(options, work_dir, &tag)?;
    let base_url = provider.base_url.clone().unwrap_or_default();
    let (server, target) = match kind {
        Kind::Direct => (
            None,
            Target {
                name: kind.name(),
                url: format!("{base_url}/chat/completions"),
                body: chat_completions_body,
                read: Reader::Chunks,
            },
        ),
        Kind::SkeinResponse | Kind::SkeinChat | Kind::SkeinResponses => {
            let binary = skein.unwrap_or_default();
            let server = Process::skein(&binary, work_dir, &tag, &base_url)?;
            let (path, body, read): (_, BodyFn, _) = match kind {
                Kind::SkeinResponse => (
                    "/v1/response",
                    chat_shell_body,
                    Reader::Named(CHAT_SHELL_EVENTS),
                ),
                Kind::SkeinResponses => (
                    "/v1/responses",
                    responses_body,
                    Reader::Named(RESPONSES_EVENTS),
                ),
                _ => (
                    "/v1/chat/completions",
                    chat_completions_body,
                    Reader::Chunks,
                ),
            };
            let url = format!("http://{}{path}", server.address);
            (
                Some(server),
                Target {
                    name: kind.name(),
                    url,
                    body,
                    read,
                },
            )
        }
        Kind::LiteLlm => {
            let binary = litellm.unwrap_or_default();
            let server = Process::litellm(&binary, work_dir, &tag, &base_url)?;
            let url = format!("http://{}/v1/chat/completions", server.address);
            (
                Some(server),
                Target {
                    name: kind.name(),
                    url,
                    body: chat_completions_body,
                    read: Reader::Chunks,
                },
            )
        }
    };
    let endpoint = target.url.clone();
    let measured_process = server.as_ref().unwrap_or(&provider);
    let health = server.as_ref().map(|server| server.health_url.clone());
    let result = runtime.block_on(measure(
        target,
        health,
        measured_process,
        concurrency,
        options.seconds,
        Arc::clone(expected),
        options
            .samples_dir
            .as_ref()
            .map(|dir| dir.join(format!("{tag}.tsv"))),
    ));
    let server_exit = server.map(Process::stop).transpose();
    let provider_exit = provider.stop();
    let mut row = match result {
        Ok(Outcome::Measured(measured)) => Row {
            name: kind.name(),
            concurrency,
            measured: Some(measured),
            note: None,
        },
        Ok(Outcome::NotFound) => {
            return skip(format!(
                "skipped: POST {endpoint} answered 404 (this build does not have that \
                 endpoint yet)"
            ));
        }
        Err(message) => return Err(message),
    };
    let exits: Vec<String> = [server_exit.err(), provider_exit.err()]
        .into_iter()
        .flatten()
        .collect();
    if !exits.is_empty() {
        row.note = Some(exits.join("; "));
    }
    Ok(row)
}

enum Outcome {
    Measured(Measured),
    NotFound,
}

/// The first request, the warm ones, then the load.
async fn measure(
    target: Target,
    health: Option<String>,
    process: &Process,
    concurrency: usize,
    seconds: u64,
    expected: Arc<str>,
    samples: Option<PathBuf>,
) -> Result<Outcome, String> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .tcp_nodelay(true)
        .build()
        .map_err(|err| format!("cannot build the HTTP client: {err}"))?;
    if let Some(url) = health {
        wait_healthy(&client, &url, process).await?;
    }
    let target = Arc::new(target);
    let first = one_stream(&client, &target, "first request", &expected).await;
    if first.not_found {
        return Ok(Outcome::NotFound);
    }
    let first_ttft_ms = match (&first.failure, first.ttft_ms) {
        (None, Some(ms)) => ms,
        (failure, _) => {
            return Err(format!(
                "the first request failed: {}; see {}",
                failure.as_deref().unwrap_or("no answer text"),
                process.log.display()
            ));
        }
    };
    let mut warm_ttft_ms = Vec::new();
    let mut warm_stream_time = Duration::ZERO;
    for n in 0..WARM_REQUESTS {
        let sent = Instant::now();
        let warm = one_stream(&client, &target, &format!("warm request {n}"), &expected).await;
        warm_stream_time = warm_stream_time.max(sent.elapsed());
        match (warm.failure, warm.ttft_ms) {
            (None, Some(ms)) => warm_ttft_ms.push(ms),
            (failure, _) => {
                return Err(format!(
                    "warm request {n} failed: {}",
                    failure.as_deref().unwrap_or("no answer text")
                ));
            }
        }
    }

    let tally = Arc::new(Mutex::new(Tally::default()));
    let cpu_before = tree_cpu_seconds(process.pid);
    let client_before = own_cpu_seconds();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let workers: Vec<_> = (0..concurrency)
        .map(|worker| {
            let client = client.clone();
            let target = Arc::clone(&target);
            let tally = Arc::clone(&tally);
            let expected = Arc::clone(&expected);
            // The streams start spread over one answer's duration, so that requests arrive
            // at a steady rate: started together, streams of equal length would also end
            // together and every answer would come in a wave of `concurrency` requests at
            // the same instant.
            let offset = warm_stream_time.mul_f64(worker as f64 / concurrency as f64);
            tokio::spawn(async move {
                tokio::time::sleep(offset).await;
                let mut n = 0;
                while Instant::now() < deadline {
                    n += 1;
                    let prompt = format!("client {worker} request {n}");
                    let stream = one_stream(&client, &target, &prompt, &expected).await;
                    let mut tally = tally
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    tally.add(stream);
                }
            })
        })
        .collect();
    for worker in workers {
        worker
            .await
            .map_err(|err| format!("a client task failed: {err}"))?;
    }
    let wall = started.elapsed();
    let cpu_after = tree_cpu_seconds(process.pid);
    let client_after = own_cpu_seconds();
    let peak_rss_kib = tree_peak_rss_kib(process.pid);
    let tally = std::mem::take(&mut *tally.lock().unwrap_or_else(|p| p.into_inner()));
    for failure in &tally.failures {
        eprintln!("    failure: {failure}");
    }
    if tally.failed > tally.failures.len() {
        eprintln!(
            "    … and {} more failures",
            tally.failed - tally.failures.len()
        );
    }
    if let Some(path) = samples {
        write_samples(&path, started, &tally.samples)?;
    }
    let mut ttft_ms = tally.ttft_ms;
    ttft_ms.sort_by(f64::total_cmp);
    let mut ttfe_ms = tally.ttfe_ms;
    ttfe_ms.sort_by(f64::total_cmp);
    Ok(Outcome::Measured(Measured {
        completed: tally.completed,
        failed: tally.failed,
        deltas: tally.deltas,
        wall,
        ttft_ms,
        ttfe_ms,
        cpu: cpu_before
            .zip(cpu_after)
            .map(|(before, after)| after.since(before)),
        client_cpu_seconds: client_before
            .zip(client_after)
            .map(|(before, after)| after - before),
        peak_rss_kib,
        first_ttft_ms,
        warm_ttft_ms,
    }))
}

#[derive(Default)]
struct Tally {
    completed: usize,
    failed: usize,
    deltas: usize,
    ttft_ms: Vec<f64>,
    ttfe_ms: Vec<f64>,
    failures: Vec<String>,
    /// Per stream: when it was sent, time to first event and to first token, complete.
    samples: Vec<(Instant, Option<f64>, Option<f64>, bool)>,
}

impl Tally {
    fn add(&mut self, stream: StreamResult) {
        self.samples.push((
            stream.sent,
            stream.ttfe_ms,
            stream.ttft_ms,
            stream.failure.is_none(),
        ));
        self.deltas += stream.deltas;
        if let Some(ms) = stream.ttft_ms {
            self.ttft_ms.push(ms);
        }
        if let Some(ms) = stream.ttfe_ms {
            self.ttfe_ms.push(ms);
        }
        match stream.failure {
            None => self.completed += 1,
            Some(failure) => {
                self.failed += 1;
                if self.failures.len() < SHOWN_FAILURES {
                    self.failures.push(failure);
                }
            }
        }
    }
}

async fn wait_healthy(
    client: &reqwest::Client,
    url: &str,
    process: &Process,
) -> Result<(), String> {
    let started = Instant::now();
    loop {
        if let Some(status) = process.exited() {
            return Err(format!(
                "{} exited before it was healthy ({status}); see {}",
                process.what,
                process.log.display()
            ));
        }
        let answer = client.get(url).timeout(Duration::from_secs(2)).send().await;
        if answer.is_ok_and(|answer| answer.status().is_success()) {
            return Ok(());
        }
        if started.elapsed() > START_TIMEOUT {
            return Err(format!(
                "{} did not answer {url} within {START_TIMEOUT:?}; see {}",
                process.what,
                process.log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What one stream did.
struct StreamResult {
    /// When the request was sent.
    sent: Instant,
    ttft_ms: Option<f64>,
    ttfe_ms: Option<f64>,
    /// Answer pieces received (one per provider delta: each ends with a space).
    deltas: usize,
    /// Why the stream is not complete.
    failure: Option<String>,
    /// The endpoint answered 404.
    not_found: bool,
}

async fn one_stream(
    client: &reqwest::Client,
    target: &Target,
    prompt: &str,
    expected: &str,
) -> StreamResult {
    let sent = Instant::now();
    let mut result = StreamResult {
        sent,
        ttft_ms: None,
        ttfe_ms: None,
        deltas: 0,
        failure: None,
        not_found: false,
    };
    let mut text = String::with_capacity(expected.len());
    let read = async {
        let response = client
            .post(&target.url)
            .header("content-type", "application/json")
            .body((target.body)(prompt))
            .send()
            .await
            .map_err(|err| format!("request failed: {err}"))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Err("HTTP 404".to_owned());
        }
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(format!("HTTP {status}: {}", excerpt(&body)));
        }
        let mut response = response;
        let mut sse = SseReader::default();
        let mut done = false;
        let mut error = None;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|err| format!("stream cut: {err}"))?
        {
            sse.push(&chunk, |event, data| {
                if result.ttfe_ms.is_none() {
                    result.ttfe_ms = Some(sent.elapsed().as_secs_f64() * 1000.0);
                }
                match target.read.read(event, data) {
                    Seen::Text(piece) => {
                        if result.ttft_ms.is_none() && !piece.is_empty() {
                            result.ttft_ms = Some(sent.elapsed().as_secs_f64() * 1000.0);
                        }
                        text.push_str(&piece);
                    }
                    Seen::Done => done = true,
                    Seen::Error(message) => {
                        error.get_or_insert(message);
                    }
                    Seen::Other => {}
                }
            });
        }
        if let Some(error) = error {
            return Err(format!("error event: {}", excerpt(&error)));
        }
        if !done {
            return Err("the stream ended without its end marker".to_owned());
        }
        Ok(())
    };
    let outcome = match tokio::time::timeout(STREAM_TIMEOUT, read).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("no complete answer within {STREAM_TIMEOUT:?}")),
    };
    result.deltas = text.bytes().filter(|byte| *byte == b' ').count();
    match outcome {
        Err(message) if message == "HTTP 404" => {
            result.not_found = true;
            result.failure = Some(message);
        }
        Err(message) => result.failure = Some(format!("{}: {message}", target.name)),
        Ok(()) if text != expected => {
            result.failure = Some(format!(
                "{}: the text differs from the provider's ({} of {} bytes, {} pieces)",
                target.name,
                text.len(),
                expected.len(),
                result.deltas
            ));
        }
        Ok(()) => {}
    }
    result
}

/// One line per stream, tab-separated: when it was sent (ms after the load began), time to
/// first event and to first token (ms, empty when none came), complete (1 or 0).
fn write_samples(
    path: &Path,
    started: Instant,
    samples: &[(Instant, Option<f64>, Option<f64>, bool)],
) -> Result<(), String> {
    let number = |value: Option<f64>| value.map_or_else(String::new, |ms| format!("{ms:.3}"));
    let mut text = String::from("sent_ms\tfirst_event_ms\tfirst_token_ms\tcomplete\n");
    for (sent, ttfe, ttft, complete) in samples {
        let offset = sent.saturating_duration_since(started).as_secs_f64() * 1000.0;
        text.push_str(&format!(
            "{offset:.3}\t{}\t{}\t{}\n",
            number(*ttfe),
            number(*ttft),
            u8::from(*complete)
        ));
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|err| format!("cannot write {}: {err}", path.display()))
}

fn excerpt(text: &str) -> String {
    let mut end = text.len().min(300);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].replace('\n', " ")
}

/// A server-sent events reader: `event:` and `data:` lines, an event per blank line.
#[derive(Default)]
struct SseReader {
    buffer: Vec<u8>,
    event: String,
    data: String,
}

impl SseReader {
    fn push(&mut self, bytes: &[u8], mut on_event: impl FnMut(&str, &str)) {
        self.buffer.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(end) = self.buffer[start..].iter().position(|b| *b == b'\n') {
            let mut line = &self.buffer[start..start + end];
            start += end + 1;
            if let [rest @ .., b'\r'] = line {
                line = rest;
            }
            if line.is_empty() {
                if !self.data.is_empty() || !self.event.is_empty() {
                    on_event(&self.event, &self.data);
                }
                self.event.clear();
                self.data.clear();
                continue;
            }
            let line = String::from_utf8_lossy(line);
            let (field, value) = line.split_once(':').unwrap_or((&line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "data" => {
                    if !self.data.is_empty() {
                        self.data.push('\n');
                    }
                    self.data.push_str(value);
                }
                "event" => {
                    self.event.clear();
                    self.event.push_str(value);
                }
                _ => {}
            }
        }
        self.buffer.drain(..start);
    }
}

// ---------------------------------------------------------------------------------------------
// Processes

/// A child process of the bench, killed if still running when dropped.
struct Process {
    what: String,
    child: Child,
    pid: u32,
    log: PathBuf,
    address: String,
    health_url: String,
    /// The provider's base URL (`http://127.0.0.1:PORT/v1`).
    base_url: Option<String>,
}

impl Process {
    /// This example again, as the loopback provider.
    fn provider(options: &Options, work_dir: &Path, tag: &str) -> Result<Self, String> {
        let log = work_dir.join(format!("{tag}-provider.log"));
        let exe = std::env::current_exe()
            .map_err(|err| format!("cannot find this executable to start the provider: {err}"))?;
        let mut child = Command::new(exe)
            .args(["--provider", "--deltas", &options.deltas.to_string()])
            .args(["--delay-ms", &options.delay_ms.to_string()])
            .args([
                "--provider-nagle",
                if options.provider_nagle { "on" } else { "off" },
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file(&log)?)
            .spawn()
            .map_err(|err| format!("cannot start the provider process: {err}"))?;
        let mut base_url = String::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = BufReader::new(stdout).read_line(&mut base_url);
        }
        let base_url = base_url.trim().to_owned();
        if base_url.is_empty() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the provider process did not print its address; see {}",
                log.display()
            ));
        }
        let address = base_url
            .trim_start_matches("http://")
            .trim_end_matches("/v1")
            .to_owned();
        Ok(Process {
            what: "the loopback provider".to_owned(),
            pid: child.id(),
            child,
            log,
            health_url: String::new(),
            address,
            base_url: Some(base_url),
        })
    }

    /// `skein serve` with its OpenAI endpoint pointed at the provider.
    fn skein(binary: &Path, work_dir: &Path, tag: &str, provider: &str) -> Result<Self, String> {
        let address = format!("127.0.0.1:{}", free_port()?);
        let log = work_dir.join(format!("{tag}-skein.log"));
        let mut command = Command::new(binary);
        command
            .arg("serve")
            .arg("--db")
            .arg(work_dir.join(format!("{tag}.db")))
            .args(["--listen", &address, "--base-url", provider])
            // Every stream of the bench comes from one caller (loopback, no token).
            .args(["--concurrency", "100000", "--max-connections", "100000"])
            .args(["--shutdown-grace", "2"]);
        Self::spawn(
            "skein serve",
            command,
            &log,
            &[("OPENAI_API_KEY", DUMMY_KEY)],
            address.clone(),
            format!("http://{address}/health"),
        )
    }

    /// LiteLLM's proxy: one worker, no database, the model mapped to the provider.
    fn litellm(binary: &Path, work_dir: &Path, tag: &str, provider: &str) -> Result<Self, String> {
        let port = free_port()?;
        let address = format!("127.0.0.1:{port}");
        let log = work_dir.join(format!("{tag}-litellm.log"));
        let config = work_dir.join(format!("{tag}-litellm.yaml"));
        std::fs::write(
            &config,
            format!(
                "model_list:\n\
                 \x20 - model_name: {MODEL}\n\
                 \x20   litellm_params:\n\
                 \x20     model: openai/{MODEL}\n\
                 \x20     api_base: {provider}\n\
                 \x20     api_key: {DUMMY_KEY}\n\
                 litellm_settings:\n\
                 \x20 telemetry: false\n\
                 \x20 drop_params: true\n"
            ),
        )
        .map_err(|err| format!("cannot write {}: {err}", config.display()))?;
        let mut command = Command::new(binary);
        command
            .arg("--config")
            .arg(&config)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--num_workers", "1"]);
        Self::spawn(
            "the LiteLLM proxy",
            command,
            &log,
            &[
                // No usage reports, no download of the model cost map at start.
                ("LITELLM_TELEMETRY", "False"),
                ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
                // Tokenizers come with the package; never from a model hub.
                ("HF_HUB_OFFLINE", "1"),
                ("NO_PROXY", "127.0.0.1,localhost"),
            ],
            address.clone(),
            format!("http://{address}/health/liveliness"),
        )
    }

    fn spawn(
        what: &str,
        mut command: Command,
        log: &Path,
        env: &[(&str, &str)],
        address: String,
        health_url: String,
    ) -> Result<Self, String> {
        let keys = std::env::vars_os()
            .map(|(name, _)| name)
            .filter(|name| name.to_str().is_some_and(|name| name.ends_with("_API_KEY")));
        for variable in keys {
            command.env_remove(variable);
        }
        for variable in KEY_VARIABLES {
            command.env_remove(variable);
        }
        command.envs(env.iter().copied());
        let stdout = log_file(log)?;
        let stderr = stdout
            .try_clone()
            .map_err(|err| format!("{}: {err}", log.display()))?;
        command.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
        let child = command.spawn().map_err(|err| {
            format!(
                "cannot start {what} ({}): {err}",
                command.get_program().to_string_lossy()
            )
        })?;
        Ok(Process {
            what: what.to_owned(),
            pid: child.id(),
            child,
            log: log.to_owned(),
            address,
            health_url,
            base_url: None,
        })
    }

    /// The exit status, if the process has exited.
    fn exited(&self) -> Option<String> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).ok();
        match stat {
            // A zombie has exited; its status is read when it is waited for.
            Some(stat)
                if !stat
                    .rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')) =>
            {
                None
            }
            _ => Some("exited".to_owned()),
        }
    }

    /// SIGTERM (or closing stdin, for the provider), then a kill after ten seconds.
    fn stop(mut self) -> Result<(), String> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Err(format!(
                "{} exited during the run ({status}); see {}",
                self.what,
                self.log.display()
            ));
        }
        if self.base_url.is_some() {
            drop(self.child.stdin.take());
        } else {
            let _ = Command::new("kill")
                .args(["-TERM", &self.pid.to_string()])
                .status();
        }
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        kill_tree(self.pid);
        let _ = self.child.wait();
        Err(format!(
            "{} did not stop within 10 s and was killed",
            self.what
        ))
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            kill_tree(self.pid);
            let _ = self.child.wait();
        }
    }
}

fn log_file(path: &Path) -> Result<std::fs::File, String> {
    std::fs::File::create(path).map_err(|err| format!("cannot create {}: {err}", path.display()))
}

/// Kills `pid` and its descendants (a gateway's workers must not outlive the row).
fn kill_tree(pid: u32) {
    for pid in process_tree(pid).into_iter().rev() {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
}

/// A free loopback port (the OS picks one; it is released for the server to take).
fn free_port() -> Result<u16, String> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|err| format!("cannot find a free loopback port: {err}"))
}

// ---------------------------------------------------------------------------------------------
// /proc

/// The fields of `/proc/<pid>/stat` after the command name (which may hold spaces and
/// parentheses): field 3 of the line is index 0 here.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
    )
}

/// `pid` and all its live descendants, parents before children.
fn process_tree(pid: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            // ppid is field 4 of the line.
            if let Some(parent) = stat_fields(child)
                .and_then(|fields| fields.get(1).and_then(|ppid| ppid.parse::<u32>().ok()))
            {
                children.entry(parent).or_default().push(child);
            }
        }
    }
    let mut tree = vec![pid];
    let mut next = 0;
    while next < tree.len() {
        if let Some(kids) = children.get(&tree[next]) {
            tree.extend(kids);
        }
        next += 1;
    }
    tree
}

/// User and system CPU seconds of the process tree of `pid`: each live process's own (utime,
/// stime: fields 14 and 15) and its reaped children's (cutime, cstime: 16 and 17).
fn tree_cpu_seconds(pid: u32) -> Option<Cpu> {
    let ticks_per_second = clock_ticks_per_second();
    let mut cpu = Cpu::default();
    for (index, member) in process_tree(pid).into_iter().enumerate() {
        let Some(fields) = stat_fields(member) else {
            if index == 0 {
                return None;
            }
            continue;
        };
        let ticks = |field: usize| fields.get(field)?.parse::<f64>().ok();
        cpu.user += (ticks(11)? + ticks(13)?) / ticks_per_second;
        cpu.system += (ticks(12)? + ticks(14)?) / ticks_per_second;
    }
    Some(cpu)
}

/// CPU seconds in user space and in the kernel.
#[derive(Clone, Copy, Default)]
struct Cpu {
    user: f64,
    system: f64,
}

impl Cpu {
    fn since(self, before: Cpu) -> Cpu {
        Cpu {
            user: self.user - before.user,
            system: self.system - before.system,
        }
    }

    fn total(self) -> f64 {
        self.user + self.system
    }
}

/// User plus system CPU seconds of this process (the client), its threads included.
fn own_cpu_seconds() -> Option<f64> {
    let fields = stat_fields(std::process::id())?;
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / clock_ticks_per_second())
}

/// The sum of `VmHWM` (peak resident set) over the process tree of `pid`, in KiB.
fn tree_peak_rss_kib(pid: u32) -> Option<u64> {
    let mut total = 0;
    for (index, member) in process_tree(pid).into_iter().enumerate() {
        let status = std::fs::read_to_string(format!("/proc/{member}/status"));
        let peak = status.ok().and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|value| {
                    value
                        .trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        });
        match peak {
            Some(kib) => total += kib,
            None if index == 0 => return None,
            None => {}
        }
    }
    Some(total)
}

fn clock_ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(100.0)
}

// ---------------------------------------------------------------------------------------------
// The report

fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    percentile(&sorted, 0.5)
}

impl Measured {
    fn cpu_us_per_delta(&self) -> Option<f64> {
        let cpu = self.cpu?.total();
        (self.deltas > 0).then(|| cpu * 1e6 / self.deltas as f64)
    }
}

fn ms(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |ms| format!("{ms:.2} ms"))
}

fn print_row_line(row: &Row) {
    match &row.measured {
        Some(m) => eprintln!(
            "<== {} at {}: {} complete, {} failed in {:.1} s; TTFT p50 {}, p99 {} (first \
             event p50 {}, p99 {}); first {}, warm {}; CPU {} ({}); peak RSS {}",
            row.name,
            row.concurrency,
            m.completed,
            m.failed,
            m.wall.as_secs_f64(),
            ms(percentile(&m.ttft_ms, 0.5)),
            ms(percentile(&m.ttft_ms, 0.99)),
            ms(percentile(&m.ttfe_ms, 0.5)),
            ms(percentile(&m.ttfe_ms, 0.99)),
            ms(Some(m.first_ttft_ms)),
            ms(median(&m.warm_ttft_ms)),
            m.cpu
                .map_or_else(|| "–".to_owned(), |cpu| format!("{:.2} s", cpu.total())),
            m.cpu_us_per_delta()
                .map_or_else(|| "–".to_owned(), |us| format!("{us:.2} µs per delta")),
            m.peak_rss_kib.map_or_else(
                || "–".to_owned(),
                |kib| format!("{:.1} MiB", kib as f64 / 1024.0)
            ),
        ),
        None => eprintln!("<== {} at {}: no figures", row.name, row.concurrency),
    }
    if let Some(note) = &row.note {
        eprintln!("    note: {note}");
    }
}

/// The report as a Markdown table, then the notes.
fn print_table(rows: &[Row]) {
    println!(
        "| target | streams | completed | failed | TTFT p50 | TTFT p99 | server CPU per delta | \
         peak RSS | first request TTFT | warm TTFT (median of {WARM_REQUESTS}) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        match &row.measured {
            Some(m) => println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row.name,
                row.concurrency,
                m.completed,
                m.failed,
                ms(percentile(&m.ttft_ms, 0.5)),
                ms(percentile(&m.ttft_ms, 0.99)),
                m.cpu_us_per_delta()
                    .map_or_else(|| "–".to_owned(), |us| format!("{us:.2} µs")),
                m.peak_rss_kib.map_or_else(
                    || "–".to_owned(),
                    |kib| format!("{:.1} MiB", kib as f64 / 1024.0)
                ),
                ms(Some(m.first_ttft_ms)),
                ms(median(&m.warm_ttft_ms)),
            ),
            None => println!(
                "| {} | {} | – | – | – | – | – | – | – | – |",
                row.name, row.concurrency
            ),
        }
    }
    println!();
    for row in rows {
        if let Some(note) = &row.note {
            println!("- {} at {}: {note}", row.name, row.concurrency);
        }
        if let Some(m) = &row.measured {
            let wall = m.wall.as_secs_f64();
            let per_delta = |seconds: f64| seconds * 1e6 / m.deltas.max(1) as f64;
            println!(
                "- {} at {}: {:.1} streams/s, {:.0} deltas/s over {wall:.1} s; server CPU {} \
                 ({:.0} % of a core; per delta {}), client CPU {} ({:.0} %); time to first \
                 event p50 {}, p99 {}",
                row.name,
                row.concurrency,
                m.completed as f64 / wall,
                m.deltas as f64 / wall,
                m.cpu
                    .map_or_else(|| "–".to_owned(), |cpu| format!("{:.2} s", cpu.total())),
                100.0 * m.cpu.map_or(0.0, Cpu::total) / wall,
                m.cpu.map_or_else(
                    || "–".to_owned(),
                    |cpu| format!(
                        "{:.2} µs user + {:.2} µs system",
                        per_delta(cpu.user),
                        per_delta(cpu.system)
                    )
                ),
                m.client_cpu_seconds
                    .map_or_else(|| "–".to_owned(), |s| format!("{s:.2} s")),
                100.0 * m.client_cpu_seconds.unwrap_or(0.0) / wall,
                ms(percentile(&m.ttfe_ms, 0.5)),
                ms(percentile(&m.ttfe_ms, 0.99)),
            );
        }
    }
}

/// The goals, met or not, for each Skein row.
fn print_goals(rows: &[Row], options: &Options) {
    let find = |name: &str, concurrency: usize| {
        rows.iter()
            .find(|row| row.name == name && row.concurrency == concurrency)
            .and_then(|row| row.measured.as_ref())
    };
    println!("\ngoals:");
    let verdict = |met: bool| if met { "met" } else { "MISSED" };
    for row in rows {
        let Some(m) = &row.measured else { continue };
        if m.failed > 0 {
            println!(
                "- 0 failed streams: {} for {} at {} ({} failed)",
                verdict(false),
                row.name,
                row.concurrency,
                m.failed
            );
        }
    }
    for skein in Kind::SKEIN {
        for &concurrency in &options.concurrency {
            let Some(m) = find(skein.name(), concurrency) else {
                continue;
            };
            if let (Some(floor), Some(p99)) = (
                find(Kind::Direct.name(), concurrency)
                    .and_then(|direct| percentile(&direct.ttft_ms, 0.99)),
                percentile(&m.ttft_ms, 0.99),
            ) && concurrency == 50
            {
                println!(
                    "- TTFT p99 at most 2 ms above the floor at 50 streams: {} for {} \
                     ({p99:.2} ms vs {floor:.2} ms: {:+.2} ms)",
                    verdict(p99 - floor <= 2.0),
                    skein.name(),
                    p99 - floor
                );
            }
            if let Some(us) = m.cpu_us_per_delta() {
                println!(
                    "- server CPU at most 6 µs per delta: {} for {} at {concurrency} ({us:.2} µs)",
                    verdict(us <= 6.0),
                    skein.name()
                );
            }
            if let Some(warm) = median(&m.warm_ttft_ms) {
                println!(
                    "- first request as fast as the rest (within 1 ms of the warm median): {} \
                     for {} at {concurrency} ({:.2} ms vs {warm:.2} ms)",
                    verdict(m.first_ttft_ms <= warm + 1.0),
                    skein.name(),
                    m.first_ttft_ms
                );
            }
        }
    }
}
