//! Following a run: its stored events, then the live ones as any replica stores them.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use conversation_tree::Store;
use conversation_tree::runs::{MAX_EVENT_PAGE, RunChanges, RunEvent, RunStatus};
use futures::{Stream, StreamExt as _};

use crate::ServiceError;

/// How long a follower waits for a notification before it reads the store again anyway: the
/// bound on the delay when notifications are lost.
const POLL: Duration = Duration::from_millis(500);

struct Follower {
    store: Arc<dyn Store>,
    id: String,
    owner: String,
    after: Option<u64>,
    changes: Option<RunChanges>,
    ready: VecDeque<RunEvent>,
    done: bool,
}

/// The events of run `id` of `owner` after `after`, then live until it ends.
pub(crate) fn follow(
    store: Arc<dyn Store>,
    id: String,
    owner: String,
    after: Option<u64>,
) -> impl Stream<Item = Result<RunEvent, ServiceError>> + Send + 'static {
    let follower = Follower {
        store,
        id,
        owner,
        after,
        changes: None,
        ready: VecDeque::new(),
        done: false,
    };
    futures::stream::unfold(follower, |mut follower| async move {
        loop {
            if let Some(event) = follower.ready.pop_front() {
                return Some((Ok(event), follower));
            }
            if follower.done {
                return None;
            }
            if let Err(error) = follower.read().await {
                follower.done = true;
                return Some((Err(error), follower));
            }
        }
    })
}

impl Follower {
    /// Reads the events after the last one yielded; when there are none yet, waits for a
    /// change (or the poll) first. Marks the end once the run is over and all is read.
    async fn read(&mut self) -> Result<(), ServiceError> {
        // Subscribed before the first read: nothing stored after it can pass unseen.
        if self.changes.is_none() {
            self.changes = Some(self.store.watch_run(&self.id));
        }
        loop {
            // The status is read before the events: a worker stores its last events before it
            // ends the run, so a run seen over has all its events in the read that follows.
            let run = self
                .store
                .run_of(&self.id, &self.owner)
                .await
                .map_err(ServiceError::Runs)?;
            let Some(run) = run else {
                return Err(ServiceError::UnknownRun {
                    id: self.id.clone(),
                });
            };
            let events = self
                .store
                .events_after(&self.id, self.after, MAX_EVENT_PAGE)
                .await
                .map_err(ServiceError::Runs)?;
            // A paused run says nothing more until someone decides, which may be days: its
            // stream ends with the pause, and a client that decided follows it again.
            let still = run.status.is_terminal() || run.status == RunStatus::Paused;
            if let Some(last) = events.last() {
                self.after = Some(last.seq);
                let full = events.len() == MAX_EVENT_PAGE;
                self.ready.extend(events);
                if !full && still {
                    self.done = true;
                }
                return Ok(());
            }
            if still {
                self.done = true;
                return Ok(());
            }
            if let Some(changes) = &mut self.changes {
                let _ = tokio::time::timeout(POLL, changes.next()).await;
            }
        }
    }
}
