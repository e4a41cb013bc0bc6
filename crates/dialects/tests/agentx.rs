//! AgentX packets: AgentX's own example packets decode to the messages they describe; every
//! scenario has a golden transcript; decoding what was encoded gives the canonical messages,
//! modulo the losses the module lists; bad input is a typed error.

mod common;

use agentwire_core::{Message, Part, Role};
use agentwire_dialects::DecodeError;
use agentwire_dialects::agentx::{AgentxDecoder, AgentxEncoder, decode_request};
use agentwire_testkit::stream::{Choices, events_for, tree_events};
use agentwire_testkit::{golden, scenarios, strategy};
use common::{accumulate, decode, decode_whole, encode};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::json;

/// What survives AgentX packets: adjacent parts of one text kind become one part (packets carry
/// no part boundary), and `created_at` is not sent.
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
                    _ => parts.push(part.clone()),
                }
            }
            Message {
                parts,
                created_at: None,
                ..message.clone()
            }
        })
        .collect()
}

fn sse(packets: &[serde_json::Value]) -> Vec<u8> {
    packets
        .iter()
        .flat_map(|packet| format!("data: {packet}\n\n").into_bytes())
        .collect()
}

#[test]
fn the_seed_s_streamed_tool_call_decodes_to_one_message() {
    // AgentX's streamed tool call example, packet for packet.
    let wire = sse(&[
        json!({ "role": "assistant", "id": "msg_abc", "parts": [ { "type": "tool_call", "tool_call_id": "tc_123", "tool_name": "write_file", "args": { "path": "/hello.txt", "content": "Hello, world!" } } ] }),
        json!({ "role": "assistant", "id": "msg_abc", "parts": [ { "type": "tool_result", "tool_call_id": "tc_123", "result": { "status": "success", "message": "File written successfully." } } ] }),
        json!({ "role": "assistant", "id": "msg_abc", "parts": [{ "type": "text", "text": "I have" }] }),
        json!({ "role": "assistant", "id": "msg_abc", "parts": [{ "type": "text", "text": " successfully" }] }),
        json!({ "role": "assistant", "id": "msg_abc", "parts": [{ "type": "text", "text": " written the file." }] }),
    ]);
    let events = decode_whole(&mut AgentxDecoder::default(), &wire).expect("decodes");
    let messages = accumulate(&events);
    assert_eq!(messages.len(), 1);
    let message = &messages[0];
    assert_eq!(message.id.as_ref().map(|id| id.as_str()), Some("msg_abc"));
    assert_eq!(message.parts.len(), 3);
    assert!(
        matches!(&message.parts[0], Part::ToolCall(call) if call.tool_name == "write_file" && call.args.as_value()["path"] == "/hello.txt")
    );
    assert!(
        matches!(&message.parts[1], Part::ToolResult(result) if result.result["status"] == "success")
    );
    assert_eq!(
        message.parts[2],
        Part::text("I have successfully written the file.")
    );
    // Text arrives as deltas, not as whole parts.
    let deltas = events
        .iter()
        .filter(|event| event.name() == "part_delta")
        .count();
    assert_eq!(deltas, 3);
}

#[test]
fn packets_without_an_id_form_one_message() {
    // AgentX's streaming example: two packets, no id.
    let wire = sse(&[
        json!({ "role": "assistant", "parts": [{ "type": "text", "text": "Hello" }] }),
        json!({ "role": "assistant", "parts": [{ "type": "text", "text": " there!" }] }),
    ]);
    let events = decode_whole(&mut AgentxDecoder::default(), &wire).expect("decodes");
    let messages = accumulate(&events);
    assert_eq!(
        messages,
        vec![Message::new(Role::Assistant, vec![Part::text("Hello there!")]).with_id("agentx_1")]
    );
}

/// The events of sub-agents' runs, without their numbers: what AgentX carries of them exactly.
fn nested(
    events: &[agentwire_core::Event],
) -> Vec<(agentwire_core::Namespace, agentwire_core::EventKind)> {
    events
        .iter()
        .filter(|event| !event.is_own())
        .map(|event| (event.namespace.clone(), event.kind.clone()))
        .collect()
}

