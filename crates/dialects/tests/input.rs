//! Messages sent into a busy session, in every dialect: a run's `input` outcomes and the steer it
//! took (a whole user message between its assistant messages) are carried as each protocol
//! allows, and the user's words never become the assistant's.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_core::{Event, EventKind, InputOutcome, Outcome, RunStatus};
use agentwire_dialects::Encoder;
use agentwire_dialects::a2a::{A2aDecoder, A2aEncoder};
use agentwire_dialects::ag_ui::{AgUiDecoder, AgUiEncoder};
use agentwire_dialects::agentscope::AgentScopeEncoder;
use agentwire_dialects::ai_sdk::AiSdkEncoder;
use agentwire_dialects::openai_responses::{ResponseInfo, ResponsesEncoder};
use common::{decode_whole, encode};
use serde_json::{Value, json};

const STEER: &str = "Answer in French";

/// A run that answers, takes a steer at step 1, hears a queued message, and answers again.
fn steered_run() -> Vec<Event> {
    let events = [
        json!({"event": "run_created", "run_id": "run_1", "session_id": "s1", "agent": "a"}),
        json!({"event": "run_status", "status": "in_progress"}),
        json!({"event": "message_start", "message_id": "m1", "role": "assistant"}),
        json!({"event": "part_start", "message_id": "m1", "index": 0, "type": "text"}),
        json!({"event": "part_delta", "message_id": "m1", "index": 0, "delta": "Looking"}),
        json!({"event": "part_complete", "message_id": "m1", "index": 0,
               "part": {"type": "text", "text": "Looking"}}),
        json!({"event": "message_complete", "message": {"id": "m1", "role": "assistant",
               "parts": [{"type": "text", "text": "Looking"}]}}),
        json!({"event": "input", "client_message_id": "c1", "outcome": "delivered", "step": 1}),
        json!({"event": "message_complete", "message": {"id": "u1", "role": "user",
               "parts": [{"type": "text", "text": STEER}]}}),
        json!({"event": "input", "client_message_id": "c2", "outcome": "queued"}),
        json!({"event": "message_start", "message_id": "m2", "role": "assistant"}),
        json!({"event": "part_start", "message_id": "m2", "index": 0, "type": "text"}),
        json!({"event": "part_delta", "message_id": "m2", "index": 0, "delta": "C'est 42"}),
        json!({"event": "part_complete", "message_id": "m2", "index": 0,
               "part": {"type": "text", "text": "C'est 42"}}),
        json!({"event": "message_complete", "message": {"id": "m2", "role": "assistant",
               "parts": [{"type": "text", "text": "C'est 42"}]}}),
        json!({"event": "run_status", "status": "completed"}),
    ];
    events
        .into_iter()
        .enumerate()
        .map(|(seq, mut event)| {
            event["seq"] = json!(seq + 1);
            serde_json::from_value(event).unwrap()
        })
        .collect()
}

