//! The AG-UI 1.0 dialect: golden transcripts of every scenario, decoding them back to the
//! scenario's messages modulo the dialect's named losses, a round trip of any message streamed
//! any way and cut anywhere, the request bodies the real client sends, and malformed input.

mod common;

use std::collections::HashMap;

use agentwire_core::part::{ApprovalResponse, StepStart};
use agentwire_core::{
    Accumulator, Awaiting, Event, EventKind, Message, Metadata, Part, Role, RunStatus, Usage,
};
use agentwire_dialects::ag_ui::{AgUiDecoder, AgUiEncoder, ResumeStatus, decode_request};
use agentwire_dialects::{DecodeError, StreamDecoder};
use agentwire_testkit::scenarios::{self, Scenario};
use agentwire_testkit::stream::{Choices, events_for, tree_events};
use agentwire_testkit::{golden, strategy};
use common::{accumulate, decode, decode_whole, encode};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

/// What survives a trip through AG-UI, as the module docs list it: no metadata or creation
/// time; the role is the first text's (`user`, `system`, else `assistant`); a step named after
/// its id loses the name; a result without a tool name gets its call's; a message without parts
/// is not sent at all.
fn ag_ui_projection(message: &Message) -> Option<Message> {
    if message.parts.is_empty() {
        return None;
    }
    let role = match (&message.parts[0], message.role) {
        (Part::Text(_) | Part::Refusal(_), Role::User) => Role::User,
        (Part::Text(_) | Part::Refusal(_), Role::System) => Role::System,
        _ => Role::Assistant,
    };
    let mut calls: HashMap<String, String> = HashMap::new();
    let parts = message
        .parts
        .iter()
        .map(|part| {
            let mut part = part.clone();
            match &mut part {
                Part::ToolCall(call) => {
                    calls.insert(call.tool_call_id.to_string(), call.tool_name.clone());
                }
                Part::ToolResult(result) if result.tool_name.is_none() => {
                    result.tool_name = calls.get(result.tool_call_id.as_str()).cloned();
                }
                Part::ToolError(error) if error.tool_name.is_none() => {
                    error.tool_name = calls.get(error.tool_call_id.as_str()).cloned();
                }
                Part::StepStart(StepStart { step_id, step_name })
                    if step_name.as_deref() == Some(step_id.as_str()) =>
                {
                    *step_name = None;
                }
                _ => {}
            }
            part
        })
        .collect();
    Some(Message {
        id: message.id.clone(),
        role,
        parts,
        metadata: Metadata::default(),
        created_at: None,
    })
}

fn wire(scenario: &Scenario) -> Vec<u8> {
    encode(&mut AgUiEncoder::default(), &scenario.events)
}

/// The frames of a transcript, as JSON.
fn frames(wire: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(wire).expect("utf-8");
    assert!(!text.contains('\r'), "LF-only framing");
    text.split("\n\n")
        .filter(|frame| !frame.is_empty() && !frame.starts_with(':'))
        .map(|frame| {
            let data = frame
                .strip_prefix("data: ")
                .expect("one data line per frame");
            assert!(!data.contains('\n'), "one line per frame: {frame}");
            serde_json::from_str(data).expect("JSON")
        })
        .collect()
}

fn has_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().any(has_null),
        Value::Object(members) => members.values().any(has_null),
        _ => false,
    }
}

#[test]
fn every_scenario_has_a_golden_transcript() {
    for scenario in scenarios::all() {
        let wire = wire(&scenario);
        golden::check(
            common::golden("ag-ui", &format!("{}.sse", scenario.name)),
            &wire,
        );
        let frames = frames(&wire);
        assert_eq!(frames[0]["type"], "RUN_STARTED", "{}", scenario.name);
        assert_eq!(frames[0]["threadId"], "ses_1");
        assert_eq!(frames[0]["runId"], "run_1");
        let last = frames.last().expect("frames");
        let expect_last = if scenario.status == RunStatus::Failed {
            "RUN_ERROR"
        } else {
            "RUN_FINISHED"
        };
        assert_eq!(last["type"], expect_last, "{}", scenario.name);
        for frame in &frames {
            assert!(!has_null(frame), "{}: null in {frame}", scenario.name);
        }
    }
}

/// Checks that every run nested in `expected` is in `decoded` under the same path, with the
/// same agent, call, status, usage and projected messages.
#[track_caller]
fn check_subagents(decoded: &Accumulator, expected: &Accumulator, what: &str) {
    assert_eq!(
        decoded.children().len(),
        expected.children().len(),
        "{what}: sub-agents"
    );
    for child in expected.children() {
        let run_id = child.run_id().expect("a nested run has an id").clone();
        let found = decoded
            .descendant(std::slice::from_ref(&run_id))
            .unwrap_or_else(|| panic!("{what}: no sub-agent {run_id}"));
        let what = format!("{what} > {run_id}");
        let expect: Vec<Message> = child
            .messages()
            .iter()
            .filter_map(ag_ui_projection)
            .collect();
        assert_eq!(found.messages(), expect, "{what}");
        assert_eq!(found.agent(), child.agent(), "{what}");
        assert_eq!(
            found.parent_tool_call_id(),
            child.parent_tool_call_id(),
            "{what}"
        );
        assert_eq!(found.status(), child.status(), "{what}");
        assert_eq!(found.usage(), child.usage(), "{what}");
        check_subagents(found, child, &what);
    }
}

fn accumulated(events: &[Event]) -> Accumulator {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator
            .push(event)
            .unwrap_or_else(|err| panic!("{event:?}: {err}"));
    }
    accumulator
}

#[test]
fn scenarios_decode_to_their_messages_and_status() {
    for scenario in scenarios::all() {
        let wire = wire(&scenario);
        let events = decode_whole(&mut AgUiDecoder::default(), &wire).expect("decodes");
        let mut accumulator = Accumulator::default();
        for event in &events {
            accumulator
                .push(event)
                .unwrap_or_else(|err| panic!("{}: {event:?}: {err}", scenario.name));
        }
        let expect: Vec<Message> = scenario
            .messages
            .iter()
            .filter_map(ag_ui_projection)
            .collect();
        assert_eq!(accumulator.messages(), expect, "{}", scenario.name);
        check_subagents(&accumulator, &accumulated(&scenario.events), scenario.name);
        assert_eq!(
            accumulator.status(),
            Some(scenario.status),
            "{}",
            scenario.name
        );
        assert_eq!(accumulator.run_id().map(|id| id.as_str()), Some("run_1"));
        let usage = scenario
            .events
            .iter()
            .rev()
            .find_map(|event| match &event.kind {
                EventKind::RunStatus { usage, .. } => *usage,
                _ => None,
            });
        assert_eq!(accumulator.usage(), usage, "{}", scenario.name);
        assert_eq!(
            accumulator.errors(),
            scenario.error().into_iter().cloned().collect::<Vec<_>>()
        );
    }
}

