//! The session's shared state in every dialect that carries it: AG-UI (`STATE_SNAPSHOT`,
//! `STATE_DELTA`), the AI SDK (a `data-agentwire-state` part reconciled in place by its id,
//! and transient deltas), AgentX (native events beside the packets) and native; each decodes
//! back to a client copy equal to the run's. The dialects without a place for it send nothing.

mod common;

use agentwire_core::{
    Accumulator, Emitter, Event, EventKind, MessageBuilder, MessageStart, Part, Role, RunStatus,
    ToolResult,
};
use agentwire_dialects::Encoder;
use agentwire_dialects::StreamDecoder;
use agentwire_dialects::ag_ui::{AgUiDecoder, AgUiEncoder};
use agentwire_dialects::agentx::{AgentxDecoder, AgentxEncoder};
use agentwire_dialects::ai_sdk::{
    AiSdkDecoder, AiSdkEncoder, STATE_DATA, STATE_DELTA_DATA, STATE_PART_ID,
};
use agentwire_dialects::native::{NativeSseDecoder, NativeSseEncoder};
use common::{decode_whole, encode};
use serde_json::{Value, json};

fn patch(ops: Value) -> json_patch::Patch {
    serde_json::from_value(ops).expect("a patch")
}

/// A run that starts from `{"todo": []}` and adds a task with a streamed `update_state` call,
/// as the orchestrator emits it: the state's changes between the call's argument deltas.
fn run() -> Vec<Event> {
    let mut out = Emitter::default();
    out.emit(EventKind::RunCreated {
        run_id: "run_1".into(),
        session_id: Some("ses_1".into()),
        agent: Some("planner".into()),
        parent_run_id: None,
        parent_tool_call_id: None,
    });
    out.emit(EventKind::StateSnapshot {
        state: json!({"todo": []}),
    });
    out.emit(status(RunStatus::InProgress));
    let mut builder = MessageBuilder::start(&mut out, MessageStart::new("msg_1", Role::Assistant));
    builder
        .tool_call_start(&mut out, "c1", "update_state")
        .expect("starts");
    for (args, ops) in [
        (
            r#"{"ops": [{"op": "add", "path": "/todo/-", "value": {"#,
            json!([{"op": "add", "path": "/todo/0", "value": {}}]),
        ),
        (
            r#""title": "Docs"}}"#,
            json!([{"op": "add", "path": "/todo/0/title", "value": "Docs"}]),
        ),
        ("]}", Value::Null),
    ] {
        builder
            .tool_call_delta(&mut out, "c1", args)
            .expect("streams");
        if !ops.is_null() {
            out.emit(EventKind::StateDelta { patch: patch(ops) });
        }
    }
    builder.tool_call_end(&mut out, "c1").expect("ends");
    builder.part(
        &mut out,
        Part::ToolResult(ToolResult {
            tool_call_id: "c1".into(),
            tool_name: Some("update_state".into()),
            result: json!({"applied": 1}),
            is_error: None,
        }),
    );
    builder.text_delta(&mut out, "Added.");
    builder.finish(&mut out);
    out.emit(status(RunStatus::Completed));
    out.drain().collect()
}

fn status(status: RunStatus) -> EventKind {
    EventKind::RunStatus {
        status,
        error: None,
        usage: None,
    }
}

fn expect() -> Value {
    json!({"todo": [{"title": "Docs"}]})
}

/// The state a client holds after the decoded events.
fn state_of(events: &[Event]) -> Value {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator
            .push(event)
            .unwrap_or_else(|error| panic!("{event:?}: {error}"));
    }
    accumulator.state().clone()
}

/// The JSON of each `data:` frame.
fn frames(wire: &[u8]) -> Vec<Value> {
    String::from_utf8(wire.to_vec())
        .expect("utf-8")
        .split("\n\n")
        .filter_map(|frame| frame.lines().find_map(|line| line.strip_prefix("data: ")))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

fn round_trip(encoder: &mut dyn Encoder, decoder: &mut dyn StreamDecoder) -> (Vec<u8>, Value) {
    let wire = encode(encoder, &run());
    let events = decode_whole(decoder, &wire).expect("decodes");
    (wire, state_of(&events))
}

#[test]
fn the_runs_own_stream_builds_the_state() {
    assert_eq!(state_of(&run()), expect());
    let (_, state) = round_trip(&mut NativeSseEncoder, &mut NativeSseDecoder::default());
    assert_eq!(state, expect());
}

#[test]
fn ag_ui_sends_the_threads_state_as_state_events() {
    let (wire, state) = round_trip(&mut AgUiEncoder::default(), &mut AgUiDecoder::default());
    assert_eq!(state, expect());
    let frames = frames(&wire);
    assert_eq!(frames[0]["type"], "RUN_STARTED");
    let state: Vec<&Value> = frames
        .iter()
        .filter(|frame| {
            frame["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("STATE_"))
        })
        .collect();
    assert_eq!(
        state,
        [
            &json!({"type": "STATE_SNAPSHOT", "snapshot": {"todo": []}}),
            &json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/todo/0", "value": {}}]}),
            &json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/todo/0/title", "value": "Docs"}]}),
        ]
    );
}

#[test]
fn the_ai_sdk_state_part_is_reconciled_in_place_and_sent_whole_only_when_settled() {
    let (wire, state) = round_trip(&mut AiSdkEncoder::default(), &mut AiSdkDecoder::default());
    assert_eq!(state, expect());
    let frames = frames(&wire);
    let whole: Vec<&Value> = frames.iter().filter(|f| f["type"] == STATE_DATA).collect();
    // Once when the message starts, once after the call: not once per delta.
    assert_eq!(
        whole,
        [
            &json!({"type": STATE_DATA, "id": STATE_PART_ID, "data": {"todo": []}}),
            &json!({"type": STATE_DATA, "id": STATE_PART_ID, "data": expect()}),
        ]
    );
    let deltas = frames
        .iter()
        .filter(|f| f["type"] == STATE_DELTA_DATA && f["transient"] == true)
        .count();
    assert_eq!(deltas, 2);
    let start = frames
        .iter()
        .position(|f| f["type"] == "start")
        .expect("a start");
    let first = frames
        .iter()
        .position(|f| f["type"] == STATE_DATA)
        .expect("a state part");
    assert!(start < first, "a data part belongs to a message");

    // What `useChat` does with them (`processUIMessageStream`): a data part with the type and
    // id of one the message has replaces its data; a transient one is not kept.
    let mut parts: Vec<Value> = Vec::new();
    for frame in frames.iter().filter(|f| {
        f["type"].as_str().is_some_and(|t| t.starts_with("data-")) && f["transient"] != true
    }) {
        match parts
            .iter_mut()
            .find(|part| part["type"] == frame["type"] && part["id"] == frame["id"])
        {
            Some(part) => part["data"] = frame["data"].clone(),
            None => parts.push(frame.clone()),
        }
    }
    assert_eq!(parts.len(), 1, "one state part: {parts:?}");
    assert_eq!(parts[0]["data"], expect());
}

#[test]
fn agentx_sends_the_state_beside_its_packets() {
    let (wire, state) = round_trip(&mut AgentxEncoder::default(), &mut AgentxDecoder::default());
    assert_eq!(state, expect());
    let text = String::from_utf8(wire).expect("utf-8");
    assert_eq!(text.matches("event: state_snapshot\n").count(), 1);
    assert_eq!(text.matches("event: state_delta\n").count(), 2);
}