/// The JSON objects of an SSE body's `data:` lines (`[DONE]` and comments left out).
fn frames(wire: &[u8]) -> Vec<Value> {
    String::from_utf8(wire.to_vec())
        .unwrap()
        .split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

fn wire(encoder: &mut dyn Encoder) -> Vec<Value> {
    frames(&encode(encoder, &steered_run()))
}

#[test]
fn ai_sdk_sends_the_steer_to_v7_clients_and_outcomes_to_all() {
    let v5 = wire(&mut AiSdkEncoder::default());
    let v7 = wire(&mut AiSdkEncoder::default().with_steering(true));
    for chunks in [&v5, &v7] {
        let outcomes: Vec<&Value> = chunks
            .iter()
            .filter(|chunk| chunk["type"] == "data-agentwire-input")
            .collect();
        assert_eq!(outcomes.len(), 2, "{chunks:?}");
        assert_eq!(
            *outcomes[0],
            json!({"type": "data-agentwire-input", "id": "c1", "transient": true,
                   "data": {"client_message_id": "c1", "outcome": "delivered", "step": 1}})
        );
        assert_eq!(outcomes[1]["data"]["outcome"], "queued");
        // The user's words are never assistant text.
        assert!(
            chunks
                .iter()
                .all(|chunk| chunk["delta"] != STEER && chunk["text"] != STEER)
        );
    }
    assert!(v5.iter().all(|chunk| chunk["type"] != "steering-message"));
    let steers: Vec<&Value> = v7
        .iter()
        .filter(|chunk| chunk["type"] == "steering-message")
        .collect();
    assert_eq!(
        steers,
        [&json!({"type": "steering-message", "id": "u1",
                 "parts": [{"type": "text", "text": STEER}]})]
    );
}

#[test]
fn ai_sdk_reads_the_client_version_and_mode_from_the_body() {
    use agentwire_core::InputMode;
    use agentwire_dialects::ai_sdk::decode_request;
    let body = json!({"id": "chat", "messages": [{"id": "u9", "role": "user",
        "parts": [{"type": "text", "text": "hi"}]}], "mode": "steer", "aiSdkVersion": "7.0.173"});
    let request = decode_request(body.to_string().as_bytes()).unwrap();
    assert_eq!(request.mode, Some(InputMode::Steer));
    assert_eq!(request.sdk_major, 7);
    assert_eq!(request.client_message_id.as_deref(), Some("u9"));
    let plain = json!({"messages": [{"role": "user", "parts": []}]});
    let request = decode_request(plain.to_string().as_bytes()).unwrap();
    assert_eq!((request.mode, request.sdk_major), (None, 5));
    let bad = json!({"messages": [{"role": "user", "parts": []}], "mode": "later"});
    assert!(decode_request(bad.to_string().as_bytes()).is_err());
}

#[test]
fn ag_ui_sends_the_steer_as_a_user_text_message_and_outcomes_as_custom_events() {
    let events = wire(&mut AgUiEncoder::new("s1", "r1"));
    let custom: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "CUSTOM" && event["name"] == "agentwire.input")
        .collect();
    assert_eq!(custom.len(), 2);
    assert_eq!(
        custom[0]["value"],
        json!({"client_message_id": "c1", "outcome": "delivered", "step": 1})
    );
    let starts: Vec<(&Value, &Value)> = events
        .iter()
        .filter(|event| event["type"] == "TEXT_MESSAGE_START")
        .map(|event| (&event["messageId"], &event["role"]))
        .collect();
    assert_eq!(
        starts,
        [
            (&json!("m1"), &json!("assistant")),
            (&json!("u1"), &json!("user")),
            (&json!("m2"), &json!("assistant")),
        ]
    );
    // The outcomes read back.
    let wire = encode(&mut AgUiEncoder::new("s1", "r1"), &steered_run());
    let decoded = decode_whole(&mut AgUiDecoder::default(), &wire).unwrap();
    let outcomes: Vec<&InputOutcome> = decoded
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::Input(outcome) => Some(outcome),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes.len(), 2);
}

