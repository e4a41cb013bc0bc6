//! The AI SDK UI message stream: golden transcripts of every scenario, the round trip through
//! the stream decoder (modulo the losses the module lists, spelled out below), the `UIMessage`s
//! the real client must rebuild (checked by `peers/ai-sdk`) decoding back as requests, the
//! captured streams and request of the real SDK, and malformed input.

mod common;

use std::collections::HashMap;

use agentwire_core::part::{ApprovalResponse, FileSource};
use agentwire_core::{
    Accumulator, EventKind, Message, Part, Role, RunStatus, ToolErrorKind, Usage,
};
use agentwire_dialects::DecodeError;
use agentwire_dialects::ai_sdk::{
    AiSdkDecoder, AiSdkEncoder, MIN_TOOL_INPUT_DELTA, RESPONSE_HEADERS, Trigger, decode_request,
    to_ui_message,
};
use agentwire_testkit::scenarios::{self, Scenario};
use agentwire_testkit::stream::{Choices, events_for, tree_events};
use agentwire_testkit::{golden, strategy};
use common::{accumulate, decode, decode_whole, encode};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

/// What a message becomes through the stream: everything the stream cannot carry, as the module
/// docs list it. (Run-level losses, such as error codes, are checked where statuses are.)
fn through_the_stream(message: &Message) -> Message {
    let mut message = message.clone();
    message.role = Role::Assistant;
    let mut calls: HashMap<String, String> = HashMap::new();
    let mut approvals: HashMap<String, String> = HashMap::new();
    let mut denied: Vec<String> = Vec::new();
    let mut n_steps = 0;
    // The tool error that follows a denial is not sent (the denial ends the call).
    message.parts.retain(|part| match part {
        Part::ApprovalRequest(request) => {
            approvals.insert(
                request.approval_id.to_string(),
                request.tool_call_id.to_string(),
            );
            true
        }
        Part::ApprovalResponse(response) if !response.approved => {
            if let Some(call) = approvals.get(response.approval_id.as_str()) {
                denied.push(call.clone());
            }
            true
        }
        Part::ToolError(error) => match denied
            .iter()
            .position(|call| call == error.tool_call_id.as_str())
        {
            Some(at) => {
                denied.remove(at);
                false
            }
            None => true,
        },
        _ => true,
    });
    for part in &mut message.parts {
        match part {
            Part::ToolCall(call) => {
                calls.insert(call.tool_call_id.to_string(), call.tool_name.clone());
            }
            // The name comes from the call in the stream; `is_error` has no field.
            Part::ToolResult(result) => {
                result.tool_name = calls.get(result.tool_call_id.as_str()).cloned();
                result.is_error = None;
            }
            // A validation error needs its call in the stream to be one.
            Part::ToolError(error) => {
                error.tool_name = calls.get(error.tool_call_id.as_str()).cloned();
                if error.tool_name.is_none() {
                    error.error_type = ToolErrorKind::Execution;
                }
            }
            // Steps are numbered by the decoder.
            Part::StepStart(step) => {
                n_steps += 1;
                step.step_id = format!("step_{n_steps}").into();
                step.step_name = None;
            }
            // A base64 `data:` URL reads back as inline data.
            Part::File(file) => {
                let prefix = format!("data:{};base64,", file.media_type);
                if let FileSource::Url(url) = &file.source
                    && let Some(data) = url.strip_prefix(&prefix)
                {
                    file.source = FileSource::Data(data.to_owned());
                }
            }
            _ => {}
        }
    }
    message
}

/// A scenario's message as the stream decoder gives it: the stream losses, and the run's usage
/// in the metadata (it travels as `message-metadata`).
fn decoded_scenario_message(scenario: &Scenario) -> Message {
    let mut message = through_the_stream(&scenario.messages[0]);
    message.metadata.usage = run_usage(scenario);
    message
}

fn run_usage(scenario: &Scenario) -> Option<Usage> {
    scenario
        .events
        .iter()
        .rev()
        .find_map(|event| match &event.kind {
            EventKind::RunStatus { usage, .. } => *usage,
            _ => None,
        })
}

/// What a message becomes through a request (`UIMessage`s): a tool part holds a call with its
/// approval and outcome, so those follow the call at once; outcomes without their call are not
/// in the `UIMessage`; an `output-error` is an `EXECUTION` error; steps are renumbered.
fn through_a_request(message: &Message) -> Message {
    let mut message = through_the_stream(message);
    let mut parts: Vec<Vec<Part>> = Vec::new();
    let mut calls: HashMap<String, usize> = HashMap::new();
    let mut approvals: HashMap<String, usize> = HashMap::new();
    for part in message.parts.drain(..) {
        let call_of = |id: &str| calls.get(id).copied();
        let group = match &part {
            Part::ToolCall(call) => {
                calls.insert(call.tool_call_id.to_string(), parts.len());
                parts.push(vec![part]);
                continue;
            }
            Part::ToolResult(result) => call_of(result.tool_call_id.as_str()),
            Part::ToolError(error) => call_of(error.tool_call_id.as_str()),
            Part::ApprovalRequest(request) => {
                let group = call_of(request.tool_call_id.as_str());
                if let Some(group) = group {
                    approvals.insert(request.approval_id.to_string(), group);
                }
                group
            }
            Part::ApprovalResponse(response) => {
                approvals.get(response.approval_id.as_str()).copied()
            }
            _ => {
                parts.push(vec![part]);
                continue;
            }
        };
        if let Some(group) = group {
            let mut part = part;
            if let Part::ToolError(error) = &mut part {
                error.error_type = ToolErrorKind::Execution;
            }
            parts[group].push(part);
        }
    }
    message.parts = parts.into_iter().flatten().collect();
    message
}