#[test]
fn one_canonical_message_becomes_several_ag_ui_messages() {
    let scenario = scenarios::tool_call();
    let frames = frames(&wire(&scenario));
    let kinds: Vec<String> = frames
        .iter()
        .map(|frame| {
            let kind = frame["type"].as_str().expect("type");
            let id = ["messageId", "toolCallId", "stepName"]
                .iter()
                .find_map(|key| frame[key].as_str())
                .unwrap_or("");
            format!("{kind} {id}")
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "RUN_STARTED ",
            "STEP_STARTED step_1",
            "TEXT_MESSAGE_START msg_1",
            "TEXT_MESSAGE_CONTENT msg_1",
            "TEXT_MESSAGE_END msg_1",
            "TOOL_CALL_START call_1",
            "TOOL_CALL_ARGS call_1",
            "TOOL_CALL_ARGS call_1",
            "TOOL_CALL_ARGS call_1",
            "TOOL_CALL_END call_1",
            "TOOL_CALL_RESULT msg_1.1",
            "STEP_FINISHED step_1",
            "STEP_STARTED step_2",
            "TEXT_MESSAGE_START msg_1.2",
            "TEXT_MESSAGE_CONTENT msg_1.2",
            "TEXT_MESSAGE_END msg_1.2",
            "STEP_FINISHED step_2",
            "RUN_FINISHED ",
        ]
    );
    assert_eq!(frames[5]["parentMessageId"], "msg_1");
    assert_eq!(
        frames[10]["content"],
        r#"{"city":"Paris","temperature":18,"condition":"sunny"}"#
    );
    assert_eq!(frames[17]["outcome"], json!({"type": "success"}));
    assert_eq!(
        frames[17]["usage"],
        json!([{"inputTokens": 80, "outputTokens": 31, "totalTokens": 111}])
    );
}

#[test]
fn awaiting_runs_end_with_pending_calls_or_interrupts() {
    let frames_of = |scenario: Scenario| frames(&wire(&scenario));
    let client_tool = frames_of(scenarios::client_tool());
    assert_eq!(
        client_tool.last().expect("frames")["outcome"],
        json!({"type": "success", "pendingToolCallIds": ["call_1"]})
    );
    let approval = frames_of(scenarios::approval());
    assert_eq!(
        approval.last().expect("frames")["outcome"],
        json!({"type": "interrupt", "interrupts": [{
            "id": "apr_1",
            "reason": "tool_call",
            "message": "delete_file changes the workspace",
            "toolCallId": "call_1",
            "responseSchema": {
                "type": "object",
                "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
                "required": ["approved"]
            }
        }]})
    );
    let tool_error = frames_of(scenarios::tool_error());
    let error = tool_error
        .iter()
        .find(|frame| frame["type"] == "TOOL_CALL_RESULT")
        .expect("the error is a tool result");
    assert_eq!(
        error["metadata"],
        json!({"agentwire": {"errorType": "VALIDATION"}})
    );
    let failed = frames_of(scenarios::failed());
    let last = failed.last().expect("frames");
    assert_eq!(
        *last,
        json!({"type": "RUN_ERROR", "message": "the model provider answered HTTP 500", "code": "provider_error"})
    );
    assert_eq!(failed[failed.len() - 2]["type"], "TEXT_MESSAGE_END");
}

#[test]
fn the_request_ids_win_over_the_runs() {
    let scenario = scenarios::text();
    let given = frames(&encode(
        &mut AgUiEncoder::new("thread_9", "run_9"),
        &scenario.events,
    ));
    for frame in [&given[0], given.last().expect("frames")] {
        assert_eq!(frame["threadId"], "thread_9");
        assert_eq!(frame["runId"], "run_9");
    }
    let input =
        decode_request(br#"{"threadId":"t2","runId":"r2","parentRunId":"r1","messages":[]}"#)
            .expect("valid");
    let echoed = frames(&encode(
        &mut AgUiEncoder::for_input(&input),
        &scenario.events,
    ));
    assert_eq!(
        echoed[0],
        json!({"type": "RUN_STARTED", "threadId": "t2", "runId": "r2", "protocolVersion": "1.0", "parentRunId": "r1"})
    );
}

#[test]
fn results_the_clients_history_holds_are_not_sent_back() {
    // The tool_call scenario's result for call_1, as if the client's frontend tool had made it:
    // its history holds the tool message, so the client must not get a second one.
    let scenario = scenarios::tool_call();
    let input = decode_request(
        br#"{"threadId":"t","runId":"r","messages":[
            {"id":"u","role":"user","content":"Weather?"},
            {"id":"a","role":"assistant","toolCalls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
            {"id":"t1","role":"tool","toolCallId":"call_1","content":"sunny"}]}"#,
    )
    .expect("valid");
    let known = frames(&encode(
        &mut AgUiEncoder::for_input(&input),
        &scenario.events,
    ));
    let all = frames(&wire(&scenario));
    let results = |frames: &[Value]| {
        frames
            .iter()
            .filter(|frame| frame["type"] == "TOOL_CALL_RESULT")
            .count()
    };
    assert_eq!(results(&all), 1);
    assert_eq!(results(&known), 0);
    // Everything else is the same, and the call is not left pending.
    assert_eq!(known.len(), all.len() - 1);
    assert_eq!(
        known.last().expect("frames")["outcome"],
        json!({"type": "success"})
    );
}

/// A run around one message streamed any way, so that the message completes when the run does.
fn run_of(message: &Message, choices: &mut Choices) -> Vec<Event> {
    let run = |kind| Event::new(0, kind);
    let mut events = vec![
        run(EventKind::RunCreated {
            run_id: "run_1".into(),
            session_id: None,
            agent: None,
            parent_run_id: None,
            parent_tool_call_id: None,
        }),
        Event::heartbeat(1),
    ];
    events.extend(events_for(message, choices));
    events.push(run(EventKind::RunStatus {
        status: RunStatus::Completed,
        error: None,
        usage: Some(Usage::new(3, 4)),
    }));
    events
}

fn unique_call_ids(message: &Message) -> bool {
    let mut seen = std::collections::HashSet::new();
    message.parts.iter().all(|part| match part {
        Part::ToolCall(call) => seen.insert(call.tool_call_id.clone()),
        _ => true,
    })
}

