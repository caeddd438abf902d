//! [`EventWriter`]: the replica's one event writer. Every [`RunWorker`](super::RunWorker) of
//! the replica queues its events to it, and it stores what all runs pushed within a window in
//! one transaction ([`RunStore::append_event_batches`]), instead of one transaction per run.
//!
//! [`RunStore::append_event_batches`]: conversation_tree::runs::RunStore::append_event_batches

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use conversation_tree::runs::{EventBatch, RunEvent};
use conversation_tree::{Store, StoreError};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::worker::HeldRun;

/// A window is written once it holds this many events, whatever its age.
const WINDOW_EVENTS: usize = 1024;

/// How often a run's events the store refused for a passing reason are tried again before
/// the run is given up (its events could not be kept).
const WRITE_ATTEMPTS: u32 = 3;

/// What a worker asks of the writer.
enum Queued {
    /// Store this event of the run, after the ones queued before it.
    Event(Arc<HeldRun>, RunEvent),
    /// Answer once the run's events queued before this are stored (or the run is lost).
    Flush(Arc<HeldRun>, oneshot::Sender<()>),
}

/// The queue to the replica's event writer task, cheap to clone. The task stores the events
/// of every run of the replica: what arrives within `runs.batch` of a window's first event
/// (or [`WINDOW_EVENTS`] events, or up to a flush) in one store call; it ends once every
/// clone of its queue is dropped, after storing what is queued.
#[derive(Clone, Debug)]
pub(crate) struct EventWriter {
    queue: mpsc::UnboundedSender<Queued>,
}

impl EventWriter {
    /// Starts the writer task on the current Tokio runtime.
    pub(crate) fn start(store: Arc<dyn Store>, window: Duration) -> Self {
        let (queue, received) = mpsc::unbounded_channel();
        tokio::spawn(write(store, window, received));
        EventWriter { queue }
    }

    /// Whether the task is gone (its runtime stopped): a new one must be started.
    pub(crate) fn is_closed(&self) -> bool {
        self.queue.is_closed()
    }

    /// Queues `event` of `run`, stored after the run's events queued before it.
    pub(crate) fn push(&self, run: &Arc<HeldRun>, event: RunEvent) {
        // The task ends only once every sender is dropped, or with its runtime: then nothing
        // can be stored anyway.
        let _ = self.queue.send(Queued::Event(Arc::clone(run), event));
    }

    /// Waits until the events of `run` queued so far are stored, or the run is given up.
    pub(crate) async fn flush(&self, run: &Arc<HeldRun>) {
        let (done, stored) = oneshot::channel();
        if self
            .queue
            .send(Queued::Flush(Arc::clone(run), done))
            .is_ok()
        {
            let _ = stored.await;
        }
    }
}

/// Receives the workers' events and stores them window by window until the queue closes.
async fn write(
    store: Arc<dyn Store>,
    window: Duration,
    mut queue: mpsc::UnboundedReceiver<Queued>,
) {
    let mut pending = Window::default();
    let mut open = true;
    while open {
        let Some(first) = queue.recv().await else {
            break;
        };
        let mut due = pending.accept(first);
        if pending.is_empty() {
            continue;
        }
        let closes = tokio::time::sleep_until(Instant::now() + window);
        tokio::pin!(closes);
        while !due && pending.events < WINDOW_EVENTS {
            tokio::select! {
                biased;
                queued = queue.recv() => match queued {
                    Some(queued) => due = pending.accept(queued),
                    None => open = false,
                },
                () = &mut closes => break,
            }
            if !open {
                break;
            }
        }
        pending.store(&*store).await;
    }
}

/// One run's events in a [`Window`].
struct RunEvents {
    run: Arc<HeldRun>,
    events: Vec<RunEvent>,
}

/// The events received since the last write, grouped by run in the order their runs first
/// came, and the flushes waiting for them.
#[derive(Default)]
struct Window {
    runs: Vec<RunEvents>,
    /// Where each run (by the address of its [`HeldRun`]) is in `runs`.
    places: HashMap<usize, usize>,
    events: usize,
    flushes: Vec<oneshot::Sender<()>>,
    /// Emptied event lists, kept for the next windows' runs.
    spare: Vec<Vec<RunEvent>>,
}

