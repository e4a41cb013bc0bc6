//! Viber packets: Viber's own examples are golden transcripts whose packets hold their parts
//! verbatim; every scenario has a golden transcript; the packets parse as Viber's TypeScript
//! interfaces say (test-only structs that deny unknown fields); decoding what
//! was encoded gives the canonical messages, modulo the losses the module lists; requests in
//! every form, and bad input is a typed error.

mod common;

use agentwire_core::part::FileSource;
use agentwire_core::{
    Awaiting, Emitter, EventKind, Message, MessageBuilder, MessageStart, Part, Role, RunStatus,
    ToolErrorKind, ToolResult,
};
use agentwire_dialects::viber::{ViberDecoder, ViberEncoder, decode_request};
use agentwire_dialects::{DecodeError, Dialect};
use agentwire_testkit::stream::{Choices, events_for};
use agentwire_testkit::{golden, scenarios, strategy};
use common::{accumulate, decode, decode_whole, encode};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde::Deserialize;
use serde_json::Value;

/// Viber's streaming example: the assistant's packets.
const SEED_3_1: &[&str] = &[
    r#"{ "role": "assistant", "parts": [{ "type": "text", "text": "Hello" }] }"#,
    r#"{ "role": "assistant", "parts": [{ "type": "text", "text": " there!" }] }"#,
];

/// Viber's tool-call example: the assistant's messages in order.
const SEED_3_2: &[&str] = &[
    r#"{ "role": "assistant", "parts": [ { "type": "text", "text": "Sure, I can write that file for you. I will now call the tool." }, { "type": "tool-call", "toolCallId": "tc_123", "toolName": "write_file", "args": { "path": "/hello.txt", "content": "Hello, world!" } } ]}"#,
    r#"{ "role": "assistant", "parts": [ { "type": "tool-result", "toolCallId": "tc_123", "toolName": "write_file", "result": { "status": "success", "message": "File written successfully." }, "isError": false } ]}"#,
    r#"{ "role": "assistant", "parts": [ { "type": "text", "text": "I have successfully written the file to `/hello.txt`." } ]}"#,
];

/// The run of one of Viber's examples: the assistant's turn built from the example's parts, text
/// streamed as its packets split it, every other part whole.
fn seed_run(packets: &[&str]) -> Vec<agentwire_core::Event> {
    let mut out = Emitter::default();
    out.emit(EventKind::RunCreated {
        run_id: "run_1".into(),
        session_id: Some("space_1".into()),
        agent: Some("assistant".into()),
        parent_run_id: None,
        parent_tool_call_id: None,
    });
    out.emit(EventKind::RunStatus {
        status: RunStatus::InProgress,
        error: None,
        usage: None,
    });
    let mut builder = MessageBuilder::start(&mut out, MessageStart::new("msg_1", Role::Assistant));
    for packet in packets {
        let message: Message = serde_json::from_str(packet).expect("the example parses");
        for part in message.parts {
            match part {
                Part::Text(text) => builder.text_delta(&mut out, text.text),
                whole => {
                    builder.close_text(&mut out);
                    builder.part(&mut out, whole);
                }
            }
        }
        // The tool-call example's packets are separate messages: a text never runs on into
        // the next.
        if packets.len() > 2 {
            builder.close_text(&mut out);
        }
    }
    builder.finish(&mut out);
    out.emit(EventKind::RunStatus {
        status: RunStatus::Completed,
        error: None,
        usage: None,
    });
    out.drain().collect()
}

/// The packets of a transcript (frames without an event name), as JSON.
fn packets(wire: &[u8]) -> Vec<Value> {
    String::from_utf8(wire.to_vec())
        .expect("utf-8")
        .split("\n\n")
        .filter(|frame| !frame.contains("event: "))
        .filter_map(|frame| frame.split_once("data: "))
        .map(|(_, data)| serde_json::from_str(data).expect("json"))
        .collect()
}

/// The status frames of a transcript, as JSON.
fn statuses(wire: &[u8]) -> Vec<Value> {
    String::from_utf8(wire.to_vec())
        .expect("utf-8")
        .split("\n\n")
        .filter(|frame| frame.contains("event: status\n"))
        .filter_map(|frame| frame.split_once("data: "))
        .map(|(_, data)| serde_json::from_str(data).expect("json"))
        .collect()
}

