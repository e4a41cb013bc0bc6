//! The AgentScope dialect: golden transcripts of every scenario, round trips modulo the listed
//! losses, the streams captured from the real runtime, request bodies, and malformed input.

mod common;

use agentwire_core::part::FileSource;
use agentwire_core::{
    Accumulator, Awaiting, Event, EventKind, Message, Part, Role, RunStatus, ToolArgs, ToolKind,
    Usage,
};
use agentwire_dialects::agentscope::{
    AgentScopeDecoder, AgentScopeEncoder, REQUEST_REFUSED, decode_request,
};
use agentwire_dialects::{DecodeError, StreamDecoder};
use agentwire_testkit::stream::{Choices, events_for};
use agentwire_testkit::{golden, scenarios, strategy};
use common::{decode, decode_whole, encode};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

/// What a message looks like after a trip through AgentScope: the losses the module docs list.
fn agentscope_view(message: &Message) -> Message {
    let parts: Vec<Part> = message
        .parts
        .iter()
        .filter(|part| !matches!(part, Part::StepStart(_)))
        .map(|part| match part {
            // An image given by a `data:` URL reads back as inline data.
            Part::File(file) if file.media_type.starts_with("image/") => {
                let mut file = file.clone();
                if let FileSource::Url(url) = &file.source
                    && let Some((_, data)) = url
                        .strip_prefix("data:")
                        .and_then(|rest| rest.split_once(";base64,"))
                {
                    file.source = FileSource::Data(data.to_owned());
                }
                Part::File(file)
            }
            other => other.clone(),
        })
        .collect();
    let role = match (message.role, parts.first()) {
        (_, Some(Part::ToolResult(_) | Part::ToolError(_))) | (Role::Data, _) => Role::Assistant,
        (role, _) => role,
    };
    Message {
        id: message.id.clone(),
        role,
        parts,
        metadata: message.metadata.clone(),
        created_at: None,
    }
}

/// The messages, final status and usage a decoded stream accumulates to.
fn accumulate_run(events: &[Event]) -> (Vec<Message>, Option<RunStatus>, Option<Usage>) {
    let mut accumulator = Accumulator::default();
    for event in events {
        if let Err(error) = accumulator.push(event) {
            panic!("event {event:?} does not accumulate: {error}");
        }
    }
    let status = accumulator.status();
    let usage = accumulator.usage();
    (accumulator.into_messages(), status, usage)
}

fn last_error(events: &[Event]) -> Option<agentwire_core::ErrorInfo> {
    events.iter().rev().find_map(|event| match &event.kind {
        EventKind::RunStatus { error, .. } => error.clone(),
        _ => None,
    })
}

/// Every frame's JSON object, in order.
fn frames(wire: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(wire).expect("utf-8");
    text.split("\n\n")
        .filter(|frame| frame.starts_with("data: "))
        .map(|frame| serde_json::from_str(&frame["data: ".len()..]).expect("json frame"))
        .collect()
}

#[test]
fn transcripts_are_golden_and_read_back_modulo_the_losses() {
    for scenario in scenarios::all() {
        let wire = encode(&mut AgentScopeEncoder::default(), &scenario.events);
        golden::check(
            common::golden("agentscope", &format!("{}.sse", scenario.name)),
            &wire,
        );
        let events = decode_whole(&mut AgentScopeDecoder::default(), &wire).expect("decodes");
        let (messages, status, usage) = accumulate_run(&events);
        let expected: Vec<Message> = scenario.messages.iter().map(agentscope_view).collect();
        assert_eq!(messages, expected, "{}", scenario.name);
        // A wait of a sub-agent's is the run's unanswered call of it (the module's losses).
        let own_request = scenario
            .messages
            .iter()
            .flat_map(|message| &message.parts)
            .any(|part| matches!(part, Part::ApprovalRequest(_)));
        let expected_status = match scenario.status {
            RunStatus::Awaiting(Awaiting::Approval) if !own_request => {
                RunStatus::Awaiting(Awaiting::FunctionOutput)
            }
            status => status,
        };
        assert_eq!(status, Some(expected_status), "{}", scenario.name);
        assert_eq!(
            last_error(&events).as_ref(),
            scenario.error(),
            "{}",
            scenario.name
        );
        let scenario_usage = scenario
            .events
            .iter()
            .rev()
            .find_map(|event| match &event.kind {
                EventKind::RunStatus { usage, .. } => *usage,
                _ => None,
            });
        assert_eq!(usage, scenario_usage, "{}", scenario.name);
    }
}

