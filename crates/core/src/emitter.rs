//! [`Emitter`]: numbers a run's events in the order they are produced and queues them for the
//! caller to send.

use crate::event::{Event, EventKind};
use crate::namespace::Namespace;

/// Numbers events and queues them. One per run: the builder of every message and the run's
/// status changes emit through it, so the sequence numbers cover the whole stream.
///
/// The queue is drained by the caller (to store and send the events) and reused, so steady
/// streaming allocates nothing here.
#[derive(Debug)]
pub struct Emitter {
    next_seq: u64,
    queued: Vec<Event>,
}

impl Default for Emitter {
    /// An emitter whose first event is number 1 (0 means "before the first event" when a client
    /// resumes).
    fn default() -> Self {
        Self::starting_at(1)
    }
}

impl Emitter {
    /// An emitter whose next event gets `next_seq`: how a resumed run continues its numbering.
    pub fn starting_at(next_seq: u64) -> Self {
        Self {
            next_seq,
            queued: Vec::new(),
        }
    }

    /// Numbers and queues an event; returns its number.
    pub fn emit(&mut self, kind: EventKind) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queued.push(Event::new(seq, kind));
        seq
    }

    /// Numbers and queues an event of a sub-agent's run nested in this one (see
    /// [`Namespace`]); returns its number.
    pub fn emit_in(&mut self, namespace: Namespace, kind: EventKind) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queued.push(Event {
            seq,
            namespace,
            kind,
        });
        seq
    }

    /// The number of the last event emitted (0 before the first).
    pub fn last_seq(&self) -> u64 {
        self.next_seq.saturating_sub(1)
    }

    /// The queued events, oldest first; the queue is left empty.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Event> {
        self.queued.drain(..)
    }

    /// The queued events, without taking them.
    pub fn queued(&self) -> &[Event] {
        &self.queued
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_grow_across_drains() {
        let mut out = Emitter::default();
        assert_eq!(out.last_seq(), 0);
        out.emit(EventKind::Heartbeat {});
        out.emit(EventKind::Heartbeat {});
        let seqs: Vec<u64> = out.drain().map(|event| event.seq).collect();
        assert_eq!(seqs, [1, 2]);
        assert_eq!(out.emit(EventKind::Heartbeat {}), 3);
        assert_eq!(Emitter::starting_at(10).emit(EventKind::Heartbeat {}), 10);
    }
}