proptest! {
    #[test]
    fn any_message_round_trips_modulo_the_losses(
        message in strategy::message(),
        mut choices in any::<Choices>(),
        cuts in vec(any::<Index>(), 0..6),
    ) {
        // A tool call id names one call: AG-UI cannot tell two calls with one id apart.
        prop_assume!(unique_call_ids(&message));
        let events = run_of(&message, &mut choices);
        let wire = encode(&mut AgUiEncoder::default(), &events);
        let decoded = decode(&mut AgUiDecoder::default(), &wire, &cuts)
            .map_err(|err| TestCaseError::fail(format!("{err}\n{}", String::from_utf8_lossy(&wire))))?;
        let mut accumulator = Accumulator::default();
        for event in &decoded {
            accumulator.push(event).map_err(|err| TestCaseError::fail(format!("{event:?}: {err}")))?;
        }
        let expect: Vec<Message> = ag_ui_projection(&message).into_iter().collect();
        prop_assert_eq!(accumulator.messages(), &expect[..]);
        prop_assert_eq!(accumulator.usage(), Some(Usage::new(3, 4)));
        for frame in frames(&wire) {
            prop_assert!(frame["type"].is_string());
        }
    }

    /// An answer streamed any way and the snapshot of it, as the next run of the thread sends
    /// it, leave the client the same messages.
    #[test]
    fn any_answer_snapshots_as_its_stream_built_it(
        message in strategy::message(),
        mut choices in any::<Choices>(),
    ) {
        let mut message = message;
        message.role = Role::Assistant;
        prop_assume!(message.id.is_some() && unique_call_ids(&message));
        let streamed = reduced(&frames(&encode(&mut AgUiEncoder::default(), &run_of(&message, &mut choices))));
        let mut encoder = AgUiEncoder::new("t", "r2").with_snapshot(std::slice::from_ref(&message));
        let next = frames(&encode(&mut encoder, &run_of(&message, &mut choices)[..1]));
        prop_assert_eq!(&next[1]["type"], "MESSAGES_SNAPSHOT");
        let snapshot = next[1]["messages"].as_array().cloned().unwrap_or_default();
        // No optional field is `null` (the client refuses it); the content is the parts' own.
        for message in &snapshot {
            let fields = message.as_object().cloned().unwrap_or_default();
            prop_assert!(fields.values().all(|value| !value.is_null()), "{}", message);
        }
        prop_assert_eq!(parsed_arguments(snapshot), parsed_arguments(streamed));
    }

    /// A run with sub-agents, every message streamed any way and the runs interleaved any way:
    /// each run reads back as its own messages, under its own path.
    #[test]
    fn a_tree_of_runs_round_trips_modulo_the_losses(
        messages in proptest::array::uniform4(strategy::message()),
        mut choices in any::<Choices>(),
        interleaving in vec(any::<Index>(), 0..300),
        cuts in vec(any::<Index>(), 0..6),
    ) {
        prop_assume!(messages.iter().all(unique_call_ids));
        let [a, b, c, d] = &messages;
        let events = tree_events([a, b, c, d], &mut choices, &interleaving);
        let wire = encode(&mut AgUiEncoder::default(), &events);
        let decoded = decode(&mut AgUiDecoder::default(), &wire, &cuts)
            .map_err(|err| TestCaseError::fail(format!("{err}\n{}", String::from_utf8_lossy(&wire))))?;
        let mut accumulator = Accumulator::default();
        for event in &decoded {
            accumulator.push(event).map_err(|err| TestCaseError::fail(format!("{event:?}: {err}")))?;
        }
        let expected = accumulated(&events);
        let expect: Vec<Message> = expected.messages().iter().filter_map(ag_ui_projection).collect();
        prop_assert_eq!(accumulator.messages(), &expect[..]);
        check_subagents(&accumulator, &expected, "tree");
        for frame in frames(&wire) {
            let kind = frame["type"].as_str().unwrap_or_default();
            if kind.starts_with("RUN_") || kind.starts_with("SUBAGENT_") {
                continue;
            }
            // Every event of a nested run names it; the run's own name none.
            prop_assert!(frame.get("subagentRunId").is_none_or(Value::is_string), "{frame}");
        }
    }

    #[test]
    fn garbage_never_panics(wire in vec(any::<u8>(), 0..200), cuts in vec(any::<Index>(), 0..4)) {
        let _ = decode(&mut AgUiDecoder::default(), &wire, &cuts);
        let _ = decode_request(&wire);
    }

    #[test]
    fn event_soup_never_panics(kinds in vec(0usize..12, 0..24), ids in vec(0usize..3, 24)) {
        let names = ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
            "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
            "RUN_FINISHED", "RUN_ERROR", "TEXT_MESSAGE_CHUNK", "REASONING_MESSAGE_CHUNK", "STEP_STARTED"];
        let mut wire = String::from("data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n");
        for (kind, id) in kinds.iter().zip(&ids) {
            let event = json!({"type": names[*kind], "messageId": format!("m{id}"), "toolCallId": format!("c{id}"),
                "toolCallName": "x", "delta": "d", "content": "c", "threadId": "t", "runId": "r", "message": "m", "stepName": "s"});
            wire.push_str(&format!("data: {event}\n\n"));
        }
        if let Ok(events) = decode(&mut AgUiDecoder::default(), wire.as_bytes(), &[]) {
            // Whatever decodes accumulates, up to the end of the first run (a stream carries one).
            let mut accumulator = Accumulator::default();
            for event in &events {
                prop_assert!(accumulator.push(event).is_ok(), "{event:?}");
                if accumulator.status().is_some_and(RunStatus::is_terminal) {
                    break;
                }
            }
        }
    }
}

#[test]
fn chunks_expand_as_the_client_expands_them() {
    let stream = concat!(
        "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t1\",\"runId\":\"r1\"}\n\n",
        ": keepalive\n\n",
        "data: {\"type\":\"REASONING_MESSAGE_CHUNK\",\"messageId\":\"r\",\"delta\":\"Think\"}\n\n",
        "data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m1\",\"role\":\"assistant\",\"delta\":\"Hel\"}\n\n",
        "data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"delta\":\"lo\"}\n\n",
        "data: {\"type\":\"TOOL_CALL_CHUNK\",\"toolCallId\":\"c1\",\"toolCallName\":\"search\",\"parentMessageId\":\"m1\",\"delta\":\"{\\\"q\\\":\"}\n\n",
        "data: {\"type\":\"TOOL_CALL_CHUNK\",\"toolCallId\":\"c1\",\"delta\":\"1}\"}\n\n",
        "data: {\"type\":\"TOOL_CALL_RESULT\",\"messageId\":\"t\",\"toolCallId\":\"c1\",\"content\":\"found\"}\n\n",
        "data: {\"type\":\"STATE_SNAPSHOT\",\"snapshot\":{\"a\":1}}\n\n",
        "data: {\"type\":\"SOMETHING_NEW\",\"x\":1}\n\n",
        "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t1\",\"runId\":\"r1\"}\n\n",
    );
    let events = decode(&mut AgUiDecoder::default(), stream.as_bytes(), &[]).expect("valid");
    let messages = accumulate(&events);
    assert_eq!(
        messages,
        [Message::new(
            Role::Assistant,
            vec![
                Part::reasoning("Think"),
                Part::text("Hello"),
                Part::tool_call("c1", "search", json!({"q": 1})),
                Part::ToolResult(agentwire_core::ToolResult {
                    tool_call_id: "c1".into(),
                    tool_name: Some("search".into()),
                    result: json!("found"),
                    is_error: None,
                }),
            ]
        )
        .with_id("r")]
    );
    let mut accumulator = Accumulator::default();
    for event in &events {
        accumulator.push(event).expect("accumulates");
    }
    assert_eq!(accumulator.status(), Some(RunStatus::Completed));
}

