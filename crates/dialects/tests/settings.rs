//! Generation settings and client-declared tools in every dialect's request: AgentScope's
//! `AgentRequest` fields, the native run body's and AgentX's envelope's top-level keys, the AI
//! SDK body's extras and AG-UI's `forwardedProps` all read into the same `GenerationSettings`; a bad value is a
//! `DecodeError::InvalidField` naming the field as the client spelled it.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_core::{GenerationSettings, ToolSpec};
use agentwire_dialects::{DecodeError, ag_ui, agentscope, agentx, ai_sdk, native};
use serde_json::{Value, json};

fn every_setting() -> GenerationSettings {
    GenerationSettings {
        model: Some("qwen-max".into()),
        temperature: Some(0.3),
        top_p: Some(0.8),
        max_tokens: Some(256),
        stop: vec!["Observation:".into()],
        seed: Some(42),
        frequency_penalty: Some(0.1),
        presence_penalty: Some(-0.1),
        n: Some(2),
    }
}

fn weather_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    }})
}

fn weather_spec() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "The weather in a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

/// `body` with the keys of `extra` added.
fn with(extra: Value, mut body: Value) -> Value {
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    body
}

/// The field a decode error names.
fn field(error: DecodeError) -> String {
    match error {
        DecodeError::InvalidField(field) => field.field,
        other => panic!("expected an invalid field, got {other}"),
    }
}

const USER: &str =
    r#"{"role": "user", "type": "message", "content": [{"type": "text", "text": "Hi"}]}"#;

#[test]
fn agentscope_request_fields_are_the_run_s_settings_and_client_tools() {
    let body = json!({
        "input": [serde_json::from_str::<Value>(USER).unwrap()],
        "model": "qwen-max", "temperature": 0.3, "top_p": 0.8, "max_tokens": 256,
        "stop": "Observation:", "seed": 42, "frequency_penalty": 0.1, "presence_penalty": -0.1,
        "n": 2, "tools": [weather_tool(), {"name": "now"}], "session_id": "s1", "user_id": "u1"
    });
    let request = agentscope::decode_request(body.to_string().as_bytes()).unwrap();
    assert_eq!(request.settings, every_setting());
    assert_eq!(
        request.client_tools,
        [
            weather_spec(),
            ToolSpec::new("now", "", json!({"type": "object", "properties": {}}))
        ]
    );

    // What their pydantic model dumps: the golden request, made by their own models.
    let golden = std::fs::read(common::golden("agentscope", "request.json")).unwrap();
    let request = agentscope::decode_request(&golden).unwrap();
    assert_eq!(request.settings.model.as_deref(), Some("qwen-max"));
    assert_eq!(request.settings.temperature, Some(0.3));
    assert_eq!(request.client_tools[0].name, "get_weather");

    let bad = |extra: Value| {
        let body = with(
            extra,
            json!({"input": [serde_json::from_str::<Value>(USER).unwrap()]}),
        );
        field(agentscope::decode_request(body.to_string().as_bytes()).unwrap_err())
    };
    assert_eq!(bad(json!({"temperature": 2.1})), "temperature");
    assert_eq!(bad(json!({"n": 6})), "n");
    assert_eq!(bad(json!({"stop": ["a", "b", "c", "d", "e"]})), "stop");
    assert_eq!(bad(json!({"model": ""})), "model");
    assert_eq!(
        bad(
            json!({"tools": [weather_tool(), {"type": "function", "function": {"description": "?"}}]})
        ),
        "tools[1].function.name"
    );
}

