//! Sub-agents' runs nested in a run's stream, and the session's shared state: each nested run
//! accumulates to its own messages however its events interleave with its parent's and its
//! siblings'; a nested event of a run that was not created, or a patch that does not apply, is
//! a typed error that changes nothing.

use agentwire_core::{
    AccumulateError, Accumulator, Event, EventKind, Message, Namespace, RunId, RunStatus,
    ToolCallId,
};
use agentwire_testkit::strategy;
use agentwire_testkit::stream::{Choices, events_for};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::json;

fn created(run_id: &str, parent: Option<(&str, &str)>) -> EventKind {
    EventKind::RunCreated {
        run_id: run_id.into(),
        session_id: None,
        agent: Some(format!("agent of {run_id}")),
        parent_run_id: parent.map(|(run, _)| run.into()),
        parent_tool_call_id: parent.map(|(_, call)| call.into()),
    }
}

fn status(status: RunStatus) -> EventKind {
    EventKind::RunStatus {
        status,
        error: None,
        usage: None,
    }
}

/// A run's own stream: created, in progress, `message`'s events, completed.
fn run_stream(
    run_id: &str,
    parent: Option<(&str, &str)>,
    message: &Message,
    choices: &mut Choices,
) -> Vec<EventKind> {
    let mut kinds = vec![created(run_id, parent), status(RunStatus::InProgress)];
    kinds.extend(
        events_for(message, choices)
            .into_iter()
            .map(|event| event.kind),
    );
    kinds.push(status(RunStatus::Completed));
    kinds
}

fn under(path: &[&str]) -> Namespace {
    Namespace::new(path.iter().map(|id| RunId::from(*id)))
}

fn numbered(kinds: impl IntoIterator<Item = (Namespace, EventKind)>) -> Vec<Event> {
    kinds
        .into_iter()
        .zip(1..)
        .map(|((namespace, kind), seq)| Event {
            seq,
            namespace,
            kind,
        })
        .collect()
}

fn accumulate(events: &[Event]) -> Result<Accumulator, AccumulateError> {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator.push(event)?;
    }
    Ok(accumulator)
}

/// `message` with the id `id`, so that runs of a tree may reuse a message id without clashing.
fn with_id(mut message: Message, id: &str) -> Message {
    message.id = Some(id.into());
    message
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A parent, two children in parallel and a grandchild under the first, interleaved at
    /// random: each run holds exactly its own message, whatever the interleaving, and the
    /// events survive their JSON.
    #[test]
    fn every_run_of_a_tree_accumulates_to_its_own_messages(
        parent in strategy::message(),
        first in strategy::message(),
        second in strategy::message(),
        grandchild in strategy::message(),
        mut choices in any::<Choices>(),
        interleaving in vec(any::<Index>(), 0..400),
    ) {
        // Every run's message shares one id: nesting, not ids, keeps them apart.
        let [parent, first, second, grandchild] =
            [parent, first, second, grandchild].map(|message| with_id(message, "msg_1"));
        let mut streams: Vec<(Namespace, std::collections::VecDeque<EventKind>)> = vec![
            (under(&[]), run_stream("run_a", None, &parent, &mut choices).into()),
            (under(&["run_b"]), run_stream("run_b", Some(("run_a", "call_1")), &first, &mut choices).into()),
            (under(&["run_c"]), run_stream("run_c", Some(("run_a", "call_2")), &second, &mut choices).into()),
        ];
        let mut grand: std::collections::VecDeque<EventKind> =
            run_stream("run_d", Some(("run_b", "call_9")), &grandchild, &mut choices).into();
        // The parent ends last and the grandchild lives within its parent's run: hold the
        // terminal statuses back until the runs inside have ended.
        let parent_end = streams[0].1.pop_back().expect("the parent's end");
        let first_end = streams[1].1.pop_back().expect("the first child's end");
        let mut interleaved = Vec::new();
        let mut picks = interleaving.into_iter().cycle();
        let mut first_started = false;
        loop {
            let mut live: Vec<usize> = (0..streams.len()).filter(|&i| !streams[i].1.is_empty()).collect();
            if !grand.is_empty() && first_started {
                live.push(streams.len());
            }
            if live.is_empty() {
                break;
            }
            let pick = picks.next().map_or(0, |index| index.index(live.len()));
            let chosen = live[pick];
            if chosen == streams.len() {
                let kind = grand.pop_front().expect("live");
                interleaved.push((under(&["run_b", "run_d"]), kind));
            } else {
                first_started |= chosen == 1;
                let (namespace, queue) = &mut streams[chosen];
                let kind = queue.pop_front().expect("live");
                interleaved.push((namespace.clone(), kind));
            }
        }
        interleaved.push((under(&["run_b"]), first_end));
        interleaved.push((under(&[]), parent_end));
        let events = numbered(interleaved);

        let accumulator = accumulate(&events).map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(accumulator.messages(), std::slice::from_ref(&parent));
        prop_assert_eq!(accumulator.status(), Some(RunStatus::Completed));
        let children: Vec<&Accumulator> = accumulator.children().collect();
        prop_assert_eq!(children.len(), 2);
        let b = accumulator.descendant(&[RunId::from("run_b")]).expect("run_b");
        prop_assert_eq!(b.messages(), std::slice::from_ref(&first));
        prop_assert_eq!(b.parent_tool_call_id(), Some(&ToolCallId::from("call_1")));
        prop_assert_eq!(b.agent(), Some("agent of run_b"));
        let c = accumulator.descendant(&[RunId::from("run_c")]).expect("run_c");
        prop_assert_eq!(c.messages(), std::slice::from_ref(&second));
        let d = accumulator
            .descendant(&[RunId::from("run_b"), RunId::from("run_d")])
            .expect("run_d");
        prop_assert_eq!(d.messages(), std::slice::from_ref(&grandchild));
        prop_assert_eq!(d.status(), Some(RunStatus::Completed));

        let decoded: Vec<Event> = events
            .iter()
            .map(|event| serde_json::from_str(&serde_json::to_string(event).expect("serializes")).expect("parses"))
            .collect();
        prop_assert_eq!(&decoded, &events);
    }
}

