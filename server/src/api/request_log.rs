//! One log line per request, at `info` (target `skein::request`): method, route (the matched
//! path template, never the raw path), status, model, provider, tokens in and out, time to
//! first token, duration and request id. Never a key, a bearer token or a prompt: the line is
//! built from these fields only, and the model name a client sent is quoted and cut short.
//!
//! The outermost layer, [`log_requests`], gives each request a [`RequestLog`] (in its
//! extensions) that handlers fill in as they learn things (the model when they plan, the usage
//! when the answer ends), and writes the line when the answer's body ends: a stream logs when
//! its last event is sent (or the client goes away), not when its headers go out. A streamed
//! answer's time to first token and usage come from the service's [`Meter`], which the stream
//! that logs the answer into the tree fills as it passes: the line adds no stream of its own.
//!
//! The request id is the `x-request-id` the answer carries: the client's own when it sent a
//! usable one, else `req-` and a random UUID; every answer carries it.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderValue, Method, StatusCode};
use providers::{ECHO_MODEL_ID, ModelConfig, Usage};
use service::Meter;

/// The header that carries the request id, both ways.
const REQUEST_ID: &str = "x-request-id";
/// Longest client request id kept; a longer one is replaced by a fresh id.
const MAX_REQUEST_ID: usize = 128;
/// Characters of a client's model name written to the log.
const MAX_MODEL_SHOWN: usize = 100;

/// What handlers tell the log line about their request. Cloning shares it.
#[derive(Clone, Debug)]
pub(crate) struct RequestLog {
    started: Instant,
    details: Arc<Mutex<Details>>,
}

/// What is known so far.
#[derive(Debug, Default)]
struct Details {
    model: Option<String>,
    provider: Option<&'static str>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    first_output: Option<Duration>,
    /// A streamed answer's measures, read when the line is written.
    meter: Option<Meter>,
}

impl RequestLog {
    fn new(started: Instant) -> Self {
        RequestLog {
            started,
            details: Arc::default(),
        }
    }

    fn with<T>(&self, fill: impl FnOnce(&mut Details) -> T) -> T {
        fill(&mut self.details.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The model the client asked for, and the provider of `config` that serves it (`skein`
    /// for the offline `echo` model).
    pub(crate) fn model(&self, model: &str, config: &ModelConfig) {
        let shown: String = model.chars().take(MAX_MODEL_SHOWN).collect();
        let provider = if config.model_id == ECHO_MODEL_ID {
            "skein"
        } else {
            config.provider().as_str()
        };
        self.with(|details| {
            details.model = Some(shown);
            details.provider = Some(provider);
        });
    }

    /// The tokens the answer used.
    pub(crate) fn usage(&self, usage: &Usage) {
        self.tokens(usage.input_tokens, Some(usage.output_tokens));
    }

    /// Tokens in, and out when the answer has any (embeddings have none).
    pub(crate) fn tokens(&self, input: u64, output: Option<u64>) {
        self.with(|details| {
            details.input_tokens = Some(input);
            details.output_tokens = output;
        });
    }

    /// The streamed answer's measures: its time to first token and usage, read when the line
    /// is written.
    pub(crate) fn streamed(&self, meter: Meter) {
        self.with(|details| details.meter = Some(meter));
    }

    /// The model's first output arrived now (the first call only counts).
    pub(crate) fn first_output(&self) {
        let elapsed = self.started.elapsed();
        self.with(|details| {
            details.first_output.get_or_insert(elapsed);
        });
    }
}

/// The outermost layer: gives the request its [`RequestLog`] and its id, and logs the line
/// when the answer's body ends.
pub(crate) async fn log_requests(mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let asked_id = request
        .headers()
        .get(REQUEST_ID)
        .filter(|value| usable_id(value))
        .cloned();
    let log = RequestLog::new(started);
    request.extensions_mut().insert(log.clone());
    let mut response = next.run(request).await;
    // A route that chose the id itself (Chat Shell takes one from its body too) keeps it.
    let id = match response
        .headers()
        .get(REQUEST_ID)
        .filter(|value| usable_id(value))
    {
        Some(id) => id.clone(),
        None => {
            let id = asked_id.unwrap_or_else(|| {
                HeaderValue::try_from(format!("req-{}", uuid::Uuid::new_v4().simple()))
                    .unwrap_or(HeaderValue::from_static("req-unknown"))
            });
            response.headers_mut().insert(REQUEST_ID, id.clone());
            id
        }
    };
    let line = Line {
        method,
        route,
        status: response.status(),
        request_id: String::from_utf8_lossy(id.as_bytes()).into_owned(),
        log,
    };
    response.map(|body| {
        Body::new(LoggedBody {
            inner: body,
            line: Some(line),
        })
    })
}

/// Whether a client's request id may be written to the log and sent back: visible ASCII, not
/// too long.
fn usable_id(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_REQUEST_ID
        && bytes.iter().all(|byte| byte.is_ascii_graphic())
}

/// The line of one request, written once.
struct Line {
    method: Method,
    route: String,
    status: StatusCode,
    request_id: String,
    log: RequestLog,
}

impl Line {
    /// Writes the line; `finished` is false when the client went away before the body ended.
    fn write(self, finished: bool) {
        let duration = self.log.started.elapsed();
        let mut details = std::mem::take(
            &mut *self
                .log
                .details
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        if let Some(meter) = details.meter.take() {
            if let Some(usage) = meter.usage() {
                details.input_tokens = Some(usage.input_tokens);
                details.output_tokens = Some(usage.output_tokens);
            }
            if let Some(at) = meter.first_output() {
                let ttft = at.saturating_duration_since(self.log.started);
                details.first_output.get_or_insert(ttft);
            }
        }
        // Milliseconds to a tenth: enough to tell a cached answer from a model call.
        let millis = |elapsed: Duration| (elapsed.as_secs_f64() * 10_000.0).round() / 10.0;
        tracing::info!(
            target: "skein::request",
            method = %self.method,
            route = %self.route,
            status = self.status.as_u16(),
            model = details.model.as_deref().map(tracing::field::debug),
            provider = details.provider,
            tokens_in = details.input_tokens,
            tokens_out = details.output_tokens,
            ttft_ms = details.first_output.map(millis),
            duration_ms = millis(duration),
            request_id = %self.request_id,
            completed = finished,
            "request"
        );
    }
}

/// A response body that writes its request's line when it ends, or when it is dropped before
/// (the client went away).
struct LoggedBody {
    inner: Body,
    line: Option<Line>,
}

impl HttpBody for LoggedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled
            && let Some(line) = self.line.take()
        {
            line.write(true);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for LoggedBody {
    fn drop(&mut self) {
        if let Some(line) = self.line.take() {
            // A body with nothing to send is never polled to its end: it ended all the same.
            let finished = self.inner.is_end_stream();
            line.write(finished);
        }
    }
}
