//! How a run's writes reach the store, and when its readers may see its events.
//!
//! Group commit: one writer task takes every write that is waiting, from all runs (run starts,
//! their event batches, their output joining its session), and commits them in ONE
//! transaction ([`agentwire_store::Group`]). Under load this turns thousands of small
//! transactions a second (one per run and write, each waiting its turn for SQLite's single
//! writer) into a few large ones; with one run it costs nothing, since a lone write is committed
//! at once. The writer keeps one connection while it is busy
//! ([`agentwire_store::GroupWriter`]): on SQLite that keeps its page cache warm. It commits the
//! groups in the order their writes came, and retries a failed group before it takes anything
//! newer, so a run's batches reach the store in order without waiting for each other.
//!
//! [`RunCommits`]: a run's side. DESIGN §8 asks that a completed part be durable before
//! `part_complete` is sent, and lets deltas be batched. So deltas (and the starts of parts and
//! messages) are shown at once and stored behind them; every other event (a part's or
//! message's completion, a status, an error) is held until it and everything before it is
//! committed. A crash can then lose only the unfinished part, which the interrupted run drops
//! anyway. A batch is handed to the writer and not waited for: the writer records how far each
//! run is stored ([`Progress`]) and wakes a run's task only when it waits for held events, so a
//! streaming run costs the writer no reply per delta.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use agentwire_core::{Event, EventKind, Message, RunId, SessionId};
use agentwire_store::{EventRows, Group, RunRecord, Store};
use tokio::sync::{Notify, mpsc, oneshot};

/// The most writes one transaction takes; the rest go in the next one, right after.
const MAX_GROUP: usize = 4096;

/// After this long without a write the writer gives its connection back to the pool, so
/// closing the store at shutdown does not wait for it (`recv_many` is cancel-safe).
const IDLE: Duration = Duration::from_millis(50);

/// How often a group is tried before its writes are given up (every write in it is idempotent
/// or refused whole).
const ATTEMPTS: u32 = 5;

/// The wait before the first retry; it doubles with each one.
const FIRST_RETRY: Duration = Duration::from_millis(50);

/// How far a run's events are stored, shared between the run's task and the writer.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// The sequence number of the last event stored.
    stored: AtomicU64,
    /// The sequence number the run's task waits to see stored (0: it waits for nothing).
    awaited: AtomicU64,
    /// The store failed the run's events for good: nothing more of it is written.
    failed: AtomicBool,
    wake: Notify,
}

impl Progress {
    /// The writer stored the run's events up to `seq` (or dropped them: the run is gone).
    fn stored(&self, seq: u64) {
        let stored = self.stored.fetch_max(seq, Ordering::SeqCst).max(seq);
        let awaited = self.awaited.load(Ordering::SeqCst);
        if awaited != 0 && stored >= awaited {
            self.wake.notify_one();
        }
    }

    /// The writer gave the run's events up.
    fn fail(&self) {
        self.failed.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }
}

/// A write waiting for the writer, with where its answer goes.
enum Pending {
    /// A run's start ([`Store::start_run`]): answered false when its id is taken.
    Start {
        run: Box<RunRecord>,
        input: Vec<Message>,
        done: oneshot::Sender<Result<bool, Arc<str>>>,
    },
    /// A run's output joining its session ([`Store::append_messages`]): answered false when
    /// the session is gone.
    Append {
        session_id: SessionId,
        messages: Vec<Message>,
        done: oneshot::Sender<Result<bool, Arc<str>>>,
    },
    /// A batch of a run's events: answered through the run's [`Progress`].
    Events {
        run_id: RunId,
        rows: EventRows,
        progress: Arc<Progress>,
    },
}

/// The handle to the writer task; the task ends when the last handle is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Committer {
    queue: mpsc::UnboundedSender<Pending>,
}

/// What a start or an append gets when the writer has stopped (the server is going away).
fn writer_stopped() -> Arc<str> {
    "the store's writer has stopped".into()
}

