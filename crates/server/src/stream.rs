//! A run's event log as a response body, in any dialect's encoding (native SSE by default):
//! the events after a point, then the live ones as they are logged, with a heartbeat when the
//! run is quiet. The body ends once the reader has everything and the run is settled or ended.
//! Dropping the body (a client that disconnects) only stops the reading; the run goes on.
//!
//! [`LiveReader`] is the one reader loop; the bodies here and the WebSocket subscriptions
//! (`ws.rs`) both pull from it, so a slow client is never buffered for: nothing is read from the
//! log until the last batch has been written.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agentwire_core::Event;
use agentwire_dialects::Encoder;
use agentwire_dialects::native::NativeSseEncoder;
use axum::body::{Body, Bytes};
use tokio::sync::watch;

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
        Self {
            live,
            after,
            changes,
            heartbeat,
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
            if let Some(last) = read.last_seq {
                self.after = last;
                self.waiting_for_news = false;
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
            match tokio::time::timeout(self.heartbeat, self.changes.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => {
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
