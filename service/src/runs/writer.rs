//! [`EventWriter`]: the replica's one event writer. Every [`RunWorker`](super::RunWorker) of
//! the replica queues its events to it, and it stores what all runs pushed within a window in
//! one transaction ([`RunStore::append_event_batches`]), instead of one transaction per run.
//!
//! [`RunStore::append_event_batches`]: conversation_tree::runs::RunStore::append_event_batches

use std::collections::HashMap;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use conversation_tree::runs::{EventBatch, RunEvent, RunMode};
use conversation_tree::{Store, StoreError};
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::worker::HeldRun;

/// How long a foreground run's events may wait to be stored. Nobody reads them while the run
/// streams to its client (a client that leaves cancels it, and every event is stored before
/// the run ends or pauses), so they are written in few, large batches: a transaction costs
/// about one store page per run in it, whatever the run's number of events.
pub(crate) const FOREGROUND_WINDOW: Duration = Duration::from_millis(250);

/// A run's events are written once it has this many queued, whatever their age.
const RUN_EVENTS: usize = 512;

/// Every run's events are written once this many are queued in all, whatever their age.
const WINDOW_EVENTS: usize = 16_384;

/// How often a run's events the store refused for a passing reason are tried again before
/// the run is given up (its events could not be kept).
const WRITE_ATTEMPTS: u32 = 3;

/// A flush: answered once the run's events queued before it are stored (or the run is lost).
type Flush = (Arc<HeldRun>, oneshot::Sender<()>);

/// The queues to the replica's event writer task, cheap to clone. The task stores the events
/// of every run of the replica, many runs' in one store call: a background run's within
/// `runs.batch` of their push (clients read them from the store as they come), a foreground
/// run's within [`FOREGROUND_WINDOW`], and a run's at once when it ends or pauses (a
/// [`flush`](Self::flush)). It ends once every clone of its queues is dropped, after storing
/// what is queued.
///
/// Events and flushes come in two queues: the task waits on the flushes and its clock, and
/// takes the events queued meanwhile when it wakes, so a pushed event wakes no task.
#[derive(Clone, Debug)]
pub(crate) struct EventWriter {
    events: mpsc::UnboundedSender<(Arc<HeldRun>, RunEvent)>,
    flushes: mpsc::UnboundedSender<Flush>,
}

impl EventWriter {
    /// Starts the writer task on the current Tokio runtime; `window` is `runs.batch`.
    pub(crate) fn start(store: Arc<dyn Store>, window: Duration) -> Self {
        Self::with_windows(store, window, FOREGROUND_WINDOW)
    }

    /// [`start`](Self::start) with a foreground run's window of `foreground`.
    fn with_windows(store: Arc<dyn Store>, window: Duration, foreground: Duration) -> Self {
        let (events, queued) = mpsc::unbounded_channel();
        let (flushes, asked) = mpsc::unbounded_channel();
        let pending = Window::new(window, foreground);
        tokio::spawn(write(store, window, pending, queued, asked));
        EventWriter { events, flushes }
    }

    /// Whether the task is gone (its runtime stopped): a new one must be started.
    pub(crate) fn is_closed(&self) -> bool {
        self.events.is_closed()
    }

    /// Queues `event` of `run`, stored after the run's events queued before it.
    pub(crate) fn push(&self, run: &Arc<HeldRun>, event: RunEvent) {
        // The task ends only once every sender is dropped, or with its runtime: then nothing
        // can be stored anyway.
        let _ = self.events.send((Arc::clone(run), event));
    }

    /// Waits until the events of `run` queued so far are stored, or the run is given up.
    pub(crate) async fn flush(&self, run: &Arc<HeldRun>) {
        let (done, stored) = oneshot::channel();
        if self.flushes.send((Arc::clone(run), done)).is_ok() {
            let _ = stored.await;
        }
    }
}

/// The writer's two queues, and whether each is still open.
struct Queues {
    events: mpsc::UnboundedReceiver<(Arc<HeldRun>, RunEvent)>,
    events_open: bool,
    flushes: mpsc::UnboundedReceiver<Flush>,
    flushes_open: bool,
}

impl Queues {
    fn closed(&self) -> bool {
        !self.events_open && !self.flushes_open
    }

    /// Takes every event queued so far into `pending`, noting `now` as their arrival.
    fn drain(&mut self, pending: &mut Window, now: Instant) {
        while self.events_open {
            match self.events.try_recv() {
                Ok((run, event)) => pending.accept(run, event, now),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => self.events_open = false,
            }
        }
    }
}

