//! Golden tests: every JSON example of the AgentX format (the native spelling) and of Viber's
//! (the camelCase spelling) parses, and re-serializes to the same JSON. The examples are quoted
//! verbatim.

use agentwire_core::{JsonOptions, Message, Spelling};
use serde_json::Value;

/// AgentX's examples (streaming, the write_file flow, self-correction, a streamed tool call), in
/// order.
const SEED_000: &[&str] = &[
    r#"{ "role": "user", "parts": [{ "type": "text", "text": "Hello, world!" }] }"#,
    r#"{ "role": "assistant", "parts": [{ "type": "text", "text": "Hello" }] }"#,
    r#"{ "role": "assistant", "parts": [{ "type": "text", "text": " there!" }] }"#,
    r#"{ "role": "assistant", "parts": [ { "type": "text", "text": "Sure, I can write that file for you. I will now call the tool." }, { "type": "tool_call", "tool_call_id": "tc_123", "tool_name": "write_file", "args": { "path": "/hello.txt", "content": "Hello, world!" } } ] }"#,
    r#"{ "role": "assistant", "parts": [ { "type": "tool_result", "tool_call_id": "tc_123", "result": { "status": "success", "message": "File written successfully." } } ] }"#,
    r#"{ "role": "assistant", "parts": [ { "type": "text", "text": "I have successfully written the file to `/hello.txt`." } ] }"#,
    r#"{ "role": "assistant", "parts": [ { "type": "tool_call", "tool_call_id": "tc_456", "tool_name": "write_file", "args": { "content": "This call is missing the path." } } ] }"#,
    r#"{ "role": "assistant", "parts": [ { "type": "tool_error", "tool_call_id": "tc_456", "error_type": "VALIDATION", "message": "Validation failed for tool 'write_file': Missing required argument 'path'." } ] }"#,
    r#"{ "role": "assistant", "parts": [ { "type": "text", "text": "My apologies, I missed a required parameter. I will correct it now." }, { "type": "tool_call", "tool_call_id": "tc_789", "tool_name": "write_file", "args": { "path": "/corrected.txt", "content": "This call should now be valid." } } ] }"#,
    r#"{ "role": "assistant", "id": "msg_abc", "parts": [ { "type": "tool_call", "tool_call_id": "tc_123", "tool_name": "write_file", "args": { "path": "/hello.txt", "content": "Hello, world!" } } ] }"#,
    r#"{ "role": "assistant", "id": "msg_abc", "parts": [ { "type": "tool_result", "tool_call_id": "tc_123", "result": { "status": "success", "message": "File written successfully." } } ] }"#,
    r#"{ "role": "assistant", "id": "msg_abc", "parts": [{ "type": "text", "text": "I have" }] }"#,
    r#"{ "role": "assistant", "id": "msg_abc", "parts": [{ "type": "text", "text": " successfully" }] }"#,
    r#"{ "role": "assistant", "id": "msg_abc", "parts": [{ "type": "text", "text": " written the file." }] }"#,
];

/// Viber's examples (streaming, the write_file flow), in order.
const SEED_003: &[&str] = &[
    r#"{ "role": "user", "parts": [{ "type": "text", "text": "Hello, world!" }]}"#,
    r#"{ "role": "assistant", "parts": [{ "type": "text", "text": "Hello" }] }"#,
    r#"{ "role": "assistant", "parts": [{ "type": "text", "text": " there!" }] }"#,
    r#"{ "role": "assistant", "parts": [ { "type": "text", "text": "Sure, I can write that file for you. I will now call the tool." }, { "type": "tool-call", "toolCallId": "tc_123", "toolName": "write_file", "args": { "path": "/hello.txt", "content": "Hello, world!" } } ]}"#,
    r#"{ "role": "assistant", "parts": [ { "type": "tool-result", "toolCallId": "tc_123", "toolName": "write_file", "result": { "status": "success", "message": "File written successfully." }, "isError": false } ]}"#,
    r#"{ "role": "assistant", "parts": [ { "type": "text", "text": "I have successfully written the file to `/hello.txt`." } ]}"#,
];

#[track_caller]
fn check(json: &str, spelling: Spelling) -> Message {
    let expected: Value = serde_json::from_str(json).expect("the example is JSON");
    let message: Message = serde_json::from_str(json).expect("the example parses");
    let written = message.to_json(JsonOptions {
        spelling,
        with_content: false,
    });
    assert_eq!(written, expected, "re-serialized as {spelling:?}");
    if spelling == Spelling::Native {
        assert_eq!(
            serde_json::to_value(&message).expect("serializes"),
            expected
        );
    }
    message
}

#[test]
fn seed_000_examples_round_trip_in_the_native_spelling() {
    for json in SEED_000 {
        check(json, Spelling::Native);
    }
}

#[test]
fn seed_003_examples_round_trip_in_the_camel_spelling() {
    for json in SEED_003 {
        check(json, Spelling::Camel);
    }
}

#[test]
fn both_spellings_read_as_one_model() {
    // Examples 0–3 say the same thing in both spellings.
    for (native, camel) in SEED_000.iter().zip(SEED_003).take(4) {
        assert_eq!(
            check(native, Spelling::Native),
            check(camel, Spelling::Camel)
        );
    }
    // The camel tool result names its tool and says it is no error; the rest is the same.
    let native = check(SEED_000[4], Spelling::Native);
    let camel = check(SEED_003[4], Spelling::Camel);
    let (agentwire_core::Part::ToolResult(native), agentwire_core::Part::ToolResult(camel)) =
        (&native.parts[0], &camel.parts[0])
    else {
        panic!("both are tool results");
    };
    assert_eq!(native.result, camel.result);
    assert_eq!(camel.tool_name.as_deref(), Some("write_file"));
    assert!(!camel.is_error());
}

#[test]
fn the_self_correction_flow_reads_as_typed_parts() {
    let error = check(SEED_000[7], Spelling::Native);
    let agentwire_core::Part::ToolError(error) = &error.parts[0] else {
        panic!("a tool error");
    };
    assert_eq!(error.error_type, agentwire_core::ToolErrorKind::Validation);
    assert_eq!(error.tool_call_id, "tc_456");
}

#[test]
fn the_streamed_packets_of_one_message_share_its_id() {
    let ids: Vec<_> = SEED_000[9..]
        .iter()
        .map(|json| check(json, Spelling::Native).id)
        .collect();
    assert!(
        ids.iter()
            .all(|id| id.as_ref().is_some_and(|id| id == "msg_abc"))
    );
    let text: String = SEED_000[11..]
        .iter()
        .map(|json| check(json, Spelling::Native).content())
        .collect();
    assert_eq!(text, "I have successfully written the file.");
}
