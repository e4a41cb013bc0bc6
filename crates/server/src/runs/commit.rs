//! How a run's events reach the store, and when its readers may see them.
//!
//! Group commit: one writer task takes every write that is waiting, from all runs (run starts,
//! their event batches, the last with the run's output joining its session), and commits them
//! in ONE transaction ([`agentwire_store::Group`]), then answers each. Before a group closes,
//! every task that is ready runs once, so their writes join it (measured unpaced: about 51
//! writes a group rather than 11, and fewer WAL pages written per run). Under load this turns thousands
//! of small transactions a second (one per run and write, each waiting its turn for SQLite's
//! single writer) into a few large ones; with one run it costs nothing, since a lone write is
//! committed at once. The writer keeps one connection while it is busy
//! ([`agentwire_store::GroupWriter`]): on SQLite that keeps its page cache warm.
//!
//! [`RunCommits`]: a run's side. A completed part must be durable before `part_complete` is
//! sent; deltas may be batched. So deltas (and the starts of parts and
//! messages) are shown at once and stored behind them; every other event (a part's or
//! message's completion, a status, an error) is held until it and everything before it is
//! committed. A crash can then lose only the unfinished part, which the interrupted run drops
//! anyway. One commit per run is in flight at a time, so a run's events reach the store in
//! order even when a commit is retried, and the next commit takes everything shown meanwhile:
//! the slower the store, the larger its groups.
//!
//! Deltas wait to be sent to the store until something must be stored (a held event), or
//! [`FLUSH_AFTER`] has passed since the oldest of them was shown, or their text for the store
//! reaches [`MAX_UNSENT`] bytes (about 900 one-word deltas): the store keeps a run's batch as
//! one row, so a streaming run costs it a row every few seconds rather than one per token.
//! They wait as that text ([`BatchBuilder`]), encoded as they are shown, not as copies of
//! the events: what a run holds unsent is about its text, and a delta costs no allocation on
//! its way to the store. Decided after measuring at 10,000 streams: a row per token was
//! most of the database's work and the writer fell seconds behind (p99 about 1 s); a commit per
//! run every second still gave p99 30–90 ms, every 2 s 17–24 ms, every 3 s 12–16 ms. The price:
//! a crash loses at most those seconds of an unfinished part's deltas (which the interrupted
//! run drops anyway). A reader on another node (PostgreSQL) gets them as they are shown all
//! the same: the pump publishes a followed run's shown events (`Notice::Live`).
//!
//! The session's shared state goes with the events that change it: the commits keep a copy,
//! applying each `state_snapshot` and `state_delta` as it is encoded for the store, and a batch
//! that changed it carries the copy as it leaves it ([`EventBatch::set_shared_state`]), so the
//! session's stored state always agrees with its stored events (state events are held until
//! stored, like completions). The copy costs a run one more document of memory, and a commit
//! that changed it the document's text; nothing for a run without state.
//!
//! A run that starts to wait for the client is parked ([`RunCommits::park`]): its checkpoint
//! goes in the commit of the status it waits in, and that commit reserves nothing past it, so
//! whatever comes after the wait is held until stored, and the run can go on elsewhere from the
//! next seq (see `resume`).

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentwire_core::communication::StateName;
use agentwire_core::{Event, EventKind, Message, RunId};
use agentwire_store::{Append, BatchBuilder, EventBatch, Group, RunRecord, Started, Store};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::runs::sessions::SessionKey;

/// The most batches one transaction takes; the rest go in the next one, right after.
const MAX_GROUP: usize = 4096;

/// After this long without a batch the writer gives its connection back to the pool, so
/// closing the store at shutdown does not wait for it (`recv_many` is cancel-safe).
const IDLE: Duration = Duration::from_millis(50);

/// A run's output joining its session: the session, the messages, and the schema state the
/// run leaves the session in.
pub(crate) type SessionOutput = (SessionKey, Vec<Message>, StateName);

/// A run's batch of events, and at its end its output joining its session with the session's
/// new schema state ([`Group::appends`], in the same transaction: a client that sees the run's
/// end finds the history there, and its next message is checked against that state).
#[derive(Debug)]
pub(crate) struct RunWrite {
    batch: EventBatch,
    output: Option<SessionOutput>,
}