#[test]
fn a2a_sends_the_steer_as_a_user_status_message_and_outcomes_in_metadata() {
    let items = wire(&mut A2aEncoder::new(1, "run_1", "s1"));
    let results: Vec<&Value> = items.iter().map(|item| &item["result"]).collect();
    // No artifact holds the user's words: the agent's output is only its own.
    for result in &results {
        if let Some(artifact) = result.get("artifactUpdate") {
            assert_ne!(artifact["artifact"]["artifactId"], "u1");
        }
    }
    let inputs: Vec<&Value> = results
        .iter()
        .filter_map(|result| result["statusUpdate"]["metadata"]["agentwire"].get("input"))
        .collect();
    assert_eq!(
        inputs,
        [
            &json!({"client_message_id": "c1", "outcome": "delivered", "step": 1}),
            &json!({"client_message_id": "c2", "outcome": "queued"}),
        ]
    );
    let steer = results
        .iter()
        .find_map(|result| result["statusUpdate"]["status"].get("message"))
        .unwrap();
    assert_eq!(steer["role"], "ROLE_USER");
    assert_eq!(steer["messageId"], "u1");
    assert_eq!(steer["parts"], json!([{"text": STEER}]));
    assert_eq!(
        results
            .iter()
            .find(|result| result["statusUpdate"]["status"].get("message").is_some())
            .unwrap()["statusUpdate"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    // Outcomes read back; the steer reads back as the user's message.
    let wire = encode(&mut A2aEncoder::new(1, "run_1", "s1"), &steered_run());
    let decoded = decode_whole(&mut A2aDecoder::default(), &wire).unwrap();
    let n_outcomes = decoded
        .iter()
        .filter(|event| matches!(event.kind, EventKind::Input(_)))
        .count();
    assert_eq!(n_outcomes, 2);
    let messages = common::accumulate(&decoded);
    let roles: Vec<_> = messages.iter().map(|message| message.role).collect();
    use agentwire_core::Role;
    assert_eq!(roles, [Role::Assistant, Role::User, Role::Assistant]);
}

#[test]
fn an_a2a_stream_joining_a_working_task_keeps_it_working() {
    // A steer's own stream joins the task mid-run, after the client was sent the task as
    // WORKING: the outcome and the steer repeat that state, not the SUBMITTED a task starts in
    // (the a2a-sdk's TaskManager takes every status update's state as the task's).
    let tail = &steered_run()[7..];
    let mut continuing = A2aEncoder::new(1, "run_1", "s1").continuing(RunStatus::InProgress);
    let items = frames(&encode(&mut continuing, tail));
    assert!(items.iter().all(|item| item["result"]["task"].is_null()));
    let states: Vec<&Value> = items
        .iter()
        .filter_map(|item| item["result"]["statusUpdate"]["status"].get("state"))
        .collect();
    assert_eq!(
        states,
        [
            "TASK_STATE_WORKING",
            "TASK_STATE_WORKING",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED"
        ]
    );
}

#[test]
fn agentscope_sends_the_steer_as_a_user_message() {
    let objects = wire(&mut AgentScopeEncoder::default());
    let user: Vec<&Value> = objects
        .iter()
        .filter(|object| object["object"] == "message" && object["role"] == "user")
        .collect();
    assert!(!user.is_empty(), "{objects:?}");
    // No assistant message holds the user's words.
    for object in &objects {
        if object["object"] == "message" && object["role"] == "assistant" {
            assert!(!object.to_string().contains(STEER), "{object}");
        }
    }
}

#[test]
fn openai_responses_never_show_the_steer_as_output() {
    let events = wire(&mut ResponsesEncoder::new(ResponseInfo::default()));
    assert!(
        events
            .iter()
            .all(|event| !event.to_string().contains(STEER)),
        "{events:?}"
    );
}

#[test]
fn a_steer_outcome_alone_is_not_a_message() {
    // A run started by a queued message reports it delivered at step 0; no user message follows.
    let events: Vec<Event> = vec![
        serde_json::from_value(json!({"seq": 1, "event": "run_created", "run_id": "r"})).unwrap(),
        Event::new(
            2,
            EventKind::Input(InputOutcome::new("c0", Outcome::Delivered { step: 0 })),
        ),
        serde_json::from_value(json!({"seq": 3, "event": "run_status", "status": "completed"}))
            .unwrap(),
    ];
    let items = frames(&encode(&mut A2aEncoder::new(1, "r", "s"), &events));
    assert!(
        items
            .iter()
            .all(|item| item["result"]["artifactUpdate"].is_null())
    );
    let chunks = frames(&encode(
        &mut AiSdkEncoder::default().with_steering(true),
        &events,
    ));
    assert!(
        chunks
            .iter()
            .all(|chunk| chunk["type"] != "steering-message")
    );
}
