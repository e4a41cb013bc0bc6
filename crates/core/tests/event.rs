//! The event protocol's JSON: one example per event kind parses to the expected event and
//! serializes back to the same JSON; malformed events are errors that say what is wrong.

use agentwire_core::event::{Awaiting, ErrorInfo, Event, EventKind, RunStatus, StreamedPart};
use agentwire_core::{Message, Metadata, Part, Role, Timestamp, Usage};
use serde_json::{Value, json};

#[track_caller]
fn check(json: Value, seq: u64, kind: EventKind) {
    let event = Event::new(seq, kind);
    let parsed: Event = serde_json::from_value(json.clone()).expect("the example parses");
    assert_eq!(parsed, event);
    assert_eq!(serde_json::to_value(&event).expect("serializes"), json);
    let mut written = Vec::new();
    event.write_json(&mut written);
    assert_eq!(written, serde_json::to_vec(&event).expect("serializes"));
    assert_eq!(json["event"], event.name());
    assert!(Event::NAMES.contains(&event.name()));
}

#[test]
fn run_events() {
    check(
        json!({"seq": 1, "event": "run_created", "run_id": "run_1", "session_id": "ses_1", "agent": "assistant"}),
        1,
        EventKind::RunCreated {
            run_id: "run_1".into(),
            session_id: Some("ses_1".into()),
            agent: Some("assistant".into()),
            parent_run_id: None,
            parent_tool_call_id: None,
        },
    );
    check(
        json!({"seq": 2, "event": "run_status", "status": "in_progress"}),
        2,
        EventKind::RunStatus {
            status: RunStatus::InProgress,
            error: None,
            usage: None,
        },
    );
    for (awaiting, name) in [
        (Awaiting::Approval, "approval"),
        (Awaiting::FunctionOutput, "function_output"),
        (Awaiting::Input, "input"),
    ] {
        check(
            json!({"seq": 3, "event": "run_status", "status": "awaiting", "awaiting": name}),
            3,
            EventKind::RunStatus {
                status: RunStatus::Awaiting(awaiting),
                error: None,
                usage: None,
            },
        );
    }
    check(
        json!({"seq": 9, "event": "run_status", "status": "incomplete",
               "error": {"code": "max_steps", "message": "stopped after 8 steps"},
               "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}),
        9,
        EventKind::RunStatus {
            status: RunStatus::Incomplete,
            error: Some(ErrorInfo::new("max_steps", "stopped after 8 steps")),
            usage: Some(Usage::new(10, 5)),
        },
    );
    for (status, name) in [
        (RunStatus::Created, "created"),
        (RunStatus::Queued, "queued"),
        (RunStatus::Completed, "completed"),
        (RunStatus::Failed, "failed"),
        (RunStatus::Canceled, "canceled"),
        (RunStatus::Rejected, "rejected"),
    ] {
        check(
            json!({"seq": 4, "event": "run_status", "status": name}),
            4,
            EventKind::RunStatus {
                status,
                error: None,
                usage: None,
            },
        );
        assert_eq!(status.name(), name);
    }
}

#[test]
fn message_events() {
    check(
        json!({"seq": 3, "event": "message_start", "message_id": "msg_1", "role": "assistant",
               "metadata": {"agent_name": "assistant"}, "created_at": 1767225600000i64}),
        3,
        EventKind::MessageStart {
            message_id: "msg_1".into(),
            role: Role::Assistant,
            metadata: Metadata {
                agent_name: Some("assistant".into()),
                ..Metadata::default()
            },
            created_at: Some(Timestamp(1_767_225_600_000)),
        },
    );
    check(
        json!({"seq": 4, "event": "part_start", "message_id": "msg_1", "index": 0, "type": "text"}),
        4,
        EventKind::PartStart {
            message_id: "msg_1".into(),
            index: 0,
            part: StreamedPart::Text,
        },
    );
    check(
        json!({"seq": 5, "event": "part_start", "message_id": "msg_1", "index": 1, "type": "tool_call",
               "tool_call_id": "tc_1", "tool_name": "write_file"}),
        5,
        EventKind::PartStart {
            message_id: "msg_1".into(),
            index: 1,
            part: StreamedPart::ToolCall {
                tool_call_id: "tc_1".into(),
                tool_name: "write_file".into(),
            },
        },
    );
    check(
        json!({"seq": 6, "event": "part_delta", "message_id": "msg_1", "index": 1, "delta": "{\"path\":"}),
        6,
        EventKind::PartDelta {
            message_id: "msg_1".into(),
            index: 1,
            delta: "{\"path\":".into(),
        },
    );
    check(
        json!({"seq": 7, "event": "part_complete", "message_id": "msg_1", "index": 0,
               "part": {"type": "text", "text": "Hi"}}),
        7,
        EventKind::PartComplete {
            message_id: "msg_1".into(),
            index: 0,
            part: Part::text("Hi"),
        },
    );
    check(
        json!({"seq": 8, "event": "message_complete",
               "message": {"id": "msg_1", "role": "assistant", "parts": [{"type": "text", "text": "Hi"}]}}),
        8,
        EventKind::MessageComplete {
            message: Message::assistant("Hi").with_id("msg_1"),
        },
    );
}

#[test]
fn liveness_and_errors() {
    check(
        json!({"seq": 8, "event": "heartbeat"}),
        8,
        EventKind::Heartbeat {},
    );
    check(
        json!({"seq": 9, "event": "error", "code": "provider_error", "message": "upstream returned 500"}),
        9,
        EventKind::Error(ErrorInfo::new("provider_error", "upstream returned 500")),
    );
    assert_eq!(Event::heartbeat(7), Event::new(7, EventKind::Heartbeat {}));
}

#[track_caller]
fn check_rejected(json: Value, says: &str) {
    let err = serde_json::from_value::<Event>(json).expect_err("malformed");
    assert!(
        err.to_string().contains(says),
        "{err} should mention {says}"
    );
}

#[test]
fn malformed_events_are_errors() {
    check_rejected(
        json!({"seq": 1, "event": "run_status", "status": "awaiting"}),
        "awaiting",
    );
    check_rejected(
        json!({"seq": 1, "event": "run_status", "status": "completed", "awaiting": "input"}),
        "awaiting",
    );
    check_rejected(
        json!({"seq": 1, "event": "part_start", "message_id": "m", "index": 0, "type": "file"}),
        "file",
    );
    check_rejected(
        json!({"seq": 1, "event": "part_delta", "message_id": "m", "index": 0}),
        "delta",
    );
    check_rejected(json!({"event": "heartbeat"}), "seq");
}

proptest::proptest! {
    /// The hand-written JSON of a delta is byte for byte what serde writes, whatever its text.
    #[test]
    fn a_delta_is_written_as_serde_writes_it(
        seq: u64,
        index: u32,
        message_id in "\\PC{0,12}",
        delta in "(\\PC|[\"\\\\\n\t\u{0}\u{1f}\u{7f}])*",
    ) {
        let event = Event::new(seq, EventKind::PartDelta { message_id: message_id.into(), index, delta });
        let mut written = Vec::new();
        event.write_json(&mut written);
        proptest::prop_assert_eq!(written, serde_json::to_vec(&event).expect("serializes"));
    }
}