#[test]
fn another_servers_interrupt_and_pending_call() {
    let stream = concat!(
        "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t1\",\"runId\":\"r1\"}\n\n",
        "data: {\"type\":\"STEP_STARTED\",\"stepName\":\"agent\"}\n\n",
        "data: {\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c1\",\"toolCallName\":\"rm\"}\n\n",
        "data: {\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"c1\"}\n\n",
        "data: {\"type\":\"STEP_FINISHED\",\"stepName\":\"agent\"}\n\n",
        "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t1\",\"runId\":\"r1\",\"outcome\":{\"type\":\"interrupt\",\"interrupts\":[{\"id\":\"i1\",\"reason\":\"tool_call\",\"toolCallId\":\"c1\",\"message\":\"ok?\"}]}}\n\n",
    );
    let events = decode(&mut AgUiDecoder::default(), stream.as_bytes(), &[]).expect("valid");
    let mut accumulator = Accumulator::default();
    for event in &events {
        accumulator.push(event).expect("accumulates");
    }
    assert_eq!(
        accumulator.status(),
        Some(RunStatus::Awaiting(Awaiting::Approval))
    );
    let message = &accumulator.messages()[0];
    assert_eq!(
        message.id.as_ref().map(|id| id.as_str()),
        Some("r1.message")
    );
    assert_eq!(
        serde_json::to_value(&message.parts).expect("json"),
        json!([
            {"type": "step_start", "step_id": "agent"},
            {"type": "tool_call", "tool_call_id": "c1", "tool_name": "rm", "args": {}},
            {"type": "approval_request", "approval_id": "i1", "tool_call_id": "c1", "reason": "ok?"}
        ])
    );

    let pending = concat!(
        "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t1\",\"runId\":\"r1\"}\n\n",
        "data: {\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c1\",\"toolCallName\":\"where\",\"parentMessageId\":\"a1\"}\n\n",
        "data: {\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"c1\"}\n\n",
        "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t1\",\"runId\":\"r1\",\"usage\":[{\"inputTokens\":2,\"outputTokens\":3},{\"inputTokens\":1,\"outputTokens\":1,\"totalTokens\":2}]}\n\n",
    );
    let events = decode(&mut AgUiDecoder::default(), pending.as_bytes(), &[]).expect("valid");
    let mut accumulator = Accumulator::default();
    for event in &events {
        accumulator.push(event).expect("accumulates");
    }
    assert_eq!(
        accumulator.status(),
        Some(RunStatus::Awaiting(Awaiting::FunctionOutput))
    );
    assert_eq!(accumulator.usage(), Some(Usage::new(3, 4)));
    assert_eq!(
        accumulator.messages()[0].id.as_ref().map(|id| id.as_str()),
        Some("a1")
    );
}

#[test]
fn malformed_streams_are_typed_errors() {
    let start = "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
    let cases: &[(&str, &str)] = &[
        (
            "content without start",
            "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"x\"}\n\n",
        ),
        (
            "end without start",
            "data: {\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"c\"}\n\n",
        ),
        (
            "missing delta",
            "data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}\n\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\"}\n\n",
        ),
        (
            "started twice",
            "data: {\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c\",\"toolCallName\":\"x\"}\n\ndata: {\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c\",\"toolCallName\":\"x\"}\n\n",
        ),
        ("not JSON", "data: {\"type\":\n\n"),
        ("no type", "data: {\"messageId\":\"m\"}\n\n"),
        ("not an object", "data: [1]\n\n"),
        (
            "a bad part of ours",
            "data: {\"type\":\"CUSTOM\",\"name\":\"agentwire.part\",\"value\":{\"part\":{\"type\":\"file\"}}}\n\n",
        ),
        (
            "a chunk without an id",
            "data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"delta\":\"x\"}\n\n",
        ),
    ];
    for (what, frames) in cases {
        let wire = format!("{start}{frames}");
        let err = decode(&mut AgUiDecoder::default(), wire.as_bytes(), &[]).expect_err(what);
        assert!(
            matches!(err, DecodeError::InvalidFrame { .. }),
            "{what}: {err}"
        );
    }
    let cut = format!("{start}data: {{\"type\":\"TEXT_MESSAGE_START\"");
    let err = decode(&mut AgUiDecoder::default(), cut.as_bytes(), &[]).expect_err("cut off");
    assert!(matches!(err, DecodeError::UnexpectedEnd), "{err}");
    let mut decoder = AgUiDecoder::default();
    let mut out = Vec::new();
    decoder
        .decode(format!("{start}data: {{}}\n\n").as_bytes(), &mut out)
        .expect_err("no type");
    assert_eq!(out.len(), 2, "the events before the bad frame are kept");
}

/// The body `HttpAgent` sends, as the protocol notes recorded it.
#[test]
fn the_http_agent_body_decodes() {
    let body = br#"{"threadId":"t1","runId":"r1","protocolVersion":"1.0","state":{},"messages":[{"id":"m1","role":"user","content":"Hello"}],"tools":[],"context":[],"forwardedProps":{}}"#;
    let input = decode_request(body).expect("valid");
    assert_eq!(input.thread_id.as_str(), "t1");
    assert_eq!(input.run_id.as_str(), "r1");
    assert_eq!(input.messages, [Message::user("Hello").with_id("m1")]);
    assert!(input.tools.is_empty() && input.resume.is_empty());
    assert_eq!(input.state, Some(json!({})));
}

#[test]
fn a_history_becomes_one_message_per_turn() {
    let body = json!({
        "threadId": "t1", "runId": "r2", "parentRunId": "r1",
        "messages": [
            {"id": "s", "role": "system", "content": "Be brief."},
            {"id": "d", "role": "developer", "content": "No tables."},
            {"id": "u1", "role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": {"type": "data", "value": "AAAA", "mimeType": "image/png"}},
                {"type": "document", "source": {"type": "url", "value": "https://x/y.pdf"}},
                {"type": "hologram", "source": {}}
            ]},
            {"id": "r", "role": "reasoning", "content": "Look first."},
            {"id": "a1", "role": "assistant", "content": "Checking.", "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{\"at\":\"it\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "zoom", "arguments": ""}}
            ]},
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "{\"seen\":true}"},
            {"id": "t2", "role": "tool", "toolCallId": "c2", "content": "", "error": "too far"},
            {"id": "a2", "role": "assistant", "content": "A cat."},
            {"id": "x", "role": "activity", "activityType": "progress", "content": {}},
            {"id": "u2", "role": "user", "content": "Thanks"}
        ],
        "tools": [{"name": "confirm", "description": "Ask the user", "parameters": {"type": "object"}}],
        "context": [{"description": "locale", "value": "fr"}],
        "forwardedProps": {"a": 1}
    });
    let input = decode_request(body.to_string().as_bytes()).expect("valid");
    assert_eq!(
        input.parent_run_id.as_ref().map(|id| id.as_str()),
        Some("r1")
    );
    assert_eq!(input.tools[0].name, "confirm");
    assert_eq!(input.context[0].value, "fr");
    assert_eq!(input.forwarded_props, Some(json!({"a": 1})));
    let messages: Vec<Value> = input
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).expect("json"))
        .collect();
    assert_eq!(
        messages,
        [
            json!({"id": "s", "role": "system", "parts": [{"type": "text", "text": "Be brief."}]}),
            json!({"id": "d", "role": "system", "parts": [{"type": "text", "text": "No tables."}]}),
            json!({"id": "u1", "role": "user", "parts": [
                {"type": "text", "text": "What is this?"},
                {"type": "file", "media_type": "image/png", "data": "AAAA"},
                {"type": "file", "media_type": "application/octet-stream", "url": "https://x/y.pdf"}
            ]}),
            json!({"id": "r", "role": "assistant", "parts": [
                {"type": "reasoning", "text": "Look first."},
                {"type": "text", "text": "Checking."},
                {"type": "tool_call", "tool_call_id": "c1", "tool_name": "look", "args": {"at": "it"}},
                {"type": "tool_call", "tool_call_id": "c2", "tool_name": "zoom", "args": {}},
                {"type": "tool_result", "tool_call_id": "c1", "tool_name": "look", "result": {"seen": true}},
                {"type": "tool_error", "tool_call_id": "c2", "tool_name": "zoom", "error_type": "EXECUTION", "message": "too far"},
                {"type": "text", "text": "A cat."}
            ]}),
            json!({"id": "u2", "role": "user", "parts": [{"type": "text", "text": "Thanks"}]}),
        ]
    );
}