/// Receives the workers' events and flushes and stores the events as they fall due, until
/// both queues close.
async fn write(
    store: Arc<dyn Store>,
    window: Duration,
    mut pending: Window,
    events: mpsc::UnboundedReceiver<(Arc<HeldRun>, RunEvent)>,
    flushes: mpsc::UnboundedReceiver<Flush>,
) {
    let mut queues = Queues {
        events,
        events_open: true,
        flushes,
        flushes_open: true,
    };
    // Reset once per wake, never per event.
    let mut clock = pin!(tokio::time::sleep(window));
    loop {
        let mut flush = None;
        if pending.is_empty() {
            if queues.closed() {
                break;
            }
            tokio::select! {
                biased;
                asked = queues.flushes.recv(), if queues.flushes_open => match asked {
                    Some(asked) => flush = Some(asked),
                    None => queues.flushes_open = false,
                },
                queued = queues.events.recv(), if queues.events_open => match queued {
                    Some((run, event)) => pending.accept(run, event, Instant::now()),
                    None => queues.events_open = false,
                },
            }
            clock.as_mut().reset(Instant::now() + window);
        } else {
            tokio::select! {
                biased;
                asked = queues.flushes.recv(), if queues.flushes_open => match asked {
                    Some(asked) => flush = Some(asked),
                    None => queues.flushes_open = false,
                },
                () = clock.as_mut() => clock.as_mut().reset(Instant::now() + window),
            }
        }
        let now = Instant::now();
        // The run's events pushed before its flush are in the queue by now: taken first.
        queues.drain(&mut pending, now);
        if let Some((run, done)) = flush {
            pending.flush(&run, done);
        }
        let everything = queues.closed() || pending.events >= WINDOW_EVENTS;
        pending.store_due(&*store, now, everything).await;
    }
}

/// One run's events in a [`Window`].
struct RunEvents {
    run: Arc<HeldRun>,
    events: Vec<RunEvent>,
    /// When the events must be written at the latest.
    due: Instant,
    /// Flushes answered once these events are stored.
    flushes: Vec<oneshot::Sender<()>>,
}

/// The events received and not stored yet, grouped by run in the order their runs first
/// came, and the flushes waiting for them.
struct Window {
    /// `runs.batch`: how long a background run's events may wait.
    background: Duration,
    /// How long a foreground run's may ([`FOREGROUND_WINDOW`]).
    foreground: Duration,
    runs: Vec<RunEvents>,
    /// Where each run (by the address of its [`HeldRun`]) is in `runs`.
    places: HashMap<usize, usize>,
    events: usize,
    /// Emptied event lists, kept for the next runs.
    spare: Vec<Vec<RunEvent>>,
}

impl Window {
    fn new(background: Duration, foreground: Duration) -> Self {
        Window {
            background,
            foreground,
            runs: Vec::new(),
            places: HashMap::new(),
            events: 0,
            spare: Vec::new(),
        }
    }

    fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Takes in one event of `run`, arrived at `now`.
    fn accept(&mut self, run: Arc<HeldRun>, event: RunEvent, now: Instant) {
        // A lost run writes nothing more: another replica may hold it now.
        if run.is_lost() {
            return;
        }
        let wait = match run.mode {
            RunMode::Background => self.background,
            RunMode::Foreground => self.foreground,
        };
        let place = *self
            .places
            .entry(Arc::as_ptr(&run).addr())
            .or_insert_with(|| {
                self.runs.push(RunEvents {
                    run,
                    events: self.spare.pop().unwrap_or_default(),
                    due: now + wait,
                    flushes: Vec::new(),
                });
                self.runs.len() - 1
            });
        let run = &mut self.runs[place];
        run.events.push(event);
        if run.events.len() >= RUN_EVENTS {
            run.due = now;
        }
        self.events += 1;
    }

    /// Makes `run`'s queued events due now, `done` answered once they are stored; answered
    /// at once when it has none queued (an earlier write stored them).
    fn flush(&mut self, run: &Arc<HeldRun>, done: oneshot::Sender<()>) {
        match self.places.get(&Arc::as_ptr(run).addr()) {
            Some(&place) => {
                let run = &mut self.runs[place];
                run.due = Instant::now();
                run.flushes.push(done);
            }
            None => {
                let _ = done.send(());
            }
        }
    }

    /// Stores the events of the runs due at `now` (of every run with `everything`). A
    /// background run's are always due when the writer wakes: it wakes every `runs.batch`
    /// while events wait, so they waited at most that.
    async fn store_due(&mut self, store: &dyn Store, now: Instant, everything: bool) {
        let mut due: Vec<RunEvents> = Vec::new();
        let mut kept = Vec::with_capacity(self.runs.len());
        for run in self.runs.drain(..) {
            if everything || run.due <= now || run.run.mode == RunMode::Background {
                due.push(run);
            } else {
                kept.push(run);
            }
        }
        self.runs = kept;
        self.places.clear();
        self.events = 0;
        for (place, run) in self.runs.iter().enumerate() {
            self.places.insert(Arc::as_ptr(&run.run).addr(), place);
            self.events += run.events.len();
        }
        if due.is_empty() {
            return;
        }
        store_runs(store, &mut due).await;
        for mut run in due {
            for done in run.flushes.drain(..) {
                let _ = done.send(());
            }
            run.events.clear();
            self.spare.push(run.events);
        }
    }
}

