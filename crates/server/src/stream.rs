//! A run's event log as a response body, in any dialect's encoding (native SSE by default):
//! the events after a point, then the live ones as they are logged, with a heartbeat when the run is quiet. The body ends once the
//! reader has everything and the run is settled or ended. Dropping the body (a client that
//! disconnects) only stops the reading; the run goes on.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agentwire_core::Event;
use agentwire_dialects::Encoder;
use agentwire_dialects::native::NativeSseEncoder;
use axum::body::{Body, Bytes};
use tokio::sync::watch;

use crate::state::LiveRun;

struct Reader {
    live: Arc<LiveRun>,
    after: u64,
    changes: watch::Receiver<u64>,
    encoder: Box<dyn Encoder + Send>,
    heartbeat: Duration,
    done: bool,
    /// The stream continues a settled run: the log is still settled from the last answer until
    /// the run's first new event, which must come before the stream may end.
    waiting_for_news: bool,
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
    let changes = live.log.subscribe();
    let reader = Reader {
        live,
        after,
        changes,
        encoder,
        heartbeat,
        done: false,
        waiting_for_news: continues,
    };
    Body::from_stream(futures::stream::unfold(reader, next_chunk))
}

/// Everything logged since the last chunk, encoded as one write (a slow client gets fewer,
/// larger writes rather than a backlog of small ones).
async fn next_chunk(mut reader: Reader) -> Option<(Result<Bytes, Infallible>, Reader)> {
    if reader.done {
        return None;
    }
    loop {
        reader.changes.borrow_and_update();
        let mut out = Vec::new();
        let encoder = &mut reader.encoder;
        let read = reader
            .live
            .log
            .read_after(reader.after, reader.live.handle.status(), |event| {
                encoder.encode(event, &mut out);
            });
        if let Some(last) = read.last_seq {
            reader.after = last;
            reader.waiting_for_news = false;
        }
        if read.complete && !reader.waiting_for_news {
            reader.encoder.finish(&mut out);
            reader.done = true;
        }
        if !out.is_empty() {
            return Some((Ok(Bytes::from(out)), reader));
        }
        if reader.done {
            return None;
        }
        match tokio::time::timeout(reader.heartbeat, reader.changes.changed()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => {
                reader.encoder.finish(&mut out);
                reader.done = true;
                return (!out.is_empty()).then(|| (Ok(Bytes::from(out)), reader));
            }
            Err(_) => {
                reader
                    .encoder
                    .encode(&Event::heartbeat(reader.after), &mut out);
                return Some((Ok(Bytes::from(out)), reader));
            }
        }
    }
}
