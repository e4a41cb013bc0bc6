//! A run's event log as a native SSE response body: the events after a point, then the live
//! ones as they are logged, with a heartbeat when the run is quiet. The body ends once the
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
    heartbeat: Duration,
    done: bool,
}

/// The body streaming `live`'s events after sequence number `after`.
pub(crate) fn sse_body(live: Arc<LiveRun>, after: u64, heartbeat: Duration) -> Body {
    let changes = live.log.subscribe();
    let reader = Reader {
        live,
        after,
        changes,
        heartbeat,
        done: false,
    };
    Body::from_stream(futures::stream::unfold(reader, next_chunk))
}

/// Everything logged since the last chunk, encoded as one write (a slow client gets fewer,
/// larger writes rather than a backlog of small ones).
async fn next_chunk(mut reader: Reader) -> Option<(Result<Bytes, Infallible>, Reader)> {
    if reader.done {
        return None;
    }
    let mut encoder = NativeSseEncoder;
    loop {
        reader.changes.borrow_and_update();
        let mut out = Vec::new();
        let read = reader
            .live
            .log
            .read_after(reader.after, reader.live.handle.status(), |event| {
                encoder.encode(event, &mut out);
            });
        if let Some(last) = read.last_seq {
            reader.after = last;
            reader.done = read.complete;
            return Some((Ok(Bytes::from(out)), reader));
        }
        if read.complete {
            return None;
        }
        match tokio::time::timeout(reader.heartbeat, reader.changes.changed()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return None,
            Err(_) => {
                encoder.encode(&Event::heartbeat(reader.after), &mut out);
                return Some((Ok(Bytes::from(out)), reader));
            }
        }
    }
}
