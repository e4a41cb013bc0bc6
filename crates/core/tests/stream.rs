//! The builder and the accumulator together: for any message and any way of streaming it,
//! `accumulate(build(message)) == message`; for any stream, valid or not, the accumulator answers
//! `Ok` or a typed error, never panics, and an error leaves it unchanged.

use agentwire_core::accumulator::{Mismatch, PartStatus};
use agentwire_core::event::{RunStatus, StreamedPart};
use agentwire_core::{AccumulateError, Accumulator, Event, EventKind, Message, Part};
use agentwire_testkit::strategy;
use agentwire_testkit::stream::{Choices, events_for};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::json;

fn accumulate(events: &[Event]) -> Result<Accumulator, AccumulateError> {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator.push(event)?;
    }
    Ok(accumulator)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn accumulate_build_is_identity(message in strategy::message(), mut choices in any::<Choices>()) {
        let events = events_for(&message, &mut choices);
        let accumulator = accumulate(&events).map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(accumulator.messages(), std::slice::from_ref(&message));

        // The parts were right before the message completed, not only after.
        let (_, streamed) = events.split_last().expect("events");
        let accumulator = accumulate(streamed).map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(&accumulator.messages()[0].parts, &message.parts);
    }

    #[test]
    fn events_survive_their_json(message in strategy::message(), mut choices in any::<Choices>()) {
        let events = events_for(&message, &mut choices);
        let decoded: Vec<Event> = events
            .iter()
            .map(|event| serde_json::from_str(&serde_json::to_string(event).expect("serializes")).expect("parses"))
            .collect();
        prop_assert_eq!(&decoded, &events);
        let accumulator = accumulate(&decoded).map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(accumulator.messages(), std::slice::from_ref(&message));
    }

    #[test]
    fn any_prefix_accumulates(message in strategy::message(), mut choices in any::<Choices>(), cut in any::<Index>()) {
        let events = events_for(&message, &mut choices);
        let prefix = &events[..cut.index(events.len() + 1)];
        prop_assert!(accumulate(prefix).is_ok());
    }

    /// A stream cut anywhere is completed by the accumulator's `completions`: they are
    /// accepted, leave nothing open, and change no part that had completed.
    #[test]
    fn completions_close_any_prefix(message in strategy::message(), mut choices in any::<Choices>(), cut in any::<Index>()) {
        let events = events_for(&message, &mut choices);
        let prefix = &events[..cut.index(events.len() + 1)];
        let mut accumulator = accumulate(prefix).map_err(|err| TestCaseError::fail(err.to_string()))?;
        let before = accumulator.messages().to_vec();
        let mut seq = prefix.last().map_or(0, |event| event.seq);
        for kind in accumulator.completions() {
            seq += 1;
            accumulator.push(&Event::new(seq, kind)).map_err(|err| TestCaseError::fail(err.to_string()))?;
        }
        prop_assert!(accumulator.completions().is_empty());
        prop_assert_eq!(accumulator.messages().len(), before.len());
        if prefix.len() == events.len() {
            prop_assert_eq!(accumulator.messages(), std::slice::from_ref(&message));
        }
    }

    #[test]
    fn damaged_streams_give_typed_errors_and_change_nothing(
        message in strategy::message(),
        mut choices in any::<Choices>(),
        damage in vec((0..5u8, any::<Index>(), any::<Index>()), 1..4),
    ) {
        let mut events = events_for(&message, &mut choices);
        for (kind, a, b) in damage {
            let (a, b) = (a.index(events.len()), b.index(events.len()));
            match kind {
                0 => { events.remove(a); }
                1 => { let copy = events[a].clone(); events.insert(b, copy); }
                2 => events.swap(a, b),
                3 => damage_index(&mut events[a], b),
                _ => renumber(&mut events),
            }
            if events.is_empty() { break; }
        }
        check_never_panics_and_errors_change_nothing(&events)?;
    }

    #[test]
    fn arbitrary_event_sequences(events in vec(arbitrary_event(), 0..40)) {
        check_never_panics_and_errors_change_nothing(&events)?;
    }
}