/// How a batch fared.
#[derive(Debug)]
pub(crate) enum Committed {
    /// It is durable.
    Stored,
    /// The run is gone (its session was deleted) or has ended (another node ended it, taking
    /// this one for dead): nothing was stored.
    RunGone,
    /// The transaction failed (or the writer is gone, as the server stops): nothing of it was
    /// stored. Says why.
    Failed(Arc<str>),
}

/// A write waiting for the writer, with where its answer goes.
enum Pending {
    /// A run's start ([`Store::start_run`]), answered with how it fared.
    Start {
        run: Box<RunRecord>,
        input: Vec<Message>,
        done: oneshot::Sender<Result<Started, Arc<str>>>,
    },
    /// A batch of a run's events (with its output, at its end), given back with how it fared.
    Events {
        /// Boxed: a batch is large, and a start small.
        write: Box<RunWrite>,
        done: oneshot::Sender<(RunWrite, Committed)>,
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
    /// Starts the writer of `node` on the current Tokio runtime.
    pub(crate) fn start(store: Store, node: String) -> Self {
        let (queue, pending) = mpsc::unbounded_channel();
        tokio::spawn(write(store, node, pending));
        Self { queue }
    }

    /// Commits a run's write with whatever else is waiting, and gives it back with the outcome
    /// (not when the writer went away with it, as the server stops).
    pub(crate) async fn commit(&self, write: RunWrite) -> (Option<RunWrite>, Committed) {
        let (done, outcome) = oneshot::channel();
        let stopped = || Committed::Failed(writer_stopped());
        let write = Box::new(write);
        if let Err(mpsc::error::SendError(Pending::Events { write, .. })) =
            self.queue.send(Pending::Events { write, done })
        {
            return (Some(*write), stopped());
        }
        // The writer answers every write it takes; it is gone only if the server is.
        match outcome.await {
            Ok((write, committed)) => (Some(write), committed),
            Err(_) => (None, stopped()),
        }
    }

    /// Begins a run (its session if new, its row and its input) with whatever else is waiting,
    /// as [`agentwire_store::Store::start_run`] does alone: how it fared (a run id that is
    /// taken writes nothing), an error when the group could not be stored.
    pub(crate) async fn start_run(
        &self,
        run: RunRecord,
        input: Vec<Message>,
    ) -> Result<Started, Arc<str>> {
        let (done, outcome) = oneshot::channel();
        let run = Box::new(run);
        self.answer(Pending::Start { run, input, done }, outcome)
            .await
    }

    /// Queues a start and waits for its answer.
    async fn answer<T>(
        &self,
        pending: Pending,
        outcome: oneshot::Receiver<Result<T, Arc<str>>>,
    ) -> Result<T, Arc<str>> {
        if self.queue.send(pending).is_err() {
            return Err(writer_stopped());
        }
        outcome.await.unwrap_or_else(|_| Err(writer_stopped()))
    }
}

/// The writer: takes what is waiting, commits it as one group, answers each write. It writes
/// only the runs `node` holds: a run another node took over is gone for it.
async fn write(store: Store, node: String, mut queue: mpsc::UnboundedReceiver<Pending>) {
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
        // Every task ready now runs once before the group closes, so the writes they make join
        // it: under load a group takes several times more writes, and the database's shared
        // pages are written once for all of them.
        tokio::task::yield_now().await;
        while waiting.len() < MAX_GROUP
            && let Ok(pending) = queue.try_recv()
        {
            waiting.push(pending);
        }
        let mut group = Group {
            node: Some(&node),
            ..Group::default()
        };
        for pending in &waiting {
            match pending {
                Pending::Start { run, input, .. } => group.starts.push((run, input)),
                Pending::Events { write, .. } => {
                    group.batches.push(&write.batch);
                    if let Some(((caller, session_id), messages, state)) = &write.output {
                        group.appends.push(Append {
                            owner: caller.owner_id(),
                            session_id,
                            messages,
                            schema_state: Some(state.as_str()),
                        });
                    }
                }
            }
        }
        let result = writer.write(&group).await;
        drop(group);
        let (mut started, mut appended, gone) = match result {
            Ok(written) => (
                written.started.into_iter(),
                written.appended.into_iter(),
                Ok(written.gone.into_iter().collect::<HashSet<RunId>>()),
            ),
            Err(error) => {
                tracing::error!("storing a group of writes: {error}");
                (
                    Vec::new().into_iter(),
                    Vec::new().into_iter(),
                    Err(Arc::<str>::from(error.to_string())),
                )
            }
        };
        // Each write is answered; a caller that stopped waiting has nothing to be told.
        for pending in waiting.drain(..) {
            match pending {
                Pending::Start { done, .. } => {
                    let _ = done.send(
                        gone.as_ref()
                            .map(|_| started.next().unwrap_or(Started::RunExists))
                            .map_err(Arc::clone),
                    );
                }
                Pending::Events { write, done } => {
                    // A session deleted while its run went on does not keep the run's output.
                    if write.output.is_some() && appended.next() == Some(false) {
                        tracing::debug!(run = %write.batch.run_id(), "the run's session is gone");
                    }
                    let committed = match &gone {
                        Ok(gone) if gone.contains(write.batch.run_id()) => Committed::RunGone,
                        Ok(_) => Committed::Stored,
                        Err(error) => Committed::Failed(Arc::clone(error)),
                    };
                    let _ = done.send((*write, committed));
                }
            }
        }
    }
}

