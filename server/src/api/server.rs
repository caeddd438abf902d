//! [`Server`]: the shared state, the [`Router`], serving and graceful shutdown.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use conversation_tree::Store;
use http::StatusCode;
use service::{ChatService, Service, store::StoreKind};
use tokio::net::TcpListener;
use tower_http::limit::RequestBodyLimitLayer;

use crate::api::auth::require_caller;
use crate::api::encode::openai_error::openai_errors;
use crate::api::error::{ApiError, ServerError};
use crate::api::guard::{check_origin_and_host, read_json_body};
use crate::api::routes::{chat_completions, misc, models, openapi, response, responses};
use crate::api::state::{App, check};
use crate::config::ServerConfig;

/// The Chat Shell service: build one from a [`ServerConfig`], mount its [`router`](Self::router)
/// or [`serve`](Self::serve) it.
///
/// Cloning is cheap; clones share state (runs in flight, limits, the store).
#[derive(Clone, Debug)]
pub struct Server {
    app: Arc<App>,
}

impl Server {
    /// A server for `config`, opening the store it names, connecting its MCP servers and
    /// checking that its knowledge bases exist.
    pub async fn new(config: ServerConfig) -> Result<Self, ServerError> {
        check(&config)?;
        let service = Service::open(config.service.clone(), &config.tokens).await?;
        Ok(Server {
            app: Arc::new(App::new(config, service)?),
        })
    }

    /// A server for `config` logging into `store` (of `kind`, for `/health`) instead of the
    /// one `config.service.store` names. MCP servers are connected, and knowledge bases
    /// searched, by [`Server::new`] only: a config naming some is refused here.
    pub fn with_store(
        config: ServerConfig,
        store: Arc<dyn Store>,
        kind: StoreKind,
    ) -> Result<Self, ServerError> {
        check(&config)?;
        let service = Service::with_store(config.service.clone(), &config.tokens, store, kind)?;
        Ok(Server {
            app: Arc::new(App::new(config, service)?),
        })
    }

    /// The service the routes use, for running agents in-process (the CLI does).
    pub fn chat(&self) -> &ChatService {
        self.app.service.chat()
    }

    /// The service the routes answer through: runs, principals, gateway calls.
    pub fn service(&self) -> &Service {
        &self.app.service
    }

    /// The routes: `POST /v1/response`, `POST /v1/response/{id}/cancel`,
    /// `POST /v1/chat/completions`, `POST /v1/responses`, `GET /v1/responses/{id}`,
    /// `POST /v1/responses/{id}/cancel`, `GET /v1/models`, `GET /health`, `GET /openapi.json`.
    ///
    /// Authentication reads the peer address from `ConnectInfo<SocketAddr>`: serve with
    /// `into_make_service_with_connect_info::<SocketAddr>()` (as [`serve`](Self::serve)
    /// does), or a server without tokens refuses every request.
    pub fn router(&self) -> Router {
        let auth = middleware::from_fn_with_state(self.app.auth.clone(), require_caller);
        let json_body = middleware::from_fn_with_state(Arc::clone(&self.app.guard), read_json_body);
        let api = Router::new()
            .route(
                "/v1/response",
                post(response::create_response).layer(json_body.clone()),
            )
            .route("/v1/response/{id}/cancel", post(misc::cancel_response))
            .route(
                "/v1/chat/completions",
                post(chat_completions::create_chat_completion).layer(json_body.clone()),
            )
            .route(
                "/v1/responses",
                post(responses::create_response).layer(json_body.clone()),
            )
            .route("/v1/responses/{id}", get(responses::get_response))
            .route(
                "/v1/responses/{id}/cancel",
                post(responses::cancel_response),
            )
            .route("/v1/models", get(models::list_models))
            .route_layer(auth.clone());
        let mut public = Router::new()
            .route("/health", get(misc::health))
            .route("/openapi.json", get(openapi::openapi_json));
        if self.app.config.tokens.is_empty() {
            // Without tokens nothing is public: the whole server is loopback-only.
            public = public.route_layer(auth);
        }
        // Layers wrap what is above them: the 413 mapping sees the body limit's answers, the
        // origin and host check comes before authentication, CORS (when configured) answers
        // preflights before anything else.
        let router = api
            .merge(public)
            .layer(DefaultBodyLimit::max(self.app.config.body_limit))
            .layer(RequestBodyLimitLayer::new(self.app.config.body_limit))
            .layer(middleware::from_fn(json_payload_too_large))
            .layer(middleware::from_fn_with_state(
                Arc::clone(&self.app.guard),
                check_origin_and_host,
            ))
            .with_state(Arc::clone(&self.app));
        // Outermost but for CORS, so every error of the OpenAI routes, whichever layer gave
        // it, is in OpenAI's shape.
        let router = router.layer(middleware::from_fn(openai_errors));
        match &self.app.cors {
            Some(cors) => router.layer(cors.clone()),
            None => router,
        }
    }

    /// Serves on `listener` until `signal` completes, then shuts down gracefully: no new
    /// connections are accepted, new responses are refused (503), responses in flight may
    /// finish within the configured grace period, the rest are cancelled (their clients get
    /// `response.cancelled`), and the call returns once every connection is closed, at the
    /// latest one second after the grace period, whatever the clients do.
    ///
    /// Each connection has the configured header read timeout (which also closes kept-alive
    /// connections idle that long) and write stall timeout, and at most `max_connections`
    /// are served at once: more are answered 503 and closed.
    pub async fn serve(
        &self,
        listener: TcpListener,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        crate::api::listen::serve(
            self.router(),
            listener,
            &self.app.config,
            Arc::clone(self.app.service.runs()),
            signal,
        )
        .await
    }

    /// Begins the graceful shutdown of the runs without a listener (for embedders that serve
    /// the router themselves); returns when no run is left.
    pub async fn shutdown(&self) {
        self.app
            .service
            .runs()
            .shutdown(self.app.config.shutdown_grace())
            .await;
    }
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