/// Pushes every event, continuing past errors; after each error the state must be as before.
fn check_never_panics_and_errors_change_nothing(events: &[Event]) -> Result<(), TestCaseError> {
    let mut accumulator = Accumulator::default();
    for event in events {
        let before = (
            accumulator.messages().to_vec(),
            accumulator.last_seq(),
            accumulator.status(),
        );
        if accumulator.push(event).is_err() {
            let after = (
                accumulator.messages().to_vec(),
                accumulator.last_seq(),
                accumulator.status(),
            );
            prop_assert_eq!(before, after);
        }
    }
    Ok(())
}

fn damage_index(event: &mut Event, to: usize) {
    let to = to as u32 % 4;
    match &mut event.kind {
        EventKind::PartStart { index, .. }
        | EventKind::PartDelta { index, .. }
        | EventKind::PartComplete { index, .. } => *index = to,
        EventKind::MessageComplete { message } => {
            message.parts.truncate(to as usize);
        }
        _ => event.seq = u64::from(to),
    }
}

fn renumber(events: &mut [Event]) {
    for (seq, event) in events.iter_mut().enumerate() {
        event.seq = seq as u64 + 1;
    }
}

fn arbitrary_event() -> impl Strategy<Value = Event> {
    let message_id = prop_oneof![Just("m1"), Just("m2")].prop_map(agentwire_core::MessageId::from);
    let index = 0u32..4;
    let kind = prop_oneof![
        (message_id.clone(), strategy::role()).prop_map(|(message_id, role)| {
            EventKind::MessageStart {
                message_id,
                role,
                metadata: Default::default(),
                created_at: None,
            }
        }),
        (message_id.clone(), index.clone(), 0..4u8).prop_map(|(message_id, index, kind)| {
            EventKind::PartStart {
                message_id,
                index,
                part: match kind {
                    0 => StreamedPart::Text,
                    1 => StreamedPart::Reasoning,
                    2 => StreamedPart::Refusal,
                    _ => StreamedPart::ToolCall {
                        tool_call_id: "c".into(),
                        tool_name: "t".into(),
                    },
                },
            }
        }),
        (
            message_id.clone(),
            index.clone(),
            prop_oneof!["[{}\\[\\]\",:a-z0-9 ]{0,6}", strategy::text()]
        )
            .prop_map(|(message_id, index, delta)| EventKind::PartDelta {
                message_id,
                index,
                delta
            }),
        (message_id.clone(), index, strategy::part()).prop_map(|(message_id, index, part)| {
            EventKind::PartComplete {
                message_id,
                index,
                part,
            }
        }),
        strategy::message().prop_map(|mut message| {
            message.id = Some(
                if message.parts.len() % 2 == 0 {
                    "m1"
                } else {
                    "m2"
                }
                .into(),
            );
            EventKind::MessageComplete { message }
        }),
        prop_oneof![Just(RunStatus::InProgress), Just(RunStatus::Completed)].prop_map(|status| {
            EventKind::RunStatus {
                status,
                error: None,
                usage: None,
            }
        }),
        Just(EventKind::Heartbeat {}),
    ];
    (0u64..20, kind).prop_map(|(seq, kind)| Event::new(seq, kind))
}

// ---- Strictness: each malformed stream gives the error that names its fault. ----

fn event(seq: u64, kind: EventKind) -> Event {
    Event::new(seq, kind)
}

fn start(seq: u64, message_id: &str) -> Event {
    event(
        seq,
        EventKind::MessageStart {
            message_id: message_id.into(),
            role: agentwire_core::Role::Assistant,
            metadata: Default::default(),
            created_at: None,
        },
    )
}

fn part_start(seq: u64, index: u32, part: StreamedPart) -> Event {
    event(
        seq,
        EventKind::PartStart {
            message_id: "m".into(),
            index,
            part,
        },
    )
}

fn delta(seq: u64, index: u32, delta: &str) -> Event {
    event(
        seq,
        EventKind::PartDelta {
            message_id: "m".into(),
            index,
            delta: delta.into(),
        },
    )
}

fn complete(seq: u64, index: u32, part: Part) -> Event {
    event(
        seq,
        EventKind::PartComplete {
            message_id: "m".into(),
            index,
            part,
        },
    )
}

fn call() -> StreamedPart {
    StreamedPart::ToolCall {
        tool_call_id: "c".into(),
        tool_name: "t".into(),
    }
}

#[track_caller]
fn check(events: &[Event], expect: AccumulateError) {
    let (last, before) = events.split_last().expect("events");
    let mut accumulator = accumulate(before).expect("the stream before the last event is valid");
    assert_eq!(accumulator.push(last), Err(expect));
}