/// Deltas shown this long ago are sent to the store with the run's next events (see the module
/// docs for why this long).
const FLUSH_AFTER: Duration = Duration::from_secs(3);

/// Shown deltas are sent to the store at once when their text for the store is this long.
const MAX_UNSENT: usize = 8 * 1024;

/// How far past the last event of each commit a run reserves seqs (see [`RunCommits`]): it
/// shows deltas only within its reservation, so it waits for a commit only if its commits
/// fall this many events behind.
const RESERVE_AHEAD: u64 = 4096;

/// How often a batch is tried before the run is given up (the append is idempotent).
const ATTEMPTS: u32 = 5;

/// The wait before the first retry; it doubles with each one.
const FIRST_RETRY: Duration = Duration::from_millis(50);

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

type Commit = Pin<Box<dyn Future<Output = (Option<RunWrite>, Committed)> + Send>>;

/// The commit of a run that is under way.
struct InFlight {
    commit: Commit,
    /// The events at its end that are held from the readers until it is stored.
    held: Vec<Event>,
    attempt: u32,
}

/// What became of a run's commit.
#[derive(Debug)]
pub(crate) enum Settled {
    /// Stored: these held events may be shown now.
    Show(Vec<Event>),
    /// The store no longer keeps the run (it ended elsewhere, or its session was deleted):
    /// these held events may be shown, and the run should stop.
    Gone(Vec<Event>),
    /// It failed and is being tried again.
    Retrying,
    /// It failed every time: the run must be given up; its held events are never shown.
    GaveUp,
}

/// One run's events on their way to the store (see the module docs). Events are encoded for
/// the store as they are taken, so the store's copy of a delta is its text, not a clone.
///
/// Seqs are a promise: a client may see a delta before it is stored, and after a crash the
/// run's terminal status must still come after it. So every commit reserves seqs
/// [`RESERVE_AHEAD`] past its last event in the run's row, and an event is shown before its
/// commit only if a committed reservation covers its seq; anything else is held like a
/// completion. Every seq shown is then at most the stored reservation or stored itself, and
/// the store ends a cut run after both ([`Store::mark_interrupted`]).
pub(crate) struct RunCommits {
    committer: Committer,
    run_id: RunId,
    /// Shown to readers, not yet handed to the writer.
    unsent: BatchBuilder,
    /// When the oldest of `unsent` was shown.
    shown_since: Option<Instant>,
    /// Not shown, not yet handed to the writer. The pump takes no new events while something is
    /// held here or in the commit under way, so nothing is shown ahead of it.
    held: Vec<Event>,
    in_flight: Option<InFlight>,
    /// The sequence number of the last event stored.
    stored_through: u64,
    /// The seq through which the store holds a reservation: events up to it may be shown
    /// before they are stored.
    reserved: u64,
    /// Everything goes to the writer at once from now on ([`RunCommits::flush`]).
    flushing: bool,
    /// An event could not be encoded for the store: the run is given up at the next commit.
    unstorable: Option<Arc<str>>,
    /// The run's output, to join its session with the next commit.
    output: Option<SessionOutput>,
    /// Where the run left its communication schema, to store with its end.
    end_state: Option<String>,
    /// The checkpoint of the wait the held events end in, to store with them.
    parking: Option<String>,
    /// The store holds the run's checkpoint: it waits there, and outlives this process.
    parked: bool,
    /// The session's shared state as the events encoded so far leave it.
    shared_state: Value,
    /// The events encoded since the last write changed it.
    state_changed: bool,
}