fn golden_path(file: &str) -> std::path::PathBuf {
    common::golden("ai-sdk", file)
}

fn pretty(value: &Value) -> Vec<u8> {
    let mut json = serde_json::to_vec_pretty(value).expect("serializes");
    json.push(b'\n');
    json
}

/// The final run status among decoded events.
fn final_status(
    events: &[agentwire_core::Event],
) -> Option<(RunStatus, Option<agentwire_core::ErrorInfo>, Option<Usage>)> {
    events.iter().rev().find_map(|event| match &event.kind {
        EventKind::RunStatus {
            status,
            error,
            usage,
        } => Some((*status, error.clone(), *usage)),
        _ => None,
    })
}

#[test]
fn transcripts_are_golden_and_decode_to_the_scenarios() {
    for scenario in scenarios::all() {
        let wire = encode(&mut AiSdkEncoder::default(), &scenario.events);
        golden::check(golden_path(&format!("{}.sse", scenario.name)), &wire);

        // Whole, and cut at every byte of the first 300.
        let events = decode_whole(&mut AiSdkDecoder::default(), &wire).expect("decodes");
        for cut in 0..wire.len().min(300) {
            let mut decoder = AiSdkDecoder::default();
            let mut split = Vec::new();
            agentwire_dialects::StreamDecoder::decode(&mut decoder, &wire[..cut], &mut split)
                .expect("decodes");
            agentwire_dialects::StreamDecoder::decode(&mut decoder, &wire[cut..], &mut split)
                .expect("decodes");
            agentwire_dialects::StreamDecoder::finish(&mut decoder, &mut split).expect("ends");
            assert_eq!(split, events, "{} cut at {cut}", scenario.name);
        }
        assert_eq!(
            accumulate(&events),
            [decoded_scenario_message(&scenario)],
            "{}",
            scenario.name
        );

        let (status, error, usage) = final_status(&events).expect("a run status");
        assert_eq!(status, scenario.status, "{}", scenario.name);
        assert_eq!(usage, run_usage(&scenario), "{}", scenario.name);
        // Only the error's message travels; its code is `error`.
        assert_eq!(
            error.map(|error| error.message),
            scenario.error().map(|error| error.message.clone()),
            "{}",
            scenario.name
        );
    }
}