impl Committer {
    /// Starts the writer on the current Tokio runtime.
    pub(crate) fn start(store: Store) -> Self {
        let (queue, pending) = mpsc::unbounded_channel();
        tokio::spawn(write(store, pending));
        Self { queue }
    }

    /// Begins a run (its session if new, its row and its input) with whatever else is waiting,
    /// as [`agentwire_store::Store::start_run`] does alone: false when the run id is taken
    /// (nothing was written), an error when the group could not be stored.
    pub(crate) async fn start_run(
        &self,
        run: RunRecord,
        input: Vec<Message>,
    ) -> Result<bool, Arc<str>> {
        let (done, outcome) = oneshot::channel();
        let run = Box::new(run);
        self.answer(Pending::Start { run, input, done }, outcome)
            .await
    }

    /// Adds messages at the end of a session's history with whatever else is waiting, as
    /// [`agentwire_store::Store::append_messages`] does alone: false when the session is gone.
    pub(crate) async fn append_messages(
        &self,
        session_id: &SessionId,
        messages: Vec<Message>,
    ) -> Result<bool, Arc<str>> {
        let (done, outcome) = oneshot::channel();
        let session_id = session_id.clone();
        self.answer(
            Pending::Append {
                session_id,
                messages,
                done,
            },
            outcome,
        )
        .await
    }

    /// Queues a start or an append and waits for its answer.
    async fn answer(
        &self,
        pending: Pending,
        outcome: oneshot::Receiver<Result<bool, Arc<str>>>,
    ) -> Result<bool, Arc<str>> {
        if self.queue.send(pending).is_err() {
            return Err(writer_stopped());
        }
        outcome.await.unwrap_or_else(|_| Err(writer_stopped()))
    }

    /// Hands a batch of a run's events to the writer; its progress says when it is stored.
    fn send(&self, run_id: &RunId, rows: EventRows, progress: &Arc<Progress>) {
        let pending = Pending::Events {
            run_id: run_id.clone(),
            rows,
            progress: Arc::clone(progress),
        };
        if self.queue.send(pending).is_err() {
            // The server is stopping: nothing more can be stored.
            progress.fail();
        }
    }
}

/// The writer: takes what is waiting, commits it as one group (retrying a failed group before
/// anything newer), answers each write.
async fn write(store: Store, mut queue: mpsc::UnboundedReceiver<Pending>) {
    let mut writer = store.group_writer();
    let mut waiting: Vec<Pending> = Vec::new();
    loop {
        let received = queue.recv_many(&mut waiting, MAX_GROUP);
        let received = match tokio::time::timeout(IDLE, received).await {
            Ok(received) => received,
            Err(_) => {
                writer.release();
                queue.recv_many(&mut waiting, MAX_GROUP).await
            }
        };
        if received == 0 {
            break;
        }
        // A run whose events were given up writes nothing more (its later batches would leave
        // a gap in its log).
        waiting.retain(|pending| match pending {
            Pending::Events { progress, .. } => !progress.failed.load(Ordering::SeqCst),
            _ => true,
        });
        let mut group = Group::default();
        for pending in &waiting {
            match pending {
                Pending::Start { run, input, .. } => group.starts.push((run, input)),
                Pending::Append {
                    session_id,
                    messages,
                    ..
                } => group.appends.push((session_id, messages)),
                Pending::Events { run_id, rows, .. } => group.batches.push((run_id, rows)),
            }
        }
        let mut attempt = 1;
        let result = loop {
            match writer.write(&group).await {
                Ok(written) => break Ok(written),
                Err(error) if attempt < ATTEMPTS => {
                    tracing::error!(attempt, "storing a group of writes: {error}");
                    tokio::time::sleep(FIRST_RETRY * 2u32.pow(attempt - 1)).await;
                    attempt += 1;
                }
                Err(error) => {
                    tracing::error!("giving up a group of writes: {error}");
                    break Err(Arc::<str>::from(error.to_string()));
                }
            }
        };
        drop(group);
        let (mut started, mut appended) = match &result {
            Ok(written) => (written.started.iter(), written.appended.iter()),
            Err(_) => ([].iter(), [].iter()),
        };
        // Each write is answered; a caller that stopped waiting has nothing to be told.
        for pending in waiting.drain(..) {
            match (pending, &result) {
                (Pending::Start { done, .. }, Ok(_)) => {
                    let _ = done.send(Ok(started.next().copied().unwrap_or(false)));
                }
                (Pending::Append { done, .. }, Ok(_)) => {
                    let _ = done.send(Ok(appended.next().copied().unwrap_or(false)));
                }
                (Pending::Start { done, .. } | Pending::Append { done, .. }, Err(error)) => {
                    let _ = done.send(Err(Arc::clone(error)));
                }
                // Stored, or dropped with their run (its session was deleted): either way
                // nothing of them is left to wait for.
                (Pending::Events { rows, progress, .. }, Ok(_)) => {
                    if let Some(last) = rows.last_seq() {
                        progress.stored(last);
                    }
                }
                (Pending::Events { progress, .. }, Err(_)) => progress.fail(),
            }
        }
    }
}

