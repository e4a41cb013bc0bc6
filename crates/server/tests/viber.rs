//! Viber's chat endpoints over real HTTP on port 0: each request as a `useXChat` client would
//! post it, each answer read back with the Viber decoder into the strict accumulator. A text
//! answer in a space, a tool call and its result, an approval answered in the space, the
//! plain-text `content` fallback, resume and cancel, keys, and bad bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agentwire_brain::ScriptedBrain;
use agentwire_core::{Accumulator, Awaiting, Event, EventKind, Message, Part, RunStatus};
use agentwire_dialects::Dialect;
use agentwire_runtime::Agent;
use agentwire_server::{ApiKey, Settings};
use agentwire_tools::FnTool;
use common::{TestServer, approver, talker};
use serde_json::{Value, json};

const CHAT: &str = "/viber/api/chat";

async fn server() -> TestServer {
    TestServer::start(
        vec![
            talker("assistant", &["Hello", " there!"], 0.0),
            talker("echo", &["Echo"], 0.0),
            talker("slow", &["word "; 40], 40.0),
            approver(),
            clock(),
        ],
        Settings::default(),
    )
    .await
}

/// An agent that calls its `clock` tool, then says what it answered.
fn clock() -> Agent {
    let script = json!({"turns": [
        [{"type": "tool_call_start", "id": "t1", "name": "clock"},
         {"type": "tool_call_delta", "id": "t1", "args": "{}"},
         {"type": "tool_call_end", "id": "t1"},
         {"type": "finish", "reason": "tool_calls"}],
        [{"type": "text_delta", "text": "It is noon."}, {"type": "finish", "reason": "stop"}]
    ]});
    let clock = FnTool::new(
        "clock",
        "Tells the time",
        |_: serde_json::Map<String, Value>, _| async move { Ok(json!({"time": "12:00"})) },
    );
    Agent::builder("clock")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .tool(clock)
        .build()
        .unwrap()
}

/// Posts `body` to `path`: the SSE answer's text and its events through the Viber decoder.
async fn post(server: &TestServer, path: &str, body: &Value) -> (String, Vec<Event>) {
    let response = server.post_json(path, body).await;
    assert_eq!(response.status(), 200, "{path} {body}");
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert!(response.headers().contains_key("x-agentwire-run-id"));
    let wire = response.text().await.unwrap();
    (wire.clone(), decode(&wire))
}

fn decode(wire: &str) -> Vec<Event> {
    assert_eq!(
        Dialect::sniff(wire.as_bytes()),
        Some(Dialect::Viber),
        "{wire}"
    );
    let mut decoder = Dialect::Viber.decoder();
    let mut events = Vec::new();
    decoder.decode(wire.as_bytes(), &mut events).unwrap();
    decoder.finish(&mut events).unwrap();
    events
}

fn accumulate(events: &[Event]) -> Vec<Message> {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator.push(event).unwrap();
    }
    accumulator.messages().to_vec()
}

fn last_status(events: &[Event]) -> Option<RunStatus> {
    events.iter().rev().find_map(|event| match &event.kind {
        EventKind::RunStatus { status, .. } => Some(*status),
        _ => None,
    })
}

/// The JSON of the `event: status` frames.
fn statuses(wire: &str) -> Vec<Value> {
    wire.split("\n\n")
        .filter(|frame| frame.contains("event: status\n"))
        .filter_map(|frame| frame.split_once("data: "))
        .map(|(_, data)| serde_json::from_str(data).unwrap())
        .collect()
}

fn user(text: &str) -> Value {
    json!({"role": "user", "parts": [{"type": "text", "text": text}]})
}