#[test]
fn the_native_body_takes_the_settings_beside_its_input() {
    let body = json!({
        "agent": "assistant",
        "input": [{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
        "model": "qwen-max", "temperature": 0.3, "topP": 0.8, "maxTokens": 256,
        "stop": ["Observation:"], "seed": 42, "frequencyPenalty": 0.1, "presence_penalty": -0.1,
        "n": 2
    });
    let request = native::decode_request(body.to_string().as_bytes()).unwrap();
    assert_eq!(request.settings, every_setting());
    assert_eq!(request.agent.as_deref(), Some("assistant"));
    // Written back (the Rust client's request), the settings are top-level snake_case keys.
    let written = serde_json::to_value(&request).unwrap();
    assert_eq!(written["top_p"], json!(0.8));
    assert_eq!(written["stop"], json!(["Observation:"]));
    assert_eq!(
        native::decode_request(written.to_string().as_bytes()).unwrap(),
        request
    );

    let error = native::decode_request(br#"{"input": [], "max_tokens": 0}"#).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`max_tokens` must be at least 1, got 0"),
        "{error}"
    );
}

#[test]
fn the_agentx_envelope_takes_settings_and_client_tools_beside_its_messages() {
    let body = json!({
        "session_id": "s1",
        "messages": [{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
        "model": "qwen-max", "temperature": 0.3, "top_p": 0.8, "max_tokens": 256,
        "stop": "Observation:", "seed": 42, "frequency_penalty": 0.1, "presencePenalty": -0.1,
        "n": 2, "tools": [weather_tool()]
    });
    let request = agentx::decode_request(body.to_string().as_bytes()).unwrap();
    assert_eq!(request.settings, every_setting());
    assert_eq!(request.tools, vec![weather_spec()]);
    assert_eq!(request.messages.len(), 1);
    assert_eq!(
        request.session_id.as_ref().map(|id| id.as_str()),
        Some("s1")
    );

    // AgentX's own forms carry neither.
    let one =
        agentx::decode_request(br#"{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}"#)
            .unwrap();
    assert_eq!(one.settings, GenerationSettings::default());
    assert!(one.tools.is_empty());

    let bad = |extra: Value| {
        let body = with(extra, json!({"messages": []}));
        field(agentx::decode_request(body.to_string().as_bytes()).unwrap_err())
    };
    assert_eq!(bad(json!({"temperature": 3})), "temperature");
    assert_eq!(bad(json!({"n": 9})), "n");
    assert_eq!(bad(json!({"tools": {"name": "x"}})), "tools");
    assert_eq!(
        bad(json!({"tools": [{"description": "no name"}]})),
        "tools[0].name"
    );
}

#[test]
fn ai_sdk_body_extras_are_settings_and_client_tools() {
    let body = json!({
        "id": "chat-1", "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
        "model": "qwen-max", "temperature": 0.3, "topP": 0.8, "maxOutputTokens": 256,
        "stopSequences": ["Observation:"], "seed": 42, "frequencyPenalty": 0.1,
        "presencePenalty": -0.1, "n": 2, "tools": [weather_tool()]
    });
    let request = ai_sdk::decode_request(body.to_string().as_bytes()).unwrap();
    assert_eq!(request.settings, every_setting());
    assert_eq!(request.tools, [weather_spec()]);
    assert_eq!(
        request.body["maxOutputTokens"],
        json!(256),
        "extras stay in the body"
    );

    let bad = |extra: Value| {
        let body = with(extra, body.clone());
        field(ai_sdk::decode_request(body.to_string().as_bytes()).unwrap_err())
    };
    assert_eq!(bad(json!({"topP": 3})), "topP");
    assert_eq!(
        bad(json!({"maxOutputTokens": 256, "max_tokens": 9})),
        "maxOutputTokens"
    );
    assert_eq!(bad(json!({"tools": {"get_weather": {}}})), "tools");
    assert_eq!(
        bad(json!({"tools": [{"name": "has space"}]})),
        "tools[0].name"
    );
}

#[test]
fn ag_ui_forwarded_props_are_settings() {
    let body = json!({
        "threadId": "t1", "runId": "r1", "state": {}, "context": [],
        "messages": [{"id": "u1", "role": "user", "content": "Hi"}],
        "tools": [{"name": "get_weather", "description": "The weather in a city",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}],
        "forwardedProps": {"model": "qwen-max", "temperature": 0.3, "topP": 0.8,
            "maxTokens": 256, "stop": "Observation:", "seed": 42, "frequencyPenalty": 0.1,
            "presencePenalty": -0.1, "n": 2, "somethingElse": true}
    });
    let input = ag_ui::decode_request(body.to_string().as_bytes()).unwrap();
    assert_eq!(input.settings, every_setting());
    assert_eq!(input.tools[0].name, "get_weather");

    let mut no_props = body.clone();
    no_props["forwardedProps"] = json!("opaque");
    let input = ag_ui::decode_request(no_props.to_string().as_bytes()).unwrap();
    assert_eq!(input.settings, GenerationSettings::default());

    let mut bad = body;
    bad["forwardedProps"]["presencePenalty"] = json!(-2.5);
    assert_eq!(
        field(ag_ui::decode_request(bad.to_string().as_bytes()).unwrap_err()),
        "presencePenalty"
    );
}