impl Window {
    fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Takes in one request; `true` when the window should be written now (a worker waits).
    fn accept(&mut self, queued: Queued) -> bool {
        match queued {
            Queued::Event(run, event) => {
                // A lost run writes nothing more: another replica may hold it now.
                if run.is_lost() {
                    return false;
                }
                let place = *self
                    .places
                    .entry(Arc::as_ptr(&run).addr())
                    .or_insert_with(|| {
                        self.runs.push(RunEvents {
                            run,
                            events: self.spare.pop().unwrap_or_default(),
                        });
                        self.runs.len() - 1
                    });
                self.runs[place].events.push(event);
                self.events += 1;
                false
            }
            Queued::Flush(run, done) => {
                if self.places.contains_key(&Arc::as_ptr(&run).addr()) {
                    self.flushes.push(done);
                    true
                } else {
                    // Its earlier events were stored by an earlier window.
                    let _ = done.send(());
                    false
                }
            }
        }
    }

    /// Stores the window's events, all runs in one call, trying a run again after a passing
    /// failure; a run whose events collide with another replica's, or that keeps failing, is
    /// lost (only it). Then answers the flushes and empties the window.
    async fn store(&mut self, store: &dyn Store) {
        let mut attempt = 0;
        loop {
            self.drop_lost();
            if self.runs.is_empty() {
                break;
            }
            attempt += 1;
            let batches: Vec<EventBatch<'_>> = self
                .runs
                .iter()
                .map(|run| EventBatch::new(&run.run.id, &run.events))
                .collect();
            let last_attempt = attempt >= WRITE_ATTEMPTS;
            let written = store.append_event_batches(&batches).await;
            drop(batches);
            match written {
                Ok(results) => {
                    for (run, result) in self.runs.iter_mut().zip(results) {
                        match result {
                            Ok(_) => run.events.clear(),
                            Err(error) => run.refused(&error, last_attempt),
                        }
                    }
                }
                Err(error) if last_attempt => {
                    tracing::error!(runs = self.runs.len(), %error, "could not store the runs' events; stopping them");
                    for run in &self.runs {
                        run.run.lose();
                    }
                }
                Err(error) => {
                    tracing::warn!(runs = self.runs.len(), %error, "could not store the runs' events; trying again");
                }
            }
            self.drop_stored();
            if self.runs.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100) * attempt).await;
        }
        self.places.clear();
        self.events = 0;
        for done in self.flushes.drain(..) {
            let _ = done.send(());
        }
    }

    /// Drops the events of the runs lost meanwhile.
    fn drop_lost(&mut self) {
        self.keep(|run| !run.run.is_lost());
    }

    /// Drops the runs whose events are stored (emptied) or that were lost.
    fn drop_stored(&mut self) {
        self.keep(|run| !run.events.is_empty() && !run.run.is_lost());
    }

    fn keep(&mut self, keep: impl Fn(&RunEvents) -> bool) {
        let spare = &mut self.spare;
        self.runs.retain_mut(|run| {
            let kept = keep(run);
            if !kept {
                let mut events = std::mem::take(&mut run.events);
                events.clear();
                spare.push(events);
            }
            kept
        });
    }
}

