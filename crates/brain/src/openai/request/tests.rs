#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

/// Messages from their native JSON.
fn history(messages: Value) -> Vec<Message> {
    serde_json::from_value(messages).unwrap()
}

/// Checks the `messages` a history maps to.
#[track_caller]
fn check(messages_json: Value, expect: Value) {
    let history = history(messages_json);
    assert_eq!(to_value(&messages(None, &history)), expect);
}

#[test]
fn the_body_has_the_settings_tools_and_stream_options() {
    let extra: Map<String, Value> = serde_json::from_value(json!({
        "reasoning_effort": "low",
        "stream_options": null,
        "max_tokens": 99
    }))
    .unwrap();
    let settings = Settings {
        model: "gpt-4o-mini",
        temperature: Some(0.5),
        max_tokens: Some(10),
        extra_body: &Map::new(),
    };
    let request = BrainRequest {
        system: Some("Be brief.".into()),
        messages: vec![Message::user("Hi")],
        tools: vec![
            ToolSpec::new(
                "write_file",
                "Write a file",
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            ),
            ToolSpec::new("now", "", json!({"type": "object"})),
        ]
        .into(),
        step: 3,
        settings: Default::default(),
        trace_context: Default::default(),
    };
    assert_eq!(
        request_body(settings, &request),
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hi"}
            ],
            "tools": [
                {"type": "function", "function": {
                    "name": "write_file",
                    "description": "Write a file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}
                }},
                {"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.5,
            "max_tokens": 10
        })
    );

    let settings = Settings {
        extra_body: &extra,
        temperature: None,
        ..settings
    };
    let request = BrainRequest::new(vec![Message::user("Hi")]);
    assert_eq!(
        request_body(settings, &request),
        json!({
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "Hi"}],
            "stream": true,
            "max_tokens": 99,
            "reasoning_effort": "low"
        })
    );
}

#[test]
fn a_multi_step_turn_becomes_assistant_and_tool_messages() {
    check(
        json!([
            {"role": "user", "parts": [{"type": "text", "text": "Write a.txt"}]},
            {"role": "assistant", "parts": [
                {"type": "step_start", "step_id": "s1"},
                {"type": "reasoning", "text": "I need the tool."},
                {"type": "text", "text": "Writing. "},
                {"type": "tool_call", "tool_call_id": "c1", "tool_name": "write_file",
                 "args": {"content": "A"}},
                {"type": "tool_call", "tool_call_id": "c2", "tool_name": "list_files", "args": {}},
                {"type": "tool_error", "tool_call_id": "c1", "tool_name": "write_file",
                 "error_type": "VALIDATION", "message": "missing required argument 'path'"},
                {"type": "tool_result", "tool_call_id": "c2", "result": ["b.txt"]},
                {"type": "step_start", "step_id": "s2"},
                {"type": "tool_call", "tool_call_id": "c3", "tool_name": "write_file",
                 "args": {"path": "a.txt", "content": "A"}},
                {"type": "tool_result", "tool_call_id": "c3", "result": "written"},
                {"type": "step_start", "step_id": "s3"},
                {"type": "text", "text": "Done"},
                {"type": "text", "text": "."}
            ]}
        ]),
        json!([
            {"role": "user", "content": "Write a.txt"},
            {"role": "assistant", "content": "Writing. ", "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "write_file", "arguments": "{\"content\":\"A\"}"}},
                {"id": "c2", "type": "function",
                 "function": {"name": "list_files", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "c1",
             "content": "{\"error\":{\"type\":\"VALIDATION\",\"message\":\"missing required argument 'path'\"}}"},
            {"role": "tool", "tool_call_id": "c2", "content": "[\"b.txt\"]"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c3", "type": "function", "function": {
                    "name": "write_file",
                    "arguments": "{\"path\":\"a.txt\",\"content\":\"A\"}"
                }}
            ]},
            {"role": "tool", "tool_call_id": "c3", "content": "written"},
            {"role": "assistant", "content": "Done."}
        ]),
    );
}