/// Whether readers may see the event before it is stored: what a crash may lose without losing
/// anything complete (deltas, and the starts of parts and messages).
fn may_precede_commit(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::PartDelta { .. }
            | EventKind::PartStart { .. }
            | EventKind::MessageStart { .. }
            | EventKind::Heartbeat { .. }
    )
}

/// What became of the events a run's task waited for.
#[derive(Debug)]
pub(crate) enum Settled {
    /// Everything up to them is stored: these held events may be shown now.
    Show(Vec<Event>),
    /// The store failed them for good: the run must be given up; its held events are never
    /// shown.
    GaveUp,
}

/// One run's events on their way to the store (see the module docs).
#[derive(Debug)]
pub(crate) struct RunCommits {
    committer: Committer,
    run_id: RunId,
    progress: Arc<Progress>,
    /// The sequence number of the last event handed to the writer.
    sent: u64,
    /// Not shown until the store has everything up to `held_through`. The run's task takes no
    /// new events while something is held, so nothing is shown ahead of it.
    held: Vec<Event>,
    held_through: u64,
}

impl RunCommits {
    pub(crate) fn new(committer: Committer, run_id: RunId) -> Self {
        Self {
            committer,
            run_id,
            progress: Arc::default(),
            sent: 0,
            held: Vec::new(),
            held_through: 0,
        }
    }

    /// Takes a batch of the run's events and hands it to the writer; returns those the readers
    /// may see now. From the first event that must be stored first, the rest of the batch is
    /// held, order being kept.
    pub(crate) fn take(&mut self, mut batch: Vec<Event>) -> Vec<Event> {
        let first_held = batch
            .iter()
            .position(|event| !may_precede_commit(event))
            .unwrap_or(batch.len());
        if !self.gave_up() {
            match EventRows::new(&batch) {
                Ok(rows) => {
                    if let Some(last) = rows.last_seq() {
                        self.sent = last;
                        if first_held < batch.len() {
                            self.held_through = last;
                        }
                        self.committer.send(&self.run_id, rows, &self.progress);
                    }
                }
                Err(error) => {
                    tracing::error!(run = %self.run_id, "encoding events: {error}");
                    self.progress.fail();
                }
            }
        }
        self.held.extend(batch.drain(first_held..));
        batch
    }

    /// Whether events are held until their commit (the run's task then waits before taking
    /// more).
    pub(crate) fn holds(&self) -> bool {
        !self.held.is_empty()
    }

    /// Whether everything taken is stored (or given up).
    pub(crate) fn is_idle(&self) -> bool {
        self.held.is_empty() && (self.gave_up() || self.stored_through() >= self.sent)
    }

    /// The sequence number of the last event the store has (0 before the first commit).
    pub(crate) fn stored_through(&self) -> u64 {
        self.progress.stored.load(Ordering::SeqCst)
    }

    fn gave_up(&self) -> bool {
        self.progress.failed.load(Ordering::SeqCst)
    }