impl std::fmt::Debug for RunCommits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunCommits")
            .field("run_id", &self.run_id)
            .field("unsent", &self.unsent.bytes())
            .field("held", &self.held.len())
            .field("in_flight", &self.in_flight.is_some())
            .finish()
    }
}

impl RunCommits {
    /// The commits of a new run whose session's shared state is `shared_state`.
    pub(crate) fn new(committer: Committer, run_id: RunId, shared_state: Value) -> Self {
        Self {
            committer,
            unsent: BatchBuilder::new(run_id.clone()),
            run_id,
            shown_since: None,
            held: Vec::new(),
            in_flight: None,
            stored_through: 0,
            reserved: 0,
            flushing: false,
            unstorable: None,
            output: None,
            end_state: None,
            parking: None,
            parked: false,
            shared_state,
            state_changed: false,
        }
    }

    /// The commits of a run taken up from its checkpoint, which the store has through
    /// `stored_through` (its wait) and reserves nothing past.
    pub(crate) fn resumed(
        committer: Committer,
        run_id: RunId,
        stored_through: u64,
        shared_state: Value,
    ) -> Self {
        Self {
            stored_through,
            reserved: stored_through,
            parked: true,
            ..Self::new(committer, run_id, shared_state)
        }
    }

    /// Whether the store holds the run's checkpoint (see [`RunCommits::park`]).
    pub(crate) fn is_parked(&self) -> bool {
        self.parked
    }

    /// The events taken next end in a wait for the client: `checkpoint` is stored with them
    /// ([`EventBatch::park`]), and nothing after them is shown before it is stored.
    pub(crate) fn park(&mut self, checkpoint: String) {
        self.parking = Some(checkpoint);
    }

    /// The sequence number of the last event the store has (0 before the first commit).
    pub(crate) fn stored_through(&self) -> u64 {
        self.stored_through
    }

    /// Takes a batch of the run's events; returns those the readers may see now (encoded for
    /// the store behind them). From the first event that must be stored first, the rest of the
    /// batch is held, order being kept.
    pub(crate) fn take(&mut self, mut batch: Vec<Event>) -> Vec<Event> {
        let first_held = batch
            .iter()
            .position(|event| !may_precede_commit(event) || event.seq > self.reserved)
            .unwrap_or(batch.len());
        self.held.extend(batch.drain(first_held..));
        if !batch.is_empty() {
            self.shown_since.get_or_insert_with(Instant::now);
            for event in &batch {
                self.encode(event);
            }
        }
        self.start_if_due();
        batch
    }

    /// Takes the run's last events (from its terminal status on) with its output, which joins
    /// its session in the same commit, and the state it left its schema in (stored with its
    /// row): the end is shown only once all of it is stored.
    pub(crate) fn take_end(
        &mut self,
        end: Vec<Event>,
        output: Option<SessionOutput>,
        state: String,
    ) -> Vec<Event> {
        self.output = output;
        self.end_state = Some(state);
        self.take(end)
    }

    fn encode(&mut self, event: &Event) {
        if let Err(error) = self.unsent.push(event) {
            tracing::error!(run = %self.run_id, seq = event.seq, "encoding an event: {error}");
            self.unstorable
                .get_or_insert_with(|| error.to_string().into());
        }
        match &event.kind {
            EventKind::StateSnapshot { state } if *state != self.shared_state => {
                self.shared_state = state.clone();
                self.state_changed = true;
            }
            EventKind::StateDelta { patch } => {
                // The run applied the same patch to the same state: it cannot fail here.
                if let Err(error) = json_patch::patch(&mut self.shared_state, patch) {
                    tracing::error!(run = %self.run_id, seq = event.seq, "a state_delta: {error}");
                }
                self.state_changed = true;
            }
            _ => {}
        }
    }

