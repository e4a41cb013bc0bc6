//! Reading a run's events from a point on, then following them as they come: a
//! [`LiveReader`] for a run this node executes (its in-memory log, the store for what the log's
//! window has forgotten), a [`StoredReader`] for one only the store knows (pages of its log,
//! woken by the store's notices). Both are pull-based (`next(visit) -> bool`), so every body
//! and socket that streams a run is the same loop, and a slow client is never buffered for:
//! nothing is read until the last batch has been written.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use agentwire_core::{Event, RunId, RunStatus};
use agentwire_store::{Notice, Store};
use tokio::sync::{broadcast, watch};
use tokio::time::{Instant, Sleep};

use crate::runs::LiveRun;
use crate::runs::log::{Joined, settles};

/// A run's events from memory or from the store.
pub(crate) enum Reader {
    Live(LiveReader),
    Stored(StoredReader),
    /// A message posted into a busy session, then the run it starts.
    Posted(Box<super::posted::PostedReader>),
}

impl Reader {
    /// Waits until there is something to hand over and hands it to `visit`; false once the
    /// stream is complete.
    pub(crate) async fn next(&mut self, visit: impl FnMut(&Event)) -> bool {
        match self {
            Self::Live(reader) => reader.next(visit).await,
            Self::Stored(reader) => reader.next(visit).await,
            Self::Posted(reader) => reader.next(visit).await,
        }
    }
}

/// Where a reader stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Until {
    /// When the run is settled: awaiting the client, or ended (an HTTP stream).
    Settled,
    /// When the run has ended; an awaiting run is followed on (a WebSocket subscription).
    Ended,
}

/// Pulls a live run's events after a point, a batch at a time.
pub(crate) struct LiveReader {
    live: Arc<LiveRun>,
    after: u64,
    /// The reader's place in the log, which keeps what it has not read.
    joined: Joined,
    changes: watch::Receiver<u64>,
    heartbeat: Duration,
    /// When the reader last handed something over: a heartbeat is due `heartbeat` later.
    quiet_since: Instant,
    /// Fires when a heartbeat may be due. It is moved only when it fires, not at every event:
    /// one timer per reader, where a timeout per wait registered and removed one per event.
    alarm: Pin<Box<Sleep>>,
    until: Until,
    done: bool,
    /// The stream continues a settled run: the log is still settled from the last answer until
    /// the run's first new event, which must come before the stream may end.
    waiting_for_news: bool,
}

impl LiveReader {
    /// A reader of `live`'s events after `after`. `continues` says the stream picks up a
    /// settled run just answered, so it waits for the run's next event before it may end.
    pub(crate) fn new(
        live: Arc<LiveRun>,
        after: u64,
        heartbeat: Duration,
        until: Until,
        continues: bool,
    ) -> Self {
        let changes = live.log.subscribe();
        let joined = live.log.join(after);
        let now = Instant::now();
        Self {
            live,
            after,
            joined,
            changes,
            heartbeat,
            quiet_since: now,
            alarm: Box::pin(tokio::time::sleep_until(now + heartbeat)),
            until,
            done: false,
            waiting_for_news: continues,
        }
    }

    /// Waits until there is something to hand over, and hands `visit` every event logged since
    /// the last call (under the log's lock: encoded straight from the log), or a heartbeat
    /// after a quiet `heartbeat`. False once the stream is complete: nothing more will come.
    pub(crate) async fn next(&mut self, mut visit: impl FnMut(&Event)) -> bool {
        if self.done {
            return false;
        }
        loop {
            self.changes.borrow_and_update();
            let now = self.live.handle.status();
            let read = self
                .live
                .log
                .read_after(self.after, Some(self.joined), now, &mut visit);
            if read.gap {
                self.after = read_stored(&self.live, self.after, &mut visit).await;
                self.waiting_for_news = false;
                self.quiet_since = Instant::now();
                return true;
            }
            if let Some(last) = read.last_seq {
                self.after = last;
                self.waiting_for_news = false;
                self.quiet_since = Instant::now();
            }
            let ends = match self.until {
                Until::Settled => true,
                Until::Ended => now.is_terminal(),
            };
            if read.complete && ends && !self.waiting_for_news {
                self.done = true;
                return false;
            }
            if read.last_seq.is_some() {
                return true;
            }
            if !self.wait().await {
                self.done = true;
                return false;
            }
            let now = Instant::now();
            if now >= self.quiet_since + self.heartbeat {
                visit(&Event::heartbeat(self.after));
                self.quiet_since = now;
                self.alarm.as_mut().reset(now + self.heartbeat);
                return true;
            }
        }
    }