#[test]
fn steps_are_found_without_step_starts_and_across_messages() {
    // Self-correction as AgentX writes it: the call, its error and the correction as separate
    // messages.
    check(
        json!([
            {"role": "assistant", "parts": [{"type": "tool_call", "tool_call_id": "tc_456",
                "tool_name": "write_file", "args": {"content": "This call is missing the path."}}]},
            {"role": "assistant", "parts": [{"type": "tool_error", "tool_call_id": "tc_456",
                "error_type": "VALIDATION",
                "message": "Validation failed for tool 'write_file': Missing required argument 'path'."}]},
            {"role": "assistant", "parts": [
                {"type": "text", "text": "My apologies."},
                {"type": "tool_call", "tool_call_id": "tc_789", "tool_name": "write_file",
                 "args": {"path": "/corrected.txt"}},
                {"type": "tool_result", "tool_call_id": "tc_789", "result": {"status": "success"}},
                {"type": "text", "text": "Written."}
            ]}
        ]),
        json!([
            {"role": "assistant", "content": null, "tool_calls": [{"id": "tc_456", "type": "function",
                "function": {"name": "write_file",
                             "arguments": "{\"content\":\"This call is missing the path.\"}"}}]},
            {"role": "tool", "tool_call_id": "tc_456", "content":
                "{\"error\":{\"type\":\"VALIDATION\",\"message\":\"Validation failed for tool 'write_file': Missing required argument 'path'.\"}}"},
            {"role": "assistant", "content": "My apologies.", "tool_calls": [{"id": "tc_789",
                "type": "function",
                "function": {"name": "write_file", "arguments": "{\"path\":\"/corrected.txt\"}"}}]},
            {"role": "tool", "tool_call_id": "tc_789", "content": "{\"status\":\"success\"}"},
            {"role": "assistant", "content": "Written."}
        ]),
    );
}