#[test]
fn malformed_streams_name_their_fault() {
    let m = || agentwire_core::MessageId::from("m");
    check(
        &[start(1, "m"), start(2, "m")],
        AccumulateError::DuplicateMessage { message_id: m() },
    );
    check(
        &[start(2, "m"), start(2, "n")],
        AccumulateError::SeqNotIncreasing { seq: 2, last: 2 },
    );
    check(
        &[delta(1, 0, "x")],
        AccumulateError::UnknownMessage { message_id: m() },
    );
    check(
        &[start(1, "m"), delta(2, 0, "x")],
        AccumulateError::DeltaWithoutStart {
            message_id: m(),
            index: 0,
        },
    );
    check(
        &[start(1, "m"), part_start(2, 1, StreamedPart::Text)],
        AccumulateError::PartOutOfOrder {
            message_id: m(),
            index: 1,
            expected: 0,
        },
    );
    check(
        &[
            start(1, "m"),
            part_start(2, 0, StreamedPart::Text),
            delta(3, 0, "a"),
            complete(4, 0, Part::text("a")),
            delta(5, 0, "b"),
        ],
        AccumulateError::DeltaAfterComplete {
            message_id: m(),
            index: 0,
        },
    );
    check(
        &[
            start(1, "m"),
            part_start(2, 0, StreamedPart::Text),
            delta(3, 0, "a"),
            complete(4, 0, Part::text("ab")),
        ],
        AccumulateError::CompletionMismatch {
            message_id: m(),
            index: 0,
            mismatch: Mismatch::Text,
        },
    );
    check(
        &[
            start(1, "m"),
            part_start(2, 0, StreamedPart::Text),
            complete(3, 0, Part::reasoning("")),
        ],
        AccumulateError::CompletionMismatch {
            message_id: m(),
            index: 0,
            mismatch: Mismatch::PartType {
                expected: "text",
                found: "reasoning",
            },
        },
    );
    check(
        &[
            start(1, "m"),
            part_start(2, 0, call()),
            delta(3, 0, "{\"a\":1}"),
            complete(4, 0, Part::tool_call("c", "t", json!({"a": 2}))),
        ],
        AccumulateError::CompletionMismatch {
            message_id: m(),
            index: 0,
            mismatch: Mismatch::Args,
        },
    );
    check(
        &[
            start(1, "m"),
            part_start(2, 0, call()),
            complete(3, 0, Part::tool_call("other", "t", json!({}))),
        ],
        AccumulateError::CompletionMismatch {
            message_id: m(),
            index: 0,
            mismatch: Mismatch::ToolCall,
        },
    );
    check(
        &[
            start(1, "m"),
            complete(2, 0, Part::text("a")),
            complete(3, 0, Part::text("a")),
        ],
        AccumulateError::PartAlreadyComplete {
            message_id: m(),
            index: 0,
        },
    );
    let finished = Message::assistant("a").with_id("m");
    check(
        &[
            start(1, "m"),
            part_start(2, 0, StreamedPart::Text),
            event(
                3,
                EventKind::MessageComplete {
                    message: finished.clone(),
                },
            ),
        ],
        AccumulateError::PartStillStreaming {
            message_id: m(),
            index: 0,
        },
    );
    check(
        &[
            start(1, "m"),
            complete(2, 0, Part::text("b")),
            event(
                3,
                EventKind::MessageComplete {
                    message: finished.clone(),
                },
            ),
        ],
        AccumulateError::MessageMismatch {
            message_id: m(),
            mismatch: Mismatch::Part { index: 0 },
        },
    );
    check(
        &[
            start(1, "m"),
            event(
                2,
                EventKind::MessageComplete {
                    message: finished.clone(),
                },
            ),
        ],
        AccumulateError::MessageMismatch {
            message_id: m(),
            mismatch: Mismatch::PartCount {
                expected: 0,
                found: 1,
            },
        },
    );
    check(
        &[
            start(1, "m"),
            complete(2, 0, Part::text("a")),
            event(
                3,
                EventKind::MessageComplete {
                    message: finished.clone(),
                },
            ),
            delta(4, 1, "x"),
        ],
        AccumulateError::MessageAlreadyComplete { message_id: m() },
    );
    check(
        &[event(
            1,
            EventKind::MessageComplete {
                message: Message::assistant("a"),
            },
        )],
        AccumulateError::MessageWithoutId,
    );
    check(
        &[
            event(
                1,
                EventKind::RunStatus {
                    status: RunStatus::Completed,
                    error: None,
                    usage: None,
                },
            ),
            start(2, "m"),
        ],
        AccumulateError::AfterRunEnded {
            seq: 2,
            event: "message_start",
            status: "completed",
        },
    );
}

