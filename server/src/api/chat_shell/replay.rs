//! `GET /v1/response/{id}/events`: a run's stored events after the client's last one, then its
//! live ones until it ends, from whichever replica runs it.

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use conversation_tree::runs::{RunEvent, RunProtocol};
use http::{HeaderMap, HeaderValue, header};
use serde_json::json;
use service::{Principal, ServiceError};

use crate::api::error::ApiError;
use crate::api::sse;
use crate::api::state::App;

/// The header an `EventSource` sends when it reconnects: the `id` of the last event it has.
const LAST_EVENT_ID: &str = "last-event-id";

/// Replays a Chat Shell response's events, then follows it live until it ends.
///
/// The events are the bytes a live client of `POST /v1/response` was sent, `id:` lines
/// included, whichever replica runs the response. Without `Last-Event-ID` (or `?after=`),
/// from the first.
#[utoipa::path(
    get,
    path = "/v1/response/{id}/events",
    tag = "response",
    params(
        ("id" = String, Path, description = "The response id (`resp-…`) from `response.start`"),
        ("Last-Event-ID" = Option<u64>, Header, nullable = false, description = "The `id` of the last event the client has: the events after it are sent. An `EventSource` sends it by itself when it reconnects."),
        ("after" = Option<u64>, Query, description = "The `id` of the last event the client has, for clients that cannot set `Last-Event-ID` (the header wins when both are sent: a reconnecting `EventSource` sends it with the URL it first opened)"),
    ),
    responses(
        (status = 200, description = "A `text/event-stream` of the response's events after \
`Last-Event-ID`, as `POST /v1/response` streams them (`id: <n>\\nevent: <name>\\ndata: <json>`), \
ending after `response.done`, `response.cancelled` or `response.error`", content_type = "text/event-stream", body = String),
        (status = 400, description = "`Last-Event-ID` (or `after`) is not an event number", body = crate::ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = crate::ErrorBody),
        (status = 403, description = "Not on loopback without tokens, a `Host` that is not this server's, or a cross-origin request", body = crate::ErrorBody),
        (status = 404, description = "No such response of this caller (another caller's responses are invisible), its events are past the retention, or the server stores no runs", body = crate::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn response_events(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let after = last_event_id(&headers, after_of(query.as_deref()))?;
    let Some(records) = app.service.run_records() else {
        return Err(ApiError::not_found(
            "this server stores no runs (it was started without a store), so there are no \
             events to replay",
        ));
    };
    let run = records.get(&id, caller).await.map_err(store_error)?;
    if !run.is_some_and(|run| run.protocol == RunProtocol::ChatShell) {
        return Err(ApiError::not_found(format!(
            "no response `{id}` of this caller (or its events are past the retention)"
        )));
    }
    let events = records.follow(&id, caller, after);
    let mut answer = sse::response(
        events,
        move |event: Result<RunEvent, ServiceError>, frames| {
            match event {
                Ok(event) => frames.raw(&event.data),
                // The stream ends here; the client resumes after its last event.
                Err(error) => tracing::warn!(%error, "a followed run's events could not be read"),
            }
        },
    );
    answer
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(answer)
}

/// The event the client has: `Last-Event-ID`, else `after`; `None` for neither (an empty
/// value counts as none).
fn last_event_id(headers: &HeaderMap, after: Option<&str>) -> Result<Option<u64>, ApiError> {
    let header = match headers.get(LAST_EVENT_ID) {
        Some(value) => Some(
            value
                .to_str()
                .map_err(|_| bad_id("Last-Event-ID", "(not text)"))?
                .trim(),
        ),
        None => None,
    };
    let (name, value) = match (header.filter(|value| !value.is_empty()), after) {
        (Some(value), _) => ("Last-Event-ID", value),
        (None, Some(after)) if !after.trim().is_empty() => ("after", after.trim()),
        (None, _) => return Ok(None),
    };
    value
        .parse::<u64>()
        .map(Some)
        .map_err(|_| bad_id(name, value))
}

/// The `after` parameter of a query string (its last one).
fn after_of(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .filter_map(|pair| pair.strip_prefix("after="))
        .next_back()
}

fn bad_id(name: &str, value: &str) -> ApiError {
    let shown: String = value.chars().take(40).collect();
    ApiError::invalid_request(format!(
        "`{name}` must be the number of an event of this stream (its `id:` line), such as 12; \
         got `{shown}`"
    ))
    .with_details(json!({"fields": [{"field": name, "reason": "not an event number"}]}))
}

/// The answer when the run records cannot be read.
pub(crate) fn store_error(error: ServiceError) -> ApiError {
    ApiError::internal(format!("cannot read the run: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(LAST_EVENT_ID, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn the_header_wins_over_the_query() {
        assert_eq!(last_event_id(&headers("7"), Some("3")).unwrap(), Some(7));
        assert_eq!(
            last_event_id(&HeaderMap::new(), Some("3")).unwrap(),
            Some(3)
        );
        assert_eq!(last_event_id(&HeaderMap::new(), None).unwrap(), None);
        assert_eq!(last_event_id(&headers(""), Some("3")).unwrap(), Some(3));
        assert_eq!(last_event_id(&headers(""), None).unwrap(), None);
    }

    #[test]
    fn after_is_read_from_the_query() {
        assert_eq!(after_of(Some("after=4")), Some("4"));
        assert_eq!(after_of(Some("x=1&after=5")), Some("5"));
        assert_eq!(after_of(Some("x=1")), None);
        assert_eq!(after_of(None), None);
    }

    #[test]
    fn an_id_that_is_not_a_number_is_refused_by_name() {
        let error = last_event_id(&headers("abc"), None).unwrap_err();
        assert_eq!(error.status(), http::StatusCode::BAD_REQUEST);
        assert!(error.body().message.contains("Last-Event-ID"));
        let error = last_event_id(&HeaderMap::new(), Some("-1")).unwrap_err();
        assert!(error.body().message.contains("`after`"));
    }
}