#[test]
fn transcripts_follow_the_runtime_shape() {
    for scenario in scenarios::all() {
        let wire = encode(&mut AgentScopeEncoder::default(), &scenario.events);
        let text = String::from_utf8(wire.clone()).expect("utf-8");
        assert!(!text.contains("[DONE]") && !text.contains("\nevent:") && !text.contains("\nid:"));
        let frames = frames(&wire);
        for (seq, frame) in frames.iter().enumerate() {
            assert_eq!(
                frame["sequence_number"],
                json!(seq),
                "{}: gapless",
                scenario.name
            );
        }
        assert_eq!(frames[0]["object"], "response");
        assert_eq!(frames[0]["status"], "created");
        assert_eq!(frames[1]["status"], "in_progress");
        let last = frames.last().expect("frames");
        assert_eq!(last["object"], "response");
        let completed_messages: Vec<&Value> = frames
            .iter()
            .filter(|frame| frame["object"] == "message" && frame["status"] == "completed")
            .collect();
        assert_eq!(
            last["output"].as_array().map(Vec::len).unwrap_or(0),
            completed_messages.len(),
            "{}: output = the completed messages",
            scenario.name
        );
        // Every content names an announced message and sits at an index of it.
        for frame in frames.iter().filter(|frame| frame["object"] == "content") {
            let msg_id = &frame["msg_id"];
            assert!(
                frames
                    .iter()
                    .any(|m| m["object"] == "message" && &m["id"] == msg_id),
                "{}: {frame}",
                scenario.name
            );
        }
    }
}

#[test]
fn a_tool_call_streams_like_their_builders() {
    let scenario = scenarios::by_name("tool_call").expect("scenario");
    let frames = frames(&encode(&mut AgentScopeEncoder::default(), &scenario.events));
    let call: Vec<&Value> = frames
        .iter()
        .filter(|frame| frame["object"] == "content" && frame["type"] == "data")
        .collect();
    assert_eq!(
        call[0]["data"],
        json!({"call_id": "call_1", "name": "get_weather", "arguments": ""})
    );
    assert_eq!(call[1]["data"], json!({"arguments": "{\"ci"}));
    assert_eq!(call[1]["delta"], json!(true));
    assert_eq!(
        call[4]["data"],
        json!({"call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"})
    );
    assert_eq!(call[4]["status"], "completed");
    assert_eq!(
        call[5]["data"]["output"],
        json!("{\"city\":\"Paris\",\"temperature\":18,\"condition\":\"sunny\"}")
    );
    let types: Vec<&str> = frames
        .iter()
        .filter(|frame| frame["object"] == "message" && frame["status"] == "completed")
        .map(|frame| frame["type"].as_str().expect("type"))
        .collect();
    assert_eq!(
        types,
        [
            "message",
            "function_call",
            "function_call_output",
            "message"
        ]
    );
    let last = frames.last().expect("frames");
    assert_eq!(
        last["usage"],
        json!({"input_tokens": 80, "output_tokens": 31, "total_tokens": 111})
    );
}

