//! The native dialect: for any message streamed any way, decoding its encoded events gives the
//! same events, however the bytes are split; unknown events are skipped and malformed ones are
//! errors.

mod common;

use agentwire_core::{Accumulator, Event, Message};
use agentwire_dialects::DecodeError;
use agentwire_dialects::native::{
    NativeNdjsonDecoder, NativeNdjsonEncoder, NativeSseDecoder, NativeSseEncoder, decode_request,
};
use agentwire_testkit::strategy;
use agentwire_testkit::stream::{Choices, events_for, tree_events};
use common::{decode, encode};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

proptest! {
    #[test]
    fn sse_round_trips(message in strategy::message(), mut choices in any::<Choices>(), cuts in vec(any::<Index>(), 0..6)) {
        let mut events = events_for(&message, &mut choices);
        events.insert(1, Event::heartbeat(1));
        let wire = encode(&mut NativeSseEncoder, &events);
        let decoded = decode(&mut NativeSseDecoder::default(), &wire, &cuts)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(&decoded, &events);
        let mut accumulator = Accumulator::default();
        for event in &decoded {
            accumulator.push(event).map_err(|err| TestCaseError::fail(err.to_string()))?;
        }
        prop_assert_eq!(accumulator.messages(), std::slice::from_ref(&message));
    }

    #[test]
    fn ndjson_round_trips(message in strategy::message(), mut choices in any::<Choices>(), cuts in vec(any::<Index>(), 0..6)) {
        let events = events_for(&message, &mut choices);
        let wire = encode(&mut NativeNdjsonEncoder, &events);
        let decoded = decode(&mut NativeNdjsonDecoder::default(), &wire, &cuts)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(decoded, events);
    }

    /// Sub-agents' runs nested in the stream keep their namespaces, in both framings.
    #[test]
    fn a_tree_of_runs_round_trips(
        messages in proptest::array::uniform4(strategy::message()),
        mut choices in any::<Choices>(),
        interleaving in vec(any::<Index>(), 0..300),
        cuts in vec(any::<Index>(), 0..6),
    ) {
        let [a, b, c, d] = &messages;
        let events = tree_events([a, b, c, d], &mut choices, &interleaving);
        let wire = encode(&mut NativeSseEncoder, &events);
        let decoded = decode(&mut NativeSseDecoder::default(), &wire, &cuts)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(&decoded, &events);
        let wire = encode(&mut NativeNdjsonEncoder, &events);
        let decoded = decode(&mut NativeNdjsonDecoder::default(), &wire, &cuts)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(&decoded, &events);
        let mut accumulator = Accumulator::default();
        for event in &decoded {
            accumulator.push(event).map_err(|err| TestCaseError::fail(err.to_string()))?;
        }
        prop_assert_eq!(accumulator.children().len(), 2);
    }

    #[test]
    fn garbage_never_panics(wire in vec(any::<u8>(), 0..200), cuts in vec(any::<Index>(), 0..4)) {
        let _ = decode(&mut NativeSseDecoder::default(), &wire, &cuts);
        let _ = decode(&mut NativeNdjsonDecoder::default(), &wire, &cuts);
    }
}

#[test]
fn sse_frames_carry_the_sequence_number_and_name() {
    let events = events_for(
        &Message::assistant("Hi").with_id("msg_1"),
        &mut Choices::new(Vec::new()),
    );
    let wire = String::from_utf8(encode(&mut NativeSseEncoder, &events)).expect("utf-8");
    assert!(wire.starts_with(
        "id: 1\nevent: message_start\ndata: {\"seq\":1,\"event\":\"message_start\",\"message_id\":\"msg_1\",\"role\":\"assistant\"}\n\n\
         id: 2\nevent: part_start\n"
    ), "{wire}");
    let heartbeat =
        String::from_utf8(encode(&mut NativeSseEncoder, &[Event::heartbeat(2)])).expect("utf-8");
    assert_eq!(
        heartbeat,
        "event: heartbeat\ndata: {\"seq\":2,\"event\":\"heartbeat\"}\n\n"
    );
}

#[test]
fn unknown_events_are_skipped_and_malformed_ones_refused() {
    let stream = b": keep-alive\n\n\
        event: from_the_future\ndata: {\"seq\":1,\"event\":\"from_the_future\",\"x\":1}\n\n\
        data: {\"seq\":2,\"event\":\"also_new\"}\n\n\
        id: 3\nevent: heartbeat\ndata: {\"seq\":3,\"event\":\"heartbeat\"}\n\n";
    let events = decode(&mut NativeSseDecoder::default(), stream, &[]).expect("valid");
    assert_eq!(events, [Event::heartbeat(3)]);

    let malformed =
        b"event: part_delta\ndata: {\"seq\":1,\"event\":\"part_delta\",\"index\":0}\n\n";
    let err = decode(&mut NativeSseDecoder::default(), malformed, &[]).expect_err("missing fields");
    assert!(
        matches!(err, DecodeError::InvalidFrame { frame: 1, .. }),
        "{err}"
    );

    let lines = b"{\"seq\":1,\"event\":\"heartbeat\"}\r\n\n{\"seq\":2,\"event\":\"new_kind\"}\n{\"seq\":3,\"event\":\"heartbeat\"}";
    let events = decode(&mut NativeNdjsonDecoder::default(), lines, &[]).expect("valid");
    assert_eq!(events, [Event::heartbeat(1), Event::heartbeat(3)]);
    let err =
        decode(&mut NativeNdjsonDecoder::default(), b"{\"seq\":1,", &[]).expect_err("cut off");
    assert!(
        matches!(err, DecodeError::InvalidFrame { frame: 1, .. }),
        "{err}"
    );
}

#[test]
fn run_requests_read_both_spellings() {
    let request = decode_request(
        br#"{"agent": "assistant", "session_id": "ses_1", "input": [
            {"role": "user", "parts": [{"type": "text", "text": "Hi"}]},
            {"role": "user", "content": "plain"},
            {"role": "assistant", "parts": [{"type": "tool-call", "toolCallId": "c", "toolName": "t", "args": {}}]}
        ]}"#,
    )
    .expect("valid");
    assert_eq!(request.agent.as_deref(), Some("assistant"));
    assert_eq!(request.input.len(), 3);
    assert_eq!(request.input[1], Message::user("plain"));
    let err = decode_request(br#"{"input": [{"role": "robot"}]}"#).expect_err("bad role");
    assert!(err.to_string().contains("robot"), "{err}");
}
