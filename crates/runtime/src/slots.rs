//! [`RunSlots`]: how many runs of a host work at once, and how many may wait in line for a
//! slot; a run given slots reports `queued` while it waits for one.
//!
//! A slot is held while a run works: from its start (or its answer, after a wait) to its end or
//! its next wait for the client. A run that waits for an approval, a tool's output or the
//! user's answer holds none, so runs nobody answers cannot take every slot; when it is
//! answered it takes a slot again, in line with the others (reporting `queued` if it has to
//! wait). The line is fair: slots go to runs in the order they asked (Tokio's semaphore is
//! first in, first out). A run that finds the line full (`max_queued`) ends `rejected` with
//! code `queue_full` without running; one answered after a wait is never turned away, it waits
//! in line whatever its length (it has begun, and its client was told it goes on).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentwire_core::ErrorInfo;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Slots for working runs, shared by every run of a host (cheap to clone).
///
/// ```
/// use agentwire_runtime::RunSlots;
///
/// let slots = RunSlots::new(4, Some(16));
/// assert_eq!((slots.working(), slots.queued()), (0, 0));
/// ```
#[derive(Clone, Debug)]
pub struct RunSlots {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    semaphore: Arc<Semaphore>,
    max_working: usize,
    /// `None`: the line has no end.
    max_queued: Option<usize>,
    queued: AtomicUsize,
}

/// A working run's slot; dropping it frees the slot for the next run in line.
#[derive(Debug)]
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
}

/// A place in the line; dropping it leaves the line.
#[derive(Debug)]
pub(crate) struct InLine {
    slots: RunSlots,
}

impl RunSlots {
    /// `max_working` runs work at once (at least 1); at most `max_queued` more wait for a slot
    /// (`None`: any number).
    pub fn new(max_working: usize, max_queued: Option<usize>) -> Self {
        let max_working = max_working.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            inner: Arc::new(Inner {
                semaphore: Arc::new(Semaphore::new(max_working)),
                max_working,
                max_queued,
                queued: AtomicUsize::new(0),
            }),
        }
    }

    /// How many runs hold a slot now.
    pub fn working(&self) -> usize {
        self.inner.max_working - self.inner.semaphore.available_permits()
    }

    /// How many runs wait for a slot now.
    pub fn queued(&self) -> usize {
        self.inner.queued.load(Ordering::Relaxed)
    }

    /// A slot, if one is free and nobody waits for one.
    pub(crate) fn try_take(&self) -> Option<Slot> {
        if self.queued() > 0 {
            return None;
        }
        let permit = Arc::clone(&self.inner.semaphore).try_acquire_owned().ok()?;
        Some(Slot { _permit: permit })
    }

    /// A place in the line; `None` when the line is full and `always` is false.
    pub(crate) fn line_up(&self, always: bool) -> Option<InLine> {
        let limit = match (always, self.inner.max_queued) {
            (false, Some(limit)) => limit,
            _ => usize::MAX,
        };
        self.inner
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                (queued < limit).then_some(queued + 1)
            })
            .ok()?;
        Some(InLine {
            slots: self.clone(),
        })
    }

    /// Why a run found the line full.
    pub(crate) fn full(&self) -> ErrorInfo {
        ErrorInfo::new(
            "queue_full",
            format!(
                "the server is busy: {} runs are working and {} wait for a slot (max_queued_runs)",
                self.inner.max_working,
                self.inner.max_queued.unwrap_or_default()
            ),
        )
    }
}

impl InLine {
    /// Waits for a slot, leaving the line with it.
    pub(crate) async fn take(self) -> Slot {
        let semaphore = Arc::clone(&self.slots.inner.semaphore);
        // The semaphore is never closed, so acquiring cannot fail; the fallback is unreachable.
        match semaphore.acquire_owned().await {
            Ok(permit) => Slot { _permit: permit },
            Err(_) => std::future::pending().await,
        }
    }
}

impl Drop for InLine {
    fn drop(&mut self) {
        self.slots.inner.queued.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn slots_go_in_order_and_the_line_has_an_end() {
        let slots = RunSlots::new(1, Some(1));
        let first = slots.try_take().expect("a free slot");
        assert!(slots.try_take().is_none());
        let second = slots.line_up(false).expect("room in line");
        assert!(slots.line_up(false).is_none(), "the line is full");
        let forced = slots
            .line_up(true)
            .expect("an answered run always lines up");
        assert_eq!((slots.working(), slots.queued()), (1, 2));
        let waiting = tokio::spawn(second.take());
        tokio::task::yield_now().await;
        drop(forced);
        drop(first);
        let slot = waiting.await.expect("the second run gets the slot");
        assert_eq!((slots.working(), slots.queued()), (1, 0));
        drop(slot);
        assert_eq!(slots.working(), 0);
    }
}
