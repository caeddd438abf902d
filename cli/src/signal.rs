//! The signals that stop a run or the server: Ctrl-C, and SIGTERM on Unix (what `kill` and
//! service managers send). Both cancel, so what was said so far is logged before the exit.

/// Resolves at the first Ctrl-C or SIGTERM.
pub(crate) async fn interrupted() {
    let interrupt = async {
        // An error means no handler could be installed: then only SIGTERM can stop us here.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}