/// `golden/ag-ui/<file>`, a request body the real client built (written by `peers/ag-ui`).
fn client_request(file: &str) -> agentwire_dialects::ag_ui::RunAgentInput {
    let body = std::fs::read(common::golden("ag-ui", file))
        .unwrap_or_else(|err| panic!("{file}: {err} (written by the peers/ag-ui tests)"));
    decode_request(&body).expect("the client's body decodes")
}

#[test]
fn the_clients_answer_to_a_frontend_tool_decodes_to_its_result() {
    let input = client_request("request-client_tool.json");
    assert_eq!(input.thread_id.as_str(), "ses_1");
    assert_eq!(input.run_id.as_str(), "run_2");
    assert_eq!(input.tools[0].name, "get_location");
    let messages: Vec<Value> = input
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).expect("json"))
        .collect();
    assert_eq!(
        messages,
        [
            json!({"id": "msg_user", "role": "user", "parts": [{"type": "text", "text": "Where am I?"}]}),
            json!({"id": "msg_1", "role": "assistant", "parts": [
                {"type": "tool_call", "tool_call_id": "call_1", "tool_name": "get_location", "args": {"precision": "city"}},
                {"type": "tool_result", "tool_call_id": "call_1", "tool_name": "get_location", "result": {"city": "Paris"}}
            ]}),
        ]
    );
}

#[test]
fn the_clients_resume_decodes_to_an_approval_response() {
    let input = client_request("request-approval.json");
    assert_eq!(input.run_id.as_str(), "run_2");
    assert_eq!(input.resume.len(), 1);
    assert_eq!(input.resume[0].status, ResumeStatus::Resolved);
    let last = input.messages.last().expect("messages");
    assert_eq!(last.role, Role::User);
    assert_eq!(
        last.parts,
        [Part::ApprovalResponse(ApprovalResponse {
            approval_id: "apr_1".into(),
            approved: true,
            reason: None,
        })]
    );
    let history = &input.messages[1];
    assert_eq!(history.id.as_ref().map(|id| id.as_str()), Some("msg_1"));
    assert_eq!(
        history.parts,
        [
            Part::text("I will delete old.log."),
            Part::tool_call("call_1", "delete_file", json!({"path": "old.log"})),
        ]
    );
}

#[test]
fn denials_and_bad_bodies() {
    let body = br#"{"threadId":"t","runId":"r","messages":[],"resume":[
        {"interruptId":"a","status":"resolved","payload":{"approved":false,"reason":"no"}},
        {"interruptId":"b","status":"cancelled"}]}"#;
    let input = decode_request(body).expect("valid");
    let answers: Vec<Value> = input.messages[0]
        .parts
        .iter()
        .map(|p| serde_json::to_value(p).expect("json"))
        .collect();
    assert_eq!(
        answers,
        [
            json!({"type": "approval_response", "approval_id": "a", "approved": false, "reason": "no"}),
            json!({"type": "approval_response", "approval_id": "b", "approved": false}),
        ]
    );
    for bad in [
        &br#"{"runId":"r","messages":[]}"#[..],
        br#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user"}]}"#,
        br#"{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"a","status":"maybe"}]}"#,
        b"not json",
    ] {
        let err = decode_request(bad).expect_err("invalid");
        assert!(matches!(err, DecodeError::InvalidRequest { .. }), "{err}");
    }
}

/// A compact view of frames: `TYPE id [subagentRunId]`.
fn shape(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .map(|frame| {
            let kind = frame["type"].as_str().expect("type");
            let id = ["messageId", "toolCallId", "stepName", "subagentRunId"]
                .iter()
                .find_map(|key| frame[key].as_str())
                .unwrap_or("");
            match frame["subagentRunId"].as_str() {
                Some(run) if !kind.starts_with("SUBAGENT_") => format!("{kind} {id} @{run}"),
                _ => format!("{kind} {id}"),
            }
        })
        .collect()
}

#[test]
fn sub_agents_are_subagents_whose_events_name_them_and_whose_ids_are_their_own() {
    let frames = frames(&wire(&scenarios::subagents()));
    let shape = shape(&frames);
    let started: Vec<&Value> = frames
        .iter()
        .filter(|frame| frame["type"] == "SUBAGENT_STARTED")
        .collect();
    assert_eq!(
        started,
        [
            &json!({"type": "SUBAGENT_STARTED", "subagentRunId": "run_b", "name": "researcher",
                    "parentToolCallId": "call_1", "parentMessageId": "msg_1"}),
            &json!({"type": "SUBAGENT_STARTED", "subagentRunId": "run_c", "name": "writer",
                    "parentToolCallId": "call_2", "parentMessageId": "msg_1"}),
            &json!({"type": "SUBAGENT_STARTED", "subagentRunId": "run_d", "name": "fact_checker",
                    "parentSubagentRunId": "run_b", "parentToolCallId": "run_b:call_b1",
                    "parentMessageId": "run_b:msg_1"}),
        ]
    );
    // Every run's message is msg_1: a sub-agent's AG-UI messages carry its run id.
    for expected in [
        "TEXT_MESSAGE_START run_b:msg_1 @run_b",
        "TEXT_MESSAGE_START run_c:msg_1 @run_c",
        "TEXT_MESSAGE_START run_d:msg_1 @run_d",
        "TOOL_CALL_START run_b:call_b1 @run_b",
        "TOOL_CALL_RESULT run_b:msg_1.1 @run_b",
        "TEXT_MESSAGE_START msg_1",
    ] {
        assert!(
            shape.contains(&expected.to_owned()),
            "{expected} in {shape:#?}"
        );
    }
    let finished: Vec<&Value> = frames
        .iter()
        .filter(|frame| frame["type"] == "SUBAGENT_FINISHED")
        .collect();
    assert_eq!(
        finished[0],
        &json!({"type": "SUBAGENT_FINISHED", "subagentRunId": "run_d", "result": "Yes, it is Paris.",
                "outcome": {"type": "success"},
                "metadata": {"agentwire": {"usage": {"inputTokens": 12, "outputTokens": 6, "totalTokens": 18}}}})
    );
    // Each subagent ends before the result it gives its parent.
    let at = |line: &str| shape.iter().position(|l| l == line).expect(line);
    assert!(at("SUBAGENT_FINISHED run_c") < at("TOOL_CALL_RESULT msg_1.1"));
    assert!(at("SUBAGENT_FINISHED run_b") < at("TOOL_CALL_RESULT msg_1.2"));
    assert_eq!(
        frames.last().expect("frames")["outcome"],
        json!({"type": "success"})
    );
}

