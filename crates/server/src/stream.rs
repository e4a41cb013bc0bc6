//! A run's event log as a response body, in any dialect's encoding (native SSE by default):
//! the events after a point, then the live ones as they are logged, with a heartbeat when the
//! run is quiet. The body ends once the reader has everything and the run is settled or ended.
//! Dropping the body (a client that disconnects) only stops the reading; the run goes on.
//!
//! [`LiveReader`] is the one reader loop; the bodies here and the WebSocket subscriptions
//! (`ws.rs`) both pull from it, so a slow client is never buffered for: nothing is read from the
//! log until the last batch has been written.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use agentwire_core::Event;
use agentwire_dialects::Encoder;
use agentwire_dialects::native::NativeSseEncoder;
use axum::body::{Body, Bytes};
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};

use crate::state::LiveRun;

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
        let now = Instant::now();
        Self {
            live,
            after,
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
            let read = self.live.log.read_after(self.after, now, &mut visit);
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
        let read = live.log.read_after(after, live.handle.status(), &mut visit);
        if !read.gap {
            return read.last_seq.unwrap_or(after);
        }
        after = read_stored(live, after, &mut visit).await;
    }
}

/// The native SSE body streaming `live`'s events after sequence number `after`.
pub(crate) fn sse_body(live: Arc<LiveRun>, after: u64, heartbeat: Duration) -> Body {
    encoded_body(live, after, Box::new(NativeSseEncoder), heartbeat, false)
}

/// A body streaming `live`'s events after `after` through `encoder` (any dialect's), ending
/// with the encoder's `finish` once the run is settled or ended. `continues` says the stream
/// picks up a settled run just answered, so it waits for the run's next event before it may
/// end.
pub(crate) fn encoded_body(
    live: Arc<LiveRun>,
    after: u64,
    encoder: Box<dyn Encoder + Send>,
    heartbeat: Duration,
    continues: bool,
) -> Body {
    let reader = LiveReader::new(live, after, heartbeat, Until::Settled, continues);
    Body::from_stream(futures::stream::unfold(
        (reader, encoder, false),
        |(mut reader, mut encoder, finished)| async move {
            if finished {
                return None;
            }
            // Everything logged since the last chunk, encoded as one write (a slow client gets
            // fewer, larger writes rather than a backlog of small ones).
            let mut out = Vec::new();
            loop {
                let more = reader.next(|event| encoder.encode(event, &mut out)).await;
                if !more {
                    encoder.finish(&mut out);
                    return (!out.is_empty()).then(|| {
                        (
                            Ok::<_, Infallible>(Bytes::from(out)),
                            (reader, encoder, true),
                        )
                    });
                }
                if !out.is_empty() {
                    return Some((Ok(Bytes::from(out)), (reader, encoder, false)));
                }
            }
        },
    ))
}
