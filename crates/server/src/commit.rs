//! Group commit of the runs' events: one writer task takes every batch that is waiting, from
//! all runs, and commits them in ONE transaction ([`Store::append_event_batches`]), then hands
//! each batch back to its run. Under load this turns thousands of small transactions a second
//! (one per run and batch, each waiting its turn for SQLite's single writer) into a few large
//! ones; with one run it costs nothing, since a lone batch is committed at once.
//!
//! The guarantee is unchanged: a run gets its batch back only once it is committed (or the
//! transaction failed), and only then shows it to clients. The writer keeps one connection
//! while it is busy ([`agentwire_store::EventWriter`]): on SQLite that keeps its page cache
//! warm.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use agentwire_core::{Event, RunId};
use agentwire_store::Store;
use tokio::sync::{mpsc, oneshot};

/// The most batches one transaction takes; the rest go in the next one, right after.
const MAX_GROUP: usize = 4096;

/// After this long without a batch the writer gives its connection back to the pool, so
/// closing the store at shutdown does not wait for it (`recv_many` is cancel-safe).
const IDLE: Duration = Duration::from_millis(50);

/// How a batch fared.
#[derive(Debug)]
pub(crate) enum Committed {
    /// It is durable.
    Stored,
    /// The run's row is gone (its session was deleted): nothing was stored.
    RunGone,
    /// The transaction failed (or the writer is gone, as the server stops): nothing of it was
    /// stored. Says why.
    Failed(Arc<str>),
}

/// A batch waiting for the writer.
struct Pending {
    run_id: RunId,
    events: Vec<Event>,
    done: oneshot::Sender<(Vec<Event>, Committed)>,
}

/// The handle to the writer task; the task ends when the last handle is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Committer {
    queue: mpsc::UnboundedSender<Pending>,
}

impl Committer {
    /// Starts the writer on the current Tokio runtime.
    pub(crate) fn start(store: Store) -> Self {
        let (queue, pending) = mpsc::unbounded_channel();
        tokio::spawn(write(store, pending));
        Self { queue }
    }

    /// Commits a run's batch with whatever else is waiting, and gives it back with the outcome.
    pub(crate) async fn commit(
        &self,
        run_id: &RunId,
        events: Vec<Event>,
    ) -> (Vec<Event>, Committed) {
        let (done, outcome) = oneshot::channel();
        let pending = Pending {
            run_id: run_id.clone(),
            events,
            done,
        };
        let stopped = || Committed::Failed("the store's writer has stopped".into());
        if let Err(mpsc::error::SendError(pending)) = self.queue.send(pending) {
            return (pending.events, stopped());
        }
        // The writer answers every batch it takes; it is gone only if the server is.
        outcome.await.unwrap_or_else(|_| (Vec::new(), stopped()))
    }
}

/// The writer: takes what is waiting, commits it as one group, answers each batch.
async fn write(store: Store, mut queue: mpsc::UnboundedReceiver<Pending>) {
    let mut writer = store.event_writer();
    let mut group: Vec<Pending> = Vec::new();
    loop {
        let waiting = queue.recv_many(&mut group, MAX_GROUP);
        let received = match tokio::time::timeout(IDLE, waiting).await {
            Ok(received) => received,
            Err(_) => {
                writer.release();
                queue.recv_many(&mut group, MAX_GROUP).await
            }
        };
        if received == 0 {
            break;
        }
        let batches: Vec<(&RunId, &[Event])> = group
            .iter()
            .map(|pending| (&pending.run_id, pending.events.as_slice()))
            .collect();
        let result = writer.append_event_batches(&batches).await;
        drop(batches);
        match result {
            Ok(gone) => {
                let gone: HashSet<RunId> = gone.into_iter().collect();
                for pending in group.drain(..) {
                    let committed = match gone.contains(&pending.run_id) {
                        true => Committed::RunGone,
                        false => Committed::Stored,
                    };
                    // A run that stopped waiting has nothing to be told.
                    let _ = pending.done.send((pending.events, committed));
                }
            }
            Err(error) => {
                let error: Arc<str> = error.to_string().into();
                for pending in group.drain(..) {
                    let failed = Committed::Failed(Arc::clone(&error));
                    let _ = pending.done.send((pending.events, failed));
                }
            }
        }
    }
}
