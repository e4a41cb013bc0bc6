//! [`RunEvents`]: the receiving end of a run's event stream, and the queue behind it.
//!
//! Back-pressure, decided: there is none towards the model. The queue is unbounded, so a run
//! never waits for its reader: the model's stream is read as fast as it comes, a provider never
//! times out behind a slow client, and tools are never held up. What a reader has not taken yet
//! stays queued, in order, so nothing is lost; the most a run can queue is its own output (a
//! run is bounded by `max_steps` and the agent's limits). Pacing a slow client is the server's
//! job, which coalesces queued deltas into larger writes. When the reader is dropped, the queue
//! empties and later events are discarded at once; the run goes on, and its messages stay
//! readable on its [`RunHandle`](crate::RunHandle).
//!
//! One reader per run: a server's reader persists each event and fans it out to its clients.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use agentwire_core::Event;
use futures::Stream;

/// A run's events, in order, numbered from 1: `run_created`, `run_status`, then each message's
/// events, and the run's final `run_status`. The stream ends after the run's terminal status
/// (an awaiting run's stream stays open: more events follow once it is answered).
///
/// Events wait here until they are read, however long that takes; see the module docs.
#[derive(Debug)]
pub struct RunEvents {
    queue: Arc<EventQueue>,
}

/// The queue between a run's orchestrator (the only writer) and its [`RunEvents`].
#[derive(Debug, Default)]
pub(crate) struct EventQueue {
    inner: Mutex<Queued>,
}

#[derive(Debug, Default)]
struct Queued {
    events: VecDeque<Event>,
    /// The reader waiting for the next event.
    waker: Option<Waker>,
    /// The run ended: nothing more will be pushed.
    closed: bool,
    /// The reader is gone: nothing more needs to be kept.
    reader_gone: bool,
    /// The run waits for the client: once the reader has caught up, the queue's memory goes.
    idle: bool,
}

impl EventQueue {
    /// Appends events and wakes the reader.
    pub(crate) fn push(&self, events: impl Iterator<Item = Event>) {
        let waker = {
            let mut queued = self.lock();
            if queued.reader_gone {
                // Drain the caller's iterator without keeping anything.
                events.for_each(drop);
                return;
            }
            let before = queued.events.len();
            queued.events.extend(events);
            if queued.events.len() == before {
                return;
            }
            queued.idle = false;
            queued.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Marks the end of the stream: the reader gets `None` once it has read everything.
    pub(crate) fn close(&self) {
        let waker = {
            let mut queued = self.lock();
            queued.closed = true;
            queued.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Marks the run as waiting for the client: the queue's memory is given back as soon as
    /// the reader has read everything, so a run that waits for hours holds no buffer.
    pub(crate) fn idle(&self) {
        let mut queued = self.lock();
        queued.idle = true;
        queued.release_if_read();
    }

    fn lock(&self) -> MutexGuard<'_, Queued> {
        // The lock is never held across a panic point that could leave the queue half-written;
        // a poisoned lock still guards a consistent queue.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Queued {
    fn release_if_read(&mut self) {
        if self.idle && self.events.is_empty() {
            self.events = VecDeque::new();
        }
    }
}

impl RunEvents {
    pub(crate) fn new(queue: Arc<EventQueue>) -> Self {
        Self { queue }
    }

    /// The next event, or `None` once the run has ended and every event was read.
    pub async fn recv(&mut self) -> Option<Event> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    /// Moves every event that is ready into `buffer` (waiting for at least one), and returns
    /// how many it moved; 0 means the stream is over. One lock for the whole batch: the way
    /// for a reader that writes events out in batches.
    pub async fn recv_many(&mut self, buffer: &mut Vec<Event>) -> usize {
        std::future::poll_fn(|cx| {
            let mut queued = self.queue.lock();
            if !queued.events.is_empty() {
                let n = queued.events.len();
                buffer.extend(queued.events.drain(..));
                queued.release_if_read();
                return Poll::Ready(n);
            }
            if queued.closed {
                return Poll::Ready(0);
            }
            queued.waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    fn poll_event(&self, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let mut queued = self.queue.lock();
        if let Some(event) = queued.events.pop_front() {
            queued.release_if_read();
            return Poll::Ready(Some(event));
        }
        if queued.closed {
            return Poll::Ready(None);
        }
        // Replace the waker only when it changed: cloning it is the costly part.
        match &queued.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => queued.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl Stream for RunEvents {
    type Item = Event;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.poll_event(cx)
    }
}

impl Drop for RunEvents {
    fn drop(&mut self) {
        let mut queued = self.queue.lock();
        queued.reader_gone = true;
        queued.waker = None;
        queued.events = VecDeque::new();
    }
}