#[test]
fn errors_read_as_sentences() {
    let err = AccumulateError::CompletionMismatch {
        message_id: "m".into(),
        index: 2,
        mismatch: Mismatch::Args,
    };
    assert_eq!(
        err.to_string(),
        "completion of part 2 of message m disagrees with its deltas: its arguments differ from the streamed argument text"
    );
}

#[test]
fn a_streaming_tool_call_shows_its_arguments_so_far() {
    let mut accumulator = Accumulator::default();
    let view = |accumulator: &Accumulator| match &accumulator.messages()[0].parts[0] {
        Part::ToolCall(call) => call.args.0.clone(),
        other => panic!("a tool call, not {other:?}"),
    };
    for event in [start(1, "m"), part_start(2, 0, call())] {
        accumulator.push(&event).expect("valid");
    }
    assert_eq!(view(&accumulator), json!(null));
    let mut seq = 3;
    for (piece, shown) in [
        ("{\"path\": \"a.t", json!({"path": "a.t"})),
        (
            "xt\", \"content\": \"Hel",
            json!({"path": "a.txt", "content": "Hel"}),
        ),
        (
            "lo\", \"n\": 4",
            json!({"path": "a.txt", "content": "Hello", "n": 4}),
        ),
        ("2}", json!({"path": "a.txt", "content": "Hello", "n": 42})),
    ] {
        accumulator.push(&delta(seq, 0, piece)).expect("valid");
        seq += 1;
        assert_eq!(view(&accumulator), shown);
        assert_eq!(accumulator.part_status("m", 0), Some(PartStatus::Streaming));
    }
    assert_eq!(
        accumulator.raw_args("m", 0),
        Some("{\"path\": \"a.txt\", \"content\": \"Hello\", \"n\": 42}")
    );
    let whole = Part::tool_call(
        "c",
        "t",
        json!({"path": "a.txt", "content": "Hello", "n": 42}),
    );
    accumulator.push(&complete(seq, 0, whole)).expect("agrees");
    assert_eq!(accumulator.part_status("m", 0), Some(PartStatus::Complete));
}

#[test]
fn invalid_argument_text_completes_as_the_text() {
    let raw = "{\"path\": oops";
    let events = [
        start(1, "m"),
        part_start(2, 0, call()),
        delta(3, 0, raw),
        complete(4, 0, Part::tool_call("c", "t", json!(raw))),
    ];
    let accumulator = accumulate(&events).expect("a model's bad JSON is not a broken stream");
    assert_eq!(
        accumulator.messages()[0].parts[0],
        Part::tool_call("c", "t", json!(raw))
    );
}

#[test]
fn run_status_and_usage_are_tracked() {
    let events = [
        event(
            1,
            EventKind::RunCreated {
                run_id: "r".into(),
                session_id: None,
                agent: None,
                parent_run_id: None,
                parent_tool_call_id: None,
            },
        ),
        event(
            2,
            EventKind::RunStatus {
                status: RunStatus::InProgress,
                error: None,
                usage: None,
            },
        ),
        Event::heartbeat(2),
        event(
            3,
            EventKind::Error(agentwire_core::ErrorInfo::new("provider_error", "503")),
        ),
        event(
            4,
            EventKind::RunStatus {
                status: RunStatus::Failed,
                error: Some(agentwire_core::ErrorInfo::new("provider_error", "gave up")),
                usage: Some(agentwire_core::Usage::new(1, 2)),
            },
        ),
        Event::heartbeat(4),
    ];
    let accumulator = accumulate(&events).expect("valid");
    assert_eq!(accumulator.run_id().map(|id| id.as_str()), Some("r"));
    assert_eq!(accumulator.status(), Some(RunStatus::Failed));
    assert_eq!(accumulator.usage(), Some(agentwire_core::Usage::new(1, 2)));
    assert_eq!(accumulator.errors().len(), 2);
    assert_eq!(accumulator.last_seq(), Some(4));
}
