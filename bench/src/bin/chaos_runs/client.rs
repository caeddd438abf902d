//! One client per run: it starts the run in the background on a random replica, leaves, and
//! comes back to random replicas at random `starting_after` until it has seen the run end.
//! Everything it received is kept for the comparison with the full replay.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};
use serde_json::{Value, json};

use crate::chaos::StartedOn;
use crate::sse::{Frame, Splitter, data_json};

/// The replicas as a load balancer sees them: fixed addresses, and which are up.
#[derive(Debug)]
pub(crate) struct Cluster {
    pub(crate) urls: Vec<String>,
    pub(crate) up: Vec<AtomicBool>,
    pub(crate) tokens: Vec<String>,
    /// Which replica each run was posted to, as soon as the client knows its id.
    pub(crate) started_on: StartedOn,
}

impl Cluster {
    /// A replica that is up (any when none is: the client then finds it down and retries).
    pub(crate) fn pick(&self, rng: &mut StdRng) -> usize {
        let up: Vec<usize> = (0..self.urls.len())
            .filter(|&index| self.up[index].load(Ordering::SeqCst))
            .collect();
        if up.is_empty() {
            rng.random_range(0..self.urls.len())
        } else {
            up[rng.random_range(0..up.len())]
        }
    }
}

/// What a run asks for.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Its tag (`chaos-run-N` in the prompt).
    pub(crate) tag: usize,
    pub(crate) agent: &'static str,
    /// Whether the POST streams (`stream: true`) or answers at once.
    pub(crate) stream: bool,
    /// Which of the cluster's tokens starts it.
    pub(crate) token: usize,
}

/// Events received over one connection: the POST's stream, or one resume.
#[derive(Clone, Debug)]
pub(crate) struct Segment {
    /// The replica that sent them.
    pub(crate) replica: usize,
    /// `starting_after` of the resume; `None` for the POST's stream or a resume from the start.
    pub(crate) after: Option<u64>,
    pub(crate) frames: Vec<Frame>,
}

/// Everything one client saw of its run.
#[derive(Clone, Debug)]
pub(crate) struct RunLog {
    pub(crate) plan: Plan,
    pub(crate) id: Option<String>,
    /// The status the POST answered with (without `stream`).
    pub(crate) first_status: Option<String>,
    /// The replica that accepted the POST.
    pub(crate) posted_to: Option<usize>,
    pub(crate) segments: Vec<Segment>,
    /// The status and output text `GET /v1/responses/{id}` showed once the run had ended: the
    /// text of its message items but those cut short.
    pub(crate) final_status: Option<String>,
    pub(crate) output_text: Option<String>,
    /// The text of each message item cut short (`incomplete`): what a worker had sent of an
    /// answer when its replica was killed, kept before the answer its successor gave.
    pub(crate) cut_short: Vec<String>,
    /// Statuses that are not OpenAI's, and other protocol errors.
    pub(crate) errors: Vec<String>,
    /// Whether another token could read the run.
    pub(crate) seen_by_other_token: bool,
}

/// The longest a client reads one stream (a run lasts a few seconds, a takeover a few more).
const STREAM_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest the full replay of an ended run may take.
const REPLAY_TIMEOUT: Duration = Duration::from_secs(30);

/// OpenAI's statuses of a Responses object.
const STATUSES: [&str; 6] = [
    "queued",
    "in_progress",
    "completed",
    "failed",
    "cancelled",
    "incomplete",
];