/// A run's progress as the module docs describe it: a `UIMessage` `{id: run id, role:
/// "assistant", metadata: {runId, agentName, status}, parts}` of all its messages' parts, each
/// call that started a sub-agent of its own and has no outcome holding that child's progress as
/// a preliminary output.
fn progress(run: &Accumulator) -> Value {
    let mut parts: Vec<Value> = run
        .messages()
        .iter()
        .flat_map(|message| {
            to_ui_message(message)["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    for child in run.children() {
        let call = child
            .parent_tool_call_id()
            .expect("a sub-agent answers a call");
        if let Some(part) = parts
            .iter_mut()
            .find(|part| part["toolCallId"] == call.as_str() && part["state"] == "input-available")
        {
            part["state"] = "output-available".into();
            part["output"] = progress(child);
            part["preliminary"] = true.into();
        }
    }
    let run_id = run.run_id().expect("an id").as_str();
    json!({"id": run_id, "role": "assistant", "parts": parts, "metadata": {
        "runId": run_id,
        "agentName": run.agent(),
        "status": run.status().expect("a status").name(),
    }})
}

/// The `UIMessage` the client holds after a scenario's stream, from the module docs: the run's
/// message; a call whose sub-agent has not answered holds that sub-agent's progress as a
/// preliminary output; what waiting sub-agents ask are tool parts of their own in a last step,
/// ids prefixed with the asking run's, marked in `callProviderMetadata`.
fn client_view(scenario: &Scenario) -> Value {
    let mut ui = to_ui_message(&decoded_scenario_message(scenario));
    let mut tree = Accumulator::default();
    for event in &scenario.events {
        tree.push(event).expect("scenarios accumulate");
    }
    let parts = ui["parts"].as_array_mut().expect("parts");
    for child in tree.children() {
        let call = child.parent_tool_call_id().expect("a call");
        if let Some(part) = parts
            .iter_mut()
            .find(|part| part["toolCallId"] == call.as_str() && part["state"] == "input-available")
        {
            part["state"] = "output-available".into();
            part["output"] = progress(child);
            part["preliminary"] = true.into();
        }
    }
    let mut asked = Vec::new();
    for event in scenario.events.iter().filter(|event| !event.is_own()) {
        let EventKind::RunStatus {
            status: RunStatus::Awaiting(_),
            ..
        } = event.kind
        else {
            continue;
        };
        let run = tree.descendant(event.namespace.path()).expect("a run");
        let run_id = run.run_id().expect("an id").as_str();
        let run_parts: Vec<&Part> = run.messages().iter().flat_map(|m| &m.parts).collect();
        for part in &run_parts {
            let Part::ApprovalRequest(request) = part else {
                continue;
            };
            let call = run_parts
                .iter()
                .find_map(|part| match part {
                    Part::ToolCall(call) if call.tool_call_id == request.tool_call_id => Some(call),
                    _ => None,
                })
                .expect("the call");
            asked.push(json!({
                "type": format!("tool-{}", call.tool_name),
                "toolCallId": format!("{run_id}:{}", call.tool_call_id),
                "state": "approval-requested",
                "input": call.args,
                "callProviderMetadata": {"agentwire": {"runId": run_id}},
                "approval": {"id": format!("{run_id}:{}", request.approval_id), "requestReason": request.reason},
            }));
        }
    }
    if !asked.is_empty() {
        parts.push(json!({"type": "step-start"}));
        parts.extend(asked);
    }
    ui
}

#[test]
fn the_client_messages_are_golden_and_read_back_as_requests() {
    for scenario in scenarios::all() {
        let decoded = decoded_scenario_message(&scenario);
        // What peers/ai-sdk expects the real client to rebuild from the transcript.
        let ui = client_view(&scenario);
        golden::check(
            golden_path(&format!("{}.ui.json", scenario.name)),
            &pretty(&ui),
        );

        let body = json!({
            "id": "chat",
            "messages": [to_ui_message(&scenario.input[0]), ui],
            "trigger": "submit-message",
        });
        let request = decode_request(body.to_string().as_bytes()).expect("decodes");
        assert_eq!(request.messages[0], scenario.input[0], "{}", scenario.name);
        assert_eq!(
            request.messages[1],
            through_a_request(&decoded),
            "{}",
            scenario.name
        );
    }
}

/// A turn with every kind of part the scenarios leave out (a plan updated twice: the client
/// keeps one part for it), metadata and a time, ending incomplete: written as `every_part.sse` /
/// `.ui.json` for the peer too.
#[test]
fn every_part_is_golden_and_round_trips() {
    let message: Message = serde_json::from_value(json!({
        "id": "msg_all", "role": "assistant", "created_at": 1_700_000_000_000_i64,
        "metadata": {"agent_name": "assistant", "model": "m-1"},
        "parts": [
            {"type": "step_start", "step_id": "s", "step_name": "first"},
            {"type": "reasoning", "text": "Let me think."},
            {"type": "refusal", "text": "I cannot share that."},
            {"type": "text", "text": ""},
            {"type": "file", "media_type": "text/plain", "data": "aGk=", "filename": "hi.txt"},
            {"type": "artifact", "artifact_id": "art_1", "title": "Report", "version": 2},
            {"type": "plan_update", "plan_id": "plan_1", "action": "created", "details": {"steps": ["a", "b"]}},
            {"type": "source", "source_id": "src_1", "url": "https://example.com"},
            {"type": "plan_update", "plan_id": "plan_1", "action": "updated", "details": {"steps": ["a", "b", "c"]}},
            {"type": "data", "name": "note", "data": null},
            {"type": "tool_call", "tool_call_id": "call_rm", "tool_name": "rm", "args": {"path": "/"}},
            {"type": "approval_request", "approval_id": "apr_rm", "tool_call_id": "call_rm"},
            {"type": "approval_response", "approval_id": "apr_rm", "approved": false, "reason": "no"},
            {"type": "tool_call", "tool_call_id": "call_time", "tool_name": "time", "args": {}},
            {"type": "tool_error", "tool_call_id": "call_time", "error_type": "EXECUTION", "message": "the clock broke"}
        ]
    }))
    .expect("a message");
    let mut events = events_for(&message, &mut Choices::new(Vec::new()));
    events.push(agentwire_core::Event::new(
        events.len() as u64 + 1,
        EventKind::RunStatus {
            status: RunStatus::Incomplete,
            error: None,
            usage: None,
        },
    ));
    let wire = encode(&mut AiSdkEncoder::default(), &events);
    golden::check(golden_path("every_part.sse"), &wire);
    let expected = through_the_stream(&message);
    golden::check(
        golden_path("every_part.ui.json"),
        &pretty(&to_ui_message(&expected)),
    );

    let decoded = decode_whole(&mut AiSdkDecoder::default(), &wire).expect("decodes");
    assert_eq!(accumulate(&decoded), [expected]);
    let (status, error, _) = final_status(&decoded).expect("a status");
    assert_eq!(status, RunStatus::Incomplete);
    assert_eq!(error.map(|error| error.code).as_deref(), Some("other"));
}

#[test]
fn run_statuses_become_finish_reasons_and_back() {
    use agentwire_core::{Awaiting, ErrorInfo};
    for (status, wire_end, expected_status) in [
        (
            RunStatus::Completed,
            "{\"type\":\"finish\",\"finishReason\":\"stop\"}",
            RunStatus::Completed,
        ),
        (
            RunStatus::Awaiting(Awaiting::Input),
            "{\"type\":\"finish\",\"finishReason\":\"stop\"}",
            RunStatus::Completed,
        ),
        (
            RunStatus::Awaiting(Awaiting::FunctionOutput),
            "{\"type\":\"finish\",\"finishReason\":\"tool-calls\"}",
            RunStatus::Awaiting(Awaiting::FunctionOutput),
        ),
        (
            RunStatus::Incomplete,
            "{\"type\":\"finish\",\"finishReason\":\"other\"}",
            RunStatus::Incomplete,
        ),
        (
            RunStatus::Rejected,
            "{\"type\":\"finish\",\"finishReason\":\"error\"}",
            RunStatus::Failed,
        ),
        (
            RunStatus::Canceled,
            "{\"type\":\"abort\",\"reason\":\"stopped\"}",
            RunStatus::Canceled,
        ),
    ] {
        let message = Message::assistant("Hi").with_id("m");
        let mut events = events_for(&message, &mut Choices::new(Vec::new()));
        events.push(agentwire_core::Event::new(
            99,
            EventKind::RunStatus {
                status,
                error: Some(ErrorInfo::new("x", "stopped")),
                usage: None,
            },
        ));
        let wire = String::from_utf8(encode(&mut AiSdkEncoder::default(), &events)).expect("utf-8");
        assert!(
            wire.ends_with(&format!("data: {wire_end}\n\ndata: [DONE]\n\n")),
            "{status:?}: {wire}"
        );
        let decoded = decode_whole(&mut AiSdkDecoder::default(), wire.as_bytes()).expect("decodes");
        assert_eq!(accumulate(&decoded), [message], "{status:?}");
        assert_eq!(
            final_status(&decoded).map(|s| s.0),
            Some(expected_status),
            "{status:?}"
        );
    }
    // `interrupted` (v7) and `length` from other servers.
    for (reason, status) in [
        ("interrupted", RunStatus::Canceled),
        ("length", RunStatus::Incomplete),
        ("content-filter", RunStatus::Incomplete),
    ] {
        let wire = format!(
            "data: {{\"type\":\"start\"}}\n\ndata: {{\"type\":\"finish\",\"finishReason\":\"{reason}\"}}\n\n"
        );
        let decoded = decode_whole(&mut AiSdkDecoder::default(), wire.as_bytes()).expect("decodes");
        assert_eq!(
            final_status(&decoded).map(|s| s.0),
            Some(status),
            "{reason}"
        );
        assert_eq!(
            accumulate(&decoded)[0].id.as_ref().map(|id| id.as_str()),
            Some("msg_1"),
            "a made-up id"
        );
    }
}

#[test]
fn the_approval_round_trip_continues_the_message() {
    let scenario = scenarios::by_name("approval").expect("scenario");
    let mut answered = decoded_scenario_message(&scenario);
    answered
        .parts
        .push(Part::ApprovalResponse(ApprovalResponse {
            approval_id: "apr_1".into(),
            approved: true,
            reason: None,
        }));
    // The body the SDK posts after `addToolApprovalResponse({id: "apr_1", approved: true})`
    // and `sendMessage()`: peers/ai-sdk checks that the real client sends exactly this.
    let body = json!({
        "id": "chat",
        "messages": [to_ui_message(&scenario.input[0]), to_ui_message(&answered)],
        "trigger": "submit-message",
        "messageId": "msg_1",
    });
    golden::check(golden_path("approval.round2.request.json"), &pretty(&body));

    let request = decode_request(&pretty(&body)).expect("decodes");
    assert_eq!(request.continues().map(|id| id.as_str()), Some("msg_1"));
    assert_eq!(request.messages[1], answered);

    // Round 2 appends to msg_1 and, the call being known, a denial names it. The runtime's
    // tool error that tells the model of the denial is not sent: for the client the denial
    // ends the call (the real client would turn the part into `output-error` otherwise).
    let mut encoder = AiSdkEncoder::for_request(&request);
    let round2 = Message::new(
        Role::Assistant,
        vec![
            Part::ApprovalResponse(ApprovalResponse {
                approval_id: "apr_1".into(),
                approved: false,
                reason: Some("not today".into()),
            }),
            Part::ToolError(agentwire_core::ToolError {
                tool_call_id: "call_1".into(),
                tool_name: Some("delete_file".into()),
                error_type: ToolErrorKind::Execution,
                message: "The user denied this call: not today".into(),
            }),
        ],
    )
    .with_id("msg_2");
    let wire = encode(
        &mut encoder,
        &events_for(&round2, &mut Choices::new(Vec::new())),
    );
    assert_eq!(
        String::from_utf8(wire).expect("utf-8"),
        "data: {\"type\":\"start\",\"messageId\":\"msg_1\"}\n\n\
         data: {\"type\":\"tool-approval-response\",\"approvalId\":\"apr_1\",\"approved\":false,\"reason\":\"not today\"}\n\n\
         data: {\"type\":\"tool-output-denied\",\"toolCallId\":\"call_1\"}\n\n\
         data: {\"type\":\"finish\"}\n\n\
         data: [DONE]\n\n"
    );
}

#[test]
fn tiny_tool_input_deltas_are_coalesced_without_changing_the_input() {
    let args = json!({"content": "x".repeat(5000), "path": "notes.txt"});
    let message = Message::new(
        Role::Assistant,
        vec![Part::tool_call("c1", "write", args.clone())],
    )
    .with_id("m");
    // One delta per character, as some providers stream.
    let text = args.to_string();
    let mut out = agentwire_core::Emitter::default();
    let start = agentwire_core::MessageStart::new("m", Role::Assistant);
    let mut builder = agentwire_core::MessageBuilder::start(&mut out, start);
    builder
        .tool_call_start(&mut out, "c1", "write")
        .expect("starts");
    for (at, c) in text.char_indices() {
        builder
            .tool_call_delta(&mut out, "c1", &text[at..at + c.len_utf8()])
            .expect("streams");
    }
    builder.tool_call_end(&mut out, "c1").expect("ends");
    builder.finish(&mut out);
    let events: Vec<_> = out.drain().collect();
    let wire = encode(&mut AiSdkEncoder::default(), &events);
    let wire_text = String::from_utf8(wire.clone()).expect("utf-8");
    let deltas: Vec<usize> = wire_text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| data.contains("\"tool-input-delta\""))
        .map(|data| {
            let chunk: Value = serde_json::from_str(data).expect("json");
            chunk["inputTextDelta"].as_str().expect("text").len()
        })
        .collect();
    assert_eq!(deltas.iter().sum::<usize>(), text.len());
    assert!(deltas.len() < 40, "{} deltas", deltas.len());
    assert!(
        deltas[..deltas.len() - 1]
            .iter()
            .all(|&len| len >= MIN_TOOL_INPUT_DELTA)
    );
    // What the client parses in total stays linear in the input.
    let mut parsed = 0;
    let mut so_far = 0;
    for len in &deltas {
        so_far += len;
        parsed += so_far;
    }
    assert!(
        parsed < 12 * text.len(),
        "{parsed} bytes parsed for {}",
        text.len()
    );
    let decoded = decode_whole(&mut AiSdkDecoder::default(), &wire).expect("decodes");
    assert_eq!(accumulate(&decoded), [message]);
}

#[test]
fn headers_and_framing() {
    assert!(RESPONSE_HEADERS.contains(&("x-vercel-ai-ui-message-stream", "v1")));
    assert!(RESPONSE_HEADERS.contains(&("content-type", "text/event-stream")));
    let wire = encode(
        &mut AiSdkEncoder::default(),
        &[agentwire_core::Event::heartbeat(0)],
    );
    assert_eq!(wire, b": keep-alive\n\ndata: [DONE]\n\n");
}

proptest! {
    #[test]
    fn any_message_round_trips(message in strategy::message(), mut choices in any::<Choices>(), cuts in vec(any::<Index>(), 0..6)) {
        let events = events_for(&message, &mut choices);
        let wire = encode(&mut AiSdkEncoder::default(), &events);
        let decoded = decode(&mut AiSdkDecoder::default(), &wire, &cuts)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        let mut accumulator = agentwire_core::Accumulator::default();
        for event in &decoded {
            accumulator.push(event).map_err(|err| TestCaseError::fail(format!("{event:?}: {err}")))?;
        }
        prop_assert_eq!(accumulator.messages(), [through_the_stream(&message)]);
    }

    /// A run with sub-agents: the stream decoder reads back the run's own message, and what
    /// the stream shows of its children (their progress, their requests) is not part of it.
    #[test]
    fn a_tree_of_runs_reads_back_as_the_runs_own_message(
        messages in proptest::array::uniform4(strategy::message()),
        mut choices in any::<Choices>(),
        interleaving in vec(any::<Index>(), 0..300),
        cuts in vec(any::<Index>(), 0..6),
    ) {
        let [a, b, c, d] = &messages;
        let mut parent = a.clone();
        // Some of the time the children's calls are the parent's, so their progress streams.
        if choices.pick(2) == 0 {
            parent.parts.push(Part::tool_call("call_1", "first", json!({"input": "go"})));
            parent.parts.push(Part::tool_call("call_2", "second", json!({"input": "go"})));
        }
        let events = tree_events([&parent, b, c, d], &mut choices, &interleaving);
        let wire = encode(&mut AiSdkEncoder::default(), &events);
        let decoded = decode(&mut AiSdkDecoder::default(), &wire, &cuts)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        let mut accumulator = agentwire_core::Accumulator::default();
        for event in &decoded {
            accumulator.push(event).map_err(|err| TestCaseError::fail(format!("{event:?}: {err}")))?;
        }
        let mut expected = parent.clone();
        expected.id = Some("msg_1".into());
        prop_assert_eq!(accumulator.messages(), [through_the_stream(&expected)]);
    }

    #[test]
    fn any_message_reads_back_from_its_ui_message(message in strategy::message()) {
        let body = json!({"id": "c", "messages": [to_ui_message(&message)]});
        let request = decode_request(body.to_string().as_bytes())
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        let mut expected = through_a_request(&message);
        if matches!(message.role, Role::System | Role::User) {
            expected.role = message.role;
        }
        prop_assert_eq!(&request.messages[0], &expected);
    }

    #[test]
    fn garbage_never_panics(wire in vec(any::<u8>(), 0..200), cuts in vec(any::<Index>(), 0..4)) {
        let _ = decode(&mut AiSdkDecoder::default(), &wire, &cuts);
        let _ = decode_request(&wire);
    }
}

#[test]
fn captured_streams_decode_to_their_messages() {
    let Some(wire) = common::captured("ai-sdk-examples/streamtext-tools.sse") else {
        return;
    };
    let events = decode_whole(&mut AiSdkDecoder::default(), &wire).expect("decodes");
    let messages = accumulate(&events);
    let expected: Message = serde_json::from_value(json!({
        "id": "msg_ref_1", "role": "assistant", "parts": [
            {"type": "step_start", "step_id": "step_1"},
            {"type": "reasoning", "text": "Need weather."},
            {"type": "text", "text": "Checking."},
            {"type": "tool_call", "tool_call_id": "call_1", "tool_name": "getWeather", "args": {"city": "Paris"}},
            {"type": "tool_call", "tool_call_id": "call_2", "tool_name": "readFile", "args": {"path": "/etc/shadow"}},
            {"type": "tool_error", "tool_call_id": "call_2", "tool_name": "readFile", "error_type": "EXECUTION", "message": "Error: EACCES: permission denied"},
            {"type": "tool_result", "tool_call_id": "call_1", "tool_name": "getWeather", "result": {"city": "Paris", "tempC": 21}},
            {"type": "step_start", "step_id": "step_2"},
            {"type": "text", "text": "Sunny, 21C."}
        ]
    }))
    .expect("a message");
    assert_eq!(messages, [expected]);
    assert_eq!(
        final_status(&events).map(|s| s.0),
        Some(RunStatus::Completed)
    );

    let wire = common::captured("ai-sdk-examples/approval-round1.sse").expect("captured");
    let events = decode_whole(&mut AiSdkDecoder::default(), &wire).expect("decodes");
    let message = &accumulate(&events)[0];
    assert_eq!(message.id.as_ref().map(|id| id.as_str()), Some("msg_ref_2"));
    assert_eq!(
        message.parts[1],
        Part::tool_call("call_del", "deleteFile", json!({"path": "/tmp/x"}))
    );
    assert!(matches!(&message.parts[2], Part::ApprovalRequest(request)
        if request.approval_id == "aitxt-k9ZWYruxlAVUi7uY2sOTM5oG" && request.tool_call_id == "call_del"));
    assert_eq!(
        final_status(&events).map(|s| s.0),
        Some(RunStatus::Awaiting(agentwire_core::Awaiting::Approval))
    );

    // Round 2 continues msg_ref_2: its output names a call this stream never saw.
    let wire = common::captured("ai-sdk-examples/approval-round2.sse").expect("captured");
    let events = decode_whole(&mut AiSdkDecoder::default(), &wire).expect("decodes");
    let message = &accumulate(&events)[0];
    assert_eq!(message.id.as_ref().map(|id| id.as_str()), Some("msg_ref_2"));
    assert!(matches!(&message.parts[0], Part::ToolResult(result)
        if result.tool_call_id == "call_del" && result.result == json!({"deleted": true}) && result.tool_name.is_none()));
    assert_eq!(message.parts[2], Part::text("Deleted."));
}

#[test]
fn the_captured_round2_request_decodes_to_the_approval() {
    let Some(body) = common::captured("ai-sdk-examples/approval-round2.request.json") else {
        return;
    };
    let request = decode_request(&body).expect("decodes");
    assert_eq!(request.chat_id.as_deref(), Some("chat-ref"));
    assert_eq!(request.trigger, Trigger::SubmitMessage);
    assert_eq!(request.continues().map(|id| id.as_str()), Some("msg_ref_2"));
    assert_eq!(request.messages.len(), 2);
    assert_eq!(
        request.messages[0],
        Message::user("delete /tmp/x").with_id("u1")
    );
    let expected: Message = serde_json::from_value(json!({
        "id": "msg_ref_2", "role": "assistant", "parts": [
            {"type": "step_start", "step_id": "step_1"},
            {"type": "tool_call", "tool_call_id": "call_del", "tool_name": "deleteFile", "args": {"path": "/tmp/x"}},
            {"type": "approval_request", "approval_id": "aitxt-k9ZWYruxlAVUi7uY2sOTM5oG", "tool_call_id": "call_del"},
            {"type": "approval_response", "approval_id": "aitxt-k9ZWYruxlAVUi7uY2sOTM5oG", "approved": true}
        ]
    }))
    .expect("a message");
    assert_eq!(request.messages[1], expected);

    // The response continues msg_ref_2, as the real server's round 2 does.
    let mut encoder = AiSdkEncoder::for_request(&request);
    let reply = Message::new(Role::Assistant, vec![Part::text("Deleted.")]).with_id("msg_new");
    let wire = encode(
        &mut encoder,
        &events_for(&reply, &mut Choices::new(Vec::new())),
    );
    assert!(wire.starts_with(b"data: {\"type\":\"start\",\"messageId\":\"msg_ref_2\"}\n\n"));
}

#[test]
fn request_variants_and_tool_states() {
    // The single-message variant, extra body keys, client tool outputs in both outcomes, a
    // denial, a dynamic tool, files, sources, data and the parts without a canonical one.
    let request = decode_request(
        br#"{"id": "c1", "message": {"id": "m1", "role": "assistant", "metadata": {"createdAt": 5, "agentName": "a", "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}}, "parts": [
            {"type": "step-start"},
            {"type": "tool-getLocation", "toolCallId": "t1", "state": "output-available", "input": {}, "output": {"city": "Paris"}},
            {"type": "tool-getLocation", "toolCallId": "t2", "state": "output-error", "input": {"x": 1}, "errorText": "no GPS"},
            {"type": "dynamic-tool", "toolName": "mcp_rm", "toolCallId": "t3", "state": "output-denied", "input": {}, "approval": {"id": "a3", "approved": false, "reason": "no", "requestReason": "rm is dangerous"}},
            {"type": "tool-x", "toolCallId": "t4", "state": "input-streaming", "input": {"partial": "va"}},
            {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AAAA", "filename": "a.png"},
            {"type": "source-url", "sourceId": "s1", "url": "https://x"},
            {"type": "source-document", "sourceId": "s2", "mediaType": "text/plain", "title": "T"},
            {"type": "data-weather", "id": "w1", "data": {"c": 1}},
            {"type": "reasoning", "text": "hm", "state": "done"}
        ]}, "trigger": "regenerate-message", "messageId": "m1", "model": "gpt"}"#,
    )
    .expect("decodes");
    assert_eq!(request.trigger, Trigger::RegenerateMessage);
    assert_eq!(request.continues(), None);
    assert_eq!(request.body.get("model"), Some(&json!("gpt")));
    let message = &request.messages[0];
    assert_eq!(message.created_at, Some(agentwire_core::Timestamp(5)));
    assert_eq!(message.metadata.agent_name.as_deref(), Some("a"));
    assert_eq!(message.metadata.usage, Some(Usage::new(1, 2)));
    let expected: Vec<Part> = serde_json::from_value(json!([
        {"type": "step_start", "step_id": "step_1"},
        {"type": "tool_call", "tool_call_id": "t1", "tool_name": "getLocation", "args": {}},
        {"type": "tool_result", "tool_call_id": "t1", "tool_name": "getLocation", "result": {"city": "Paris"}},
        {"type": "tool_call", "tool_call_id": "t2", "tool_name": "getLocation", "args": {"x": 1}},
        {"type": "tool_error", "tool_call_id": "t2", "tool_name": "getLocation", "error_type": "EXECUTION", "message": "no GPS"},
        {"type": "tool_call", "tool_call_id": "t3", "tool_name": "mcp_rm", "args": {}},
        {"type": "approval_request", "approval_id": "a3", "tool_call_id": "t3", "reason": "rm is dangerous"},
        {"type": "approval_response", "approval_id": "a3", "approved": false, "reason": "no"},
        {"type": "tool_call", "tool_call_id": "t4", "tool_name": "x", "args": {"partial": "va"}},
        {"type": "file", "media_type": "image/png", "data": "AAAA", "filename": "a.png"},
        {"type": "source", "source_id": "s1", "url": "https://x"},
        {"type": "data", "name": "weather", "data": {"c": 1}},
        {"type": "reasoning", "text": "hm"}
    ]))
    .expect("parts");
    assert_eq!(message.parts, expected);
}