#[test]
fn every_scenario_has_a_golden_transcript_that_decodes_to_its_messages() {
    for scenario in scenarios::all() {
        let wire = encode(&mut AgentxEncoder::default(), &scenario.events);
        golden::check(
            common::golden("agentx", &format!("{}.sse", scenario.name)),
            &wire,
        );
        let events = decode_whole(&mut AgentxDecoder::default(), &wire).expect("decodes");
        assert_eq!(
            nested(&events),
            nested(&scenario.events),
            "{}",
            scenario.name
        );
        assert_eq!(
            accumulate(&events),
            lossy(&scenario.messages),
            "{}",
            scenario.name
        );
        // The run's end travels beside the packets.
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
fn the_seed_s_packets_are_what_the_encoder_writes() {
    let scenario = scenarios::tool_call();
    let wire = encode(&mut AgentxEncoder::default(), &scenario.events);
    let wire = String::from_utf8(wire).expect("utf-8");
    let packets: Vec<serde_json::Value> = wire
        .split("\n\n")
        .filter(|frame| !frame.contains("\nevent: "))
        .filter_map(|frame| frame.split_once("data: "))
        .map(|(_, data)| serde_json::from_str(data).expect("json"))
        .collect();
    assert!(packets.iter().all(|packet| {
        packet["id"] == "msg_1"
            && packet["role"] == "assistant"
            && packet["parts"]
                .as_array()
                .is_some_and(|parts| parts.len() <= 1)
    }));
    let call = packets
        .iter()
        .find(|packet| packet["parts"][0]["type"] == "tool_call")
        .expect("a tool_call packet");
    assert_eq!(call["parts"][0]["args"], json!({"city": "Paris"}));
    assert!(
        packets.iter().any(|packet| packet["parts"][0]
            == json!({"type": "text", "text": "Let me check the weather."}))
    );
}

#[test]
fn requests_come_as_a_message_a_list_or_an_envelope() {
    let one = decode_request(
        br#"{ "role": "user", "parts": [{ "type": "text", "text": "Hello, world!" }] }"#,
    )
    .expect("one message");
    assert_eq!(one.messages, vec![Message::user("Hello, world!")]);
    let many =
        decode_request(br#"[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]"#)
            .expect("a list");
    assert_eq!(many.messages.len(), 2);
    let envelope = decode_request(
        br#"{"messages": [{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}], "session_id": "ses_9", "agent": "coder"}"#,
    )
    .expect("an envelope");
    assert_eq!(
        envelope.session_id.as_ref().map(|id| id.as_str()),
        Some("ses_9")
    );
    assert_eq!(envelope.agent.as_deref(), Some("coder"));
    assert_eq!(envelope.messages, vec![Message::user("Hi")]);
}

#[test]
fn bad_requests_and_frames_are_typed_errors() {
    for body in [
        &b"{"[..],
        b"{\"role\": \"robot\", \"parts\": []}",
        b"42",
        b"{\"messages\": 3}",
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
    for wire in [
        &b"data: {\"role\": \"assistant\", \"parts\": [{\"type\": \"text\"}]}\n\n"[..],
        b"data: not json\n\n",
        b"event: run_status\ndata: {\"seq\": 1}\n\n",
    ] {
        assert!(
            matches!(
                decode_whole(&mut AgentxDecoder::default(), wire),
                Err(DecodeError::InvalidFrame { frame: 1, .. })
            ),
            "{}",
            String::from_utf8_lossy(wire)
        );
    }
    assert!(matches!(
        decode_whole(&mut AgentxDecoder::default(), b"data: {\"role\""),
        Err(DecodeError::UnexpectedEnd)
    ));
}

proptest! {
    #[test]
    fn decoding_what_was_encoded_gives_the_messages_modulo_the_losses(
        message in strategy::message(),
        picks in vec(any::<Index>(), 0..24),
        cuts in vec(any::<Index>(), 0..8),
    ) {
        let events = events_for(&message, &mut Choices::new(picks));
        let wire = encode(&mut AgentxEncoder::default(), &events);
        let decoded = decode(&mut AgentxDecoder::default(), &wire, &cuts).expect("decodes");
        let expected = lossy(std::slice::from_ref(&message));
        // Messages without an id cannot be streamed; events_for gives every message one.
        prop_assert_eq!(accumulate(&decoded), expected);
    }

    /// Sub-agents' runs ride beside the packets, exactly; the run's own message is as ever.
    #[test]
    fn a_tree_of_runs_keeps_its_nested_events(
        messages in proptest::array::uniform4(strategy::message()),
        mut choices in any::<Choices>(),
        interleaving in vec(any::<Index>(), 0..300),
        cuts in vec(any::<Index>(), 0..8),
    ) {
        let [a, b, c, d] = &messages;
        let events = tree_events([a, b, c, d], &mut choices, &interleaving);
        let wire = encode(&mut AgentxEncoder::default(), &events);
        let decoded = decode(&mut AgentxDecoder::default(), &wire, &cuts).expect("decodes");
        prop_assert_eq!(nested(&decoded), nested(&events));
        let mut own = a.clone();
        own.id = Some("msg_1".into());
        prop_assert_eq!(accumulate(&decoded), lossy(std::slice::from_ref(&own)));
    }
}
