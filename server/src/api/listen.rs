//! The connection loop behind [`Server::serve`](crate::Server::serve): HTTP/1 connections
//! with a header read timeout and a write stall (idle) timeout, at most `max_connections` at
//! once, and a shutdown that returns within the grace period whatever the clients do.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use service::Runs;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt as _;

use crate::api::error::ServerError;
use crate::config::ServerConfig;

/// After the grace period (and the cancellation of the runs still in flight), how long the
/// connections have to deliver their last events before they are closed.
pub(crate) const FLUSH_AFTER_GRACE: Duration = Duration::from_secs(1);

/// Most bytes of an answer the kernel may hold unsent for a connection. Unbounded, it grew its
/// send buffer to megabytes for a client that read nothing: the stall timeout started only
/// once those were full (many seconds into an answer), and a run whose whole answer fit in
/// them finished and was stored as completed though the client never read it. Bounded, a
/// stalled client blocks the write within this many bytes (plus what its own receive buffer
/// takes), the run waits on it, and the stall timeout cancels it.
const UNSENT_LIMIT: u32 = 16 * 1024;

/// Applies [`UNSENT_LIMIT`] to `stream`: `TCP_NOTSENT_LOWAT` where there is one (bytes in
/// flight still grow with the link), a send buffer of that size elsewhere.
fn limit_unsent(stream: &TcpStream) {
    let socket = socket2::SockRef::from(stream);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let limited = socket.set_tcp_notsent_lowat(UNSENT_LIMIT);
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let limited = socket.set_send_buffer_size(UNSENT_LIMIT as usize);
    if let Err(err) = limited {
        tracing::warn!(error = %err, "cannot bound the unsent bytes of a connection");
    }
}

/// The answer of a connection over `max_connections`, written before it is closed.
fn overloaded() -> Vec<u8> {
    let body = r#"{"code":"too_many_connections","message":"the server already serves its most connections at once (`max_connections`); retry later","details":null}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves `router` on `listener` until `signal`, then shuts down: see
/// [`Server::serve`](crate::Server::serve).
pub(crate) async fn serve(
    router: Router,
    listener: TcpListener,
    config: &ServerConfig,
    runs: Arc<Runs>,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let connections = TaskTracker::new();
    let slots = Arc::new(Semaphore::new(config.max_connections));
    // Cancelled at the signal: connections finish their answer and close.
    let draining = CancellationToken::new();
    // Cancelled at the deadline: connections still open are closed.
    let closing = CancellationToken::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout());
    let idle = config.idle_timeout();

    // The signal starts the drain: connections finish their answers and close, new
    // connections are still accepted (one request each: `/health` says `shutting_down` and new
    // responses get 503) while the runs in flight get the grace period; then the listener
    // closes.
    let grace = config.shutdown_grace();
    let shutdown = async {
        signal.await;
        draining.cancel();
        let deadline = Instant::now() + grace + FLUSH_AFTER_GRACE;
        if tokio::time::timeout_at(deadline, runs.shutdown(grace))
            .await
            .is_err()
        {
            tracing::warn!("runs did not wind up after being cancelled; stopping anyway");
        }
        deadline
    };
    let mut shutdown = pin!(shutdown);
    let deadline = loop {
        let (stream, peer) = tokio::select! {
            deadline = &mut shutdown => break deadline,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!(error = %err, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            tracing::warn!(%peer, limit = config.max_connections, "too many connections");
            tokio::spawn(refuse(stream));
            continue;
        };
        let _ = stream.set_nodelay(true);
        limit_unsent(&stream);
        let service = router
            .clone()
            .map_request(move |mut request: http::Request<_>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request.map(Body::new)
            });
        let during_drain = draining.is_cancelled();
        let mut http = http.clone();
        if during_drain {
            http.keep_alive(false);
        }
        let connection = http.serve_connection(
            TokioIo::new(StallTimeout::new(stream, idle)),
            TowerToHyperService::new(service),
        );
        let draining = draining.clone();
        let closing = closing.clone();
        connections.spawn(async move {
            let _slot = slot;
            let mut connection = pin!(connection);
            if !during_drain {
                tokio::select! {
                    result = connection.as_mut() => return log_end(peer, result),
                    () = draining.cancelled() => connection.as_mut().graceful_shutdown(),
                }
            }
            tokio::select! {
                result = connection.as_mut() => log_end(peer, result),
                () = closing.cancelled() => {
                    tracing::info!(%peer, "shutdown deadline reached; closing the connection");
                }
            }
        });
    };

    drop(listener);
    connections.close();
    if tokio::time::timeout_at(deadline, connections.wait())
        .await
        .is_err()
    {
        tracing::info!(
            connections = connections.len(),
            "closing the connections still open after the grace period"
        );
        closing.cancel();
        connections.wait().await;
    }
    Ok(())
}

fn log_end(peer: SocketAddr, result: Result<(), hyper::Error>) {
    if let Err(err) = result {
        // Timeouts, resets and malformed requests: the client's doing, not the server's.
        tracing::debug!(%peer, error = %err, "connection ended");
    }
}

/// Answers a connection over the limit with 503 and closes it.
async fn refuse(mut stream: TcpStream) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(&overloaded()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// A stream whose writes fail with `TimedOut` once one has stalled (the client stopped
/// reading) for longer than the timeout.
struct StallTimeout<S> {
    inner: S,
    timeout: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> StallTimeout<S> {
    fn new(inner: S, timeout: Duration) -> Self {
        StallTimeout {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// Records the outcome of a write-side poll: progress clears the stall, a stall longer
    /// than the timeout fails.
    fn watch<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let timeout = self.timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        ready!(stalled.as_mut().poll(cx));
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the client read nothing for {} s (`idle_timeout_secs`)",
                timeout.as_secs()
            ),
        )))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StallTimeout<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StallTimeout<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, poll)
    }
}