#[test]
fn calls_of_mcp_tools_plugins_and_components_have_their_own_types() {
    let mcp = ToolKind::Mcp {
        server: "weather-mcp".into(),
    };
    for (scenario, kind, call_type) in [
        ("tool_call", &mcp, "mcp_call"),
        ("parallel_tools", &ToolKind::Plugin, "plugin_call"),
    ] {
        let scenario = scenarios::by_name(scenario).expect("scenario");
        let name = scenario
            .events
            .iter()
            .find_map(|event| match &event.kind {
                EventKind::PartComplete {
                    part: Part::ToolCall(call),
                    ..
                } => Some(call.tool_name.clone()),
                _ => None,
            })
            .expect("a call");
        let kinds = [(name.as_str(), kind)];
        let typed = encode(
            &mut AgentScopeEncoder::default().with_tool_kinds(kinds),
            &scenario.events,
        );
        let frames = frames(&typed);
        let completed: Vec<&Value> = frames
            .iter()
            .filter(|frame| frame["object"] == "message" && frame["status"] == "completed")
            .collect();
        let types: Vec<&str> = completed
            .iter()
            .map(|frame| frame["type"].as_str().expect("type"))
            .collect();
        let output_type = format!("{call_type}_output");
        assert!(types.contains(&call_type), "{types:?}");
        assert!(types.contains(&output_type.as_str()), "{types:?}");
        assert!(!types.contains(&"function_call"), "{types:?}");
        let call = completed
            .iter()
            .find(|frame| frame["type"] == call_type)
            .expect("a call");
        assert_eq!(call["content"][0]["data"]["name"], name.as_str());
        let server = &call["content"][0]["data"]["server_label"];
        if call_type == "mcp_call" {
            assert_eq!(server, "weather-mcp");
        } else {
            assert_eq!(server, &Value::Null);
        }
        for output in completed
            .iter()
            .filter(|frame| frame["type"] == output_type.as_str())
        {
            assert_eq!(output["role"], "tool");
        }
        // They read back as the same calls and results.
        let plain = encode(&mut AgentScopeEncoder::default(), &scenario.events);
        let decoded = |wire: &[u8]| {
            let events = decode_whole(&mut AgentScopeDecoder::default(), wire).expect("decodes");
            accumulate_run(&events).0
        };
        assert_eq!(decoded(&typed), decoded(&plain));
    }

    // A component's call arriving whole.
    let whole = Message::new(
        Role::Assistant,
        vec![Part::ToolCall(agentwire_core::ToolCall {
            tool_call_id: "c9".into(),
            tool_name: "lookup".into(),
            args: ToolArgs(json!({"q": "x"})),
        })],
    )
    .with_id("msg_9");
    let events = [Event::new(1, EventKind::MessageComplete { message: whole })];
    let kinds = [("lookup", &ToolKind::Component)];
    let frames = self::frames(&encode(
        &mut AgentScopeEncoder::default().with_tool_kinds(kinds),
        &events,
    ));
    assert!(frames.iter().any(|frame| frame["type"] == "component_call"));
}

