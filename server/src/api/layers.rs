//! The layers every protocol's routes pass, applied by each protocol's `router()` so that a
//! protocol may add its own outside them (the OpenAI routes re-shape every error, whichever
//! layer gave it).
//!
//! Layers wrap what is above them: the 413 mapping sees the body limit's answers, and the
//! origin and host check comes before authentication.

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use http::StatusCode;
use tower_http::limit::RequestBodyLimitLayer;

use crate::api::auth::require_caller;
use crate::api::error::ApiError;
use crate::api::guard::{check_origin_and_host, read_json_body};
use crate::api::state::App;

/// The routes of a protocol, before the server gives them its state.
pub(crate) type Routes = Router<Arc<App>>;

/// `route` reads a JSON body: the content type must be JSON (415), and the whole body must
/// arrive within the body limit (413) and the body read timeout (408). A method the route
/// does not take is answered 405 before any of this (the check is a route layer).
pub(crate) fn json_body(app: &App, route: MethodRouter<Arc<App>>) -> MethodRouter<Arc<App>> {
    route.route_layer(middleware::from_fn_with_state(
        Arc::clone(&app.guard),
        read_json_body,
    ))
}

/// `routes` for callers with a valid bearer token (or on loopback, for a server without
/// tokens), behind the [`guarded`] layers.
pub(crate) fn authenticated(app: &App, routes: Routes) -> Routes {
    guarded(
        app,
        routes.route_layer(middleware::from_fn_with_state(
            app.auth.clone(),
            require_caller,
        )),
    )
}

/// `routes` behind what every request passes, authenticated or not: the body limit (413, in
/// JSON), then the origin and host check (403).
pub(crate) fn guarded(app: &App, routes: Routes) -> Routes {
    routes
        .layer(DefaultBodyLimit::max(app.config.body_limit))
        .layer(RequestBodyLimitLayer::new(app.config.body_limit))
        .layer(middleware::from_fn(json_payload_too_large))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&app.guard),
            check_origin_and_host,
        ))
}

/// Turns tower-http's plain-text 413 (a `Content-Length` over the limit) into the JSON error
/// every other answer uses.
async fn json_payload_too_large(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let is_json = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/json"));
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE && !is_json {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "the request body is larger than this server accepts",
        )
        .into_response();
    }
    response
}
