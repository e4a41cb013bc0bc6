//! The compact form against generated runs, and its edges.
#![allow(clippy::unwrap_used)]

use agentwire_core::{Accumulator, Part};
use agentwire_testkit::run::ended_run;
use proptest::prelude::*;

use super::*;

/// The messages a client has after applying `events`.
fn accumulate<'e>(events: impl IntoIterator<Item = &'e Event>) -> Vec<Message> {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator.push(event).unwrap();
    }
    accumulator.into_messages()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The compact form gives back every event as it was, so a client resuming after any
    /// seq gets, without gap or repeat, exactly what the original log would have sent.
    #[test]
    fn a_folded_log_replays_as_the_original_from_every_seq(events in ended_run()) {
        // The session's history holds the first message the run completes.
        let first = events.iter().find_map(|event| match &event.kind {
            EventKind::MessageComplete { message } => Some(message.clone()),
            _ => None,
        });
        let history: HashMap<u64, Message> = first.clone().map(|m| (7, m)).into_iter().collect();
        let held = |message: &Message| (Some(message) == first.as_ref()).then_some(7);
        let folded = CompactLog::fold(&events, held).expect("a builder's log folds");
        let stored: CompactLog =
            serde_json::from_str(&serde_json::to_string(&folded).unwrap()).unwrap();
        prop_assert_eq!(stored.held.len(), usize::from(first.is_some()));
        let replay = stored.expand(&history).unwrap();
        prop_assert_eq!(&replay, &events);
        let messages = accumulate(&events);
        let last = events.last().map_or(0, |event| event.seq);
        for after in 0..=last {
            let seen = events.iter().filter(|event| event.seq <= after);
            let resumed: Vec<&Event> = replay.iter().filter(|e| e.seq > after).collect();
            // The strict accumulator refuses a seq that does not grow and anything that
            // does not fit what the client had.
            let mut client = seen.chain(resumed.iter().copied());
            prop_assert_eq!(&accumulate(&mut client), &messages);
            if let Some(first) = resumed.first() {
                prop_assert_eq!(first.seq, after + 1, "gapless");
            }
        }
    }
}

fn event(seq: u64, kind: EventKind) -> Event {
    Event::new(seq, kind)
}

#[test]
fn text_is_kept_only_where_no_completion_holds_it() {
    let message_id = MessageId::from("msg_1");
    let start = |seq, index| {
        event(
            seq,
            EventKind::PartStart {
                message_id: message_id.clone(),
                index,
                part: agentwire_core::StreamedPart::Text,
            },
        )
    };
    let delta = |seq, index, text: &str| {
        event(
            seq,
            EventKind::PartDelta {
                message_id: message_id.clone(),
                index,
                delta: text.into(),
            },
        )
    };
    let events = vec![
        event(
            1,
            EventKind::MessageStart {
                message_id: message_id.clone(),
                role: agentwire_core::Role::Assistant,
                metadata: Default::default(),
                created_at: None,
            },
        ),
        start(2, 0),
        delta(3, 0, "Hel"),
        delta(4, 0, "lo"),
        event(
            5,
            EventKind::PartComplete {
                message_id: message_id.clone(),
                index: 0,
                part: Part::text("Hello"),
            },
        ),
        start(6, 1),
        delta(7, 1, "cut o"),
        delta(8, 1, "ff"),
    ];
    let folded = CompactLog::fold(&events, |_| None).unwrap();
    assert_eq!(
        folded.events.len(),
        4,
        "message_start, part_starts, part_complete"
    );
    assert_eq!(folded.deltas[0].text, DeltaText::Final);
    assert_eq!(folded.deltas[0].seqs, [[3, 2]]);
    assert_eq!(folded.deltas[0].lens.0, [3, 2]);
    // No message_complete: the part_complete is kept; the cut part keeps its text.
    assert_eq!(folded.deltas[1].text, DeltaText::Kept("cut off".into()));
    assert_eq!(folded.expand(&HashMap::new()).unwrap(), events);
}

#[test]
fn a_damaged_form_is_an_error_not_a_panic() {
    let text = r#"{"events":[{"seq":1,"event":"part_start","message_id":"m","index":0,"type":"text"}],
                   "deltas":[{"start":1,"seqs":[[2,2]],"lens":"3\u0039","text":{"kept":"abcd"}}]}"#;
    let form: CompactLog = serde_json::from_str(text).unwrap();
    assert!(matches!(
        form.expand(&HashMap::new()),
        Err(StoreError::Corrupt(_))
    ));
    // A message the history should hold and does not.
    let text = r#"{"events":[],"held":[[1,0]]}"#;
    let form: CompactLog = serde_json::from_str(text).unwrap();
    assert!(matches!(
        form.expand(&HashMap::new()),
        Err(StoreError::Corrupt(_))
    ));
}
