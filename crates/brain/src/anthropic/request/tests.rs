use agentwire_core::ToolSpec;
use serde_json::json;

use super::*;

fn settings() -> Settings<'static> {
    Settings {
        model: "claude-sonnet-4-5",
        max_tokens: 4096,
        thinking_budget: None,
        temperature: None,
        top_p: None,
        stop_sequences: &[],
    }
}

fn message(json: Value) -> Message {
    serde_json::from_value(json).expect("a message")
}

#[track_caller]
fn check_messages(messages: Vec<Value>, expect: Value) {
    let request = BrainRequest::new(messages.into_iter().map(message).collect());
    let body: Value = serde_json::from_slice(&body(settings(), &request)).expect("json");
    assert_eq!(body["messages"], expect, "{body:#}");
}

#[test]
fn a_first_request_names_model_limits_system_and_tools() {
    let request = BrainRequest {
        system: Some("You are terse.".into()),
        messages: vec![Message::system("Answer in French."), Message::user("Hi")],
        tools: vec![ToolSpec::new(
            "write_file",
            "Write a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        )].into(),
        step: 0,
        settings: Default::default(),
        trace_context: Default::default(),
    };
    let settings = Settings {
        thinking_budget: Some(2048),
        ..settings()
    };
    let written: Value = serde_json::from_slice(&body(settings, &request)).expect("json");
    assert_eq!(
        written,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "stream": true,
            "system": "You are terse.\n\nAnswer in French.",
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "tools": [{
                "name": "write_file",
                "description": "Write a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
            }],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
        })
    );

    let bare: Value =
        serde_json::from_slice(&body(self::settings(), &BrainRequest::new(vec![]))).expect("json");
    assert_eq!(bare.get("system"), None);
    assert_eq!(bare.get("tools"), None);
}

#[test]
fn each_step_of_a_turn_is_an_assistant_message_and_its_results_a_user_message() {
    check_messages(
        vec![
            json!({"role": "user", "parts": [{"type": "text", "text": "Write hello.txt"}]}),
            json!({"role": "assistant", "parts": [
                {"type": "step_start", "step_id": "s1"},
                {"type": "reasoning", "text": "The user wants a file."},
                {"type": "data", "name": "anthropic.thinking_signature", "data": {"signature": "c2lnMQ=="}},
                {"type": "text", "text": "Let me write it."},
                {"type": "tool_call", "tool_call_id": "toolu_1", "tool_name": "write_file", "args": {"content": "Hello"}},
                {"type": "tool_error", "tool_call_id": "toolu_1", "tool_name": "write_file", "error_type": "VALIDATION",
                 "message": "Validation failed for tool 'write_file': Missing required argument 'path'."},
                {"type": "step_start", "step_id": "s2"},
                {"type": "text", "text": "I missed the path."},
                {"type": "tool_call", "tool_call_id": "toolu_2", "tool_name": "write_file", "args": {"path": "/hello.txt", "content": "Hello"}},
                {"type": "tool_call", "tool_call_id": "toolu_3", "tool_name": "read_file", "args": {"path": "/hello.txt"}},
                {"type": "tool_result", "tool_call_id": "toolu_3", "tool_name": "read_file", "result": "Hello"},
                {"type": "tool_result", "tool_call_id": "toolu_2", "tool_name": "write_file", "result": {"status": "success"}},
                {"type": "step_start", "step_id": "s3"},
                {"type": "text", "text": "Written."}
            ]}),
            json!({"role": "user", "parts": [{"type": "text", "text": "Thanks"}]}),
        ],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Write hello.txt"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "The user wants a file.", "signature": "c2lnMQ=="},
                {"type": "text", "text": "Let me write it."},
                {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {"content": "Hello"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
                 "content": "{\"error\":{\"type\":\"VALIDATION\",\"message\":\"Validation failed for tool 'write_file': Missing required argument 'path'.\"}}"}
            ]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "I missed the path."},
                {"type": "tool_use", "id": "toolu_2", "name": "write_file", "input": {"path": "/hello.txt", "content": "Hello"}},
                {"type": "tool_use", "id": "toolu_3", "name": "read_file", "input": {"path": "/hello.txt"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "{\"status\":\"success\"}"},
                {"type": "tool_result", "tool_use_id": "toolu_3", "content": "Hello"}
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "Written."}]},
            {"role": "user", "content": [{"type": "text", "text": "Thanks"}]}
        ]),
    );
}

#[test]
fn outcomes_follow_their_call_wherever_they_were_and_same_roles_merge() {
    check_messages(
        vec![
            json!({"role": "user", "parts": [{"type": "text", "text": "Where am I?"}]}),
            json!({"role": "user", "parts": [{"type": "text", "text": "Be quick."}]}),
            json!({"role": "assistant", "parts": [
                {"type": "tool_call", "tool_call_id": "toolu_9", "tool_name": "get_location", "args": {}},
                {"type": "approval_request", "approval_id": "ap_1", "tool_call_id": "toolu_9"},
                {"type": "approval_response", "approval_id": "ap_1", "approved": true}
            ]}),
            json!({"role": "user", "parts": [
                {"type": "text", "text": "There you go."},
                {"type": "tool_result", "tool_call_id": "toolu_9", "result": {"city": "Paris"}, "is_error": false}
            ]}),
            json!({"role": "data", "parts": [{"type": "data", "name": "weather", "data": {}}]}),
            json!({"role": "tool", "parts": [{"type": "tool_result", "tool_call_id": "toolu_8", "result": "no call", "is_error": true}]}),
            json!({"role": "assistant", "parts": [{"type": "text", "text": "You are in Paris."}]}),
            json!({"role": "user", "parts": [
                {"type": "data", "name": "location", "data": {"lat": 48.85}},
                {"type": "tool_result", "tool_call_id": "toolu_9", "result": "a second outcome", "is_error": true}
            ]}),
        ],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "Where am I?"},
                {"type": "text", "text": "Be quick."}
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_9", "name": "get_location", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": "{\"city\":\"Paris\"}"},
                {"type": "text", "text": "There you go."}
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "You are in Paris."}]},
            {"role": "user", "content": [
                {"type": "text", "text": "{\"type\":\"data\",\"name\":\"location\",\"data\":{\"lat\":48.85}}"}
            ]}
        ]),
    );
}