fn parts_of(packets: &[Value]) -> Vec<Value> {
    packets
        .iter()
        .flat_map(|packet| packet["parts"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[test]
fn the_seed_s_examples_are_golden_transcripts_of_the_seed_s_parts() {
    for (name, seed) in [("seed_3_1", SEED_3_1), ("seed_3_2", SEED_3_2)] {
        let events = seed_run(seed);
        let wire = encode(&mut ViberEncoder::default(), &events);
        golden::check(common::golden("viber", &format!("{name}.sse")), &wire);
        // Our packets carry exactly the example's parts, in its order.
        let expected: Vec<Value> = seed
            .iter()
            .map(|packet| serde_json::from_str::<Value>(packet).expect("json"))
            .collect();
        assert_eq!(parts_of(&packets(&wire)), parts_of(&expected), "{name}");
        // And they decode back to the message the example's packets make.
        let decoded =
            accumulate(&decode_whole(&mut ViberDecoder::default(), &wire).expect("decodes"));
        assert_eq!(decoded, accumulate(&events), "{name}");
    }
}

#[test]
fn the_seed_s_packets_decode_as_a_stream() {
    let wire: Vec<u8> = SEED_3_1
        .iter()
        .flat_map(|packet| format!("data: {packet}\n\n").into_bytes())
        .collect();
    let messages = accumulate(&decode_whole(&mut ViberDecoder::default(), &wire).expect("decodes"));
    assert_eq!(
        messages,
        vec![Message::new(Role::Assistant, vec![Part::text("Hello there!")]).with_id("viber_1")]
    );
    assert_eq!(
        Dialect::sniff(&wire),
        Some(Dialect::Agentx),
        "text alone says no dialect"
    );

    let wire: Vec<u8> = SEED_3_2
        .iter()
        .flat_map(|packet| format!("data: {packet}\n\n").into_bytes())
        .collect();
    assert_eq!(Dialect::sniff(&wire), Some(Dialect::Viber));
    let messages = accumulate(&decode_whole(&mut ViberDecoder::default(), &wire).expect("decodes"));
    let parts = &messages[0].parts;
    assert!(matches!(&parts[1], Part::ToolCall(call) if call.tool_name == "write_file"));
    assert!(matches!(
        &parts[2],
        Part::ToolResult(ToolResult {
            is_error: Some(false),
            ..
        })
    ));
    assert_eq!(
        messages[0].content(),
        "Sure, I can write that file for you. I will now call the tool.\nI have successfully written the file to `/hello.txt`."
    );
}

/// What survives Viber packets: adjacent parts of one text kind become one part; a file's
/// `data` is a URL when it holds a `:`.
fn lossy(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .map(|message| {
            let mut parts: Vec<Part> = Vec::new();
            for part in &message.parts {
                match (parts.last_mut(), part) {
                    (Some(Part::Text(last)), Part::Text(next)) => last.text.push_str(&next.text),
                    (Some(Part::Reasoning(last)), Part::Reasoning(next)) => {
                        last.text.push_str(&next.text)
                    }
                    (Some(Part::Refusal(last)), Part::Refusal(next)) => {
                        last.text.push_str(&next.text)
                    }
                    (_, Part::File(file)) => {
                        let mut file = file.clone();
                        file.source = match file.source {
                            FileSource::Url(at) | FileSource::Data(at) if at.contains(':') => {
                                FileSource::Url(at)
                            }
                            FileSource::Url(at) | FileSource::Data(at) => FileSource::Data(at),
                        };
                        parts.push(Part::File(file));
                    }
                    _ => parts.push(part.clone()),
                }
            }
            Message {
                parts,
                ..message.clone()
            }
        })
        .collect()
}

#[test]
fn every_scenario_has_a_golden_transcript_that_decodes_to_its_messages() {
    for scenario in scenarios::all() {
        let wire = encode(&mut ViberEncoder::default(), &scenario.events);
        golden::check(
            common::golden("viber", &format!("{}.sse", scenario.name)),
            &wire,
        );
        assert_eq!(
            Dialect::sniff(&wire),
            Some(Dialect::Viber),
            "{}",
            scenario.name
        );
        let events = decode_whole(&mut ViberDecoder::default(), &wire).expect("decodes");
        assert_eq!(
            accumulate(&events),
            lossy(&scenario.messages),
            "{}",
            scenario.name
        );
        // The run's start and end travel as status frames.
        assert_eq!(events[0].kind, scenario.events[0].kind, "{}", scenario.name);
        let last = events.last().expect("events");
        assert_eq!(
            last.kind,
            scenario.events.last().expect("events").kind,
            "{}",
            scenario.name
        );
    }
}

#[test]
fn the_status_is_streaming_then_idle_or_awaiting_approval_and_names_the_space() {
    let check = |scenario: scenarios::Scenario, last: &str| {
        let wire = encode(&mut ViberEncoder::default(), &scenario.events);
        let statuses = statuses(&wire);
        assert_eq!(statuses[0]["status"], "streaming");
        assert_eq!(statuses[0]["spaceId"], "ses_1");
        assert_eq!(statuses[0]["runId"], "run_1");
        assert!(statuses.iter().all(|status| status["spaceId"] == "ses_1"));
        assert_eq!(
            statuses.last().expect("a status")["status"],
            last,
            "{}",
            scenario.name
        );
    };
    check(scenarios::text(), "idle");
    check(scenarios::approval(), "awaiting-approval");
    check(scenarios::client_tool(), "idle");
    check(scenarios::failed(), "idle");
}

#[test]
fn a_tool_error_is_a_tool_result_with_is_error() {
    let wire = encode(
        &mut ViberEncoder::default(),
        &scenarios::tool_error().events,
    );
    let parts = parts_of(&packets(&wire));
    let error = parts
        .iter()
        .find(|part| part["isError"] == true)
        .expect("a failed result");
    assert_eq!(error["type"], "tool-result");
    assert_eq!(error["result"]["errorType"], "VALIDATION");
    assert!(error["result"]["message"].is_string());
}

/// Viber's TypeScript interfaces, for the packets' parts: anything else in them fails the test.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
#[allow(dead_code)]
enum SeedPart {
    Text {
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCall {
        tool_call_id: String,
        tool_name: String,
        args: serde_json::Map<String, Value>,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        tool_call_id: String,
        tool_name: String,
        result: Value,
        is_error: Option<bool>,
    },
    Reasoning {
        content: String,
    },
    #[serde(rename_all = "camelCase")]
    File {
        data: String,
        mime_type: String,
        /// agentwire's one addition to a Viber part: the file's name, when it has one.
        filename: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    StepStart {
        step_id: String,
        step_name: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Artifact {
        artifact_id: String,
        title: String,
        version: Option<u32>,
        preview: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    PlanUpdate {
        plan_id: String,
        action: String,
        details: Option<serde_json::Map<String, Value>>,
    },
}

/// Viber's `XMessage`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct SeedMessage {
    id: String,
    role: String,
    parts: Vec<Value>,
    metadata: Option<serde_json::Map<String, Value>>,
    content: Option<String>,
}

#[test]
fn packets_are_the_seed_s_xmessages() {
    let seed_types = [
        "text",
        "tool-call",
        "tool-result",
        "reasoning",
        "file",
        "step-start",
        "artifact",
        "plan-update",
    ];
    for scenario in scenarios::all() {
        let wire = encode(&mut ViberEncoder::default(), &scenario.events);
        for packet in packets(&wire) {
            let message: SeedMessage =
                serde_json::from_value(packet.clone()).unwrap_or_else(|error| {
                    panic!("{}: {packet} is no XMessage: {error}", scenario.name)
                });
            for part in message.parts {
                if seed_types.contains(&part["type"].as_str().unwrap_or("")) {
                    serde_json::from_value::<SeedPart>(part.clone()).unwrap_or_else(|error| {
                        panic!("{}: {part} is not as Viber says: {error}", scenario.name)
                    });
                }
            }
            // A packet with text says it in `content` too.
            if packet["parts"][0]["type"] == "text" {
                assert_eq!(packet["content"], packet["parts"][0]["text"]);
            }
        }
    }
}

#[test]
fn requests_come_as_a_message_a_list_or_an_envelope() {
    // The user message of Viber's streaming example.
    let one = decode_request(
        br#"{ "role": "user", "parts": [{ "type": "text", "text": "Hello, world!" }]}"#,
    )
    .expect("one message");
    assert_eq!(one.messages, vec![Message::user("Hello, world!")]);
    assert_eq!(one.space_id, None);
    // The plain-text fallback.
    let content = decode_request(br#"{"role": "user", "content": "Hi"}"#).expect("content");
    assert_eq!(content.messages, vec![Message::user("Hi")]);
    let many =
        decode_request(br#"[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]"#)
            .expect("a list");
    assert_eq!(many.messages.len(), 2);
    let envelope = decode_request(
        br#"{"spaceId": "space_9", "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Again"}], "temperature": 0.5}"#,
    )
    .expect("an envelope");
    assert_eq!(
        envelope.space_id.as_ref().map(|id| id.as_str()),
        Some("space_9")
    );
    assert_eq!(envelope.new_messages(), &[Message::user("Again")]);
    assert_eq!(envelope.settings.temperature, Some(0.5));
    let single = decode_request(
        br#"{"spaceId": "space_9", "message": {"role": "user", "parts": [{"type": "approval-response", "approvalId": "apr_1", "approved": true}]}}"#,
    )
    .expect("one message in an envelope");
    assert!(matches!(
        &single.messages[0].parts[0],
        Part::ApprovalResponse(response) if response.approved && response.approval_id == "apr_1"
    ));
    // A client tool's failure, as Viber spells failures; unknown part types are skipped.
    let failed = decode_request(
        br#"{"role": "user", "parts": [{"type": "tool-result", "toolCallId": "q1", "toolName": "confirm", "result": {"errorType": "EXECUTION", "message": "no"}, "isError": true}, {"type": "hologram", "x": 1}]}"#,
    )
    .expect("a tool error");
    assert_eq!(failed.messages[0].parts.len(), 1);
    assert!(matches!(
        &failed.messages[0].parts[0],
        Part::ToolError(error) if error.error_type == ToolErrorKind::Execution && error.message == "no"
    ));
}

#[test]
fn bad_requests_and_frames_are_typed_errors() {
    for body in [
        &b"{"[..],
        b"{\"role\": \"robot\", \"parts\": []}",
        b"42",
        b"{\"messages\": 3}",
        b"{\"spaceId\": 7, \"messages\": []}",
        b"{\"role\": \"user\", \"parts\": [{\"type\": \"tool-call\"}]}",
    ] {
        assert!(
            matches!(
                decode_request(body),
                Err(DecodeError::InvalidRequest { .. })
            ),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    assert!(matches!(
        decode_request(br#"{"messages": [], "temperature": 9}"#),
        Err(DecodeError::InvalidField(_))
    ));
    for wire in [
        &b"data: {\"role\": \"assistant\", \"parts\": [{\"type\": \"text\"}]}\n\n"[..],
        b"data: not json\n\n",
        b"event: status\ndata: {\"status\": \"sleeping\"}\n\n",
        b"event: status\ndata: {\"status\": \"idle\", \"runStatus\": \"napping\"}\n\n",
        b"event: error\ndata: {\"code\": 1}\n\n",
    ] {
        assert!(
            matches!(
                decode_whole(&mut ViberDecoder::default(), wire),
                Err(DecodeError::InvalidFrame { frame: 1, .. })
            ),
            "{}",
            String::from_utf8_lossy(wire)
        );
    }
    assert!(matches!(
        decode_whole(&mut ViberDecoder::default(), b"data: {\"role\""),
        Err(DecodeError::UnexpectedEnd)
    ));
}

#[test]
fn a_status_without_agentwire_s_fields_is_read_from_the_chat_status() {
    let wire = b"event: status\ndata: {\"status\": \"awaiting-approval\"}\n\n";
    let events = decode_whole(&mut ViberDecoder::default(), wire).expect("decodes");
    assert_eq!(
        events[0].kind,
        EventKind::RunStatus {
            status: RunStatus::Awaiting(Awaiting::Approval),
            error: None,
            usage: None
        }
    );
    let wire = b"event: status\ndata: {\"status\": \"idle\", \"later\": true}\n\n";
    let events = decode_whole(&mut ViberDecoder::default(), wire).expect("decodes");
    assert!(matches!(
        events[0].kind,
        EventKind::RunStatus {
            status: RunStatus::Completed,
            ..
        }
    ));
    // Frames of other names are skipped.
    let wire = b"event: telemetry\ndata: {}\n\n";
    assert!(
        decode_whole(&mut ViberDecoder::default(), wire)
            .expect("decodes")
            .is_empty()
    );
}

proptest! {
    #[test]
    fn decoding_what_was_encoded_gives_the_messages_modulo_the_losses(
        message in strategy::message(),
        picks in vec(any::<Index>(), 0..24),
        cuts in vec(any::<Index>(), 0..8),
    ) {
        let events = events_for(&message, &mut Choices::new(picks));
        let wire = encode(&mut ViberEncoder::default(), &events);
        let decoded = decode(&mut ViberDecoder::default(), &wire, &cuts).expect("decodes");
        let expected = lossy(std::slice::from_ref(&message));
        prop_assert_eq!(accumulate(&decoded), expected);
    }
}
