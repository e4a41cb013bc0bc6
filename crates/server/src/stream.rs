//! A run's events as a response body, in any dialect's encoding: what a [`Reader`] hands over
//! (the events after a point, then the live ones as they come, a heartbeat when the run is
//! quiet), encoded batch by batch. The body ends once the reader has everything and the run is
//! settled or ended. Dropping the body (a client that disconnects) only stops the reading; the
//! run goes on.

use std::convert::Infallible;

use agentwire_dialects::Encoder;
use axum::body::{Body, Bytes};

use crate::runs::Reader;

/// A body streaming what `reader` hands over through `encoder` (any dialect's), ending with
/// the encoder's `finish` once the reader is done.
pub(crate) fn body(reader: Reader, encoder: Box<dyn Encoder + Send>) -> Body {
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