#[track_caller]
fn stream_error(wire: &str) -> DecodeError {
    decode_whole(&mut AiSdkDecoder::default(), wire.as_bytes()).expect_err("malformed")
}

#[test]
fn malformed_streams_are_typed_errors_and_unknown_chunks_are_skipped() {
    let start = "data: {\"type\":\"start\",\"messageId\":\"m\"}\n\n";
    for (wire, frame) in [
        (
            format!("{start}data: {{\"type\":\"text-delta\",\"id\":\"t\",\"delta\":\"x\"}}\n\n"),
            2,
        ),
        (
            format!(
                "{start}data: {{\"type\":\"tool-input-delta\",\"toolCallId\":\"c\",\"inputTextDelta\":\"x\"}}\n\n"
            ),
            2,
        ),
        (
            format!(
                "{start}data: {{\"type\":\"tool-input-available\",\"toolCallId\":\"c\",\"toolName\":\"x\"}}\n\n"
            ),
            2,
        ),
        (format!("{start}data: {{\"type\":\"text-start\"}}\n\n"), 2),
        (
            format!("{start}data: {{\"type\":\"text-start\",\"id\":5}}\n\n"),
            2,
        ),
        ("data: {\"type\":\"start\",\n\n".to_owned(), 1),
        ("data: not json\n\n".to_owned(), 1),
        (
            format!(
                "{start}data: {{\"type\":\"tool-input-start\",\"toolCallId\":\"c\",\"toolName\":\"x\"}}\n\ndata: {{\"type\":\"tool-input-start\",\"toolCallId\":\"c\",\"toolName\":\"x\"}}\n\n"
            ),
            3,
        ),
    ] {
        let err = stream_error(&wire);
        assert!(
            matches!(err, DecodeError::InvalidFrame { frame: f, .. } if f == frame),
            "{wire}: {err}"
        );
    }
    assert!(matches!(
        stream_error("data: {\"type\":\"start\"}"),
        DecodeError::UnexpectedEnd
    ));

    let wire = format!(
        "{start}data: {{\"type\":\"custom\",\"kind\":5}}\n\n\
         data: {{\"type\":\"from-the-future\",\"id\":[1]}}\n\n\
         data: {{\"type\":\"data-note\",\"data\":1,\"transient\":true}}\n\n\
         data: {{\"type\":\"text-start\",\"id\":\"t\"}}\n\n\
         data: {{\"type\":\"text-delta\",\"id\":\"t\",\"delta\":\"Hi\"}}\n\n\
         data: {{\"type\":\"error\",\"errorText\":\"boom\"}}\n\n\
         data: [DONE]\n\n\
         data: {{\"type\":\"text-delta\",\"id\":\"t\",\"delta\":\"ignored\"}}\n\n"
    );
    let events = decode_whole(&mut AiSdkDecoder::default(), wire.as_bytes()).expect("valid");
    assert_eq!(accumulate(&events), [Message::assistant("Hi").with_id("m")]);
    let (status, error, _) = final_status(&events).expect("a status");
    assert_eq!(
        status,
        RunStatus::Failed,
        "an error without a finish fails the run"
    );
    assert_eq!(error.map(|error| error.message).as_deref(), Some("boom"));
}