    /// Waits for the log to change or a heartbeat to fall due; false when the log is gone.
    async fn wait(&mut self) -> bool {
        loop {
            tokio::select! {
                changed = self.changes.changed() => return changed.is_ok(),
                () = &mut self.alarm => {
                    let due = self.quiet_since + self.heartbeat;
                    if Instant::now() >= due {
                        return true;
                    }
                    self.alarm.as_mut().reset(due);
                }
            }
        }
    }
}

impl Drop for LiveReader {
    fn drop(&mut self) {
        self.live.log.leave(self.joined);
    }
}

/// How many events a reader behind the log's window reads from the store at a time.
const PAGE: u32 = 256;

/// Hands `visit` the next page of `live`'s stored events after `after`, for a reader the log's
/// window has left behind; returns the new point. When the store has none of them (their
/// session was deleted while the run went on) the reader skips to the log's window.
async fn read_stored(live: &LiveRun, after: u64, visit: &mut impl FnMut(&Event)) -> u64 {
    match live.store.events_after(live.handle.id(), after, PAGE).await {
        Ok(page) if !page.is_empty() => {
            page.iter().for_each(&mut *visit);
            page.last().map_or(after, |event| event.seq)
        }
        Ok(_) => live.log.forgotten(),
        Err(error) => {
            // The next read tries again; a store that stays down ends in the run's own error.
            tracing::warn!(run = %live.handle.id(), "reading forgotten events: {error}");
            tokio::time::sleep(STORE_RETRY).await;
            after
        }
    }
}

/// How long a reader waits before asking a failing store again.
const STORE_RETRY: Duration = Duration::from_millis(100);

/// Hands `visit` every event of `live` logged so far, from its first: the forgotten ones from
/// the store, the rest from the log. Returns the sequence number of the last.
pub(crate) async fn read_all(live: &LiveRun, mut visit: impl FnMut(&Event)) -> u64 {
    let mut after = 0;
    loop {
        let read = live
            .log
            .read_after(after, None, live.handle.status(), &mut visit);
        if !read.gap {
            return read.last_seq.unwrap_or(after);
        }
        after = read_stored(live, after, &mut visit).await;
    }
}

/// Events read from the store at once: a replay of a long run goes out in pages.
const STORED_PAGE: u32 = 1000;

/// Pulls a stored run's events after a point, a page at a time.
pub(crate) struct StoredReader {
    store: Store,
    run_id: RunId,
    after: u64,
    notices: broadcast::Receiver<Notice>,
    heartbeat: Duration,
    until: Until,
    done: bool,
    /// The row said the run is settled; the next empty read ends the stream.
    ending: bool,
    /// The node executing the run was asked to publish its events as it shows them.
    following: bool,
    /// The run was just answered elsewhere: its row may still say it waits, so the stream
    /// may not end before the run's next event.
    continues: bool,
}

impl StoredReader {
    /// A reader of `run_id`'s stored events after `after`, woken by `notices`.
    pub(crate) fn new(
        store: Store,
        notices: &broadcast::Sender<Notice>,
        run_id: RunId,
        after: u64,
        heartbeat: Duration,
        until: Until,
    ) -> Self {
        // Subscribed before the first read: an append after it is either read or noticed.
        let notices = notices.subscribe();
        Self {
            store,
            run_id,
            after,
            notices,
            heartbeat,
            until,
            done: false,
            ending: false,
            following: false,
            continues: false,
        }
    }

    /// The reader of a run just answered (its row may still say it waits): it waits for the
    /// run's next event before it may end.
    pub(crate) fn continuing(mut self) -> Self {
        self.continues = true;
        self
    }

