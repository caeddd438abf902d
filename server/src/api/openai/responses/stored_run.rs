//! A response's stored run, read on any replica: `GET /v1/responses/{id}` of a background
//! response while it runs (and after), its events streamed again
//! (`?stream=true&starting_after=N`), and its cancel.
//!
//! # The response object of a run
//!
//! `GET` builds it from the run's stored events, the bytes its clients were sent: the last
//! `response.*` snapshot (`response.created` or `response.in_progress` while it runs, the
//! terminal event once it ended), with the output items as their `output_item.added` /
//! `output_item.done` events left them and the text deltas since applied. A finished run's
//! object is its terminal event's response, exactly what a streaming client got last. A
//! `response.in_progress` after a takeover sets the output to what it carries (see
//! `background`): none when the model call is made again, the items so far when an agent's
//! run goes on after them.

use axum::response::Response;
use conversation_tree::ResponseStatus;
use conversation_tree::runs::MAX_EVENT_PAGE;
use http::StatusCode;
use serde_json::{Value, json};
use service::runs::NewRun;
use service::runs::{Run, RunMode, RunProtocol, RunStatus};
use service::{CancellationToken, Ending, Principal, RunRecords, ServiceError};

use super::encode::ResponseObject;

use crate::api::openai::error::OpenAiError;
use crate::api::sse;
use crate::api::state::App;

/// The service's run records (every service that logs has them).
pub(super) fn records(app: &App) -> Result<&RunRecords, OpenAiError> {
    app.service.run_records().ok_or_else(|| {
        OpenAiError::new(
            StatusCode::BAD_REQUEST,
            "background_unavailable",
            "this server keeps no runs, so it serves no background responses",
        )
        .with_param("background")
    })
}

/// Keeps a record of the foreground response `begun` of `caller` while it runs (the server
/// does on PostgreSQL, where other replicas share the store), off the served path (a task of
/// its own writes it): another replica's `GET` shows the response in progress,
/// and its cancel reaches this replica, which cancels `cancel`. The record ends as `ending`
/// says the response ended; no events are stored (its client has them).
pub(super) fn record_foreground(
    app: &App,
    caller: Principal,
    begun: &ResponseObject,
    cancel: CancellationToken,
    ending: Ending,
) {
    let Some(records) = app.service.run_records().cloned() else {
        return;
    };
    let run = NewRun::new(
        begun.id.clone(),
        app.service.owner(caller),
        RunProtocol::Responses,
        RunMode::Foreground,
        json!({"response": begun}),
    );
    tokio::spawn(async move {
        let id = run.id().to_owned();
        let worker = match records.start(run).await {
            Ok(worker) => worker,
            Err(error) => {
                tracing::warn!(run = %id, %error, "could not record a response in progress");
                return;
            }
        };
        let _ = worker.in_progress().await;
        let ended = ending.wait();
        tokio::pin!(ended);
        let status = tokio::select! {
            status = &mut ended => status,
            () = worker.cancel_token().cancelled() => {
                cancel.cancel();
                ended.await
            }
        };
        let status = match status {
            ResponseStatus::Completed => RunStatus::Completed,
            ResponseStatus::Cancelled => RunStatus::Cancelled,
            _ => RunStatus::Failed,
        };
        if let Err(error) = worker.finish(status, None).await {
            tracing::warn!(run = %id, %error, "could not record how a response ended");
        }
    });
}

/// The answer when the run store fails.
pub(super) fn run_store_failed(error: ServiceError) -> OpenAiError {
    OpenAiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "store_error",
        format!("the run store failed: {error}"),
    )
}

/// The Responses run `id` of `caller`, if there is one.
pub(super) async fn run_of(
    app: &App,
    caller: Principal,
    id: &str,
) -> Result<Option<Run>, OpenAiError> {
    let Some(records) = app.service.run_records() else {
        return Ok(None);
    };
    let run = records.get(id, caller).await.map_err(run_store_failed)?;
    Ok(run.filter(|run| run.protocol == RunProtocol::Responses))
}

/// Refuses to continue a response still running: its answer is not whole yet.
pub(super) async fn refuse_running_previous(
    app: &App,
    caller: Principal,
    previous: &str,
) -> Result<(), OpenAiError> {
    match run_of(app, caller, previous).await? {
        Some(run) if !run.status.is_terminal() => Err(OpenAiError::invalid(
            "previous_response_id",
            format!(
                "response `{previous}` is still {}: a response can be continued once it has \
                 ended; poll `GET /v1/responses/{previous}` until it has",
                run.status
            ),
        )),
        _ => Ok(()),
    }
}

/// The response object of `run`, as its stored events describe it.
pub(super) async fn object_of(app: &App, run: &Run) -> Result<Value, OpenAiError> {
    let store = app.service.chat().store();
    // A finished run's last event is its terminal response, whole: read it alone, not the
    // whole stream again at every poll.
    if run.status.is_terminal()
        && let Some(last) = run.last_seq
    {
        let tail = store
            .events_after(&run.id, last.checked_sub(1), 1)
            .await
            .map_err(|error| run_store_failed(ServiceError::Runs(error)))?;
        if let Some(data) = tail.first().and_then(|event| event_data(&event.data))
            && is_terminal_event(&data)
        {
            return Ok(data["response"].clone());
        }
    }
    let mut events = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .events_after(&run.id, after, MAX_EVENT_PAGE)
            .await
            .map_err(|error| run_store_failed(ServiceError::Runs(error)))?;
        let full = page.len() == MAX_EVENT_PAGE;
        after = page.last().map(|event| event.seq).or(after);
        events.extend(page);
        if !full {
            break;
        }
    }
    let mut object = run.spec["response"].clone();
    let mut output: Vec<Value> = Vec::new();
    let mut ended = false;
    for event in &events {
        let Some(data) = event_data(&event.data) else {
            continue;
        };
        apply(&data, &mut object, &mut output, &mut ended);
    }
    if !ended {
        object["output"] = Value::Array(output);
        // A foreground response is answered from the moment its record exists.
        let status = match (run.mode, run.status) {
            (RunMode::Foreground, RunStatus::Queued) => RunStatus::InProgress,
            (_, status) => status,
        };
        object["status"] = json!(status.as_str());
        if run.status.is_terminal() && object["error"].is_null() {
            object["error"] = json!({
                "code": if run.status == RunStatus::Cancelled { "cancelled" } else { "server_error" },
                "message": run.error.clone().unwrap_or_else(|| format!("the response ended {}", run.status)),
            });
        }
    }
    Ok(object)
}

