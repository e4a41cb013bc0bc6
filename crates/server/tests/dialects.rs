//! The dialect endpoints over real HTTP: each request as its client sends it, each response read
//! back with the dialect's own stream decoder into the strict accumulator; the AI SDK approval
//! round trip and stream resume; bad bodies.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_core::{Accumulator, Event, Message, Part, RunStatus};
use agentwire_dialects::Dialect;
use agentwire_dialects::ai_sdk::to_ui_message;
use agentwire_server::Settings;
use common::{TestServer, approver, talker};
use serde_json::{Value, json};

async fn server() -> TestServer {
    TestServer::start(
        vec![
            talker("assistant", &["Hello", " there"], 0.0),
            talker("echo", &["Echo"], 0.0),
            approver(),
        ],
        Settings::default(),
    )
    .await
}

/// Posts `body` to `path` and decodes the whole SSE answer with `dialect`'s decoder.
async fn post_decoded(
    server: &TestServer,
    path: &str,
    body: &Value,
    dialect: Dialect,
) -> (reqwest::header::HeaderMap, Vec<Event>) {
    let response = server
        .http
        .post(server.url(path))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{path}");
    let headers = response.headers().clone();
    let bytes = response.bytes().await.unwrap();
    let mut decoder = dialect.decoder();
    let mut events = Vec::new();
    decoder.decode(&bytes, &mut events).unwrap();
    decoder.finish(&mut events).unwrap();
    (headers, events)
}

fn accumulate(events: &[Event]) -> Vec<Message> {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator.push(event).unwrap();
    }
    accumulator.messages().to_vec()
}

fn text(message: &Message) -> String {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect()
}

fn last_status(events: &[Event]) -> Option<RunStatus> {
    events.iter().rev().find_map(|event| match &event.kind {
        agentwire_core::EventKind::RunStatus { status, .. } => Some(*status),
        _ => None,
    })
}

fn user_ui(text: &str) -> Value {
    json!({"id": "msg_u1", "role": "user", "parts": [{"type": "text", "text": text}]})
}

