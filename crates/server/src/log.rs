//! A run's event log in memory: every event the run produced, in order, that readers replay from
//! any point and then follow live. Events come here only once the store has committed them (the
//! store is the state of record; this is the fast path for the runs this process executes).

use std::sync::{Mutex, MutexGuard, PoisonError};

use agentwire_core::{Event, EventKind, RunStatus};
use tokio::sync::watch;

/// The events of one run and a signal for readers waiting for more.
#[derive(Debug)]
pub(crate) struct EventLog {
    inner: Mutex<Logged>,
    /// Bumped on every change; readers wait on it.
    changed: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct Logged {
    events: Vec<Event>,
    /// The last event is a status the run stays in until the client acts (awaiting) or for
    /// ever (terminal): a reader that has it has the whole stream for now.
    settled: bool,
    /// The status of the last `run_status` event.
    status: Option<RunStatus>,
    /// The run's stream ended: nothing more will be appended.
    closed: bool,
}

/// What one read found.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Read {
    /// The sequence number of the last event read, if any was.
    pub(crate) last_seq: Option<u64>,
    /// The reader has everything and the run is settled or ended: its stream is complete.
    pub(crate) complete: bool,
}

impl Default for EventLog {
    fn default() -> Self {
        Self {
            inner: Mutex::default(),
            changed: watch::Sender::new(0),
        }
    }
}

impl EventLog {
    fn lock(&self) -> MutexGuard<'_, Logged> {
        // Nothing panics while holding the lock; a poisoned log is still consistent.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends the run's next events and wakes the readers once.
    pub(crate) fn append_all(&self, events: impl IntoIterator<Item = Event>) {
        {
            let mut logged = self.lock();
            for event in events {
                if !matches!(event.kind, EventKind::Heartbeat {}) {
                    logged.settled = settles(&event);
                }
                if let EventKind::RunStatus { status, .. } = &event.kind {
                    logged.status = Some(*status);
                }
                logged.events.push(event);
            }
        }
        self.changed.send_modify(|version| *version += 1);
    }

    /// Marks the end of the run's stream.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.changed.send_modify(|version| *version += 1);
    }

    /// A receiver that sees every later change.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Hands `visit` every event with a sequence number above `after`, in order (under the lock,
    /// so a reader encodes straight from the log without copying events). `now` is the run's
    /// status: a log settled on `awaiting` is not complete once the run has moved on (input was
    /// accepted, its next events are on their way through the store).
    pub(crate) fn read_after(
        &self,
        after: u64,
        now: RunStatus,
        mut visit: impl FnMut(&Event),
    ) -> Read {
        let logged = self.lock();
        let start = logged.events.partition_point(|event| event.seq <= after);
        let fresh = &logged.events[start..];
        fresh.iter().for_each(&mut visit);
        Read {
            last_seq: fresh.last().map(|event| event.seq),
            complete: logged.closed || (logged.settled && logged.status == Some(now)),
        }
    }

    /// Waits until the run is settled (awaiting the client) or its stream has ended.
    pub(crate) async fn settled(&self) {
        let mut changes = self.subscribe();
        loop {
            changes.borrow_and_update();
            {
                let logged = self.lock();
                if logged.closed || logged.settled {
                    return;
                }
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }
}

/// The event is a status the run stays in until the client acts (awaiting) or for ever
/// (terminal).
pub(crate) fn settles(event: &Event) -> bool {
    matches!(
        &event.kind,
        EventKind::RunStatus { status, .. }
            if status.is_terminal() || matches!(status, RunStatus::Awaiting(_))
    )
}