    /// Waits until there is something to hand over, and hands `visit` the next page of events,
    /// or a heartbeat after a quiet `heartbeat`. False once the stream is complete.
    pub(crate) async fn next(&mut self, mut visit: impl FnMut(&Event)) -> bool {
        if self.done {
            return false;
        }
        loop {
            let page: Vec<Event> = match self
                .store
                .events_after(&self.run_id, self.after, STORED_PAGE)
                .await
            {
                Ok(page) => page,
                Err(error) => {
                    tracing::error!(run = %self.run_id, "replaying events: {error}");
                    self.done = true;
                    return false;
                }
            };
            if let Some(last) = page.last() {
                page.iter().for_each(&mut visit);
                self.after = last.seq;
                self.ending = false;
                self.continues = false;
                self.done = match self.until {
                    Until::Settled => settles(last),
                    Until::Ended => last.own_status().is_some_and(RunStatus::is_terminal),
                };
                return true;
            }
            // Nothing new: the stream is complete if the run is settled (its row follows its
            // log).
            match self.store.run(&self.run_id).await {
                // Read once more: events and the row commit together, so that read has them all.
                Ok(Some(record)) if self.stops_at(record.status) && !self.continues => {
                    if self.ending {
                        self.done = true;
                        return false;
                    }
                    self.ending = true;
                    continue;
                }
                Ok(Some(_)) if !self.following => {
                    // Its node shows events before it stores them (deltas go to the store
                    // seconds apart): ask it to publish them, so this reader keeps pace.
                    self.following = true;
                    let follow = Notice::Follow {
                        run_id: self.run_id.clone(),
                    };
                    if let Err(error) = self.store.notify(&follow).await {
                        tracing::warn!(run = %self.run_id, "asking to follow the run: {error}");
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => {
                    self.done = true;
                    return false;
                }
                Err(error) => {
                    tracing::error!(run = %self.run_id, "reading the run: {error}");
                    self.done = true;
                    return false;
                }
            }
            // Wait for a notice of this run; on silence send a heartbeat and read again (a
            // notice can be missed while a listener reconnects).
            let run_id = &self.run_id;
            let after = self.after;
            let notices = &mut self.notices;
            let wait = async {
                loop {
                    match notices.recv().await {
                        Ok(Notice::Events { run_id: of, .. }) if of == *run_id => {
                            return Woken::Stored;
                        }
                        // Published as shown: taken when they go on from where this reader is
                        // (else the log has what is missing, or soon will).
                        Ok(Notice::Live { run_id: of, events })
                            if of == *run_id
                                && events.first().is_some_and(|first| first.seq <= after + 1)
                                && events.last().is_some_and(|last| last.seq > after) =>
                        {
                            return Woken::Live(events);
                        }
                        Ok(_) => {}
                        Err(broadcast::error::RecvError::Lagged(_)) => return Woken::Stored,
                        Err(broadcast::error::RecvError::Closed) => return Woken::Closed,
                    }
                }
            };
            match tokio::time::timeout(self.heartbeat, wait).await {
                Ok(Woken::Stored) => {}
                Ok(Woken::Live(events)) => {
                    self.continues = false;
                    for event in &events {
                        if event.seq > self.after {
                            visit(event);
                            self.after = event.seq;
                        }
                    }
                    return true;
                }
                Ok(Woken::Closed) => {
                    self.done = true;
                    return false;
                }
                Err(_) => {
                    visit(&Event::heartbeat(self.after));
                    return true;
                }
            }
        }
    }

    /// The reader stops once the run is in `status` and its log is read.
    fn stops_at(&self, status: RunStatus) -> bool {
        match self.until {
            Until::Settled => !is_moving(status),
            Until::Ended => status.is_terminal(),
        }
    }
}

/// What woke a [`StoredReader`] waiting for its run.
enum Woken {
    /// The log has more.
    Stored,
    /// Events its node published as it showed them.
    Live(Vec<Event>),
    /// The notices ended (the server is going away).
    Closed,
}

/// The run may still append events without the client doing anything.
pub(crate) fn is_moving(status: agentwire_core::RunStatus) -> bool {
    !status.is_terminal() && !matches!(status, agentwire_core::RunStatus::Awaiting(_))
}