#[tokio::test]
async fn ai_sdk_chat_streams_the_run_and_the_session_keeps_the_chat() {
    let server = server().await;
    let body = json!({"id": "chat_1", "messages": [user_ui("Hi")], "trigger": "submit-message"});
    let (headers, events) = post_decoded(&server, "/api/chat", &body, Dialect::AiSdk).await;
    assert_eq!(headers["x-vercel-ai-ui-message-stream"], "v1");
    assert_eq!(headers["content-type"], "text/event-stream");
    let messages = accumulate(&events);
    assert_eq!(messages.len(), 1);
    assert_eq!(text(&messages[0]), "Hello there");
    assert_eq!(last_status(&events), Some(RunStatus::Completed));

    // The chat is the session: the native API shows its history.
    let session: Value = server
        .http
        .get(server.url("/v1/sessions/chat_1"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(session["messages"].as_array().unwrap().len(), 2);
    // Nothing going: resume answers 204, as `resumeStream` expects.
    let resume = server
        .http
        .get(server.url("/api/chat/chat_1/stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(resume.status(), 204);
    let unknown = server
        .http
        .get(server.url("/api/chat/nope/stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 204);

    // Per agent under /agents/{name}.
    let body = json!({"id": "chat_2", "messages": [user_ui("Hi")], "trigger": "submit-message"});
    let (_, events) = post_decoded(&server, "/agents/echo/api/chat", &body, Dialect::AiSdk).await;
    assert_eq!(text(&accumulate(&events)[0]), "Echo");
}

#[tokio::test]
async fn ai_sdk_approval_round_trip() {
    let server = server().await;
    let user = user_ui("Delete a.txt");
    let body = json!({"id": "chat_rm", "messages": [user], "trigger": "submit-message"});
    let (_, events) =
        post_decoded(&server, "/agents/approver/api/chat", &body, Dialect::AiSdk).await;
    assert_eq!(
        last_status(&events),
        Some(RunStatus::Awaiting(agentwire_core::Awaiting::Approval))
    );
    let assistant = accumulate(&events).remove(0);
    assert!(
        assistant
            .parts
            .iter()
            .any(|part| matches!(part, Part::ApprovalRequest(_)))
    );

    // What the client sends back: its assistant message with the approval answered.
    let mut ui = to_ui_message(&assistant);
    let tool_part = ui["parts"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|part| part["type"] == "tool-rm")
        .unwrap();
    assert_eq!(tool_part["state"], "approval-requested");
    tool_part["state"] = json!("approval-responded");
    tool_part["approval"]["approved"] = json!(true);
    let message_id = ui["id"].clone();
    let body = json!({
        "id": "chat_rm",
        "messages": [user, ui],
        "trigger": "submit-message",
        "messageId": message_id,
    });
    let (_, events) =
        post_decoded(&server, "/agents/approver/api/chat", &body, Dialect::AiSdk).await;
    assert_eq!(
        last_status(&events),
        Some(RunStatus::Completed),
        "{events:#?}"
    );
    let continued = accumulate(&events);
    // The response continues the client's message: same id, the tool's result, then `done`.
    assert_eq!(
        continued[0].id.as_ref().unwrap().as_str(),
        message_id.as_str().unwrap()
    );
    assert!(continued[0].parts.iter().any(
        |part| matches!(part, Part::ToolResult(result) if result.tool_call_id.as_str() == "c1")
    ));
    assert_eq!(text(&continued[0]), "done");

    // Answering again: nothing awaits it any more.
    let again = server
        .http
        .post(server.url("/agents/approver/api/chat"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409);
}

#[tokio::test]
async fn agentx_chat_streams_packets() {
    let server = server().await;
    let body = json!({"role": "user", "parts": [{"type": "text", "text": "Hi"}]});
    let (_, events) = post_decoded(&server, "/chat", &body, Dialect::Agentx).await;
    let messages = accumulate(&events);
    assert_eq!(text(messages.last().unwrap()), "Hello there");
    let body = json!({"messages": [{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}], "agent": "echo"});
    let (_, events) = post_decoded(&server, "/chat", &body, Dialect::Agentx).await;
    assert_eq!(text(accumulate(&events).last().unwrap()), "Echo");
}

#[tokio::test]
async fn agentscope_process_streams_the_response() {
    let server = server().await;
    let body = json!({
        "input": [{"role": "user", "type": "message", "content": [{"type": "text", "text": "Hi"}]}],
        "stream": true,
        "session_id": "s1",
    });
    let (_, events) =
        post_decoded(&server, "/agents/echo/process", &body, Dialect::AgentScope).await;
    let messages = accumulate(&events);
    assert_eq!(text(messages.last().unwrap()), "Echo");
    assert_eq!(last_status(&events), Some(RunStatus::Completed));
}

#[tokio::test]
async fn bad_bodies_get_a_4xx_json_error() {
    let server = server().await;
    for (path, body) in [
        ("/api/chat", "not json"),
        ("/api/chat", "{\"id\": \"c\"}"),
        ("/chat", "{\"role\": \"robot\"}"),
        ("/process", "{\"input\": 3}"),
        ("/agents/nobody/chat", "{\"role\": \"user\", \"parts\": []}"),
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
        assert!(error["error"]["code"].is_string(), "{path} {body}: {error}");
    }
}

#[tokio::test]
async fn ag_ui_runs_in_the_thread_and_echoes_its_ids() {
    let server = server().await;
    let body = json!({
        "threadId": "thread_1",
        "runId": "run_ui_1",
        "state": {},
        "messages": [{"id": "m1", "role": "user", "content": "Hi"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    });
    let response = server
        .http
        .post(server.url("/ag-ui"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let wire = response.text().await.unwrap();
    assert!(wire.contains("\"threadId\":\"thread_1\""), "{wire}");
    assert!(wire.contains("\"runId\":\"run_ui_1\""), "{wire}");
    let mut decoder = Dialect::AgUi.decoder();
    let mut events = Vec::new();
    decoder.decode(wire.as_bytes(), &mut events).unwrap();
    decoder.finish(&mut events).unwrap();
    assert_eq!(text(accumulate(&events).last().unwrap()), "Hello there");
    assert_eq!(last_status(&events), Some(RunStatus::Completed));
    // The thread is the session.
    let session = server
        .http
        .get(server.url("/v1/sessions/thread_1"))
        .send()
        .await
        .unwrap();
    assert_eq!(session.status(), 200);
}