/// Drives one run until it is seen ending, or `deadline`.
pub(crate) async fn drive(
    http: reqwest::Client,
    cluster: Arc<Cluster>,
    plan: Plan,
    seed: u64,
    deadline: Instant,
) -> RunLog {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut log = RunLog {
        plan: plan.clone(),
        id: None,
        first_status: None,
        posted_to: None,
        segments: Vec::new(),
        final_status: None,
        output_text: None,
        cut_short: Vec::new(),
        errors: Vec::new(),
        seen_by_other_token: false,
    };
    let token = cluster.tokens[plan.token].clone();
    let mut ended = start(&http, &cluster, &plan, &token, &mut rng, &mut log, deadline).await;
    let Some(id) = log.id.clone() else {
        return log;
    };
    if let Some(first) = log.posted_to {
        lock(&cluster.started_on).insert(id.clone(), first);
    }
    while !ended && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(rng.random_range(50..600))).await;
        let replica = cluster.pick(&mut rng);
        let url = format!("{}/v1/responses/{id}", cluster.urls[replica]);
        if rng.random_bool(0.25) {
            // A plain GET: the status so far.
            match get_json(&http, &url, &token).await {
                Ok(object) => {
                    let status = object["status"].as_str().unwrap_or_default().to_owned();
                    if !STATUSES.contains(&status.as_str()) {
                        log.errors.push(format!("GET showed the status {status:?}"));
                    }
                }
                Err(SendError::Other(message)) => {
                    log.errors
                        .push(format!("GET on replica {replica}: {message}"));
                }
                Err(SendError::Connect) => {}
            }
            continue;
        }
        let seen = log
            .segments
            .iter()
            .flat_map(|segment| segment.frames.iter().map(|frame| frame.seq))
            .max();
        let after = match seen {
            Some(max) if rng.random_bool(0.9) => Some(rng.random_range(0..=max)),
            _ => None,
        };
        let cut = (!rng.random_bool(0.4)).then(|| rng.random_range(1..10));
        let mut resume = format!("{url}?stream=true");
        if let Some(after) = after {
            resume.push_str(&format!("&starting_after={after}"));
        }
        let request = http.get(&resume).bearer_auth(&token);
        if let Ok((frames, done)) =
            read_events(request, cut, STREAM_TIMEOUT, None, &mut log.errors).await
        {
            log.segments.push(Segment {
                replica,
                after,
                frames,
            });
            ended = done;
        }
    }
    if !ended {
        return log;
    }
    // The object shows the end once its record is written; a client may come a little early.
    while Instant::now() < deadline {
        let replica = cluster.pick(&mut rng);
        let url = format!("{}/v1/responses/{id}", cluster.urls[replica]);
        match get_json(&http, &url, &token).await {
            Ok(object) => {
                let status = object["status"].as_str().unwrap_or_default().to_owned();
                if status != "queued" && status != "in_progress" {
                    log.output_text = Some(output_text(&object, Items::Whole));
                    log.cut_short = output_texts(&object, Items::CutShort);
                    log.final_status = Some(status);
                    break;
                }
            }
            Err(SendError::Other(message)) => {
                log.errors
                    .push(format!("GET on replica {replica}: {message}"));
                break;
            }
            Err(SendError::Connect) => {}
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if cluster.tokens.len() > 1 {
        let other = &cluster.tokens[(plan.token + 1) % cluster.tokens.len()];
        let replica = cluster.pick(&mut rng);
        let url = format!("{}/v1/responses/{id}", cluster.urls[replica]);
        let answer = http.get(&url).bearer_auth(other).send().await;
        log.seen_by_other_token = answer.is_ok_and(|answer| answer.status() != 404);
    }
    log
}

/// The POST; whether the client saw the run end on its stream.
async fn start(
    http: &reqwest::Client,
    cluster: &Cluster,
    plan: &Plan,
    token: &str,
    rng: &mut StdRng,
    log: &mut RunLog,
    deadline: Instant,
) -> bool {
    let body = json!({
        "model": plan.agent,
        "input": format!("Please compute ({}{}).", crate::provider::TAG_PREFIX, plan.tag),
        "background": true,
        "stream": plan.stream,
        "store": true,
    });
    while Instant::now() < deadline {
        let replica = cluster.pick(rng);
        let url = format!("{}/v1/responses", cluster.urls[replica]);
        let request = http.post(&url).bearer_auth(token).json(&body);
        if plan.stream {
            let cut = (!rng.random_bool(0.3)).then(|| rng.random_range(1..15));
            let announce = Some((&cluster.started_on, replica));
            match read_events(request, cut, STREAM_TIMEOUT, announce, &mut log.errors).await {
                // Cut before its first event (the replica was killed): nothing says whether the
                // run exists, so the client asks again, as a user would.
                Ok((frames, false)) if frames.is_empty() => {}
                Ok((frames, done)) => {
                    log.posted_to = Some(replica);
                    log.id = frames.iter().find_map(response_id);
                    if log.id.is_none() {
                        log.errors.push(format!(
                            "the POST's stream from replica {replica} named no response id in {} events",
                            frames.len()
                        ));
                        return false;
                    }
                    log.segments.push(Segment {
                        replica,
                        after: None,
                        frames,
                    });
                    return done;
                }
                Err(Retry::Connect) => {}
                Err(Retry::Lost) => return false,
            }
        } else {
            match send_json(request).await {
                Ok(object) => {
                    log.posted_to = Some(replica);
                    log.id = object["id"].as_str().map(str::to_owned);
                    log.first_status = object["status"].as_str().map(str::to_owned);
                    if log.id.is_none() {
                        log.errors
                            .push(format!("the POST answered without an id: {object}"));
                    }
                    return false;
                }
                Err(SendError::Connect) => {}
                Err(SendError::Other(message)) => {
                    log.errors
                        .push(format!("POST to replica {replica}: {message}"));
                    return false;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// Why a request gave nothing to keep.
enum Retry {
    /// The replica was down: nothing was sent.
    Connect,
    /// The request failed after it was sent (the error is logged).
    Lost,
}

/// Reads a stream's events, leaving after `cut` events when given; the events, and whether
/// the stream ended with a terminal event.
async fn read_events(
    request: reqwest::RequestBuilder,
    cut: Option<usize>,
    timeout: Duration,
    announce: Option<(&StartedOn, usize)>,
    errors: &mut Vec<String>,
) -> Result<(Vec<Frame>, bool), Retry> {
    let answer = match request.timeout(timeout).send().await {
        Ok(answer) => answer,
        Err(err) if err.is_connect() => return Err(Retry::Connect),
        // A replica killed mid-request: what was received is kept below; nothing here.
        Err(_) => return Err(Retry::Connect),
    };
    if answer.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE {
        return Err(Retry::Connect);
    }
    if !answer.status().is_success() {
        let status = answer.status();
        let text = answer.text().await.unwrap_or_default();
        errors.push(format!("a stream was refused with {status}: {text}"));
        return Err(Retry::Lost);
    }
    let mut splitter = Splitter::default();
    let mut frames: Vec<Frame> = Vec::new();
    let mut body = answer.bytes_stream();
    while let Some(chunk) = body.next().await {
        // A connection cut by a kill ends the segment; the frames so far are compared.
        let Ok(chunk) = chunk else { break };
        match splitter.push(&chunk) {
            Ok(new) => {
                if let Some((started_on, replica)) = announce
                    && frames.is_empty()
                    && let Some(id) = new.first().and_then(response_id)
                {
                    // Known to the kills as soon as its first event arrives.
                    lock(started_on).insert(id, replica);
                }
                frames.extend(new);
            }
            Err(err) => {
                errors.push(err);
                break;
            }
        }
        if frames.last().is_some_and(Frame::is_terminal) {
            return Ok((frames, true));
        }
        if cut.is_some_and(|cut| frames.len() >= cut) {
            break;
        }
    }
    Ok((frames, false))
}

enum SendError {
    /// The replica was down, or was killed while it answered: nothing to judge, so the
    /// client asks again, as a user (and the official SDKs, which retry these) would.
    Connect,
    /// An answer that is wrong, or a live replica that did not answer in time.
    Other(String),
}

impl SendError {
    fn from_transport(err: reqwest::Error) -> SendError {
        if err.is_timeout() {
            SendError::Other(err.to_string())
        } else {
            SendError::Connect
        }
    }
}

async fn send_json(request: reqwest::RequestBuilder) -> Result<Value, SendError> {
    let answer = request
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(SendError::from_transport)?;
    let status = answer.status();
    if status == reqwest::StatusCode::SERVICE_UNAVAILABLE {
        return Err(SendError::Connect);
    }
    let text = answer.text().await.map_err(SendError::from_transport)?;
    if !status.is_success() {
        return Err(SendError::Other(format!("{status}: {text}")));
    }
    serde_json::from_str(&text).map_err(|err| SendError::Other(format!("{err}: {text}")))
}

async fn get_json(http: &reqwest::Client, url: &str, token: &str) -> Result<Value, SendError> {
    send_json(http.get(url).bearer_auth(token)).await
}

/// The response id an event names (`response.created` and the other `response.*` events).
fn response_id(frame: &Frame) -> Option<String> {
    let data = data_json(&frame.bytes)?;
    Some(data["response"]["id"].as_str()?.to_owned())
}

fn lock(
    started_on: &StartedOn,
) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, usize>> {
    started_on
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Which message items of a response to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Items {
    /// Those not cut short: the answer.
    Whole,
    /// Those cut short (`incomplete`) by a takeover.
    CutShort,
}

/// The text of a Responses object's `output_text` parts of `items`, in order (the SDKs'
/// `output_text` when nothing was cut short).
pub(crate) fn output_text(object: &Value, items: Items) -> String {
    output_texts(object, items).concat()
}

/// The text of each message item of `items`, in order.
fn output_texts(object: &Value, items: Items) -> Vec<String> {
    object["output"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "message")
        .filter(|item| (item["status"] == "incomplete") == (items == Items::CutShort))
        .map(|item| {
            item["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|part| part["type"] == "output_text")
                .filter_map(|part| part["text"].as_str())
                .collect()
        })
        .collect()
}

/// The full replay of run `id`: every stored event from the start, read to the end.
pub(crate) async fn full_replay(
    http: &reqwest::Client,
    url: &str,
    id: &str,
    token: &str,
) -> Result<Vec<Frame>, String> {
    let request = http
        .get(format!("{url}/v1/responses/{id}?stream=true"))
        .bearer_auth(token);
    let mut errors = Vec::new();
    match read_events(request, None, REPLAY_TIMEOUT, None, &mut errors).await {
        Ok((frames, true)) => Ok(frames),
        Ok((frames, false)) => Err(format!(
            "the full replay ended after {} events without a terminal event{}",
            frames.len(),
            errors
                .first()
                .map(|err| format!(" ({err})"))
                .unwrap_or_default()
        )),
        Err(_) => Err(errors
            .pop()
            .unwrap_or_else(|| format!("the replica at {url} did not answer the replay"))),
    }
}
