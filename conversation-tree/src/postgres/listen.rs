//! Run changes from every replica: one connection per store that `LISTEN`s on one channel and
//! hands what arrives to this process's followers.
//!
//! The connection is opened by the first follower (a store that is never followed opens
//! none), and re-opened when it drops, with a growing pause. Each time it is (re)established
//! the followers get [`RunChange::Missed`]: what was notified while nobody listened is lost,
//! so they read the store again. A store made from a pool alone has no URL to listen with: its
//! followers get [`RunChange::Missed`] every [`POLL_INTERVAL`] instead, bounded polling.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt as _;
use tokio::sync::{broadcast, oneshot};
use tokio_postgres::AsyncMessage;

use crate::pg_connect::PgConnect;

use crate::runs::{self, RunChange, RunChanges};

/// The channel every replica notifies and listens on.
pub(super) const CHANNEL: &str = "skein_runs";

/// How many changes a slow follower may fall behind before it is told it missed some.
const CAPACITY: usize = 1024;

/// How often followers of a store without a listening connection read the store again.
pub(super) const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// The longest pause between two attempts to re-open the listening connection.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A store's listening connection, shared by its clones; the task ends when the last clone is
/// dropped.
#[derive(Debug)]
pub(super) struct Listener {
    /// Where to listen: `None` for a store made from a pool.
    config: Option<PgConnect>,
    changes: broadcast::Sender<RunChange>,
    /// Set once the task runs; dropping it stops the task.
    started: Mutex<Option<oneshot::Sender<()>>>,
}

impl Listener {
    pub(super) fn new(config: Option<PgConnect>) -> Arc<Listener> {
        Arc::new(Listener {
            config,
            changes: broadcast::Sender::new(CAPACITY),
            started: Mutex::new(None),
        })
    }

    /// The changes of every replica from now on, starting the listening task if needed.
    pub(super) fn changes(&self) -> RunChanges {
        let Some(config) = &self.config else {
            return polling();
        };
        let receiver = self.changes.subscribe();
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        if started.is_none()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let (stop, stopped) = oneshot::channel();
            runtime.spawn(listen(config.clone(), self.changes.clone(), stopped));
            *started = Some(stop);
        }
        runs::broadcast_changes(receiver)
    }
}

/// [`RunChange::Missed`] every [`POLL_INTERVAL`]: followers read the store again each time.
fn polling() -> RunChanges {
    Box::pin(futures::stream::unfold((), |()| async {
        tokio::time::sleep(POLL_INTERVAL).await;
        Some((RunChange::Missed, ()))
    }))
}

/// Listens until `stop` resolves (its sender is dropped with the store).
async fn listen(
    config: PgConnect,
    changes: broadcast::Sender<RunChange>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut pause = Duration::from_millis(100);
    loop {
        tokio::select! {
            _ = &mut stop => return,
            // Up, then dropped: try again soon. Not opened (the server is down or
            // restarting): followers hear nothing until it is, then are told they missed
            // changes; the pause grows.
            outcome = listen_once(&config, &changes) => if outcome.is_ok() {
                pause = Duration::from_millis(100);
            },
        }
        tokio::select! {
            _ = &mut stop => return,
            () = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(MAX_BACKOFF);
    }
}

/// Connects, listens and forwards notifications until the connection drops; `Err` when it
/// could not be established.
async fn listen_once(
    config: &PgConnect,
    changes: &broadcast::Sender<RunChange>,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.config().connect(config.tls()).await?;
    let (forward, mut arrived) = tokio::sync::mpsc::unbounded_channel();
    // The connection delivers notifications only while it is polled; this task polls it.
    let driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(notification)) => {
                    if forward.send(notification).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
    });
    let listening = client.batch_execute(&format!("LISTEN {CHANNEL}")).await;
    if let Err(err) = listening {
        driver.abort();
        return Err(err);
    }
    // Whatever was notified before this point was not heard.
    let _ = changes.send(RunChange::Missed);
    while let Some(notification) = arrived.recv().await {
        let _ = changes.send(RunChange::from_payload(notification.payload()));
    }
    drop(client);
    driver.abort();
    Ok(())
}