/// Applies one stored event to the object and output it describes so far.
fn apply(data: &Value, object: &mut Value, output: &mut Vec<Value>, ended: &mut bool) {
    let index = data["output_index"]
        .as_u64()
        .and_then(|index| usize::try_from(index).ok());
    match data["type"].as_str().unwrap_or_default() {
        // A response that begins again (a takeover) starts from the output its snapshot
        // holds: none when the model call is made again, the first worker's items when an
        // agent's run goes on after them.
        "response.created" | "response.in_progress" => {
            *object = data["response"].clone();
            *output = data["response"]["output"]
                .as_array()
                .cloned()
                .unwrap_or_default();
        }
        _ if is_terminal_event(data) => {
            *object = data["response"].clone();
            *ended = true;
        }
        "response.output_item.added" | "response.output_item.done" => {
            if let Some(index) = index {
                if output.len() <= index {
                    output.resize(index + 1, Value::Null);
                }
                output[index] = data["item"].clone();
            }
        }
        "response.content_part.added" => {
            if let Some(content) = index
                .and_then(|index| output.get_mut(index))
                .and_then(|item| item["content"].as_array_mut())
            {
                content.push(data["part"].clone());
            }
        }
        "response.output_text.delta" => {
            let part = data["content_index"].as_u64().unwrap_or(0) as usize;
            if let Some(text) = index
                .and_then(|index| output.get_mut(index))
                .and_then(|item| item["content"].get_mut(part))
                .and_then(|part| part.get_mut("text"))
                && let (Some(sofar), Some(delta)) = (text.as_str(), data["delta"].as_str())
            {
                *text = Value::String(format!("{sofar}{delta}"));
            }
        }
        _ => {}
    }
}

/// Whether `data` is the event that ends a response, holding it whole.
fn is_terminal_event(data: &Value) -> bool {
    matches!(
        data["type"].as_str(),
        Some("response.completed" | "response.failed" | "response.incomplete")
    )
}

/// The JSON of a stored SSE frame's `data:` line.
fn event_data(frame: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(frame).ok()?;
    let data = text.lines().find_map(|line| line.strip_prefix("data: "))?;
    serde_json::from_str(data).ok()
}

/// The run's events after `after`, then live until it ends, as the SSE stream a live client
/// got.
pub(super) fn follow(
    records: &RunRecords,
    caller: Principal,
    id: &str,
    after: Option<u64>,
) -> Response {
    let events = records.follow(id, caller, after);
    let run = id.to_owned();
    sse::response(events, move |event, frames| match event {
        Ok(event) => frames.raw(&event.data),
        Err(error) => tracing::warn!(%run, %error, "a followed run could not be read further"),
    })
}

/// `GET /v1/responses/{id}?stream=true&starting_after=N`: the stream of a background response.
pub(super) async fn stream(
    app: &App,
    caller: Principal,
    id: &str,
    starting_after: Option<u64>,
) -> Result<Response, OpenAiError> {
    let Some(run) = run_of(app, caller, id).await? else {
        return Err(super::handlers::not_found(id));
    };
    if run.mode != RunMode::Background {
        return Err(OpenAiError::invalid(
            "stream",
            format!(
                "response `{id}` was not created with `background: true`; only a background \
                 response can be streamed again"
            ),
        ));
    }
    Ok(follow(records(app)?, caller, id, starting_after))
}

/// `POST /v1/responses/{id}/cancel` of a stored run, on whichever replica runs it: the response
/// as it ended. `None` when `caller` has no such run.
pub(super) async fn cancel(
    app: &App,
    caller: Principal,
    id: &str,
) -> Result<Option<Response>, OpenAiError> {
    let Some(before) = run_of(app, caller, id).await? else {
        return Ok(None);
    };
    if before.status.is_terminal() {
        return Err(not_cancellable(id, before.status));
    }
    let Some(run) = records(app)?
        .cancel(id, caller)
        .await
        .map_err(run_store_failed)?
    else {
        return Ok(None);
    };
    if run.status.is_terminal() && run.status != RunStatus::Cancelled {
        return Err(not_cancellable(id, run.status));
    }
    // A foreground response is logged into the tree as it ended.
    if run.mode == RunMode::Foreground
        && let Some(node) = super::handlers::stored(app, caller, id).await?
    {
        let object = super::handlers::from_node(app, id, &node).await?;
        return Ok(Some(super::handlers::json(object)));
    }
    Ok(Some(super::handlers::json(object_of(app, &run).await?)))
}

fn not_cancellable(id: &str, status: RunStatus) -> OpenAiError {
    OpenAiError::new(
        StatusCode::BAD_REQUEST,
        "response_not_cancellable",
        format!(
            "response `{id}` already ended ({status}); only a response in progress can be \
             cancelled"
        ),
    )
}