async fn session(server: &TestServer, id: &str) -> Value {
    let response = server
        .http
        .get(server.url(&format!("/v1/sessions/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{id}");
    response.json().await.unwrap()
}

#[tokio::test]
async fn a_text_answer_streams_as_packets_in_its_space() {
    let server = server().await;
    // The user message of Viber's streaming example, as it is: no space, so a new one.
    let (wire, events) = post(&server, CHAT, &user("Hello, world!")).await;
    let messages = accumulate(&events);
    assert_eq!(messages.last().unwrap().content(), "Hello there!");
    assert!(
        wire.contains(r#""parts":[{"type":"text","text":"Hello"}],"content":"Hello"}"#),
        "{wire}"
    );
    let first = statuses(&wire);
    assert_eq!(first[0]["status"], "streaming");
    assert_eq!(first.last().unwrap()["status"], "idle");
    assert_eq!(last_status(&events), Some(RunStatus::Completed));
    let space = first[0]["spaceId"].as_str().unwrap().to_owned();

    // The space is a session: the next message continues it.
    let body = json!({"spaceId": space, "messages": [user("Again")]});
    let (wire, _) = post(&server, CHAT, &body).await;
    assert!(
        statuses(&wire)
            .iter()
            .all(|status| status["spaceId"] == space.as_str())
    );
    let session = session(&server, &space).await;
    assert_eq!(
        session["messages"].as_array().unwrap().len(),
        4,
        "{session}"
    );

    // Per agent under /agents/{name}.
    let body = json!({"spaceId": "space_echo", "message": user("Hi")});
    let (_, events) = post(&server, &format!("/agents/echo{CHAT}"), &body).await;
    assert_eq!(accumulate(&events).last().unwrap().content(), "Echo");
}

#[tokio::test]
async fn a_tool_call_and_its_result_stream_in_the_seed_s_spelling() {
    let server = server().await;
    let body = json!({"spaceId": "space_clock", "messages": [user("What time is it?")]});
    let (wire, events) = post(&server, &format!("/agents/clock{CHAT}"), &body).await;
    assert!(
        wire.contains(r#"{"type":"tool-call","toolCallId":"t1","toolName":"clock","args":{}}"#),
        "{wire}"
    );
    assert!(
        wire.contains(r#"{"type":"tool-result","toolCallId":"t1","toolName":"clock","result":{"time":"12:00"}"#),
        "{wire}"
    );
    let messages = accumulate(&events);
    let answer = messages.last().unwrap();
    assert!(answer.parts.iter().any(
        |part| matches!(part, Part::ToolResult(result) if result.result == json!({"time": "12:00"}))
    ));
    assert_eq!(answer.content(), "It is noon.");
    assert_eq!(last_status(&events), Some(RunStatus::Completed));
}

#[tokio::test]
async fn an_approval_is_answered_in_the_space_and_the_run_goes_on() {
    let server = server().await;
    let path = format!("/agents/approver{CHAT}");
    let body = json!({"spaceId": "space_rm", "messages": [user("Delete a.txt")]});
    let (wire, events) = post(&server, &path, &body).await;
    assert_eq!(
        statuses(&wire).last().unwrap()["status"],
        "awaiting-approval"
    );
    assert_eq!(
        last_status(&events),
        Some(RunStatus::Awaiting(Awaiting::Approval))
    );
    let approval = accumulate(&events)
        .iter()
        .flat_map(|message| message.parts.clone())
        .find_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.approval_id.to_string()),
            _ => None,
        })
        .expect("an approval request");

    // Anything but the answer is refused while the run waits.
    let other = json!({"spaceId": "space_rm", "message": user("Never mind")});
    let busy = server.post_json(&path, &other).await;
    assert_eq!(busy.status(), 409);
    let error: Value = busy.json().await.unwrap();
    assert_eq!(error["error"]["code"], "session_busy");

    let answer = json!({"spaceId": "space_rm", "message": {"role": "user", "parts": [
        {"type": "approval-response", "approvalId": approval, "approved": true}
    ]}});
    let (wire, events) = post(&server, &path, &answer).await;
    // The stream picks up where the run stopped, naming its space.
    assert!(!wire.contains("awaiting-approval"), "{wire}");
    assert!(
        statuses(&wire)
            .iter()
            .all(|status| status["spaceId"] == "space_rm")
    );
    assert!(
        wire.contains(r#""type":"tool-result","toolCallId":"c1""#),
        "{wire}"
    );
    assert_eq!(last_status(&events), Some(RunStatus::Completed));
    assert_eq!(statuses(&wire).last().unwrap()["status"], "idle");
    assert!(
        accumulate(&events)
            .iter()
            .any(|message| message.content() == "done")
    );
}

#[tokio::test]
async fn the_plain_text_content_is_read_and_written() {
    let server = server().await;
    let body = json!({"spaceId": "space_plain", "messages": [{"role": "user", "content": "Hi"}]});
    let (wire, _) = post(&server, CHAT, &body).await;
    // A client that reads only `content` appends it packet by packet.
    let content: String = wire
        .split("\n\n")
        .filter(|frame| !frame.contains("event: "))
        .filter_map(|frame| frame.split_once("data: "))
        .filter_map(|(_, data)| {
            let packet: Value = serde_json::from_str(data).unwrap();
            packet["content"].as_str().map(str::to_owned)
        })
        .collect();
    assert_eq!(content, "Hello there!");
    // The space holds the user's `content` as the text part it stands for.
    let session = session(&server, "space_plain").await;
    assert_eq!(
        session["messages"][0]["parts"],
        json!([{"type": "text", "text": "Hi"}])
    );
}

#[tokio::test]
async fn a_space_s_stream_resumes_and_its_run_is_canceled() {
    let server = server().await;
    let path = format!("/agents/slow{CHAT}");
    let body = json!({"spaceId": "space_slow", "messages": [user("Talk")]});
    let first = server.post_json(&path, &body).await;
    assert_eq!(first.status(), 200);

    // The stream again, after the first two events (the run's start).
    let resumed = server
        .http
        .get(server.url(&format!("/agents/slow{CHAT}/space_slow/stream")))
        .header("last-event-id", "2")
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let mut resumed = resumed;
    let chunk = tokio::time::timeout(Duration::from_secs(5), resumed.chunk())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let chunk = String::from_utf8_lossy(&chunk).into_owned();
    assert!(
        !chunk.contains("id: 1\n") && !chunk.contains("id: 2\n"),
        "{chunk}"
    );

    let canceled = server
        .http
        .post(server.url(&format!("{CHAT}/space_slow/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(canceled.status(), 202);
    let canceled: Value = canceled.json().await.unwrap();
    assert_eq!(canceled["spaceId"], "space_slow");
    let wire = first.text().await.unwrap();
    let events = decode(&wire);
    assert_eq!(last_status(&events), Some(RunStatus::Canceled));
    let last = statuses(&wire).pop().unwrap();
    assert_eq!(
        (last["status"].as_str(), last["runStatus"].as_str()),
        (Some("idle"), Some("canceled"))
    );

    // Nothing goes on in the space any more.
    let resume = server
        .http
        .get(server.url(&format!("{CHAT}/space_slow/stream")))
        .send()
        .await
        .unwrap();
    assert_eq!(resume.status(), 204);
    let again = server
        .http
        .post(server.url(&format!("{CHAT}/space_slow/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409);
    let unknown = server
        .http
        .get(server.url(&format!("{CHAT}/nowhere/stream")))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 204);
}

#[tokio::test]
async fn bad_bodies_get_a_4xx_json_error() {
    let server = server().await;
    for (path, body, code) in [
        (CHAT, "not json", "invalid_request"),
        (CHAT, r#"{"role": "robot"}"#, "invalid_request"),
        (CHAT, r#"{"messages": 3}"#, "invalid_request"),
        (CHAT, r#"{"spaceId": 7, "messages": []}"#, "invalid_request"),
        (CHAT, r#"{"messages": [], "topP": 3}"#, "invalid_request"),
        (CHAT, r#"{"messages": []}"#, "no_input"),
        (CHAT, r#"{"role": "assistant", "content": "x"}"#, "no_input"),
        (
            "/agents/nobody/viber/api/chat",
            r#"{"role": "user", "content": "x"}"#,
            "unknown_agent",
        ),
    ] {
        let response = server
            .http
            .post(server.url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        assert!((400..500).contains(&status), "{path} {body}: {status}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], code, "{path} {body}: {error}");
        assert!(error["error"]["message"].is_string(), "{error}");
    }
    // Not sent as JSON: refused before it is read.
    let response = server
        .http
        .post(server.url(CHAT))
        .header("content-type", "text/plain")
        .body(r#"{"role": "user", "content": "x"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    let resume = server
        .http
        .get(server.url(&format!("{CHAT}/space/stream")))
        .header("last-event-id", "soon")
        .send()
        .await
        .unwrap();
    assert_eq!(resume.status(), 400);
}

#[tokio::test]
async fn a_server_with_keys_wants_one() {
    let settings = Settings {
        api_keys: vec![ApiKey::from("key-1")],
        ..Settings::default()
    };
    let server = TestServer::start(vec![talker("assistant", &["Hi"], 0.0)], settings).await;
    let response = server.post_json(CHAT, &user("Hello")).await;
    assert_eq!(response.status(), 401);
    let response = server
        .http
        .post(server.url(CHAT))
        .bearer_auth("key-1")
        .json(&user("Hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let events = decode(&response.text().await.unwrap());
    assert_eq!(last_status(&events), Some(RunStatus::Completed));
}