#[test]
fn a_wait_three_subagents_down_suspends_them_and_interrupts_the_run() {
    let frames = frames(&wire(&scenarios::subagent_approval()));
    let tail: Vec<String> = shape(&frames).split_off(frames.len() - 8);
    assert_eq!(
        tail,
        [
            "STEP_FINISHED step_1 @run_d",
            "STEP_FINISHED step_1 @run_c",
            "STEP_FINISHED step_1 @run_b",
            "STEP_FINISHED step_1",
            "SUBAGENT_FINISHED run_d",
            "SUBAGENT_FINISHED run_c",
            "SUBAGENT_FINISHED run_b",
            "RUN_FINISHED ",
        ]
    );
    let suspended = &frames[frames.len() - 4];
    assert_eq!(
        suspended["outcome"],
        json!({"type": "suspended", "interruptIds": ["apr_1"]})
    );
    let interrupt = &frames.last().expect("frames")["outcome"]["interrupts"][0];
    assert_eq!(interrupt["id"], "apr_1");
    assert_eq!(interrupt["toolCallId"], "run_d:call_del");
    assert_eq!(interrupt["subagentRunId"], "run_d");
}

#[test]
fn the_continuation_reopens_the_subagents_it_streams_and_finishes_them() {
    let input = decode_request(
        br#"{"threadId":"ses_1","runId":"run_2","messages":[],"resume":[{"interruptId":"apr_1","status":"resolved","payload":{"approved":true}}]}"#,
    )
    .expect("valid");
    assert_eq!(
        input.messages[0].parts,
        [Part::ApprovalResponse(ApprovalResponse {
            approval_id: "apr_1".into(),
            approved: true,
            reason: None,
        })],
        "the answer names the sub-agent's approval as it is: the runtime hands it down"
    );
    let resumed = scenarios::subagent_approval_resumed();
    let wire = encode(&mut AgUiEncoder::for_input(&input), &resumed);
    golden::check(
        common::golden("ag-ui", "subagent_approval.resumed.sse"),
        &wire,
    );
    let frames = frames(&wire);
    let shape = shape(&frames);
    assert_eq!(
        shape[..5],
        [
            "RUN_STARTED ",
            "SUBAGENT_STARTED run_b",
            "SUBAGENT_STARTED run_c",
            "SUBAGENT_STARTED run_d",
            "CUSTOM run_d @run_d",
        ]
    );
    // Started before this stream, they are named by their run ids, parents first.
    assert_eq!(
        frames[3],
        json!({"type": "SUBAGENT_STARTED", "subagentRunId": "run_d", "name": "run_d", "parentSubagentRunId": "run_c"})
    );
    assert!(shape.contains(&"TOOL_CALL_RESULT run_d:msg_2 @run_d".to_owned()));
    assert_eq!(
        frames.last().expect("frames")["outcome"],
        json!({"type": "success"})
    );
    for frame in &frames {
        assert!(!has_null(frame), "{frame}");
    }

    let events = decode_whole(&mut AgUiDecoder::default(), &wire).expect("decodes");
    let accumulator = accumulated(&events);
    assert_eq!(accumulator.status(), Some(RunStatus::Completed));
    let cleaner = accumulator
        .descendant(&["run_b", "run_c", "run_d"].map(agentwire_core::RunId::from))
        .expect("the cleaner, three down");
    assert_eq!(cleaner.status(), Some(RunStatus::Completed));
    assert_eq!(cleaner.messages()[0].content(), "Deleted old.log.");
    assert_eq!(accumulator.messages()[0].content(), "All clean.");
}

#[test]
fn a_subagents_messages_are_left_out_of_the_history_and_the_clients_answers_kept() {
    let body = json!({
        "threadId": "t", "runId": "r2",
        "messages": [
            {"id": "u", "role": "user", "content": "Where am I?"},
            {"id": "msg_1", "role": "assistant", "toolCalls": [
                {"id": "call_1", "type": "function", "function": {"name": "scout", "arguments": "{\"input\":\"where?\"}"}}]},
            {"id": "run_b:msg_1", "role": "assistant", "subagentRunId": "run_b", "content": "Let me look.", "toolCalls": [
                {"id": "run_b:call_loc", "type": "function", "function": {"name": "get_location", "arguments": "{}"}}]},
            {"id": "run_b:msg_1.1", "role": "reasoning", "subagentRunId": "run_b", "content": "Hmm."},
            {"id": "t1", "role": "tool", "toolCallId": "run_b:call_loc", "content": "{\"city\":\"Lyon\"}"}
        ]
    });
    let input = decode_request(body.to_string().as_bytes()).expect("valid");
    let messages: Vec<Value> = input
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).expect("json"))
        .collect();
    assert_eq!(
        messages,
        [
            json!({"id": "u", "role": "user", "parts": [{"type": "text", "text": "Where am I?"}]}),
            json!({"id": "msg_1", "role": "assistant", "parts": [
                {"type": "tool_call", "tool_call_id": "call_1", "tool_name": "scout", "args": {"input": "where?"}},
                {"type": "tool_result", "tool_call_id": "call_loc", "tool_name": "get_location", "result": {"city": "Lyon"}}
            ]}),
        ]
    );
}

/// Events of `(path, kind)`, numbered from 1.
fn numbered(kinds: Vec<(&[&str], EventKind)>) -> Vec<Event> {
    kinds
        .into_iter()
        .zip(1..)
        .map(|((path, kind), seq)| Event {
            seq,
            namespace: agentwire_core::Namespace::new(
                path.iter().map(|id| agentwire_core::RunId::from(*id)),
            ),
            kind,
        })
        .collect()
}

fn run_status(status: RunStatus, error: Option<agentwire_core::ErrorInfo>) -> EventKind {
    EventKind::RunStatus {
        status,
        error,
        usage: None,
    }
}

fn whole(message: Message) -> EventKind {
    EventKind::MessageComplete { message }
}

fn child_created(run: &str, agent: &str, call: &str) -> EventKind {
    EventKind::RunCreated {
        run_id: run.into(),
        session_id: None,
        agent: Some(agent.into()),
        parent_run_id: Some("run_1".into()),
        parent_tool_call_id: Some(call.into()),
    }
}

#[test]
fn a_childs_frontend_tool_is_pending_under_its_own_id_and_ends_the_run_as_success() {
    let top_created = EventKind::RunCreated {
        run_id: "run_1".into(),
        session_id: Some("t".into()),
        agent: None,
        parent_run_id: None,
        parent_tool_call_id: None,
    };
    let events = numbered(vec![
        (&[], top_created),
        (&[], run_status(RunStatus::InProgress, None)),
        (
            &[],
            whole(
                Message::new(
                    Role::Assistant,
                    vec![Part::tool_call(
                        "call_1",
                        "scout",
                        json!({"input": "where?"}),
                    )],
                )
                .with_id("msg_1"),
            ),
        ),
        (&["run_b"], child_created("run_b", "scout", "call_1")),
        (
            &["run_b"],
            whole(
                Message::new(
                    Role::Assistant,
                    vec![Part::tool_call("call_loc", "get_location", json!({}))],
                )
                .with_id("msg_1"),
            ),
        ),
        (
            &["run_b"],
            run_status(RunStatus::Awaiting(Awaiting::FunctionOutput), None),
        ),
        (
            &[],
            run_status(RunStatus::Awaiting(Awaiting::FunctionOutput), None),
        ),
    ]);
    let frames = frames(&encode(&mut AgUiEncoder::default(), &events));
    let last = frames.last().expect("frames");
    assert_eq!(
        last["outcome"],
        json!({"type": "success", "pendingToolCallIds": ["run_b:call_loc"]}),
        "the call that started the sub-agent is not the client's"
    );
    assert_eq!(
        frames[frames.len() - 2],
        json!({"type": "SUBAGENT_FINISHED", "subagentRunId": "run_b", "outcome": {"type": "suspended"},
               "metadata": {"agentwire": {"awaiting": "function_output"}}})
    );
}

