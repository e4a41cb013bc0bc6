//! Helpers shared by the dialects' test suites: encode a whole stream, decode one fed in pieces,
//! and where the golden transcripts live.

#![allow(dead_code, unreachable_pub)] // each test binary uses its own subset

use std::path::PathBuf;

use agentwire_core::{Accumulator, Event, Message};
use agentwire_dialects::{DecodeError, Encoder, StreamDecoder};
use proptest::sample::Index;

/// Encodes `events` and ends the stream.
pub fn encode(encoder: &mut dyn Encoder, events: &[Event]) -> Vec<u8> {
    let mut wire = Vec::new();
    for event in events {
        encoder.encode(event, &mut wire);
    }
    encoder.finish(&mut wire);
    wire
}

/// Decodes `wire` fed in the pieces that `cuts` mark.
pub fn decode(
    decoder: &mut dyn StreamDecoder,
    wire: &[u8],
    cuts: &[Index],
) -> Result<Vec<Event>, DecodeError> {
    let mut at: Vec<usize> = cuts.iter().map(|cut| cut.index(wire.len() + 1)).collect();
    at.push(0);
    at.push(wire.len());
    at.sort_unstable();
    let mut events = Vec::new();
    for window in at.windows(2) {
        decoder.decode(&wire[window[0]..window[1]], &mut events)?;
    }
    decoder.finish(&mut events)?;
    Ok(events)
}

/// Decodes `wire` in one piece.
pub fn decode_whole(
    decoder: &mut dyn StreamDecoder,
    wire: &[u8],
) -> Result<Vec<Event>, DecodeError> {
    decode(decoder, wire, &[])
}

/// The messages that `events` make, through the strict accumulator.
#[track_caller]
pub fn accumulate(events: &[Event]) -> Vec<Message> {
    let mut accumulator = Accumulator::default();
    for event in events {
        if let Err(error) = accumulator.push(event) {
            panic!("event {event:?} does not accumulate: {error}");
        }
    }
    accumulator.into_messages()
}

/// `crates/dialects/tests/golden/<dialect>/<file>`: the golden transcripts, which the peer
/// harnesses in `peers/` read too.
pub fn golden(dialect: &str, file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(dialect)
        .join(file)
}

/// `../shared/protocols/<path>`, the captured streams beside the checkout, when present.
pub fn captured(path: &str) -> Option<Vec<u8>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/protocols");
    std::fs::read(root.join(path)).ok()
}