    /// Waits until the held events (or, holding none, everything taken) are stored, or given
    /// up. Cancel-safe: nothing is taken out before it returns.
    pub(crate) async fn settled(&mut self) -> Settled {
        let target = if self.held.is_empty() {
            self.sent
        } else {
            self.held_through
        };
        loop {
            let woken = self.progress.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            // Announce the wait, then look: the writer stores its progress before it reads
            // what is awaited, so one of the two sees the other.
            self.progress.awaited.store(target, Ordering::SeqCst);
            if self.gave_up() {
                self.progress.awaited.store(0, Ordering::SeqCst);
                self.held.clear();
                return Settled::GaveUp;
            }
            if self.stored_through() >= target {
                self.progress.awaited.store(0, Ordering::SeqCst);
                return Settled::Show(std::mem::take(&mut self.held));
            }
            woken.await;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agentwire_core::{MessageId, Part};
    use agentwire_store::RunRecord;

    use super::*;

    fn delta(seq: u64) -> Event {
        Event {
            seq,
            kind: EventKind::PartDelta {
                message_id: MessageId::from("msg_1"),
                index: 0,
                delta: format!("w{seq} "),
            },
        }
    }

    fn complete(seq: u64) -> Event {
        Event {
            seq,
            kind: EventKind::PartComplete {
                message_id: MessageId::from("msg_1"),
                index: 0,
                part: Part::text("w1 w2 "),
            },
        }
    }

    async fn store_with_run(id: &RunId) -> Store {
        let store = Store::open("sqlite::memory:").await.unwrap();
        store
            .create_run(&RunRecord::new(id.clone(), "assistant", "local"))
            .await
            .unwrap();
        store
    }

    #[tokio::test]
    async fn deltas_show_at_once_and_a_completion_only_once_stored() {
        let run_id = RunId::from("run_1");
        let store = store_with_run(&run_id).await;
        let mut commits = RunCommits::new(Committer::start(store.clone()), run_id.clone());

        let shown = commits.take(vec![delta(1), delta(2), complete(3), delta(4)]);
        assert_eq!(shown, vec![delta(1), delta(2)]);
        assert!(commits.holds(), "the completion and what follows it wait");
        let Settled::Show(held) = commits.settled().await else {
            panic!("the commit failed");
        };
        assert_eq!(held, vec![complete(3), delta(4)]);
        assert!(commits.is_idle());
        assert_eq!(commits.stored_through(), 4);
        let stored = store.events_after(&run_id, 0, 100).await.unwrap();
        assert_eq!(stored, vec![delta(1), delta(2), complete(3), delta(4)]);
    }

    #[tokio::test]
    async fn batches_are_stored_in_order_without_waiting_for_each_other() {
        let run_id = RunId::from("run_1");
        let store = store_with_run(&run_id).await;
        let mut commits = RunCommits::new(Committer::start(store.clone()), run_id.clone());

        assert_eq!(commits.take(vec![delta(1)]), vec![delta(1)]);
        assert_eq!(
            commits.take(vec![delta(2), delta(3)]),
            vec![delta(2), delta(3)]
        );
        assert!(!commits.holds());
        assert!(matches!(commits.settled().await, Settled::Show(held) if held.is_empty()));
        assert!(commits.is_idle());
        let stored = store.events_after(&run_id, 0, 100).await.unwrap();
        assert_eq!(stored, vec![delta(1), delta(2), delta(3)]);
    }

    #[tokio::test]
    async fn a_store_that_never_takes_the_events_gives_the_run_up_without_showing_them() {
        let run_id = RunId::from("run_1");
        let store = store_with_run(&run_id).await;
        let mut commits = RunCommits::new(Committer::start(store.clone()), run_id.clone());
        store.close().await;

        assert_eq!(commits.take(vec![delta(1), complete(2)]), vec![delta(1)]);
        assert!(matches!(commits.settled().await, Settled::GaveUp));
        assert!(commits.is_idle());
        // Nothing more of the run is handed to the writer, and nothing held is shown.
        assert_eq!(commits.take(vec![delta(3), complete(4)]), vec![delta(3)]);
        assert!(matches!(commits.settled().await, Settled::GaveUp));
    }
}
