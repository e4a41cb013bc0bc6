//! A run's event log in memory: the run's latest events, in order, that readers follow live.
//! The store is the state of record; this is the fast path for the runs this process executes.
//! The log keeps a window: an event stays until the store has it, [`KEEP`] newer ones are here
//! and every joined reader has read it, so a burst of events (an unpaced model writes hundreds
//! between two wake-ups of a reader) reaches its readers from memory, never through the store.
//! A reader that does not read holds at most [`BEHIND`] bytes; past that the log forgets for it
//! too, so a long run takes the same memory as a short one. A reader that falls further behind
//! than the window (or starts from the beginning) is told so ([`Read::gap`]) and reads the store
//! up to the window.

use std::collections::VecDeque;
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

/// How many stored events the log keeps at least, for readers that have not joined.
pub(crate) const KEEP: usize = 8;

/// How many bytes of stored events the log keeps for joined readers that are behind.
pub(crate) const BEHIND: usize = 256 * 1024;

/// A reader joined to a log ([`EventLog::join`]): the log keeps what it has not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Joined(usize);

#[derive(Debug, Default)]
struct Logged {
    /// The window: every event not stored yet, and the latest stored ones.
    events: VecDeque<Event>,
    /// The weight of the window's events ([`weight`]).
    bytes: usize,
    /// Where each joined reader is: the seq of the last event it read (`None`: a free place).
    readers: Vec<Option<u64>>,
    /// The sequence number of the last event the store has (those up to it may be forgotten).
    stored: u64,
    /// The sequence number of the last event appended.
    last_seq: u64,
    /// The sequence number of the last event forgotten: a reader before it must read the store.
    forgotten: u64,
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
    /// Events after the reader's point are no longer here (the store has them): nothing was
    /// read; read the store from that point first.
    pub(crate) gap: bool,
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

    /// The log of a run taken up from the store, which has its every event through
    /// `last_seq`, the status it waits in: readers from before it read the store.
    pub(crate) fn resumed(last_seq: u64, status: RunStatus) -> Self {
        let log = Self::default();
        {
            let mut logged = log.lock();
            logged.stored = last_seq;
            logged.last_seq = last_seq;
            logged.forgotten = last_seq;
            logged.settled = true;
            logged.status = Some(status);
        }
        log
    }

    /// Appends the run's next events and wakes the readers once.
    pub(crate) fn append_all(&self, events: impl IntoIterator<Item = Event>) {
        {
            let mut logged = self.lock();
            for event in events {
                if !matches!(event.kind, EventKind::Heartbeat {}) {
                    logged.settled = settles(&event);
                }
                if let Some(status) = event.own_status() {
                    logged.status = Some(status);
                }
                logged.last_seq = logged.last_seq.max(event.seq);
                logged.bytes += weight(&event);
                logged.events.push_back(event);
            }
            logged.forget_stored();
        }
        self.changed.send_modify(|version| *version += 1);
    }

    /// Records that the store has every event up to `seq`: the log may forget them.
    pub(crate) fn stored_through(&self, seq: u64) {
        let mut logged = self.lock();
        logged.stored = logged.stored.max(seq);
        logged.forget_stored();
    }

    /// The sequence number of the last event the log has forgotten (0 when none is).
    pub(crate) fn forgotten(&self) -> u64 {
        self.lock().forgotten
    }