#[test]
fn files_become_image_and_document_blocks() {
    check_messages(
        vec![json!({"role": "user", "parts": [
            {"type": "file", "media_type": "image/png", "data": "iVBORw0KGgo="},
            {"type": "file", "media_type": "image/jpeg", "url": "https://example.com/cat.jpg"},
            {"type": "file", "media_type": "application/pdf", "url": "data:application/pdf;base64,JVBERi0="},
            {"type": "file", "media_type": "text/csv", "data": "YSxi", "filename": "table.csv"},
            {"type": "file", "media_type": "audio/mpeg", "url": "https://example.com/a.mp3"},
            {"type": "text", "text": ""}
        ]})],
        json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
            {"type": "text", "text": "[file table.csv (text/csv): not shown]"},
            {"type": "text", "text": "[file file (audio/mpeg): https://example.com/a.mp3]"}
        ]}]),
    );
}

#[test]
fn reasoning_goes_back_only_with_its_signature() {
    check_messages(
        vec![
            json!({"role": "user", "parts": [{"type": "text", "text": "Hi"}]}),
            json!({"role": "assistant", "parts": [
                {"type": "reasoning", "text": "from another provider, unsigned"},
                {"type": "text", "text": "Hello."},
                {"type": "data", "name": "anthropic.thinking_signature", "data": {"signature": "b21pdHRlZA=="}},
                {"type": "data", "name": "anthropic.redacted_thinking", "data": {"data": "EmwKAhgB"}},
                {"type": "data", "name": "weather", "data": {"sunny": true}},
                {"type": "tool_call", "tool_call_id": "toolu_1", "tool_name": "f", "args": "{not json"},
                {"type": "tool_result", "tool_call_id": "toolu_1", "result": null}
            ]}),
        ],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Hello."},
                {"type": "thinking", "thinking": "", "signature": "b21pdHRlZA=="},
                {"type": "redacted_thinking", "data": "EmwKAhgB"},
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "null"}]}
        ]),
    );
}

#[test]
fn calls_left_without_a_result_are_answered_as_unfinished() {
    const UNFINISHED: &str = r#"{"error":{"type":"EXECUTION","message":"The call did not finish (the run was canceled or interrupted before it returned)."}}"#;
    check_messages(
        vec![
            json!({"role": "user", "parts": [{"type": "text", "text": "Go"}]}),
            json!({"role": "assistant", "parts": [
                {"type": "tool_call", "tool_call_id": "toolu_1", "tool_name": "slow", "args": {}},
                {"type": "tool_call", "tool_call_id": "toolu_2", "tool_name": "fast", "args": {}},
                {"type": "tool_result", "tool_call_id": "toolu_2", "result": "ok"}
            ]}),
            json!({"role": "user", "parts": [{"type": "text", "text": "Again"}]}),
            json!({"role": "assistant", "parts": [
                {"type": "tool_call", "tool_call_id": "toolu_3", "tool_name": "slow", "args": {}}
            ]}),
        ],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Go"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "slow", "input": {}},
                {"type": "tool_use", "id": "toolu_2", "name": "fast", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": UNFINISHED, "is_error": true},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "ok"},
                {"type": "text", "text": "Again"}
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_3", "name": "slow", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_3", "content": UNFINISHED, "is_error": true}
            ]}
        ]),
    );
}

#[test]
fn refusals_go_back_as_text_and_kept_provider_blocks_not_at_all() {
    check_messages(
        vec![
            json!({"role": "user", "parts": [{"type": "text", "text": "Weather in NYC?"}]}),
            json!({"role": "assistant", "parts": [
                {"type": "step_start", "step_id": "s1"},
                {"type": "data", "name": "anthropic.server_tool_use",
                 "data": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                          "input": {"query": "weather NYC"}}},
                {"type": "data", "name": "anthropic.web_search_tool_result",
                 "data": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
                          "content": []}},
                {"type": "data", "name": "anthropic.citations_delta",
                 "data": {"type": "citations_delta", "citation": {}}},
                {"type": "text", "text": "Sunny."},
                {"type": "data", "name": "anthropic.stop_details", "data": {"type": "refusal"}}
            ]}),
            json!({"role": "user", "parts": [{"type": "text", "text": "Fill the form."}]}),
            json!({"role": "assistant", "parts": [
                {"type": "refusal", "text": "I can't help with that."}
            ]}),
        ],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in NYC?"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Sunny."}]},
            {"role": "user", "content": [{"type": "text", "text": "Fill the form."}]},
            {"role": "assistant", "content": [{"type": "text", "text": "I can't help with that."}]}
        ]),
    );
}