#[test]
fn sub_agents_that_fail_or_are_canceled_end_in_subagent_error() {
    let top_created = EventKind::RunCreated {
        run_id: "run_1".into(),
        session_id: Some("t".into()),
        agent: None,
        parent_run_id: None,
        parent_tool_call_id: None,
    };
    let failure = agentwire_core::ErrorInfo::new("provider_error", "the provider fell over");
    let events = numbered(vec![
        (&[], top_created),
        (&[], run_status(RunStatus::InProgress, None)),
        (&["run_b"], child_created("run_b", "researcher", "call_1")),
        (&["run_c"], child_created("run_c", "writer", "call_2")),
        (
            &["run_b"],
            run_status(RunStatus::Failed, Some(failure.clone())),
        ),
        (&["run_c"], run_status(RunStatus::Canceled, None)),
        (&[], run_status(RunStatus::Canceled, None)),
    ]);
    let wire = encode(&mut AgUiEncoder::default(), &events);
    let frames = frames(&wire);
    assert_eq!(
        frames[2..],
        [
            json!({"type": "SUBAGENT_STARTED", "subagentRunId": "run_c", "name": "writer", "parentToolCallId": "call_2"}),
            json!({"type": "SUBAGENT_ERROR", "subagentRunId": "run_b", "message": "the provider fell over",
                   "code": "provider_error", "metadata": {"agentwire": {"status": "failed"}}}),
            json!({"type": "SUBAGENT_ERROR", "subagentRunId": "run_c", "message": "the sub-agent's run ended without an answer",
                   "code": "canceled", "metadata": {"agentwire": {"status": "canceled"}}}),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "run_1", "outcome": {"type": "cancelled"}}),
        ]
    );
    let accumulator =
        accumulated(&decode_whole(&mut AgUiDecoder::default(), &wire).expect("decodes"));
    let b = accumulator.descendant(&["run_b".into()]).expect("run_b");
    assert_eq!(b.status(), Some(RunStatus::Failed));
    assert_eq!(b.errors(), [failure]);
    let c = accumulator.descendant(&["run_c".into()]).expect("run_c");
    assert_eq!(c.status(), Some(RunStatus::Canceled));
}

#[test]
fn plans_and_artifacts_are_activity_messages_updated_in_place() {
    use agentwire_core::part::{Artifact, PlanAction, PlanUpdate};
    let plan = |action, details: Value| {
        Part::PlanUpdate(PlanUpdate {
            plan_id: "plan_1".into(),
            action,
            details: Some(details),
        })
    };
    let message = Message::new(
        Role::Assistant,
        vec![
            plan(PlanAction::Created, json!({"steps": ["Read", "Write"]})),
            Part::text("Reading first."),
            plan(
                PlanAction::Updated,
                json!({"steps": ["Read", "Write"], "done": 1}),
            ),
            Part::Artifact(Artifact {
                artifact_id: "art_1".into(),
                title: "Notes".into(),
                version: Some(1),
                preview: None,
            }),
            plan(
                PlanAction::Completed,
                json!({"steps": ["Read", "Write"], "done": 2}),
            ),
        ],
    )
    .with_id("msg_1");
    let mut events = vec![Event::new(
        1,
        EventKind::RunCreated {
            run_id: "run_1".into(),
            session_id: Some("ses_1".into()),
            agent: None,
            parent_run_id: None,
            parent_tool_call_id: None,
        },
    )];
    events.extend(events_for(&message, &mut Choices::new(Vec::new())));
    events.push(Event::new(9, run_status(RunStatus::Completed, None)));
    let wire = encode(&mut AgUiEncoder::default(), &events);
    golden::check(common::golden("ag-ui", "activity.sse"), &wire);
    let frames = frames(&wire);
    let activities: Vec<&Value> = frames
        .iter()
        .filter(|frame| {
            frame["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("ACTIVITY_"))
        })
        .collect();
    let ours = json!({"agentwire": {"messageId": "msg_1"}});
    assert_eq!(
        activities,
        [
            &json!({"type": "ACTIVITY_SNAPSHOT", "messageId": "plan:plan_1", "activityType": "agentwire.plan",
                    "content": {"plan_id": "plan_1", "action": "created", "details": {"steps": ["Read", "Write"]}},
                    "metadata": ours}),
            &json!({"type": "ACTIVITY_DELTA", "messageId": "plan:plan_1", "activityType": "agentwire.plan",
                    "patch": [{"op": "replace", "path": "/action", "value": "updated"},
                              {"op": "replace", "path": "/details", "value": {"steps": ["Read", "Write"], "done": 1}}],
                    "metadata": ours}),
            &json!({"type": "ACTIVITY_SNAPSHOT", "messageId": "artifact:art_1", "activityType": "agentwire.artifact",
                    "content": {"artifact_id": "art_1", "title": "Notes", "version": 1},
                    "metadata": ours}),
            &json!({"type": "ACTIVITY_DELTA", "messageId": "plan:plan_1", "activityType": "agentwire.plan",
                    "patch": [{"op": "replace", "path": "/action", "value": "completed"},
                              {"op": "replace", "path": "/details", "value": {"steps": ["Read", "Write"], "done": 2}}],
                    "metadata": ours}),
        ]
    );
    assert!(!frames.iter().any(|frame| frame["type"] == "CUSTOM"));
    let decoded = accumulate(&decode_whole(&mut AgUiDecoder::default(), &wire).expect("decodes"));
    assert_eq!(decoded, [message]);
}

#[test]
fn the_clients_resume_of_a_subagents_interrupt_decodes_to_its_approval_and_drops_its_messages() {
    let input = client_request("request-subagent_approval.json");
    assert_eq!(input.run_id.as_str(), "run_2");
    let messages: Vec<Value> = input
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).expect("json"))
        .collect();
    assert_eq!(
        messages,
        [
            json!({"id": "msg_user", "role": "user", "parts": [{"type": "text", "text": "Clean up the logs"}]}),
            json!({"id": "msg_1", "role": "assistant", "parts": [
                {"type": "text", "text": "I will ask the director."},
                {"type": "tool_call", "tool_call_id": "call_1", "tool_name": "director", "args": {"input": "Clean up the logs."}}
            ]}),
            json!({"role": "user", "parts": [{"type": "approval_response", "approval_id": "apr_1", "approved": true}]}),
        ]
    );
}