#[test]
fn client_tool_outputs_follow_their_call() {
    check(
        json!([
            {"role": "assistant", "parts": [
                {"type": "text", "text": "Where are you?"},
                {"type": "tool_call", "tool_call_id": "loc", "tool_name": "get_location", "args": {}},
                {"type": "approval_request", "approval_id": "a1", "tool_call_id": "loc"}
            ]},
            {"role": "user", "parts": [
                {"type": "approval_response", "approval_id": "a1", "approved": true},
                {"type": "text", "text": "Here you go."},
                {"type": "tool_result", "tool_call_id": "loc", "result": {"city": "Oslo"}}
            ]},
            {"role": "tool", "parts": [
                {"type": "tool_result", "tool_call_id": "elsewhere", "result": 1}
            ]}
        ]),
        json!([
            {"role": "assistant", "content": "Where are you?", "tool_calls": [{"id": "loc",
                "type": "function", "function": {"name": "get_location", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "loc", "content": "{\"city\":\"Oslo\"}"},
            {"role": "user", "content": "Here you go."}
        ]),
    );
}

#[test]
fn a_call_without_an_outcome_is_answered_as_unfinished() {
    let unfinished = "{\"error\":{\"type\":\"EXECUTION\",\"message\":\"The call did not finish (the run was canceled or interrupted before it returned).\"}}";
    check(
        json!([
            {"role": "user", "parts": [{"type": "text", "text": "Go"}]},
            {"role": "assistant", "parts": [
                {"type": "tool_call", "tool_call_id": "c1", "tool_name": "slow", "args": {}},
                {"type": "tool_call", "tool_call_id": "c2", "tool_name": "fast", "args": {}},
                {"type": "tool_result", "tool_call_id": "c2", "result": "ok", "is_error": false}
            ]},
            {"role": "assistant", "parts": [
                {"type": "tool_call", "tool_call_id": "c3", "tool_name": "never", "args": {}}
            ]},
            {"role": "user", "parts": [{"type": "text", "text": "Stop"}]}
        ]),
        json!([
            {"role": "user", "content": "Go"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "slow", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "fast", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": unfinished},
            {"role": "tool", "tool_call_id": "c2", "content": "ok"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c3", "type": "function", "function": {"name": "never", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "c3", "content": unfinished},
            {"role": "user", "content": "Stop"}
        ]),
    );
}

#[test]
fn outcomes_read_as_text_json_or_errors() {
    check(
        json!([
            {"role": "assistant", "parts": [
                {"type": "tool_call", "tool_call_id": "a", "tool_name": "t", "args": "not json"},
                {"type": "tool_call", "tool_call_id": "b", "tool_name": "t", "args": {"n": 1.5}},
                {"type": "tool_call", "tool_call_id": "c", "tool_name": "t", "args": {}},
                {"type": "tool_result", "tool_call_id": "a", "result": "line 1\nline 2"},
                {"type": "tool_result", "tool_call_id": "b", "result": {"denied": true},
                 "is_error": true},
                {"type": "tool_error", "tool_call_id": "c", "error_type": "EXECUTION",
                 "message": "the tool panicked"}
            ]}
        ]),
        json!([
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "t", "arguments": "\"not json\""}},
                {"id": "b", "type": "function", "function": {"name": "t", "arguments": "{\"n\":1.5}"}},
                {"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "a", "content": "line 1\nline 2"},
            {"role": "tool", "tool_call_id": "b", "content": "{\"error\":{\"denied\":true}}"},
            {"role": "tool", "tool_call_id": "c",
             "content": "{\"error\":{\"type\":\"EXECUTION\",\"message\":\"the tool panicked\"}}"}
        ]),
    );
}

#[test]
fn user_files_and_data_become_content_parts() {
    check(
        json!([
            {"role": "system", "parts": [{"type": "text", "text": "Rules."}]},
            {"role": "user", "parts": [
                {"type": "text", "text": "What is this?"},
                {"type": "file", "media_type": "image/png", "url": "https://x.test/a.png"},
                {"type": "file", "media_type": "image/jpeg", "data": "/9j/"},
                {"type": "file", "media_type": "application/pdf", "data": "JVBE",
                 "filename": "a.pdf"},
                {"type": "file", "media_type": "audio/wav", "data": "UklG"},
                {"type": "file", "media_type": "text/csv", "url": "https://x.test/t.csv",
                 "filename": "t.csv"},
                {"type": "data", "name": "weather", "data": {"c": 21}}
            ]},
            {"role": "user", "parts": [
                {"type": "text", "text": "one"},
                {"type": "data", "name": "n", "data": 2}
            ]},
            {"role": "data", "parts": [{"type": "text", "text": "for the client only"}]},
            {"role": "user", "parts": [{"type": "source", "source_id": "s", "url": "https://x.test"}]}
        ]),
        json!([
            {"role": "system", "content": "Rules."},
            {"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}},
                {"type": "file", "file": {"filename": "a.pdf",
                    "file_data": "data:application/pdf;base64,JVBE"}},
                {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
                {"type": "text", "text": "[file t.csv (text/csv): https://x.test/t.csv]"},
                {"type": "text", "text": "{\"type\":\"data\",\"name\":\"weather\",\"data\":{\"c\":21}}"}
            ]},
            {"role": "user", "content": "one\n{\"type\":\"data\",\"name\":\"n\",\"data\":2}"}
        ]),
    );
}

#[test]
fn refusals_go_back_as_the_assistant_s_refusal_and_provider_data_not_at_all() {
    check(
        json!([
            {"role": "user", "parts": [{"type": "text", "text": "Fill the form."}]},
            {"role": "assistant", "parts": [
                {"type": "step_start", "step_id": "s1"},
                {"type": "refusal", "text": "I'm sorry, "},
                {"type": "refusal", "text": "I can't help with that."}
            ]},
            {"role": "user", "parts": [{"type": "text", "text": "Search then."}]},
            {"role": "assistant", "parts": [
                {"type": "step_start", "step_id": "s2"},
                {"type": "data", "name": "anthropic.server_tool_use",
                 "data": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                          "input": {"query": "x"}}},
                {"type": "text", "text": "Found "},
                {"type": "refusal", "text": "but I won't say."},
                {"type": "data", "name": "anthropic.stop_details", "data": {"type": "refusal"}}
            ]}
        ]),
        json!([
            {"role": "user", "content": "Fill the form."},
            {"role": "assistant", "content": null,
             "refusal": "I'm sorry, I can't help with that."},
            {"role": "user", "content": "Search then."},
            {"role": "assistant", "content": "Found ", "refusal": "but I won't say."}
        ]),
    );
}
