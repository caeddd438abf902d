//! One row's measurement: the first request, the warm ones, then the load.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bench::procfs::{Usage, own_cpu_seconds, tree_peak_rss_kib, tree_usage};

use crate::processes::Process;
use crate::sse::SseReader;
use crate::targets::{Seen, Target};

/// How long one stream may take, from sending the request to its last byte.
const STREAM_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a relay may take to answer its health check after it starts.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// Requests sent one after another after the first, once everything is warm.
pub(crate) const WARM_REQUESTS: usize = 5;
/// Failure messages printed per row (the rest are only counted).
const SHOWN_FAILURES: usize = 5;

/// What a row's load did.
pub(crate) struct Measured {
    pub(crate) completed: usize,
    pub(crate) failed: usize,
    /// Answer pieces the clients received.
    pub(crate) deltas: usize,
    pub(crate) wall: Duration,
    /// Time to first token of every stream, sorted.
    pub(crate) ttft_ms: Vec<f64>,
    /// Time to the first event of any kind (a start event, a role chunk), sorted.
    pub(crate) ttfe_ms: Vec<f64>,
    /// What the relay's process tree consumed over the load.
    pub(crate) usage: Option<Usage>,
    /// CPU seconds of the client (this process) over the load.
    pub(crate) client_cpu_seconds: Option<f64>,
    pub(crate) peak_rss_kib: Option<u64>,
    pub(crate) first_ttft_ms: f64,
    pub(crate) warm_ttft_ms: Vec<f64>,
}

impl Measured {
    /// The relay's CPU time (user + system) per delta received.
    pub(crate) fn cpu_us_per_delta(&self) -> Option<f64> {
        self.per_delta(self.usage?.cpu() * 1e6)
    }

    /// The relay's write syscalls per delta received.
    pub(crate) fn writes_per_delta(&self) -> Option<f64> {
        self.per_delta(self.usage?.writes? as f64)
    }

    /// `total` divided by the deltas received.
    pub(crate) fn per_delta(&self, total: f64) -> Option<f64> {
        (self.deltas > 0).then(|| total / self.deltas as f64)
    }
}

pub(crate) enum Outcome {
    Measured(Measured),
    NotFound,
}

/// The first request, the warm ones, then the load.
pub(crate) async fn measure(
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
    let usage_before = tree_usage(process.pid);
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
    let usage_after = tree_usage(process.pid);
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
        usage: usage_before
            .zip(usage_after)
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
        if process.exited() {
            return Err(format!(
                "{} exited before it was healthy; see {}",
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
