#![allow(clippy::unwrap_used)]

use agentwire_core::GenerationSettings;
use serde_json::json;

use super::*;

/// Messages from their native JSON.
fn history(messages: Value) -> Vec<Message> {
    serde_json::from_value(messages).unwrap()
}

/// Checks the `input` items a history maps to.
#[track_caller]
fn check(messages: Value, expect: Value) {
    let history = history(messages);
    assert_eq!(to_value(&input(&history)), expect);
}

fn settings(extra_body: &Map<String, Value>) -> Settings<'_> {
    Settings {
        model: "o4-mini",
        temperature: None,
        max_output_tokens: None,
        reasoning_effort: None,
        reasoning_summary: None,
        extra_body,
    }
}

const ENCRYPTED: &str = "gAAAAABoISQ24OyVRYbkYfukLbSRHz0Q8Y8T1gl1MyyOnyYTr0p2Njs4yqo1Z3vD";

#[test]
fn the_body_has_instructions_tools_store_false_and_the_settings() {
    let request = BrainRequest {
        system: Some("Be brief.".into()),
        messages: vec![Message::user("Hi")],
        tools: vec![ToolSpec::new(
            "write_file",
            "Write a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )]
        .into(),
        step: 0,
        settings: GenerationSettings::default(),
        trace_context: Default::default(),
    };
    let none = Map::new();
    let configured = Settings {
        temperature: Some(0.5),
        max_output_tokens: Some(1000),
        reasoning_effort: Some("low"),
        reasoning_summary: Some("auto"),
        ..settings(&none)
    };
    assert_eq!(
        request_body(configured, &request),
        json!({
            "model": "o4-mini",
            "instructions": "Be brief.",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}],
            "tools": [{
                "type": "function",
                "name": "write_file",
                "description": "Write a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                "strict": false
            }],
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "temperature": 0.5,
            "max_output_tokens": 1000,
            "reasoning": {"effort": "low", "summary": "auto"}
        })
    );

    // extra_body adds and removes keys; the run's settings win over both.
    let extra: Map<String, Value> = serde_json::from_value(json!({
        "include": null,
        "service_tier": "flex",
        "top_p": 0.1
    }))
    .unwrap();
    let request = BrainRequest {
        settings: GenerationSettings {
            model: Some("gpt-5".into()),
            temperature: Some(0.2),
            top_p: Some(0.9),
            max_tokens: Some(50),
            ..GenerationSettings::default()
        },
        ..BrainRequest::new(vec![Message::user("Hi")])
    };
    assert_eq!(
        request_body(settings(&extra), &request),
        json!({
            "model": "gpt-5",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}],
            "stream": true,
            "store": false,
            "service_tier": "flex",
            "temperature": 0.2,
            "top_p": 0.9,
            "max_output_tokens": 50
        })
    );
}

/// The turn of a reasoning model that called a tool, read its result and answered, then the
/// next question: each reasoning item goes back as it came, before what followed it.
#[test]
fn a_multi_turn_history_with_a_call_and_reasoning_items() {
    let first = json!({
        "id": "rs_1", "type": "reasoning", "encrypted_content": ENCRYPTED,
        "summary": [{"type": "summary_text", "text": "Write the file."}]
    });
    let second =
        json!({"id": "rs_2", "type": "reasoning", "summary": [], "encrypted_content": "gAAB"});
    check(
        json!([
            {"role": "system", "parts": [{"type": "text", "text": "Rules."}]},
            {"role": "user", "parts": [{"type": "text", "text": "Write a.txt"}]},
            {"role": "assistant", "parts": [
                {"type": "step_start", "step_id": "s1"},
                {"type": "reasoning", "text": "Write the file."},
                {"type": "data", "name": "openai.reasoning", "data": first},
                {"type": "text", "text": "Writing."},
                {"type": "tool_call", "tool_call_id": "call_1", "tool_name": "write_file",
                 "args": {"path": "a.txt"}},
                {"type": "tool_call", "tool_call_id": "call_2", "tool_name": "write_file",
                 "args": "{\"path\": "},
                {"type": "tool_result", "tool_call_id": "call_1", "result": {"ok": true}},
                {"type": "tool_error", "tool_call_id": "call_2", "error_type": "VALIDATION",
                 "message": "the arguments are not JSON"},
                {"type": "step_start", "step_id": "s2"},
                {"type": "data", "name": "openai.reasoning", "data": second},
                {"type": "text", "text": "Done"},
                {"type": "text", "text": ", mostly."},
                {"type": "refusal", "text": "I won't do the second."},
                {"type": "data", "name": "openai.annotation", "data": {"type": "url_citation"}}
            ]},
            {"role": "user", "parts": [{"type": "text", "text": "Thanks"}]}
        ]),
        json!([
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Rules."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Write a.txt"}]},
            first,
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Writing.", "annotations": []}
            ]},
            {"type": "function_call", "call_id": "call_1", "name": "write_file",
             "arguments": "{\"path\":\"a.txt\"}"},
            {"type": "function_call", "call_id": "call_2", "name": "write_file",
             "arguments": "\"{\\\"path\\\": \""},
            {"type": "function_call_output", "call_id": "call_1", "output": "{\"ok\":true}"},
            {"type": "function_call_output", "call_id": "call_2",
             "output": "{\"error\":{\"type\":\"VALIDATION\",\"message\":\"the arguments are not JSON\"}}"},
            second,
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Done", "annotations": []},
                {"type": "output_text", "text": ", mostly.", "annotations": []},
                {"type": "refusal", "refusal": "I won't do the second."}
            ]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks"}]}
        ]),
    );
}