#[test]
fn a_stream_without_run_statuses_gets_the_ones_agentscope_requires() {
    // An AI SDK stream names no run and says no status until it finishes.
    let message = Message::new(Role::Assistant, vec![Part::text("Hi")]).with_id("msg_1");
    let events = [
        Event::new(1, EventKind::MessageComplete { message }),
        Event::new(
            2,
            EventKind::RunStatus {
                status: RunStatus::Completed,
                error: None,
                usage: None,
            },
        ),
    ];
    let mut encoder =
        AgentScopeEncoder::with_created_at(1_700_000_000).with_clock(|| 1_700_000_042);
    let frames = frames(&encode(&mut encoder, &events));
    let statuses: Vec<(&str, &str)> = frames
        .iter()
        .map(|frame| {
            (
                frame["object"].as_str().expect("object"),
                frame["status"].as_str().expect("status"),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("response", "created"),
            ("response", "in_progress"),
            ("message", "in_progress"),
            ("content", "completed"),
            ("message", "completed"),
            ("response", "completed"),
        ]
    );
    let last = frames.last().expect("frames");
    assert_eq!(last["created_at"], 1_700_000_000);
    assert_eq!(last["completed_at"], 1_700_000_042);

    // A run that fails says why in an `error` message too, which the output keeps.
    let failed = [Event::new(
        1,
        EventKind::RunStatus {
            status: RunStatus::Failed,
            error: Some(agentwire_core::ErrorInfo::new("provider_error", "boom")),
            usage: None,
        },
    )];
    let frames = self::frames(&encode(&mut AgentScopeEncoder::default(), &failed));
    let kinds: Vec<String> = frames
        .iter()
        .map(|frame| format!("{} {}", frame["object"], frame["status"]))
        .collect();
    assert_eq!(
        kinds,
        [
            r#""response" "created""#,
            r#""response" "in_progress""#,
            r#""message" "completed""#,
            r#""response" "failed""#
        ]
    );
    assert_eq!(frames[2]["type"], "error");
    assert_eq!(frames[2]["code"], "provider_error");
    assert_eq!(frames[3]["output"][0]["type"], "error");
    assert_eq!(frames[3]["completed_at"], Value::Null);
}

proptest! {
    #[test]
    fn any_message_round_trips(message in strategy::message(), mut choices in any::<Choices>(), cuts in vec(any::<Index>(), 0..6)) {
        let mut events = events_for(&message, &mut choices);
        // A response ends with its terminal status, which completes the decoded turn.
        let seq = events.len() as u64 + 1;
        events.push(Event::new(seq, EventKind::RunStatus { status: RunStatus::Completed, error: None, usage: None }));
        let wire = encode(&mut AgentScopeEncoder::default(), &events);
        let decoded = decode(&mut AgentScopeDecoder::default(), &wire, &cuts)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        let mut accumulator = Accumulator::default();
        for event in &decoded {
            accumulator.push(event).map_err(|err| TestCaseError::fail(format!("{err}: {event:?}")))?;
        }
        prop_assert_eq!(accumulator.into_messages(), vec![agentscope_view(&message)]);
    }

    #[test]
    fn garbage_never_panics(wire in vec(any::<u8>(), 0..200), cuts in vec(any::<Index>(), 0..4)) {
        let _ = decode(&mut AgentScopeDecoder::default(), &wire, &cuts);
        let _ = decode_request(&wire);
    }

    #[test]
    fn damaged_transcripts_never_panic(at in any::<Index>(), byte in any::<u8>(), cuts in vec(any::<Index>(), 0..4)) {
        let scenario = scenarios::by_name("tool_error").expect("scenario");
        let mut wire = encode(&mut AgentScopeEncoder::default(), &scenario.events);
        let at = at.index(wire.len());
        wire[at] = byte;
        if let Ok(events) = decode(&mut AgentScopeDecoder::default(), &wire, &cuts) {
            let mut accumulator = Accumulator::default();
            for event in &events {
                let _ = accumulator.push(event);
            }
        }
    }
}

/// A captured stream, decoded: its messages, final status and usage, and its events.
type Captured = (Vec<Message>, Option<RunStatus>, Option<Usage>, Vec<Event>);

fn captured(name: &str) -> Option<Captured> {
    let Some(wire) = common::captured(&format!("agentscope-examples/{name}")) else {
        eprintln!("skipped: agentscope-examples/{name} is not beside the checkout");
        return None;
    };
    let events = decode_whole(&mut AgentScopeDecoder::default(), &wire).expect("decodes");
    // Any split of the bytes gives the same events.
    for split in (0..wire.len()).step_by(97) {
        let mut decoder = AgentScopeDecoder::default();
        let mut pieces = Vec::new();
        decoder
            .decode(&wire[..split], &mut pieces)
            .expect("first piece");
        decoder
            .decode(&wire[split..], &mut pieces)
            .expect("second piece");
        decoder.finish(&mut pieces).expect("ends cleanly");
        assert_eq!(pieces, events, "{name} split at {split}");
    }
    let (messages, status, usage) = accumulate_run(&events);
    Some((messages, status, usage, events))
}

fn texts(message: &Message) -> Vec<(&'static str, String)> {
    message
        .parts
        .iter()
        .map(|part| match part {
            Part::Text(text) => ("text", text.text.clone()),
            Part::Reasoning(text) => ("reasoning", text.text.clone()),
            Part::ToolCall(call) => (
                "tool_call",
                format!("{} {} {}", call.tool_call_id, call.tool_name, call.args.0),
            ),
            Part::ToolResult(result) => (
                "tool_result",
                format!(
                    "{} {:?} {}",
                    result.tool_call_id, result.tool_name, result.result
                ),
            ),
            other => (other.type_name(), String::new()),
        })
        .collect()
}

#[test]
fn captured_text_streams_decode_to_their_answer() {
    for (file, session, text) in [
        ("agentscope_text.sse", "s1", "Hello from AgentScope."),
        // `"stream": false` is ignored by AgentApp: the same SSE stream comes back.
        (
            "agentscope_stream_false.sse",
            "4b6a5057-4f21-4f42-a426-e690f6180e61",
            "Hello from AgentScope.",
        ),
        ("builder_text.sse", "s1", "It is sunny in Paris."),
        // The `text` framework streams contents of a message it never announces.
        ("textfw_text.sse", "s1", "Hello, world!"),
    ] {
        let Some((messages, status, _, events)) = captured(file) else {
            return;
        };
        assert_eq!(messages.len(), 1, "{file}");
        assert_eq!(messages[0].role, Role::Assistant);
        assert!(
            messages[0]
                .id
                .as_ref()
                .is_some_and(|id| id.as_str().starts_with("msg_"))
        );
        assert_eq!(texts(&messages[0]), [("text", text.to_owned())], "{file}");
        assert_eq!(status, Some(RunStatus::Completed), "{file}");
        let EventKind::RunCreated {
            run_id, session_id, ..
        } = &events[0].kind
        else {
            panic!("{file}: starts with run_created");
        };
        assert!(run_id.as_str().starts_with("response_"));
        assert_eq!(session_id.as_ref().map(|id| id.as_str()), Some(session));
    }
}

#[test]
fn captured_builder_usage_is_the_runs_and_the_messages() {
    let Some((messages, _, usage, _)) = captured("builder_text.sse") else {
        return;
    };
    assert_eq!(usage, Some(Usage::new(12, 5)));
    assert_eq!(messages[0].metadata.usage, Some(Usage::new(12, 5)));
}

#[test]
fn captured_tool_streams_decode_to_one_turn() {
    let weather = json!([{"type": "text", "text": "Sunny, 25C"}]);
    for (file, parts) in [
        // The builders: `function_call` with argument deltas, `function_call_output`.
        (
            "builder_function_call.sse",
            vec![
                (
                    "tool_call",
                    "call_1 get_weather {\"city\":\"Paris\"}".to_owned(),
                ),
                (
                    "tool_result",
                    "call_1 Some(\"get_weather\") \"Sunny\"".to_owned(),
                ),
                ("text", "It is sunny in Paris.".to_owned()),
            ],
        ),
        // The agentscope adapter: `plugin_call` with argument snapshots.
        (
            "agentscope_tool.sse",
            vec![
                ("text", "Let me check.".to_owned()),
                (
                    "tool_call",
                    "call_1 get_weather {\"city\":\"Paris\"}".to_owned(),
                ),
                (
                    "tool_result",
                    format!("call_1 Some(\"get_weather\") {weather}"),
                ),
                ("text", "It is sunny in Paris.".to_owned()),
            ],
        ),
        // The same through MCP: `mcp_call` / `mcp_call_output`.
        (
            "agentscope_mcp.sse",
            vec![
                ("text", "Let me check.".to_owned()),
                (
                    "tool_call",
                    "call_1 get_weather {\"city\":\"Paris\"}".to_owned(),
                ),
                (
                    "tool_result",
                    format!("call_1 Some(\"get_weather\") {weather}"),
                ),
                ("text", "It is sunny in Paris.".to_owned()),
            ],
        ),
    ] {
        let Some((messages, status, _, events)) = captured(file) else {
            return;
        };
        assert_eq!(messages.len(), 1, "{file}");
        assert_eq!(texts(&messages[0]), parts, "{file}");
        assert_eq!(status, Some(RunStatus::Completed), "{file}");
        let deltas = events
            .iter()
            .filter(|event| matches!(&event.kind, EventKind::PartDelta { index, .. } if *index == 0 || *index == 1))
            .count();
        assert!(deltas > 0, "{file}: text or arguments stream");
    }
}

#[test]
fn captured_reasoning_keeps_the_adapters_split_answer() {
    let Some((messages, status, _, events)) = captured("agentscope_reasoning.sse") else {
        return;
    };
    assert_eq!(
        texts(&messages[0]),
        [
            ("reasoning", "User greets; reply briefly.".to_owned()),
            // The adapter shares one index between the two messages: its answer arrives as two
            // contents, and so as two parts.
            ("text", "Hi there".to_owned()),
            ("text", "!".to_owned()),
        ]
    );
    assert_eq!(status, Some(RunStatus::Completed));
    // The messages interleave: the answer starts before the reasoning completes.
    let kinds: Vec<&str> = events.iter().map(Event::name).collect();
    let first_text_delta = events
        .iter()
        .position(|event| matches!(&event.kind, EventKind::PartDelta { index: 1, .. }))
        .expect("answer streams");
    let reasoning_done = events
        .iter()
        .position(|event| matches!(&event.kind, EventKind::PartComplete { index: 0, .. }))
        .expect("reasoning completes");
    assert!(first_text_delta < reasoning_done, "{kinds:?}");
}

#[test]
fn captured_failures_keep_the_text_so_far() {
    for (file, code, text, message) in [
        (
            "agentscope_error.sse",
            "AGENT_UNKNOWN_ERROR",
            Some("Hello from AgentSc"),
            "Unknown agent error: ValueError: boom",
        ),
        (
            "agentscope_apperror.sse",
            "MODEL_TIMEOUT",
            Some("Hello from AgentSc"),
            "Model inference timed out: qwen-max, timeout limit: 30 seconds",
        ),
        // `framework="autogen"` fails before it says anything (a bug of 1.1.6.post2's Runner).
        (
            "autogen_identity_bug.sse",
            "AGENT_UNKNOWN_ERROR",
            None,
            "Unknown agent error: TypeError: Runner.stream_query.<locals>.identity_stream_adapter() got an unexpected keyword argument 'type_converters'",
        ),
    ] {
        let Some((messages, status, _, events)) = captured(file) else {
            return;
        };
        assert_eq!(status, Some(RunStatus::Failed), "{file}");
        let error = last_error(&events).expect("an error");
        assert_eq!(
            (error.code.as_str(), error.message.as_str()),
            (code, message),
            "{file}"
        );
        match text {
            Some(text) => assert_eq!(texts(&messages[0]), [("text", text.to_owned())], "{file}"),
            None => assert!(messages.is_empty(), "{file}"),
        }
    }
}

#[test]
fn captured_bad_request_is_a_rejected_run() {
    let Some((messages, status, _, events)) = captured("agentscope_badrequest.sse") else {
        return;
    };
    assert!(messages.is_empty());
    assert_eq!(status, Some(RunStatus::Rejected));
    let error = last_error(&events).expect("an error");
    assert_eq!(error.code, REQUEST_REFUSED);
    assert!(
        error
            .message
            .starts_with("1 validation error for AgentRequest\ninput\n"),
        "{}",
        error.message
    );
}

#[test]
fn awaiting_runs_are_read_from_what_the_turn_owes() {
    let approval = scenarios::by_name("approval").expect("scenario");
    let wire = encode(&mut AgentScopeEncoder::default(), &approval.events);
    let last = frames(&wire).pop().expect("frames");
    assert_eq!(last["status"], "completed");
    let (_, status, _) =
        accumulate_run(&decode_whole(&mut AgentScopeDecoder::default(), &wire).expect("decodes"));
    assert_eq!(status, Some(RunStatus::Awaiting(Awaiting::Approval)));
}

#[test]
fn the_decoder_reads_what_the_adapters_do_beyond_the_captures() {
    // ms_agent_framework: `delta: true` argument pieces with `index: null`, the last one marked
    // completed, and a plugin_call message that completes without content.
    let stream = concat!(
        "data: {\"sequence_number\":0,\"object\":\"response\",\"status\":\"created\",\"id\":\"r\",\"created_at\":1}\n\n",
        "data: {\"sequence_number\":1,\"object\":\"message\",\"status\":\"in_progress\",\"id\":\"m\",\"type\":\"plugin_call\",\"role\":\"assistant\"}\n\n",
        "data: {\"sequence_number\":2,\"object\":\"content\",\"status\":\"in_progress\",\"type\":\"data\",\"index\":null,\"delta\":true,\"msg_id\":\"m\",\"data\":{\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"{\\\"a\\\"\"}}\n\n",
        "data: {\"sequence_number\":3,\"object\":\"content\",\"status\":\"completed\",\"type\":\"data\",\"index\":null,\"delta\":true,\"msg_id\":\"m\",\"data\":{\"arguments\":\": 1}\"}}\n\n",
        "data: {\"sequence_number\":4,\"object\":\"message\",\"status\":\"completed\",\"id\":\"m\",\"type\":\"plugin_call\",\"role\":\"assistant\",\"content\":null}\n\n",
        ": a comment\n\n",
        "data: {\"sequence_number\":5,\"object\":\"future\",\"x\":1}\n\n",
        "data: [DONE]\n\n",
        "data: {\"sequence_number\":6,\"object\":\"response\",\"status\":\"completed\",\"id\":\"r\",\"created_at\":1,\"output\":[]}\n\n",
    );
    let events =
        decode_whole(&mut AgentScopeDecoder::default(), stream.as_bytes()).expect("decodes");
    let (messages, status, _) = accumulate_run(&events);
    let Part::ToolCall(call) = &messages[0].parts[0] else {
        panic!("{messages:?}")
    };
    assert_eq!(call.args, ToolArgs(json!({"a": 1})));
    assert_eq!(status, Some(RunStatus::Awaiting(Awaiting::FunctionOutput)));
}

#[test]
fn malformed_frames_are_typed_errors() {
    for (frame, what) in [
        (
            "{\"object\":\"content\",\"type\":\"text\",\"text\":5,\"msg_id\":\"m\"}",
            "text not a string",
        ),
        (
            "{\"object\":\"response\",\"status\":\"finished\",\"id\":\"r\"}",
            "a status they do not define",
        ),
        (
            "{\"object\":\"message\",\"id\":\"m\",\"role\":\"robot\"}",
            "a role they do not define",
        ),
        (
            "{\"object\":\"content\",\"msg_id\":\"m\",\"text\":\"x\"}",
            "a content without type",
        ),
        (
            "{\"object\":\"response\",\"status\":\"failed\",\"error\":{\"code\":\"X\"}}",
            "an error without message",
        ),
        ("{oops", "not JSON"),
    ] {
        let wire = format!(
            "data: {{\"object\":\"response\",\"status\":\"created\",\"id\":\"r\"}}\n\ndata: {frame}\n\n"
        );
        let err = decode_whole(&mut AgentScopeDecoder::default(), wire.as_bytes()).expect_err(what);
        assert!(
            matches!(err, DecodeError::InvalidFrame { frame: 2, .. }),
            "{what}: {err}"
        );
    }
    let err = decode_whole(
        &mut AgentScopeDecoder::default(),
        b"data: {\"object\":\"response\"",
    )
    .expect_err("cut off");
    assert!(matches!(err, DecodeError::UnexpectedEnd), "{err}");
}

#[test]
fn requests_from_the_protocol_notes_decode() {
    // The example in their `AgentRequest` model.
    let request = decode_request(br#"{"input": [
        {"role": "user", "type": "message", "content": [{"type": "text", "text": "hello"}]},
        {"type": "message", "role": "assistant", "content": [{"object": "content", "type": "text", "text": "Hello! How can I assist you today?"}]},
        {"role": "user", "type": "message", "content": [{"type": "text", "text": "What is the capital of France?"}]}
    ], "session_id": "1764056632961"}"#).expect("valid");
    assert_eq!(
        request.session_id.as_ref().map(|id| id.as_str()),
        Some("1764056632961")
    );
    assert!(request.stream);
    let input: Vec<(Role, String)> = request
        .input
        .iter()
        .map(|m| (m.role, m.content()))
        .collect();
    assert_eq!(
        input,
        [
            (Role::User, "hello".to_owned()),
            (
                Role::Assistant,
                "Hello! How can I assist you today?".to_owned()
            ),
            (Role::User, "What is the capital of France?".to_owned()),
        ]
    );
    // The Agent API's example request.
    let request = decode_request(br#"{"input": [{"role": "user", "content": [{"type": "text", "text": "Describe this image"}], "type": "message"}], "stream": true, "model": "gpt-4-vision", "temperature": 0.2}"#).expect("valid");
    assert_eq!(request.model.as_deref(), Some("gpt-4-vision"));
    assert_eq!(request.options.get("temperature"), Some(&json!(0.2)));
    assert_eq!(request.input, [Message::user("Describe this image")]);
}

#[test]
fn the_request_their_models_dump_decodes() {
    // Written by peers/agentscope/make_request.py with agentscope-runtime's own models.
    let body = std::fs::read(common::golden("agentscope", "request.json")).expect("golden request");
    let request = decode_request(&body).expect("valid");
    assert_eq!(
        request.session_id.as_ref().map(|id| id.as_str()),
        Some("ses_1")
    );
    assert_eq!(request.user_id.as_deref(), Some("user_1"));
    assert_eq!(request.request_id.as_deref(), Some("req_1"));
    assert_eq!(request.model.as_deref(), Some("qwen-max"));
    assert_eq!(request.tools[0]["function"]["name"], "get_weather");
    assert_eq!(request.options.get("temperature"), Some(&json!(0.3)));
    let summary: Vec<(Role, Vec<(&'static str, String)>)> =
        request.input.iter().map(|m| (m.role, texts(m))).collect();
    assert_eq!(
        summary,
        [
            (
                Role::System,
                vec![("text", "You are a weather bot.".to_owned())]
            ),
            (
                Role::User,
                vec![
                    ("text", "Weather in Paris?".to_owned()),
                    ("file", String::new())
                ]
            ),
            (
                Role::Assistant,
                vec![
                    ("reasoning", "Look it up.".to_owned()),
                    (
                        "tool_call",
                        "call_1 get_weather {\"city\":\"Paris\"}".to_owned()
                    ),
                    (
                        "tool_result",
                        "call_1 Some(\"get_weather\") {\"temperature\":18}".to_owned()
                    ),
                    ("tool_call", "call_2 lookup {}".to_owned()),
                    (
                        "tool_result",
                        "call_2 None [{\"type\":\"text\",\"text\":\"ok\"}]".to_owned()
                    ),
                    ("text", "It is 18 °C.".to_owned()),
                ]
            ),
            (Role::User, vec![("text", "Thanks!".to_owned())]),
        ]
    );
    let Part::File(image) = &request.input[1].parts[1] else {
        panic!("an image")
    };
    assert_eq!(
        image.source,
        FileSource::Url("https://example.com/paris.png".into())
    );
}

#[test]
fn malformed_requests_are_typed_errors() {
    for (body, what) in [
        (&br#"{"input": "notalist"}"#[..], "input not a list"),
        (br#"{"stream": true}"#, "no input"),
        (
            br#"{"input": [{"role": "robot", "content": []}]}"#,
            "a role they do not define",
        ),
        (
            br#"{"input": [{"role": "user", "content": [{"text": "no type"}]}]}"#,
            "a content without type",
        ),
        (
            br#"{"input": [{"role": "user", "content": [{"type": "text", "text": 1}]}]}"#,
            "text not a string",
        ),
        (b"not json", "not JSON"),
    ] {
        let err = decode_request(body).expect_err(what);
        assert!(
            matches!(err, DecodeError::InvalidRequest { .. }),
            "{what}: {err}"
        );
    }
}

/// A keep-alive inside a response is a message of AgentScope's own `heartbeat` type, numbered
/// in the gapless sequence; the decoder skips it.
#[test]
fn a_heartbeat_is_a_heartbeat_message_in_the_sequence() {
    use agentwire_core::{Event, EventKind, RunStatus};
    let events = [
        Event::new(
            1,
            EventKind::RunCreated {
                run_id: "run_1".into(),
                session_id: None,
                agent: None,
                parent_run_id: None,
                parent_tool_call_id: None,
            },
        ),
        Event::new(
            2,
            EventKind::RunStatus {
                status: RunStatus::InProgress,
                error: None,
                usage: None,
            },
        ),
        Event::heartbeat(2),
        Event::new(
            3,
            EventKind::RunStatus {
                status: RunStatus::Completed,
                error: None,
                usage: None,
            },
        ),
    ];
    let mut encoder = agentwire_dialects::agentscope::AgentScopeEncoder::default();
    let wire = common::encode(&mut encoder, &events);
    let text = String::from_utf8(wire.clone()).expect("utf-8");
    let objects: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("json"))
        .collect();
    assert_eq!(objects.len(), 4, "{text}");
    assert_eq!(objects[2]["type"], "heartbeat");
    assert_eq!(objects[2]["object"], "message");
    assert_eq!(objects[2]["sequence_number"], 2);
    assert_eq!(objects[3]["sequence_number"], 3);
    let decoded = common::decode_whole(
        &mut agentwire_dialects::agentscope::AgentScopeDecoder::default(),
        &wire,
    )
    .expect("decodes");
    assert!(
        decoded
            .iter()
            .all(|event| !matches!(event.kind, EventKind::MessageStart { .. }))
    );
}