/// Stores the events of `runs`, all in one call, trying a run again after a passing failure;
/// a run whose events collide with another replica's, or that keeps failing, is lost (only
/// it). Returns with every run stored (its events emptied) or lost.
async fn store_runs(store: &dyn Store, runs: &mut [RunEvents]) {
    let mut attempt = 0;
    loop {
        let waiting: Vec<usize> = (0..runs.len())
            .filter(|&at| !runs[at].events.is_empty() && !runs[at].run.is_lost())
            .collect();
        if waiting.is_empty() {
            return;
        }
        attempt += 1;
        let batches: Vec<EventBatch<'_>> = waiting
            .iter()
            .map(|&at| EventBatch::new(&runs[at].run.id, &runs[at].events))
            .collect();
        let last_attempt = attempt >= WRITE_ATTEMPTS;
        let written = store.append_event_batches(&batches).await;
        drop(batches);
        match written {
            Ok(results) => {
                for (&at, result) in waiting.iter().zip(results) {
                    match result {
                        Ok(_) => runs[at].events.clear(),
                        Err(error) => runs[at].refused(&error, last_attempt),
                    }
                }
            }
            Err(error) => {
                if last_attempt {
                    tracing::error!(%error, runs = waiting.len(), "could not store the runs' events; stopping them");
                } else {
                    tracing::warn!(%error, runs = waiting.len(), "could not store the runs' events; trying again");
                }
                for &at in &waiting {
                    runs[at].refused_quietly(last_attempt);
                }
            }
        }
        if waiting
            .iter()
            .all(|&at| runs[at].events.is_empty() || runs[at].run.is_lost())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100) * attempt).await;
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

    /// Handles a failure of the whole write (logged once for all its runs): the run is lost
    /// on the last attempt.
    fn refused_quietly(&self, last_attempt: bool) {
        if last_attempt {
            self.run.lose();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use conversation_tree::SqliteStore;
    use conversation_tree::runs::{NewRun, RunProtocol, RunStore as _};
    use tokio_util::sync::CancellationToken;

    use super::*;

    const WINDOW: Duration = Duration::from_millis(20);

    fn held(id: &str) -> Arc<HeldRun> {
        held_as(id, RunMode::Background)
    }

    fn held_as(id: &str, mode: RunMode) -> Arc<HeldRun> {
        Arc::new(HeldRun {
            id: id.to_owned(),
            mode,
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

    /// Polls `store` until run `id`'s last stored event is `last`.
    async fn stored_up_to(store: &Arc<dyn Store>, id: &str, last: u64) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while store.last_seq(id).await.unwrap() != Some(last) {
            assert!(Instant::now() < deadline, "{id}: not stored up to {last}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn a_foreground_runs_events_wait_for_its_end_and_a_background_runs_do_not() {
        let ids = ["resp_fg".to_owned(), "resp_bg".to_owned()];
        let store = store_with_runs(&ids).await;
        let writer =
            EventWriter::with_windows(Arc::clone(&store), WINDOW, Duration::from_secs(3600));
        let (fg, bg) = (held_as("resp_fg", RunMode::Foreground), held("resp_bg"));
        for seq in 0..3 {
            writer.push(&fg, RunEvent::new(seq, "event: fg\n\n"));
            writer.push(&bg, RunEvent::new(seq, "event: bg\n\n"));
        }
        // The background run's are stored within their window, with nothing asking for them.
        stored_up_to(&store, "resp_bg", 2).await;
        assert_eq!(store.last_seq("resp_fg").await.unwrap(), None);
        // The foreground run's, at its end.
        writer.flush(&fg).await;
        assert_eq!(store.last_seq("resp_fg").await.unwrap(), Some(2));

        // Or once the run has many queued.
        for seq in 3..3 + RUN_EVENTS as u64 {
            writer.push(&fg, RunEvent::new(seq, "event: fg\n\n"));
        }
        stored_up_to(&store, "resp_fg", 2 + RUN_EVENTS as u64).await;
    }

    #[tokio::test]
    async fn a_foreground_runs_events_are_stored_after_their_window() {
        let ids = ["resp_fg".to_owned()];
        let store = store_with_runs(&ids).await;
        let writer =
            EventWriter::with_windows(Arc::clone(&store), WINDOW, Duration::from_millis(200));
        let fg = held_as("resp_fg", RunMode::Foreground);
        let pushed = Instant::now();
        writer.push(&fg, RunEvent::new(0, "event: fg\n\n"));
        stored_up_to(&store, "resp_fg", 0).await;
        assert!(
            pushed.elapsed() >= Duration::from_millis(200),
            "stored {:?} after its push, before its window",
            pushed.elapsed()
        );
    }
}