#[test]
fn reasoning_that_cannot_go_back_is_left_out() {
    check(
        json!([
            {"role": "user", "parts": [{"type": "text", "text": "Hi"}]},
            {"role": "assistant", "parts": [
                // Another provider's reasoning, and an item stored without its encrypted content.
                {"type": "reasoning", "text": "Thinking."},
                {"type": "data", "name": "openai.reasoning", "data": {"id": "rs_1", "type": "reasoning", "summary": []}},
                {"type": "text", "text": "Hello."},
                // A turn cut short right after its reasoning.
                {"type": "step_start", "step_id": "s2"},
                {"type": "reasoning", "text": "More."},
                {"type": "data", "name": "openai.reasoning", "data": {"id": "rs_2", "type": "reasoning", "summary": [], "encrypted_content": "gAAB"}}
            ]}
        ]),
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Hello.", "annotations": []}
            ]}
        ]),
    );
}

#[test]
fn results_the_tool_marked_as_errors_and_unfinished_calls() {
    check(
        json!([
            {"role": "assistant", "parts": [
                {"type": "tool_call", "tool_call_id": "a", "tool_name": "t", "args": {}},
                {"type": "tool_call", "tool_call_id": "b", "tool_name": "t", "args": {}},
                {"type": "tool_result", "tool_call_id": "a", "result": "nope", "is_error": true}
            ]}
        ]),
        json!([
            {"type": "function_call", "call_id": "a", "name": "t", "arguments": "{}"},
            {"type": "function_call", "call_id": "b", "name": "t", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "a", "output": "{\"error\":\"nope\"}"},
            {"type": "function_call_output", "call_id": "b",
             "output": "{\"error\":{\"type\":\"EXECUTION\",\"message\":\"The call did not finish (the run was canceled or interrupted before it returned).\"}}"}
        ]),
    );
}

#[test]
fn user_files_are_images_and_input_files() {
    check(
        json!([
            {"role": "user", "parts": [
                {"type": "text", "text": "Look"},
                {"type": "file", "media_type": "image/png", "data": "iVBORw0K"},
                {"type": "file", "media_type": "image/jpeg", "url": "https://example.com/cat.jpg"},
                {"type": "file", "media_type": "application/pdf", "data": "JVBERi0x", "filename": "a.pdf"},
                {"type": "file", "media_type": "application/pdf", "url": "https://example.com/b.pdf"},
                {"type": "data", "name": "weather", "data": {"c": 3}}
            ]}
        ]),
        json!([
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Look"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0K", "detail": "auto"},
                {"type": "input_image", "image_url": "https://example.com/cat.jpg", "detail": "auto"},
                {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0x"},
                {"type": "input_file", "filename": "file", "file_url": "https://example.com/b.pdf"},
                {"type": "input_text", "text": "{\"type\":\"data\",\"name\":\"weather\",\"data\":{\"c\":3}}"}
            ]}
        ]),
    );
}