impl RunEvents {
    /// Handles the store's refusal of this run's events: a collision with another replica's
    /// writes loses the run at once; any other failure does on the last attempt.
    fn refused(&self, error: &StoreError, last_attempt: bool) {
        let id = &self.run.id;
        match error {
            StoreError::DuplicateEvent { .. } | StoreError::EventGap { .. } => {
                tracing::warn!(run = %id, "another replica wrote the run's events: it runs it now; stopping");
                self.run.lose();
            }
            error if last_attempt => {
                tracing::error!(run = %id, %error, "could not store the run's events; stopping it");
                self.run.lose();
            }
            error => {
                tracing::warn!(run = %id, %error, "could not store the run's events; trying again");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use conversation_tree::SqliteStore;
    use conversation_tree::runs::{NewRun, RunMode, RunProtocol, RunStore as _};
    use tokio_util::sync::CancellationToken;

    use super::*;

    const WINDOW: Duration = Duration::from_millis(20);

    fn held(id: &str) -> Arc<HeldRun> {
        Arc::new(HeldRun {
            id: id.to_owned(),
            cancel: CancellationToken::new(),
            lost: AtomicBool::new(false),
            stop_renewing: CancellationToken::new(),
        })
    }

    async fn store_with_runs(ids: &[String]) -> Arc<dyn Store> {
        let store = SqliteStore::open_in_memory().await.unwrap();
        for id in ids {
            let spec = serde_json::json!({"model": "echo", "input": "Hi"});
            store
                .create_run(NewRun::new(
                    id,
                    "token:test",
                    RunProtocol::Responses,
                    RunMode::Background,
                    spec,
                ))
                .await
                .unwrap();
        }
        Arc::new(store)
    }

    fn frame(run: usize, seq: u64) -> Vec<u8> {
        format!("event: delta\ndata: {{\"run\":{run},\"seq\":{seq}}}\n\n").into_bytes()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn interleaved_pushes_of_many_runs_are_stored_in_order_before_flush_returns() {
        const RUNS: usize = 24;
        const EVENTS: u64 = 60;
        let ids: Vec<String> = (0..RUNS).map(|run| format!("resp_{run}")).collect();
        let store = store_with_runs(&ids).await;
        let writer = EventWriter::start(Arc::clone(&store), WINDOW);
        let workers = ids.iter().enumerate().map(|(run, id)| {
            let (writer, held) = (writer.clone(), held(id));
            tokio::spawn(async move {
                for seq in 0..EVENTS {
                    writer.push(&held, RunEvent::new(seq, frame(run, seq)));
                    if seq % 7 == run as u64 % 7 {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
                writer.flush(&held).await;
                assert!(!held.is_lost(), "{}", held.id);
            })
        });
        let workers: Vec<_> = workers.collect();
        for (run, worker) in workers.into_iter().enumerate() {
            worker.await.unwrap();
            // Flushed: every event is there, in order, without waiting for anything else.
            let stored = store.events_after(&ids[run], None, 1000).await.unwrap();
            let expected: Vec<RunEvent> = (0..EVENTS)
                .map(|seq| RunEvent::new(seq, frame(run, seq)))
                .collect();
            assert_eq!(stored, expected, "{}", ids[run]);
        }
    }

    #[tokio::test]
    async fn a_run_whose_events_collide_is_lost_alone() {
        let ids = ["resp_taken".to_owned(), "resp_mine".to_owned()];
        let store = store_with_runs(&ids).await;
        // Another replica wrote the first run's first events.
        store
            .append_events("resp_taken", &[RunEvent::new(0, "event: theirs\n\n")])
            .await
            .unwrap();
        let writer = EventWriter::start(Arc::clone(&store), WINDOW);
        let (taken, mine) = (held("resp_taken"), held("resp_mine"));
        for seq in 0..3 {
            writer.push(&taken, RunEvent::new(seq, "event: ours\n\n"));
            writer.push(&mine, RunEvent::new(seq, "event: mine\n\n"));
        }
        writer.flush(&taken).await;
        writer.flush(&mine).await;
        assert!(taken.is_lost() && taken.cancel.is_cancelled());
        assert!(!mine.is_lost());
        assert_eq!(store.last_seq("resp_taken").await.unwrap(), Some(0));
        assert_eq!(store.last_seq("resp_mine").await.unwrap(), Some(2));

        // A lost run's later events are dropped; the others' still stored.
        writer.push(&taken, RunEvent::new(3, "event: ours\n\n"));
        writer.push(&mine, RunEvent::new(3, "event: mine\n\n"));
        writer.flush(&mine).await;
        assert_eq!(store.last_seq("resp_taken").await.unwrap(), Some(0));
        assert_eq!(store.last_seq("resp_mine").await.unwrap(), Some(3));
    }

    #[tokio::test]
    async fn events_queued_when_the_last_worker_goes_are_still_stored() {
        let ids = ["resp_dropped".to_owned()];
        let store = store_with_runs(&ids).await;
        let writer = EventWriter::start(Arc::clone(&store), WINDOW);
        let run = held("resp_dropped");
        for seq in 0..5 {
            writer.push(&run, RunEvent::new(seq, "event: x\n\n"));
        }
        drop(writer);
        let deadline = Instant::now() + Duration::from_secs(10);
        while store.last_seq("resp_dropped").await.unwrap() != Some(4) {
            assert!(
                Instant::now() < deadline,
                "the queued events were not stored"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