#[test]
fn malformed_requests_are_typed_errors() {
    for body in [
        &b"not json"[..],
        br#"{"id": "c"}"#,
        br#"{"messages": [{"role": "robot", "parts": []}]}"#,
        br#"{"messages": [{"role": "user", "parts": [{"type": "text"}]}]}"#,
        br#"{"messages": [{"role": "user", "parts": [{"text": "no type"}]}]}"#,
        br#"{"messages": [{"role": "assistant", "parts": [{"type": "dynamic-tool", "toolCallId": "c", "state": "input-available"}]}]}"#,
        br#"{"messages": [], "trigger": "shout"}"#,
    ] {
        let err = decode_request(body).expect_err("malformed");
        assert!(matches!(err, DecodeError::InvalidRequest { .. }), "{err}");
    }
    let err = decode_request(br#"{"messages": [{"role": "user", "parts": [{"type": "text"}]}]}"#)
        .expect_err("malformed");
    assert!(err.to_string().contains("message 0: part 0"), "{err}");
}

/// The round trip of an approval three sub-agents down: the client answers the surfaced tool
/// part, its request names the approval as the sub-agent has it, and the stream that continues
/// after the answer finishes that part and the message.
#[test]
fn a_subagents_approval_round_trip_goes_through_its_surfaced_part() {
    let scenario = scenarios::subagent_approval();
    // After `addToolApprovalResponse({id: "run_d:apr_1", approved: true})`.
    let mut answered = client_view(&scenario);
    let surfaced = answered["parts"]
        .as_array_mut()
        .expect("parts")
        .iter_mut()
        .find(|part| part["toolCallId"] == "run_d:call_del")
        .expect("the cleaner's call is a part of the message");
    surfaced["state"] = "approval-responded".into();
    surfaced["approval"]["approved"] = true.into();
    let body = json!({
        "id": "chat",
        "messages": [to_ui_message(&scenario.input[0]), answered],
        "trigger": "submit-message",
        "messageId": "msg_1",
    });
    golden::check(
        golden_path("subagent_approval.round2.request.json"),
        &pretty(&body),
    );

    let request = decode_request(&pretty(&body)).expect("decodes");
    let mut expected = through_a_request(&decoded_scenario_message(&scenario));
    expected
        .parts
        .push(Part::ApprovalResponse(ApprovalResponse {
            approval_id: "apr_1".into(),
            approved: true,
            reason: None,
        }));
    assert_eq!(
        request.messages[1], expected,
        "only the answer, as the cleaner has it"
    );
    assert_eq!(
        request.subagent_calls,
        [agentwire_dialects::ai_sdk::SubagentCall {
            run_id: "run_d".into(),
            tool_call_id: "call_del".into(),
            approval_id: Some("apr_1".into()),
        }]
    );

    let resumed = scenarios::subagent_approval_resumed();
    let wire = encode(&mut AiSdkEncoder::for_request(&request), &resumed);
    golden::check(golden_path("subagent_approval.round2.sse"), &wire);
    let text = String::from_utf8(wire.clone()).expect("utf-8");
    let chunks: Vec<Value> = text
        .split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .map(|data| serde_json::from_str(data).expect("JSON"))
        .collect();
    // The message the client has goes on, first with the cleaner's result in its part.
    assert_eq!(chunks[0], json!({"type": "start", "messageId": "msg_1"}));
    assert_eq!(
        chunks[1],
        json!({"type": "tool-output-available", "toolCallId": "run_d:call_del", "output": {"deleted": "old.log"},
               "providerMetadata": {"agentwire": {"runId": "run_d"}}})
    );
    assert_eq!(
        chunks
            .iter()
            .filter(|chunk| chunk["type"] == "start")
            .count(),
        1,
        "the run's own message continues it"
    );
    let decoded = accumulate(&decode_whole(&mut AiSdkDecoder::default(), &wire).expect("decodes"));
    let top: Vec<&str> = decoded[0].parts.iter().map(Part::type_name).collect();
    assert_eq!(top, ["tool_result", "step_start", "text"]);

    // What the client holds at the end: the cleaner's part has its output, the director's call
    // its answer, and the parent's text follows in a step of its own.
    let mut end = body["messages"][1].clone();
    for part in end["parts"].as_array_mut().expect("parts") {
        if part["toolCallId"] == "run_d:call_del" {
            part["state"] = "output-available".into();
            part["output"] = json!({"deleted": "old.log"});
            part["resultProviderMetadata"] = json!({"agentwire": {"runId": "run_d"}});
        }
        if part["toolCallId"] == "call_1" {
            part["state"] = "output-available".into();
            part["output"] = json!("The logs are clean.");
            part.as_object_mut().expect("a part").remove("preliminary");
        }
    }
    let parts = end["parts"].as_array_mut().expect("parts");
    parts.push(json!({"type": "step-start"}));
    parts.push(json!({"type": "text", "text": "All clean.", "state": "done"}));
    end["metadata"]["usage"] = json!({"inputTokens": 60, "outputTokens": 24, "totalTokens": 84});
    golden::check(
        golden_path("subagent_approval.round2.end.json"),
        &pretty(&end),
    );
}