/// The run's own messages as the client's reducer builds them from the stream: texts,
/// reasoning, tool calls on their holders, tool results and activities, by id, in order of
/// appearance (a sub-agent's events are left out, as a snapshot leaves them).
fn reduced(frames: &[Value]) -> Vec<Value> {
    let mut messages: Vec<Value> = Vec::new();
    let find = |messages: &mut Vec<Value>, id: &str| {
        messages
            .iter()
            .position(|message| message["id"] == id)
            .expect("a message the stream opened")
    };
    for frame in frames
        .iter()
        .filter(|frame| frame.get("subagentRunId").is_none())
    {
        let id = frame["messageId"].as_str().unwrap_or_default();
        match frame["type"].as_str().unwrap_or_default() {
            "TEXT_MESSAGE_START" => {
                let mut message = json!({"id": id, "role": frame["role"], "content": ""});
                if let Some(metadata) = frame.get("metadata") {
                    message["metadata"] = metadata.clone();
                }
                messages.push(message);
            }
            "TEXT_MESSAGE_CONTENT" | "REASONING_MESSAGE_CONTENT" => {
                let at = find(&mut messages, id);
                let text = format!(
                    "{}{}",
                    messages[at]["content"].as_str().unwrap_or_default(),
                    frame["delta"].as_str().unwrap_or_default()
                );
                messages[at]["content"] = json!(text);
            }
            "REASONING_MESSAGE_START" => {
                messages.push(json!({"id": id, "role": "reasoning", "content": ""}));
            }
            "TOOL_CALL_START" => {
                let parent = frame["parentMessageId"].as_str().unwrap_or_default();
                let at = match messages.iter().position(|message| message["id"] == parent) {
                    Some(at) => at,
                    None => {
                        messages.push(json!({"id": parent, "role": "assistant"}));
                        messages.len() - 1
                    }
                };
                let calls = messages[at]
                    .as_object_mut()
                    .expect("a message")
                    .entry("toolCalls")
                    .or_insert_with(|| json!([]));
                calls.as_array_mut().expect("calls").push(json!({
                    "id": frame["toolCallId"],
                    "type": "function",
                    "function": {"name": frame["toolCallName"], "arguments": ""},
                }));
            }
            "TOOL_CALL_ARGS" => {
                let call_id = &frame["toolCallId"];
                for message in &mut messages {
                    let Some(calls) = message.get_mut("toolCalls").and_then(Value::as_array_mut)
                    else {
                        continue;
                    };
                    for call in calls.iter_mut().filter(|call| call["id"] == *call_id) {
                        let text = format!(
                            "{}{}",
                            call["function"]["arguments"].as_str().unwrap_or_default(),
                            frame["delta"].as_str().unwrap_or_default()
                        );
                        call["function"]["arguments"] = json!(text);
                    }
                }
            }
            "TOOL_CALL_RESULT" => {
                let mut message = json!({
                    "id": id,
                    "role": "tool",
                    "toolCallId": frame["toolCallId"],
                    "content": frame["content"],
                });
                if let Some(metadata) = frame.get("metadata") {
                    message["metadata"] = metadata.clone();
                }
                messages.push(message);
            }
            "ACTIVITY_SNAPSHOT" => messages.push(json!({
                "id": id,
                "role": "activity",
                "activityType": frame["activityType"],
                "content": frame["content"],
                "metadata": frame["metadata"],
            })),
            "ACTIVITY_DELTA" => {
                let at = find(&mut messages, id);
                let patch: json_patch::Patch =
                    serde_json::from_value(frame["patch"].clone()).expect("a patch");
                json_patch::patch(&mut messages[at]["content"], &patch).expect("applies");
                messages[at]["metadata"] = frame["metadata"].clone();
            }
            _ => {}
        }
    }
    messages
}

/// Tool-call arguments as JSON rather than text: a stream carries the model's text, a
/// snapshot the parsed arguments written again.
fn parsed_arguments(mut messages: Vec<Value>) -> Vec<Value> {
    for message in &mut messages {
        let Some(calls) = message.get_mut("toolCalls").and_then(Value::as_array_mut) else {
            continue;
        };
        for call in calls {
            let text = call["function"]["arguments"]
                .as_str()
                .unwrap_or("{}")
                .to_owned();
            call["function"]["arguments"] =
                serde_json::from_str(&text).unwrap_or(Value::String(text));
        }
    }
    messages
}

#[test]
fn a_snapshot_holds_the_messages_the_stream_built() {
    for scenario in scenarios::all() {
        let streamed = reduced(&frames(&wire(&scenario)));
        let mut history = scenario.input.clone();
        history.extend(scenario.messages.clone());
        // The next run of the thread opens with the snapshot of everything so far.
        let mut encoder = AgUiEncoder::new("t", "r2").with_snapshot(&history);
        let next = encode(&mut encoder, &scenario.events[..1]);
        let frames = frames(&next);
        assert_eq!(frames[0]["type"], "RUN_STARTED", "{}", scenario.name);
        assert_eq!(frames[1]["type"], "MESSAGES_SNAPSHOT", "{}", scenario.name);
        assert!(!has_null(&frames[1]), "{}", scenario.name);
        let snapshot = frames[1]["messages"].as_array().expect("messages").clone();
        let inputs = scenario.input.len();
        for (message, input) in snapshot.iter().zip(&scenario.input) {
            assert_eq!(message["id"], json!(input.id), "{}", scenario.name);
            assert_eq!(message["role"], "user", "{}", scenario.name);
        }
        assert_eq!(
            parsed_arguments(snapshot[inputs..].to_vec()),
            parsed_arguments(streamed),
            "{}: the snapshot differs from what the stream built",
            scenario.name
        );
    }
}

#[test]
fn an_activity_snapshot_that_does_not_replace_leaves_a_known_activity() {
    let frames = [
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
        json!({"type": "ACTIVITY_SNAPSHOT", "messageId": "plan:p1", "activityType": "agentwire.plan",
               "content": {"plan_id": "p1", "action": "created", "details": {"steps": ["a"]}}}),
        json!({"type": "ACTIVITY_SNAPSHOT", "messageId": "plan:p1", "activityType": "agentwire.plan",
               "content": {"plan_id": "p1", "action": "updated"}, "replace": false}),
        json!({"type": "ACTIVITY_SNAPSHOT", "messageId": "plan:p2", "activityType": "agentwire.plan",
               "content": {"plan_id": "p2", "action": "created"}, "replace": false}),
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
    ];
    let wire: String = frames
        .iter()
        .map(|frame| format!("data: {frame}\n\n"))
        .collect();
    let events = decode_whole(&mut AgUiDecoder::default(), wire.as_bytes()).expect("decodes");
    let messages = accumulate(&events);
    let plans: Vec<Value> = messages
        .iter()
        .flat_map(|message| &message.parts)
        .map(|part| serde_json::to_value(part).expect("serializes"))
        .collect();
    assert_eq!(
        plans,
        [
            json!({"type": "plan_update", "plan_id": "p1", "action": "created", "details": {"steps": ["a"]}}),
            json!({"type": "plan_update", "plan_id": "p2", "action": "created"}),
        ]
    );
}
