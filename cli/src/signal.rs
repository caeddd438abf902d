//! The signals that stop a run or the server: Ctrl-C, and SIGTERM on Unix (what `kill` and
//! service managers send). Both cancel, so what was said so far is logged before the exit.

/// Catches Ctrl-C and SIGTERM from this call on, and resolves at the first.
///
/// On Unix the handlers are installed by the call, not when the future is first polled: a
/// server prints that it is serving before it waits for its stop, and a SIGTERM sent as soon
/// as that line shows would otherwise meet no handler and end the process at once, without a
/// graceful stop. A handler that cannot be installed leaves the other signal to stop us.
/// Elsewhere only Ctrl-C is caught, from the future's first poll (tokio offers no earlier
/// hook there).
pub(crate) fn interrupted() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};

        async fn first(signal: Option<Signal>) {
            match signal {
                Some(mut signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        let interrupt = signal(SignalKind::interrupt()).ok();
        let terminate = signal(SignalKind::terminate()).ok();
        async move {
            tokio::select! {
                () = first(interrupt) => {}
                () = first(terminate) => {}
            }
        }
    }
    #[cfg(not(unix))]
    {
        let interrupt = tokio::signal::ctrl_c();
        async move {
            if interrupt.await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}