    /// The sequence number of the last event logged (0 when none is).
    pub(crate) fn last_seq(&self) -> u64 {
        self.lock().last_seq
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

    /// A reader that has read every event up to `after`: the log keeps the later ones for it
    /// (within [`BEHIND`]) until it reads them or [`EventLog::leave`]s.
    pub(crate) fn join(&self, after: u64) -> Joined {
        let mut logged = self.lock();
        let free = logged.readers.iter().position(Option::is_none);
        match free {
            Some(place) => {
                logged.readers[place] = Some(after);
                Joined(place)
            }
            None => {
                logged.readers.push(Some(after));
                Joined(logged.readers.len() - 1)
            }
        }
    }

    /// The reader is gone: the log no longer keeps anything for it.
    pub(crate) fn leave(&self, reader: Joined) {
        let mut logged = self.lock();
        if let Some(place) = logged.readers.get_mut(reader.0) {
            *place = None;
        }
        logged.forget_stored();
    }

    /// Hands `visit` every event with a sequence number above `after`, in order (under the lock,
    /// so a reader encodes straight from the log without copying events), unless some of them
    /// are forgotten ([`Read::gap`]). `now` is the run's status: a log settled on `awaiting` is
    /// not complete once the run has moved on (input was accepted, its next events are on their
    /// way through the store). A joined `reader` is then known to be past what it read.
    pub(crate) fn read_after(
        &self,
        after: u64,
        reader: Option<Joined>,
        now: RunStatus,
        mut visit: impl FnMut(&Event),
    ) -> Read {
        let mut logged = self.lock();
        if let Some(Joined(place)) = reader
            && let Some(at) = logged.readers.get_mut(place)
        {
            *at = Some(after);
        }
        let complete = logged.closed || (logged.settled && logged.status == Some(now));
        if after < logged.forgotten {
            return Read {
                last_seq: None,
                complete: false,
                gap: true,
            };
        }
        let start = logged.events.partition_point(|event| event.seq <= after);
        let mut last_seq = None;
        for event in logged.events.range(start..) {
            visit(event);
            last_seq = Some(event.seq);
        }
        if let (Some(Joined(place)), Some(last)) = (reader, last_seq)
            && let Some(at) = logged.readers.get_mut(place)
        {
            *at = Some(last);
        }
        Read {
            last_seq,
            complete,
            gap: false,
        }
    }

    /// Waits until the log has an event after `seq`, or the run's stream has ended.
    pub(crate) async fn past(&self, seq: u64) {
        self.until(|logged| logged.last_seq > seq).await;
    }

    /// Waits until the run is settled (awaiting the client) or its stream has ended.
    pub(crate) async fn settled(&self) {
        self.until(|logged| logged.settled).await;
    }

    /// Waits until `done` holds of the log, or the run's stream has ended.
    async fn until(&self, done: impl Fn(&Logged) -> bool) {
        let mut changes = self.subscribe();
        loop {
            changes.borrow_and_update();
            {
                let logged = self.lock();
                if logged.closed || done(&logged) {
                    return;
                }
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }
}

impl Logged {
    /// Forgets the stored events beyond the window's [`KEEP`] that every joined reader has
    /// read, or that the readers behind hold past [`BEHIND`].
    fn forget_stored(&mut self) {
        let slowest = self.readers.iter().flatten().min().copied();
        while self.events.len() > KEEP
            && let Some(front) = self.events.front()
            && front.seq <= self.stored
            && (slowest.is_none_or(|read| read >= front.seq) || self.bytes > BEHIND)
        {
            if let Some(event) = self.events.pop_front() {
                self.bytes -= weight(&event);
                self.forgotten = self.forgotten.max(event.seq);
            }
        }
    }
}

/// What an event weighs in the window: a delta its text, any other event a flat amount (whole
/// parts are held by the run's messages as well; what matters here is how many deltas pile up).
fn weight(event: &Event) -> usize {
    const OTHER: usize = 256;
    size_of::<Event>()
        + match &event.kind {
            EventKind::PartDelta { delta, .. } => delta.len(),
            _ => OTHER,
        }
}

/// The event is a status the run stays in until the client acts (awaiting) or for ever
/// (terminal). A sub-agent's, nested, is not the run's.
pub(crate) fn settles(event: &Event) -> bool {
    event
        .own_status()
        .is_some_and(|status| status.is_terminal() || matches!(status, RunStatus::Awaiting(_)))
}

#[cfg(test)]
mod tests {
    use agentwire_core::{Event, EventKind, MessageId, RunStatus};

    use super::{BEHIND, EventLog, KEEP};

    fn delta(seq: u64) -> Event {
        Event::new(
            seq,
            EventKind::PartDelta {
                message_id: MessageId::from("msg_1"),
                index: 0,
                delta: format!("{seq} "),
            },
        )
    }

    fn read(log: &EventLog, after: u64) -> (Vec<u64>, bool) {
        let mut seqs = Vec::new();
        let read = log.read_after(after, None, RunStatus::InProgress, |event| {
            seqs.push(event.seq);
        });
        (seqs, read.gap)
    }

    #[test]
    fn only_stored_events_beyond_the_window_are_forgotten() {
        let log = EventLog::default();
        let total = 3 * KEEP as u64;
        log.append_all((1..=total).map(delta));
        // Nothing is stored yet: everything stays.
        assert_eq!(read(&log, 0), ((1..=total).collect(), false));
        // The stored ones go, unstored ones stay however many they are.
        log.stored_through(KEEP as u64);
        assert_eq!(log.forgotten(), KEEP as u64);
        let rest = (KEEP as u64 + 1..=total).collect();
        assert_eq!(read(&log, KEEP as u64), (rest, false));
        // Stored through all but the last: the window keeps the last KEEP.
        log.stored_through(total - 1);
        let first_kept = total - KEEP as u64 + 1;
        assert_eq!(log.forgotten(), first_kept - 1);
        assert_eq!(
            read(&log, first_kept - 1),
            ((first_kept..=total).collect(), false)
        );
        assert_eq!(log.last_seq(), total);
    }

    #[test]
    fn a_reader_before_the_window_is_told_and_given_nothing() {
        let log = EventLog::default();
        let total = 2 * KEEP as u64;
        log.append_all((1..=total).map(delta));
        log.stored_through(total);
        assert_eq!(read(&log, 0), (Vec::new(), true));
        assert_eq!(read(&log, log.forgotten() - 1), (Vec::new(), true));
        assert_eq!(read(&log, total), (Vec::new(), false));
        // A heartbeat repeats the last number; it never hides a forgotten event.
        log.append_all([Event::heartbeat(total)]);
        log.stored_through(total);
        assert!(read(&log, log.forgotten() - 1).1);
    }

    #[test]
    fn what_a_joined_reader_has_not_read_stays_until_it_reads_or_leaves() {
        let log = EventLog::default();
        let total = 4 * KEEP as u64;
        let slow = log.join(0);
        let fast = log.join(0);
        log.append_all((1..=total).map(delta));
        log.stored_through(total);
        // Stored, but the readers have read nothing: all of it stays.
        assert_eq!(log.forgotten(), 0);
        let mut seqs = Vec::new();
        log.read_after(0, Some(fast), RunStatus::InProgress, |event| {
            seqs.push(event.seq);
        });
        assert_eq!(seqs, (1..=total).collect::<Vec<_>>());
        log.stored_through(total);
        assert_eq!(log.forgotten(), 0, "the slow reader has read nothing yet");
        log.read_after(KEEP as u64, Some(slow), RunStatus::InProgress, |_| {});
        log.stored_through(total);
        assert_eq!(log.forgotten(), total - KEEP as u64);
        // Once every reader has gone, only the window is kept.
        let late = log.join(0);
        log.leave(slow);
        log.leave(fast);
        log.leave(late);
        assert_eq!(log.forgotten(), total - KEEP as u64);
    }

    #[test]
    fn a_reader_that_does_not_read_holds_a_bounded_window() {
        let log = EventLog::default();
        let _stalled = log.join(0);
        let big = "x".repeat(4096);
        let total = (2 * BEHIND / big.len()) as u64;
        log.append_all((1..=total).map(|seq| {
            Event::new(
                seq,
                EventKind::PartDelta {
                    message_id: MessageId::from("msg_1"),
                    index: 0,
                    delta: big.clone(),
                },
            )
        }));
        log.stored_through(total);
        let kept = total - log.forgotten();
        assert!(kept >= KEEP as u64);
        assert!(kept * 4096 <= BEHIND as u64, "kept {kept} events");
        assert!(read(&log, 0).1, "the stalled reader reads the store first");
    }
}
