//! One run: started and read live on replica A, followed on B and on A.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use serde_json::json;

use crate::provider::TAG_PREFIX;
use crate::replicas::MODEL;
use crate::sse::{Frame, Splitter, data_json};

/// How long one stream may take to its terminal event.
const STREAM_TIMEOUT: Duration = Duration::from_secs(120);

/// An event as a client received it, with the instant of the read that completed it.
#[derive(Clone, Debug)]
pub(crate) struct Event {
    pub(crate) frame: Frame,
    pub(crate) arrived: Instant,
}

/// Splits the bytes of one read into `events`, each stamped with the read's instant.
fn split(splitter: &mut Splitter, bytes: &[u8], events: &mut Vec<Event>) -> Result<(), String> {
    let arrived = Instant::now();
    events.extend(
        splitter
            .push(bytes)?
            .into_iter()
            .map(|frame| Event { frame, arrived }),
    );
    Ok(())
}

fn ended(events: &[Event]) -> bool {
    events.last().is_some_and(|event| event.frame.is_terminal())
}

/// What the clients of one run received.
pub(crate) struct RunLog {
    /// The run's number (in its prompt).
    pub(crate) tag: usize,
    /// The response id.
    pub(crate) id: String,
    /// The stream of `POST /v1/responses` on A.
    pub(crate) origin: Vec<Event>,
    /// The follower on B.
    pub(crate) other: Vec<Event>,
    /// The follower on A.
    pub(crate) same: Vec<Event>,
}

/// Where the run is started and followed.
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) http: reqwest::Client,
    pub(crate) a: String,
    pub(crate) b: String,
    pub(crate) token: String,
}

/// Starts run `tag` on A with `background: true, stream: true`, reads it to its end, and
/// follows it on B and on A from the moment its id is known.
pub(crate) async fn drive(target: Target, tag: usize) -> Result<RunLog, String> {
    let body = json!({
        "model": MODEL,
        "input": format!("Count for me ({TAG_PREFIX}{tag})."),
        "background": true,
        "stream": true,
    });
    let answer = target
        .http
        .post(format!("{}/v1/responses", target.a))
        .bearer_auth(&target.token)
        .json(&body)
        .send()
        .await
        .map_err(|err| format!("run {tag}: POST on A failed: {err}"))?;
    let status = answer.status();
    if !status.is_success() {
        let text = answer.text().await.unwrap_or_default();
        return Err(format!("run {tag}: POST on A answered {status}: {text}"));
    }
    let mut bytes = answer.bytes_stream();
    let mut splitter = Splitter::default();
    let mut origin: Vec<Event> = Vec::new();
    let mut followers = None;
    let deadline = tokio::time::Instant::now() + STREAM_TIMEOUT;
    while !ended(&origin) {
        let read = tokio::time::timeout_at(deadline, bytes.next())
            .await
            .map_err(|_| format!("run {tag}: the POST stream on A did not end in time"))?;
        let Some(read) = read else {
            return Err(format!(
                "run {tag}: the POST stream on A ended before a terminal event"
            ));
        };
        let read = read.map_err(|err| format!("run {tag}: reading the POST stream: {err}"))?;
        split(&mut splitter, &read, &mut origin)?;
        if followers.is_none()
            && let Some(id) = origin
                .first()
                .and_then(|event| data_json(&event.frame.bytes))
                .and_then(|json| json["response"]["id"].as_str().map(str::to_owned))
        {
            let other = tokio::spawn(follow(target.clone(), target.b.clone(), id.clone()));
            let same = tokio::spawn(follow(target.clone(), target.a.clone(), id.clone()));
            followers = Some((id, other, same));
        }
    }
    let Some((id, other, same)) = followers else {
        return Err(format!(
            "run {tag}: the POST stream on A named no response id"
        ));
    };
    let joined = |result: Result<Result<Vec<Event>, String>, tokio::task::JoinError>| {
        result.map_err(|err| format!("run {tag}: a follower panicked: {err}"))?
    };
    Ok(RunLog {
        tag,
        other: joined(other.await).map_err(|err| format!("run {tag} on B: {err}"))?,
        same: joined(same.await).map_err(|err| format!("run {tag} on A: {err}"))?,
        id,
        origin,
    })
}

/// `GET {base}/v1/responses/{id}?stream=true` to its terminal event.
async fn follow(target: Target, base: String, id: String) -> Result<Vec<Event>, String> {
    let answer = target
        .http
        .get(format!("{base}/v1/responses/{id}?stream=true"))
        .bearer_auth(&target.token)
        .send()
        .await
        .map_err(|err| format!("GET ?stream=true failed: {err}"))?;
    let status = answer.status();
    if !status.is_success() {
        let text = answer.text().await.unwrap_or_default();
        return Err(format!("GET ?stream=true answered {status}: {text}"));
    }
    let mut bytes = answer.bytes_stream();
    let mut splitter = Splitter::default();
    let mut events: Vec<Event> = Vec::new();
    let deadline = tokio::time::Instant::now() + STREAM_TIMEOUT;
    while !ended(&events) {
        let read = tokio::time::timeout_at(deadline, bytes.next())
            .await
            .map_err(|_| "the followed stream did not end in time".to_owned())?;
        let Some(read) = read else {
            return Err("the followed stream ended before a terminal event".to_owned());
        };
        let read = read.map_err(|err| format!("reading the followed stream: {err}"))?;
        split(&mut splitter, &read, &mut events)?;
    }
    Ok(events)
}
