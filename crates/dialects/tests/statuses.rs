//! The statuses real runs take besides working and ending (`queued`, `rejected`, `awaiting
//! input`, AgentScope's `unknown`) in every dialect: what each writes, and what each reads
//! back (exactly, or what it puts in place of what it cannot say).

mod common;

use agentwire_core::{Awaiting, ErrorInfo, Event, EventKind, Message, Part, Role, RunStatus};
use agentwire_dialects::Dialect;
use agentwire_dialects::agentscope::AgentScopeDecoder;
use common::{decode_whole, encode};
use serde_json::json;

fn numbered(kinds: Vec<EventKind>) -> Vec<Event> {
    kinds
        .into_iter()
        .zip(1..)
        .map(|(kind, seq)| Event::new(seq, kind))
        .collect()
}

fn status(status: RunStatus, error: Option<ErrorInfo>) -> EventKind {
    EventKind::RunStatus {
        status,
        error,
        usage: None,
    }
}

fn created() -> EventKind {
    EventKind::RunCreated {
        run_id: "run_1".into(),
        session_id: Some("ses_1".into()),
        agent: Some("assistant".into()),
        parent_run_id: None,
        parent_tool_call_id: None,
    }
}

/// A run that waited in line, then asked the user a question.
fn asked() -> Vec<Event> {
    let message = Message::new(
        Role::Assistant,
        vec![
            Part::text("One question first."),
            Part::tool_call("call_1", "ask_user", json!({"question": "Which city?"})),
        ],
    )
    .with_id("msg_1");
    numbered(vec![
        created(),
        status(RunStatus::Queued, None),
        status(RunStatus::InProgress, None),
        EventKind::MessageComplete { message },
        status(RunStatus::Awaiting(Awaiting::Input), None),
    ])
}

/// A run turned away because the line for slots was full.
fn rejected() -> Vec<Event> {
    let error = ErrorInfo::new("queue_full", "the server is busy");
    numbered(vec![created(), status(RunStatus::Rejected, Some(error))])
}

fn statuses(events: &[Event]) -> Vec<RunStatus> {
    events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::RunStatus { status, .. } => Some(*status),
            _ => None,
        })
        .collect()
}

/// What each dialect writes for the two runs (a piece of its wire), and the last status each
/// reads back.
#[test]
fn every_dialect_says_queued_rejected_and_awaiting_input_as_it_can() {
    let input = RunStatus::Awaiting(Awaiting::Input);
    // (dialect, a piece of the asked run's wire, its status read back, a piece of the rejected
    // run's wire, its status read back)
    let cases: &[(Dialect, &str, RunStatus, &str, RunStatus)] = &[
        (
            Dialect::Native,
            "\"status\":\"queued\"",
            input,
            "\"queue_full\"",
            RunStatus::Rejected,
        ),
        (
            Dialect::NativeNdjson,
            "\"awaiting\":\"input\"",
            input,
            "\"rejected\"",
            RunStatus::Rejected,
        ),
        (
            Dialect::Agentx,
            "\"awaiting\":\"input\"",
            input,
            "\"rejected\"",
            RunStatus::Rejected,
        ),
        // The UI message stream has no waiting: the answer finishes, the question is its call.
        (
            Dialect::AiSdk,
            "\"finishReason\":\"stop\"",
            RunStatus::Completed,
            "\"type\":\"error\"",
            RunStatus::Failed,
        ),
        (
            Dialect::AgentScope,
            "\"status\":\"queued\"",
            input,
            "\"status\":\"rejected\"",
            RunStatus::Rejected,
        ),
        (
            Dialect::AgUi,
            "\"reason\":\"input_required\"",
            input,
            "\"code\":\"queue_full\"",
            RunStatus::Failed,
        ),
        (
            Dialect::A2a,
            "TASK_STATE_INPUT_REQUIRED",
            input,
            "TASK_STATE_REJECTED",
            RunStatus::Rejected,
        ),
        (
            Dialect::Viber,
            "\"awaiting\":\"input\"",
            input,
            "\"runStatus\":\"rejected\"",
            RunStatus::Rejected,
        ),
    ];
    for (dialect, asked_wire, asked_status, rejected_wire, rejected_status) in cases {
        let name = dialect.name();
        for (events, piece, expected) in [
            (asked(), asked_wire, asked_status),
            (rejected(), rejected_wire, rejected_status),
        ] {
            let wire = encode(dialect.encoder().as_mut(), &events);
            let text = String::from_utf8(wire.clone()).expect("utf-8");
            assert!(text.contains(piece), "{name} writes {piece}: {text}");
            let decoded = decode_whole(dialect.decoder().as_mut(), &wire).expect("decodes");
            assert_eq!(
                statuses(&decoded).last(),
                Some(expected),
                "{name} reads back: {decoded:?}"
            );
        }
    }
}

#[test]
fn queued_reads_back_where_the_dialect_can_say_it() {
    for dialect in [
        Dialect::Native,
        Dialect::Agentx,
        Dialect::AgentScope,
        Dialect::Viber,
    ] {
        let wire = encode(dialect.encoder().as_mut(), &asked());
        let decoded = decode_whole(dialect.decoder().as_mut(), &wire).expect("decodes");
        assert!(
            statuses(&decoded).contains(&RunStatus::Queued),
            "{}: {:?}",
            dialect.name(),
            statuses(&decoded)
        );
    }
    let a2a = encode(Dialect::A2a.encoder().as_mut(), &asked());
    assert!(
        String::from_utf8(a2a)
            .expect("utf-8")
            .contains("TASK_STATE_SUBMITTED")
    );
}

#[test]
fn agentscope_unknown_is_read_and_skipped() {
    let wire = concat!(
        "data: {\"sequence_number\":0,\"object\":\"response\",\"status\":\"created\",\"id\":\"response_1\"}\n\n",
        "data: {\"sequence_number\":1,\"object\":\"response\",\"status\":\"unknown\",\"id\":\"response_1\"}\n\n",
        "data: {\"sequence_number\":2,\"object\":\"response\",\"status\":\"queued\",\"id\":\"response_1\"}\n\n",
        "data: {\"sequence_number\":3,\"object\":\"response\",\"status\":\"rejected\",\"id\":\"response_1\",\"error\":{\"code\":\"queue_full\",\"message\":\"busy\"}}\n\n",
    );
    let events = decode_whole(&mut AgentScopeDecoder::default(), wire.as_bytes()).expect("decodes");
    assert_eq!(statuses(&events), [RunStatus::Queued, RunStatus::Rejected]);
}