#[test]
fn a_nested_event_of_a_run_never_created_is_refused_and_changes_nothing() {
    let mut accumulator = Accumulator::default();
    for event in numbered([
        (under(&[]), created("run_a", None)),
        (
            under(&["run_b"]),
            created("run_b", Some(("run_a", "call_1"))),
        ),
    ]) {
        accumulator.push(&event).expect("accepted");
    }
    let stray = Event {
        seq: 3,
        namespace: under(&["run_x"]),
        kind: status(RunStatus::InProgress),
    };
    assert_eq!(
        accumulator.push(&stray),
        Err(AccumulateError::UnknownRun {
            run_id: "run_x".into()
        })
    );
    let grandchild_of_nobody = Event {
        seq: 3,
        namespace: under(&["run_x", "run_y"]),
        kind: created("run_y", None),
    };
    assert_eq!(
        accumulator.push(&grandchild_of_nobody),
        Err(AccumulateError::UnknownRun {
            run_id: "run_x".into()
        })
    );
    // A `run_created` must create the run its namespace names.
    let misnamed = Event {
        seq: 3,
        namespace: under(&["run_z"]),
        kind: created("run_b", None),
    };
    assert!(accumulator.push(&misnamed).is_err());
    assert_eq!(accumulator.last_seq(), Some(2));
    assert_eq!(accumulator.children().len(), 1);
}

#[test]
fn a_nested_run_that_ended_takes_no_more_events_and_its_parent_goes_on() {
    let events = numbered([
        (under(&[]), created("run_a", None)),
        (
            under(&["run_b"]),
            created("run_b", Some(("run_a", "call_1"))),
        ),
        (under(&["run_b"]), status(RunStatus::Failed)),
    ]);
    let mut accumulator = accumulate(&events).expect("accepted");
    let late = Event {
        seq: 4,
        namespace: under(&["run_b"]),
        kind: status(RunStatus::InProgress),
    };
    assert!(matches!(
        accumulator.push(&late),
        Err(AccumulateError::AfterRunEnded { .. })
    ));
    let parent_goes_on = Event::new(4, status(RunStatus::InProgress));
    accumulator
        .push(&parent_goes_on)
        .expect("the parent is not over");
}

#[test]
fn the_shared_state_is_one_for_the_tree_and_a_bad_patch_changes_nothing() {
    let patch = |ops: serde_json::Value| EventKind::StateDelta {
        patch: serde_json::from_value(ops).expect("a patch"),
    };
    let events = numbered([
        (under(&[]), created("run_a", None)),
        (
            under(&[]),
            EventKind::StateSnapshot {
                state: json!({"plan": []}),
            },
        ),
        (
            under(&["run_b"]),
            created("run_b", Some(("run_a", "call_1"))),
        ),
        // A child's change is the session's.
        (
            under(&["run_b"]),
            patch(json!([{"op": "add", "path": "/plan/-", "value": "read"}])),
        ),
        (
            under(&[]),
            patch(json!([{"op": "add", "path": "/title", "value": "Trip"}])),
        ),
    ]);
    let mut accumulator = accumulate(&events).expect("accepted");
    assert_eq!(
        accumulator.state(),
        &json!({"plan": ["read"], "title": "Trip"})
    );

    // The first operation applies, the second does not: neither is kept.
    let bad = Event::new(
        6,
        patch(json!([
            {"op": "replace", "path": "/title", "value": "Other"},
            {"op": "remove", "path": "/missing"},
        ])),
    );
    assert!(matches!(
        accumulator.push(&bad),
        Err(AccumulateError::BadPatch { seq: 6, .. })
    ));
    assert_eq!(
        accumulator.state(),
        &json!({"plan": ["read"], "title": "Trip"})
    );
    assert_eq!(accumulator.last_seq(), Some(5));
}

#[test]
fn nested_events_and_state_are_written_as_the_protocol_says() {
    let mut delta = Event::new(
        41,
        EventKind::PartDelta {
            message_id: "msg_9".into(),
            index: 0,
            delta: "Fou".into(),
        },
    );
    delta.namespace = under(&["run_b"]);
    let mut fast = Vec::new();
    delta.write_json(&mut fast);
    let expected = r#"{"seq":41,"namespace":["run_b"],"event":"part_delta","message_id":"msg_9","index":0,"delta":"Fou"}"#;
    assert_eq!(String::from_utf8(fast).expect("utf-8"), expected);
    assert_eq!(serde_json::to_string(&delta).expect("serializes"), expected);

    let state = Event::new(
        2,
        EventKind::StateDelta {
            patch: serde_json::from_value(
                json!([{"op": "add", "path": "/plan/0", "value": "Read"}]),
            )
            .expect("a patch"),
        },
    );
    assert_eq!(
        serde_json::to_value(&state).expect("serializes"),
        json!({"seq": 2, "event": "state_delta", "patch": [{"op": "add", "path": "/plan/0", "value": "Read"}]})
    );
    let child = Event::new(3, created("run_b", Some(("run_a", "call_1"))));
    assert_eq!(
        serde_json::to_value(&child).expect("serializes"),
        json!({"seq": 3, "event": "run_created", "run_id": "run_b", "agent": "agent of run_b",
               "parent_run_id": "run_a", "parent_tool_call_id": "call_1"})
    );
}