    /// Hands everything taken to the writer (as soon as the commit under way is done), due or
    /// not: the run's stream has ended.
    pub(crate) fn flush(&mut self) {
        self.flushing = true;
        self.start_if_due();
    }

    /// Whether events are held until their commit (the pump then waits before taking more).
    pub(crate) fn holds(&self) -> bool {
        !self.held.is_empty()
            || self
                .in_flight
                .as_ref()
                .is_some_and(|in_flight| !in_flight.held.is_empty())
    }

    /// Whether everything taken is stored.
    pub(crate) fn is_idle(&self) -> bool {
        self.in_flight.is_none() && self.unsent.is_empty() && self.held.is_empty()
    }

    /// Waits for the commit under way (for ever if there is none) and starts the next.
    /// Cancel-safe: the commit itself lives in `self`.
    pub(crate) async fn settled(&mut self) -> Settled {
        let (write, committed) = match self.in_flight.as_mut() {
            Some(in_flight) => in_flight.commit.as_mut().await,
            None => std::future::pending().await,
        };
        let Some(in_flight) = self.in_flight.take() else {
            return Settled::Retrying;
        };
        let settled = match (committed, write) {
            (Committed::Stored, write) => {
                if let Some(write) = write {
                    self.stored_through = self.stored_through.max(write.batch.last_seq());
                    self.parked = write.batch.is_parked();
                    self.reserved = match self.parked {
                        true => write.batch.reserved(),
                        false => self.reserved.max(write.batch.reserved()),
                    };
                }
                Settled::Show(in_flight.held)
            }
            (Committed::RunGone, _) => Settled::Gone(in_flight.held),
            (Committed::Failed(error), Some(write)) if in_flight.attempt < ATTEMPTS => {
                let attempt = in_flight.attempt;
                tracing::error!(run = %self.run_id, attempt, "storing events: {error}");
                let wait = FIRST_RETRY * 2u32.pow(attempt - 1);
                self.in_flight = Some(self.send(Some(write), in_flight.held, attempt + 1, wait));
                return Settled::Retrying;
            }
            (Committed::Failed(error), _) => {
                tracing::error!(run = %self.run_id, "giving up storing events: {error}");
                Settled::GaveUp
            }
        };
        self.start_if_due();
        settled
    }

    /// Hands what waits to the writer, unless a commit is under way or only deltas wait and
    /// they are not due yet (see the module docs).
    fn start_if_due(&mut self) {
        if self.in_flight.is_some() || (self.unsent.is_empty() && self.held.is_empty()) {
            return;
        }
        let due = self.flushing
            || !self.held.is_empty()
            || self.unsent.bytes() >= MAX_UNSENT
            || self
                .shown_since
                .is_some_and(|since| since.elapsed() >= FLUSH_AFTER);
        if !due {
            return;
        }
        self.shown_since = None;
        let held = std::mem::take(&mut self.held);
        for event in &held {
            self.encode(event);
        }
        let unsent = std::mem::replace(&mut self.unsent, BatchBuilder::new(self.run_id.clone()));
        self.in_flight = Some(match self.unstorable.take() {
            // Nothing of it is stored: the run is given up without showing what it held.
            Some(error) => InFlight {
                commit: Box::pin(std::future::ready((None, Committed::Failed(error)))),
                held,
                attempt: ATTEMPTS,
            },
            None => {
                // Only heartbeats are no write (an output waits for the run's last events).
                let parking = self.parking.take();
                let state = std::mem::take(&mut self.state_changed)
                    .then(|| serde_json::to_string(&self.shared_state).ok())
                    .flatten();
                let write = unsent.finish().map(|mut batch| {
                    match parking {
                        Some(checkpoint) => batch.park(checkpoint),
                        None => batch.reserve_through(batch.last_seq() + RESERVE_AHEAD),
                    }
                    if let Some(state) = state {
                        batch.set_shared_state(state);
                    }
                    if let Some(state) = self.end_state.take() {
                        batch.set_run_state(state);
                    }
                    RunWrite {
                        batch,
                        output: self.output.take(),
                    }
                });
                self.send(write, held, 1, Duration::ZERO)
            }
        });
    }

