//! [`Server`]: the shared state, the [`Router`], serving and graceful shutdown.

use std::sync::Arc;

use axum::Router;
use axum::middleware;
use axum::routing::get;
use conversation_tree::Store;
use conversation_tree::runs::RunProtocol;
use service::store::StoreKind;
use service::{ChatService, Service};
use tokio::net::TcpListener;

use crate::api::error::ServerError;
use crate::api::layers::{self, Routes};
use crate::api::state::{App, check};
use crate::api::{chat_shell, health, openai, openapi, request_log};
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
        Ok(Server::around(App::new(config, service)?))
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
        Ok(Server::around(App::new(config, service)?))
    }

    /// The server around `app`, registered to continue the background runs of replicas that
    /// stopped (each protocol its own).
    fn around(app: App) -> Self {
        let app = Arc::new(app);
        if let Some(records) = app.service.run_records() {
            records.on_takeover(
                RunProtocol::ChatShell,
                Arc::new(chat_shell::takeover::ChatShellResume::new(&app)),
            );
            records.on_takeover(
                RunProtocol::Responses,
                Arc::new(openai::responses::background::ResumeResponses::new(&app)),
            );
        }
        Server { app }
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
    /// `POST /v1/chat/completions`, `GET /v1/chat/completions/{id}`, `POST /v1/responses`,
    /// `GET /v1/responses/{id}`,
    /// `POST /v1/responses/{id}/cancel`, `GET /v1/models`, `GET /v1/models/{id}`,
    /// `POST /v1/embeddings`, `GET /health`, `GET /openapi.json`. Any other path under `/v1/`,
    /// or a route asked with a method it does not take, is answered in OpenAI's error shape.
    ///
    /// Authentication reads the peer address from `ConnectInfo<SocketAddr>`: serve with
    /// `into_make_service_with_connect_info::<SocketAddr>()` (as [`serve`](Self::serve)
    /// does), or a server without tokens refuses every request.
    pub fn router(&self) -> Router {
        let app = &self.app;
        // Each protocol's routes come behind the shared layers (`layers`); a protocol is one
        // folder and one line here.
        let router = Router::new()
            .merge(chat_shell::router(app))
            .merge(openai::router(app))
            .merge(service_routes(app))
            // A path no protocol serves passes the shared guards too: a refused origin or host
            // is refused whatever it asks for.
            .fallback_service(layers::guarded(app, Router::new()).with_state(Arc::clone(app)))
            .with_state(Arc::clone(app));
        // CORS (when configured) answers preflights before anything else.
        let router = match &app.cors {
            Some(cors) => router.layer(cors.clone()),
            None => router,
        };
        // Every request, refused or answered, gets its id and its log line (a layer of the
        // routes, so it reads the matched route's template).
        let router = router.layer(middleware::from_fn(request_log::log_requests));
        // Outside the routes, where the router's own 405 carries its `Allow`: a path or method
        // no route takes under `/v1/` is answered in OpenAI's error shape.
        Router::new()
            .fallback_service(router)
            .layer(middleware::from_fn(openai::unrouted::openai_unrouted))
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

/// `GET /health` and `GET /openapi.json`: public when the server has tokens; without tokens
/// nothing is public, the whole server is loopback-only.
fn service_routes(app: &App) -> Routes {
    let routes = Router::new()
        .route("/health", get(health::health))
        .route("/openapi.json", get(openapi::openapi_json));
    if app.config.tokens.is_empty() {
        layers::authenticated(app, routes)
    } else {
        layers::guarded(app, routes)
    }
}