    fn send(
        &self,
        write: Option<RunWrite>,
        held: Vec<Event>,
        attempt: u32,
        wait: Duration,
    ) -> InFlight {
        let committer = self.committer.clone();
        let commit = Box::pin(async move {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            match write {
                Some(write) => committer.commit(write).await,
                None => (None, Committed::Stored),
            }
        });
        InFlight {
            commit,
            held,
            attempt,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agentwire_core::{MessageId, Part, RunStatus};
    use agentwire_store::RunRecord;

    use super::*;

    fn delta(seq: u64) -> Event {
        Event::new(
            seq,
            EventKind::PartDelta {
                message_id: MessageId::from("msg_1"),
                index: 0,
                delta: format!("w{seq} "),
            },
        )
    }

    fn complete(seq: u64) -> Event {
        Event::new(
            seq,
            EventKind::PartComplete {
                message_id: MessageId::from("msg_1"),
                index: 0,
                part: Part::text("w1 w2 "),
            },
        )
    }

    async fn store_with_run(id: &RunId) -> Store {
        let store = Store::open("sqlite::memory:").await.unwrap();
        store
            .create_run(&RunRecord::new(id.clone(), "assistant", "local"))
            .await
            .unwrap();
        store
    }

    /// A run's commits after its first event (a held one, as `run_created` is) is stored:
    /// from then on seqs are reserved ahead of it.
    async fn opened(store: &Store, run_id: &RunId) -> RunCommits {
        let mut commits = RunCommits::new(
            Committer::start(store.clone(), "local".to_owned()),
            run_id.clone(),
            Value::Null,
        );
        assert_eq!(commits.take(vec![complete(1)]), vec![]);
        assert!(
            matches!(commits.settled().await, Settled::Show(held) if held == vec![complete(1)])
        );
        commits
    }

    #[tokio::test]
    async fn deltas_show_at_once_and_a_completion_only_once_stored() {
        let run_id = RunId::from("run_1");
        let store = store_with_run(&run_id).await;
        let mut commits = opened(&store, &run_id).await;

        let shown = commits.take(vec![delta(2), delta(3), complete(4), delta(5)]);
        assert_eq!(shown, vec![delta(2), delta(3)]);
        assert!(commits.holds(), "the completion and what follows it wait");
        let Settled::Show(held) = commits.settled().await else {
            panic!("the commit failed");
        };
        assert_eq!(held, vec![complete(4), delta(5)]);
        assert!(commits.is_idle());
        let stored = store.events_after(&run_id, 1, 100).await.unwrap();
        assert_eq!(stored, vec![delta(2), delta(3), complete(4), delta(5)]);
    }

    #[tokio::test]
    async fn nothing_is_shown_past_the_reservation_and_a_cut_run_ends_after_it() {
        let run_id = RunId::from("run_1");
        let store = store_with_run(&run_id).await;
        let mut commits = RunCommits::new(
            Committer::start(store.clone(), "local".to_owned()),
            run_id.clone(),
            Value::Null,
        );
        // Before any commit nothing is reserved: a delta waits like a completion.
        assert_eq!(commits.take(vec![delta(1)]), vec![]);
        assert!(matches!(commits.settled().await, Settled::Show(held) if held == vec![delta(1)]));

        // The first commit reserved through 1 + RESERVE_AHEAD; many deltas are shown within it
        // (and sent to the store, due by their size, reserving further).
        let within: Vec<Event> = (2..=1 + RESERVE_AHEAD).map(delta).collect();
        assert_eq!(commits.take(within.clone()), within);
        assert!(commits.in_flight.is_some());
        // The next one is past what is reserved so far: it waits for that commit.
        let past = delta(2 + RESERVE_AHEAD);
        assert_eq!(commits.take(vec![past.clone()]), vec![]);
        assert!(commits.holds());
        let mut shown = Vec::new();
        while shown.is_empty() {
            let Settled::Show(held) = commits.settled().await else {
                panic!("the commit failed");
            };
            shown = held;
        }
        assert_eq!(shown, vec![past]);

        // Cut here: the run's end comes after every seq it could have shown.
        store.mark_interrupted("local").await.unwrap();
        let end = store
            .events_after(&run_id, 2 + RESERVE_AHEAD, 10)
            .await
            .unwrap();
        let [Event { seq, kind, .. }] = &end[..] else {
            panic!("one terminal status: {end:?}");
        };
        assert!(*seq > 2 + RESERVE_AHEAD, "{end:?}");
        assert!(matches!(
            kind,
            EventKind::RunStatus {
                status: RunStatus::Incomplete,
                ..
            }
        ));
    }

    #[tokio::test]
    async fn what_is_shown_meanwhile_goes_in_the_next_commit_in_order() {
        let run_id = RunId::from("run_1");
        let store = store_with_run(&run_id).await;
        let mut commits = RunCommits::new(
            Committer::start(store.clone(), "local".to_owned()),
            run_id.clone(),
            Value::Null,
        );

        assert_eq!(commits.take(vec![complete(1)]), vec![]);
        assert!(commits.holds(), "the pump takes nothing more meanwhile");
        assert!(
            matches!(commits.settled().await, Settled::Show(held) if held == vec![complete(1)])
        );
        // Deltas taken next are shown; they wait for their commit until they are due.
        assert_eq!(
            commits.take(vec![delta(2), delta(3)]),
            vec![delta(2), delta(3)]
        );
        assert!(!commits.is_idle());
        commits.flush();
        assert!(matches!(commits.settled().await, Settled::Show(held) if held.is_empty()));
        assert!(commits.is_idle());
        let stored = store.events_after(&run_id, 0, 100).await.unwrap();
        assert_eq!(stored, vec![complete(1), delta(2), delta(3)]);
    }

    #[tokio::test]
    async fn deltas_wait_for_the_next_held_event_or_until_there_are_many() {
        let run_id = RunId::from("run_1");
        let store = store_with_run(&run_id).await;
        let mut commits = opened(&store, &run_id).await;

        assert_eq!(
            commits.take(vec![delta(2), delta(3)]),
            vec![delta(2), delta(3)]
        );
        assert!(!commits.holds());
        assert!(commits.in_flight.is_none(), "not due: nothing is sent yet");
        // A completion sends them with it, in one batch.
        assert_eq!(commits.take(vec![complete(4)]), vec![]);
        assert!(
            matches!(commits.settled().await, Settled::Show(held) if held == vec![complete(4)])
        );
        let stored = store.events_after(&run_id, 1, 100).await.unwrap();
        assert_eq!(stored, vec![delta(2), delta(3), complete(4)]);

        // Many deltas go without waiting for anything.
        let word = "w".repeat(100);
        let enough = MAX_UNSENT.div_ceil(word.len()) as u64;
        let many: Vec<Event> = (5..5 + enough)
            .map(|seq| {
                Event::new(
                    seq,
                    EventKind::PartDelta {
                        message_id: MessageId::from("msg_1"),
                        index: 0,
                        delta: word.clone(),
                    },
                )
            })
            .collect();
        assert_eq!(commits.take(many.clone()), many);
        assert!(commits.in_flight.is_some(), "due: sent at once");
        assert!(matches!(commits.settled().await, Settled::Show(held) if held.is_empty()));
        let stored = store.events_after(&run_id, 4, 1000).await.unwrap();
        assert_eq!(stored, many);
    }

    #[tokio::test]
    async fn a_store_that_never_takes_the_events_gives_the_run_up_without_showing_them() {
        let run_id = RunId::from("run_1");
        let store = store_with_run(&run_id).await;
        let mut commits = RunCommits::new(
            Committer::start(store.clone(), "local".to_owned()),
            run_id.clone(),
            Value::Null,
        );
        store.close().await;

        // Nothing is reserved yet, so not even the delta is shown ahead of its commit.
        assert_eq!(commits.take(vec![delta(1), complete(2)]), vec![]);
        let mut retries = 0;
        loop {
            match commits.settled().await {
                Settled::Retrying => retries += 1,
                Settled::GaveUp => break,
                Settled::Show(held) | Settled::Gone(held) => {
                    panic!("shown without being stored: {held:?}")
                }
            }
        }
        assert_eq!(retries, ATTEMPTS - 1);
        assert!(commits.is_idle());
    }
}
