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
    let response = server.post_json(path, body).await;
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
    let again = server.post_json("/agents/approver/api/chat", &body).await;
    assert_eq!(again.status(), 409);
}

/// Two servers of the approver (the default agent) and a slow talker on one PostgreSQL
/// (`AGENTWIRE_TEST_DATABASE_URL`).
async fn two_nodes() -> (TestServer, TestServer) {
    let url = agentwire_testkit::postgres::required_schema_url().await;
    let settings = || Settings {
        database_url: Some(url.clone()),
        ..Settings::default()
    };
    let agents = || vec![approver(), talker("slow", &SLOW_WORDS, 40.0)];
    let a = TestServer::start(agents(), settings()).await;
    let b = TestServer::start(agents(), settings()).await;
    (a, b)
}

/// What the slow talker says, a word every 25 ms.
const SLOW_WORDS: [&str; 40] = ["word "; 40];

/// An id no earlier test used: the database outlives the test.
fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}_{nanos}")
}

/// The approval round trip of `useChat`, its answer sent to a node that does not execute the
/// run (two servers on one PostgreSQL, `AGENTWIRE_TEST_DATABASE_URL`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ai_sdk_approval_answered_through_another_node() {
    let (a, b) = two_nodes().await;
    let chat = unique("chat");
    let user = user_ui("Delete a.txt");
    let body = json!({"id": chat, "messages": [user], "trigger": "submit-message"});
    let (_, events) = post_decoded(&a, "/api/chat", &body, Dialect::AiSdk).await;
    assert_eq!(
        last_status(&events),
        Some(RunStatus::Awaiting(agentwire_core::Awaiting::Approval))
    );
    let mut ui = to_ui_message(&accumulate(&events).remove(0));
    let tool_part = ui["parts"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|part| part["type"] == "tool-rm")
        .unwrap();
    tool_part["state"] = json!("approval-responded");
    tool_part["approval"]["approved"] = json!(true);
    let message_id = ui["id"].clone();
    let body = json!({
        "id": chat,
        "messages": [user, ui],
        "trigger": "submit-message",
        "messageId": message_id,
    });
    // B answers it: the run goes on on A, and B streams the rest, continuing the message.
    let (_, events) = post_decoded(&b, "/api/chat", &body, Dialect::AiSdk).await;
    assert_eq!(
        last_status(&events),
        Some(RunStatus::Completed),
        "{events:#?}"
    );
    let continued = accumulate(&events);
    assert_eq!(
        continued[0].id.as_ref().unwrap().as_str(),
        message_id.as_str().unwrap()
    );
    assert!(continued[0].parts.iter().any(
        |part| matches!(part, Part::ToolResult(result) if result.tool_call_id.as_str() == "c1")
    ));
    assert_eq!(text(&continued[0]), "done");
    a.shutdown().await;
    b.shutdown().await;
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
    let response = server.post_json("/ag-ui", &body).await;
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

/// Decodes a whole body with `dialect`'s stream decoder into the strict accumulator's messages.
fn decode(dialect: Dialect, bytes: &[u8]) -> Vec<Event> {
    let mut decoder = dialect.decoder();
    let mut events = Vec::new();
    decoder.decode(bytes, &mut events).unwrap();
    decoder.finish(&mut events).unwrap();
    events
}

/// The approval id of the (only) approval request in `messages`.
fn approval_id(messages: &[Message]) -> String {
    messages
        .iter()
        .flat_map(|message| &message.parts)
        .find_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.approval_id.to_string()),
            _ => None,
        })
        .unwrap()
}

fn has_tool_result(messages: &[Message], call: &str) -> bool {
    messages.iter().flat_map(|m| &m.parts).any(
        |part| matches!(part, Part::ToolResult(result) if result.tool_call_id.as_str() == call),
    )
}

fn a2a_send(method: &str, id: Value, parts: Value, ids: Value) -> Value {
    let mut message = json!({"messageId": format!("m-{id}"), "role": "ROLE_USER", "parts": parts});
    if let Value::Object(ids) = ids {
        message.as_object_mut().unwrap().extend(ids);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"message": message}})
}

#[tokio::test]
async fn a2a_agent_cards_point_at_this_servers_a2a() {
    let server = server().await;
    let card: Value = server
        .http
        .get(server.url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["name"], "assistant");
    let interface = &card["supportedInterfaces"][0];
    assert_eq!(interface["url"], server.url("/a2a"));
    assert_eq!(interface["protocolBinding"], "JSONRPC");
    let card: Value = server
        .http
        .get(server.url("/agents/echo/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["name"], "echo");
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        server.url("/agents/echo/a2a")
    );
    let unknown = server
        .http
        .get(server.url("/agents/nobody/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

#[tokio::test]
async fn a2a_send_message_answers_the_finished_task() {
    let server = server().await;
    let body = a2a_send(
        "SendMessage",
        json!(7),
        json!([{"text": "Hi"}]),
        json!({"contextId": "ctx_1"}),
    );
    let response = server.post_json("/a2a", &body).await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["id"], 7);
    let task = &answer["result"]["task"];
    assert_eq!(task["contextId"], "ctx_1");
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    // The task read back as a one-item stream by the A2A decoder.
    let frame = format!("data: {answer}\n\n");
    let events = decode(Dialect::A2a, frame.as_bytes());
    let messages = accumulate(&events);
    assert_eq!(text(messages.last().unwrap()), "Hello there");
    assert_eq!(last_status(&events), Some(RunStatus::Completed));
    // The context is the session.
    let session = server
        .http
        .get(server.url("/v1/sessions/ctx_1"))
        .send()
        .await
        .unwrap();
    assert_eq!(session.status(), 200);
}

#[tokio::test]
async fn a2a_send_streaming_message_streams_json_rpc_items() {
    let server = server().await;
    let body = a2a_send(
        "SendStreamingMessage",
        json!("req-1"),
        json!([{"text": "Hi"}]),
        json!({}),
    );
    let response = server.post_json("/agents/echo/a2a", &body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let wire = response.text().await.unwrap();
    for data in wire.lines().filter_map(|line| line.strip_prefix("data: ")) {
        let item: Value = serde_json::from_str(data).unwrap();
        assert_eq!(item["id"], "req-1", "{data}");
    }
    let events = decode(Dialect::A2a, wire.as_bytes());
    assert_eq!(text(accumulate(&events).last().unwrap()), "Echo");
    assert_eq!(last_status(&events), Some(RunStatus::Completed));
}

#[tokio::test]
async fn a2a_approval_answered_on_the_task_continues_the_run() {
    let server = server().await;
    let body = a2a_send(
        "SendStreamingMessage",
        json!(1),
        json!([{"text": "Delete a.txt"}]),
        json!({"contextId": "ctx_rm"}),
    );
    let wire = server
        .post_json("/agents/approver/a2a", &body)
        .await
        .text()
        .await
        .unwrap();
    assert!(wire.contains("TASK_STATE_INPUT_REQUIRED"), "{wire}");
    let events = decode(Dialect::A2a, wire.as_bytes());
    assert_eq!(
        last_status(&events),
        Some(RunStatus::Awaiting(agentwire_core::Awaiting::Approval))
    );
    let task_id = match &events[0].kind {
        agentwire_core::EventKind::RunCreated { run_id, .. } => run_id.to_string(),
        other => panic!("{other:?}"),
    };
    let approval = approval_id(&accumulate(&events));
    let answer =
        json!([{"data": {"type": "approval_response", "approval_id": approval, "approved": true}}]);
    let body = a2a_send(
        "SendMessage",
        json!(2),
        answer.clone(),
        json!({"taskId": task_id, "contextId": "ctx_rm"}),
    );
    let reply: Value = server
        .post_json("/agents/approver/a2a", &body)
        .await
        .json()
        .await
        .unwrap();
    let task = &reply["result"]["task"];
    assert_eq!(task["id"], task_id.as_str(), "{reply}");
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{reply}");
    let events = decode(Dialect::A2a, format!("data: {reply}\n\n").as_bytes());
    let messages = accumulate(&events);
    assert!(has_tool_result(&messages, "c1"), "{messages:#?}");
    assert_eq!(text(messages.last().unwrap()), "done");

    // Answering again: the task is over, A2A's UnsupportedOperationError.
    let again: Value = server
        .post_json("/agents/approver/a2a", &body)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(again["error"]["code"], -32004, "{again}");
    assert_eq!(again["id"], 2);
}

#[tokio::test]
async fn a2a_malformed_requests_get_json_rpc_errors() {
    let server = server().await;
    let cases = [
        ("{not json", -32700, Value::Null),
        (
            r#"{"jsonrpc": "1.0", "id": 1, "method": "SendMessage", "params": {}}"#,
            -32600,
            json!(1),
        ),
        (r#"{"jsonrpc": "2.0", "id": 2}"#, -32600, json!(2)),
        (
            r#"{"jsonrpc": "2.0", "id": 3, "method": "ListAgents", "params": {}}"#,
            -32601,
            json!(3),
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 31, "method": "GetTask", "params": {"id": "t"}}"#,
            -32001,
            json!(31),
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 32, "method": "CancelTask", "params": {"id": "t"}}"#,
            -32001,
            json!(32),
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 33, "method": "GetTask", "params": {}}"#,
            -32602,
            json!(33),
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 34, "method": "GetTask", "params": {"id": "t", "historyLength": -1}}"#,
            -32602,
            json!(34),
        ),
        (
            r#"{"jsonrpc": "2.0", "id": "4", "method": "SendMessage", "params": {}}"#,
            -32602,
            json!("4"),
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 5, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}], "taskId": "run_nope"}}}"#,
            -32001,
            json!(5),
        ),
    ];
    for (body, code, id) in cases {
        let response = server
            .http
            .post(server.url("/a2a"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{body}");
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["jsonrpc"], "2.0", "{body}");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
        assert_eq!(answer["id"], id, "{body}: {answer}");
        assert!(answer["error"]["message"].is_string(), "{answer}");
    }
}

/// A JSON-RPC call of a task method.
fn a2a_task_call(method: &str, id: Value, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Starts the approver's run over A2A and returns its task id once it waits for the approval.
async fn a2a_waiting_task(server: &TestServer, context: &str) -> String {
    let body = a2a_send(
        "SendMessage",
        json!(1),
        json!([{"text": "Delete a.txt"}]),
        json!({"contextId": context}),
    );
    let reply: Value = server
        .post_json("/agents/approver/a2a", &body)
        .await
        .json()
        .await
        .unwrap();
    let task = &reply["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{reply}"
    );
    task["id"].as_str().unwrap().to_owned()
}

/// The approval a waiting task asks for, read with `GetTask`.
async fn a2a_approval(server: &TestServer, task_id: &str) -> String {
    let call = a2a_task_call("GetTask", json!(1), json!({"id": task_id}));
    let waiting: Value = server
        .post_json("/agents/approver/a2a", &call)
        .await
        .json()
        .await
        .unwrap();
    let events = decode(
        Dialect::A2a,
        format!(
            "data: {}\n\n",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"task": waiting["result"]}})
        )
        .as_bytes(),
    );
    approval_id(&accumulate(&events))
}

/// A follow-up approving `approval` on `task_id`.
fn a2a_approve(method: &str, id: Value, task_id: &str, context: &str, approval: &str) -> Value {
    let answer =
        json!([{"data": {"type": "approval_response", "approval_id": approval, "approved": true}}]);
    a2a_send(
        method,
        id,
        answer,
        json!({"taskId": task_id, "contextId": context}),
    )
}

/// The JSON-RPC responses of an SSE answer.
fn sse_items(wire: &str) -> Vec<Value> {
    wire.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

#[tokio::test]
async fn a2a_a_streamed_answer_begins_with_the_task() {
    // Regression (the a2a-sdk peer): a follow-up's stream began with a status update, but an
    // A2A task stream begins with the task.
    let server = server().await;
    let task_id = a2a_waiting_task(&server, "ctx_follow").await;
    let approval = a2a_approval(&server, &task_id).await;
    let body = a2a_approve(
        "SendStreamingMessage",
        json!("f"),
        &task_id,
        "ctx_follow",
        &approval,
    );
    let wire = server
        .post_json("/agents/approver/a2a", &body)
        .await
        .text()
        .await
        .unwrap();
    let items = sse_items(&wire);
    let first = &items[0]["result"]["task"];
    assert_eq!(first["id"], task_id.as_str(), "{wire}");
    assert_eq!(
        first["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{wire}"
    );
    assert!(
        items[1..]
            .iter()
            .all(|item| item["result"].get("task").is_none()),
        "{wire}"
    );
    assert!(items.iter().all(|item| item["id"] == "f"), "{wire}");
    let events = decode(Dialect::A2a, wire.as_bytes());
    assert_eq!(last_status(&events), Some(RunStatus::Completed), "{wire}");
    assert_eq!(text(accumulate(&events).last().unwrap()), "done");
}

#[tokio::test]
async fn a2a_get_task_answers_the_run_as_a_task() {
    let server = server().await;
    let body = a2a_send(
        "SendMessage",
        json!(1),
        json!([{"text": "Hi"}]),
        json!({"contextId": "ctx_get"}),
    );
    let sent: Value = server.post_json("/a2a", &body).await.json().await.unwrap();
    let task_id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();

    let call = a2a_task_call("GetTask", json!("g1"), json!({"id": task_id}));
    let got: Value = server.post_json("/a2a", &call).await.json().await.unwrap();
    assert_eq!(got["id"], "g1");
    let task = &got["result"];
    assert_eq!(task["id"], task_id.as_str(), "{got}");
    assert_eq!(task["contextId"], "ctx_get");
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    // The same artifacts as the blocking answer, and the input as the history.
    assert_eq!(task["artifacts"], sent["result"]["task"]["artifacts"]);
    let history = task["history"].as_array().unwrap();
    assert_eq!(history.len(), 1, "{got}");
    assert_eq!(history[0]["messageId"], "m-1");
    assert_eq!(history[0]["role"], "ROLE_USER");
    assert_eq!(history[0]["taskId"], task_id.as_str());
    assert_eq!(history[0]["parts"], json!([{"text": "Hi"}]));

    // `historyLength: 0` leaves the history out.
    let call = a2a_task_call(
        "GetTask",
        json!(2),
        json!({"id": task_id, "historyLength": 0}),
    );
    let got: Value = server.post_json("/a2a", &call).await.json().await.unwrap();
    assert_eq!(got["result"]["history"], json!([]), "{got}");

    // Another agent's endpoint does not have the task.
    let call = a2a_task_call("GetTask", json!(3), json!({"id": task_id}));
    let other: Value = server
        .post_json("/agents/echo/a2a", &call)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(other["error"]["code"], -32001, "{other}");
}

#[tokio::test]
async fn a2a_cancel_task_cancels_the_run_and_answers_the_canceled_task() {
    let server = server().await;
    let task_id = a2a_waiting_task(&server, "ctx_cancel").await;
    let call = a2a_task_call("CancelTask", json!(9), json!({"id": task_id}));
    let canceled: Value = server
        .post_json("/agents/approver/a2a", &call)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(canceled["id"], 9);
    let task = &canceled["result"];
    assert_eq!(task["id"], task_id.as_str(), "{canceled}");
    assert_eq!(task["status"]["state"], "TASK_STATE_CANCELED", "{canceled}");
    // The run is canceled for the native API too.
    let run: Value = server
        .http
        .get(server.url(&format!("/v1/runs/{task_id}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(run["run"]["status"], "canceled", "{run}");

    // Over: cancelling again is TaskNotCancelableError, subscribing UnsupportedOperationError.
    let again: Value = server
        .post_json("/agents/approver/a2a", &call)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(again["error"]["code"], -32002, "{again}");
    let call = a2a_task_call("SubscribeToTask", json!(10), json!({"id": task_id}));
    let subscribed: Value = server
        .post_json("/agents/approver/a2a", &call)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(subscribed["error"]["code"], -32004, "{subscribed}");
}

#[tokio::test]
async fn a2a_subscribe_to_task_streams_it_again_from_the_task() {
    let server = server().await;
    let task_id = a2a_waiting_task(&server, "ctx_sub").await;
    let call = a2a_task_call("SubscribeToTask", json!("s1"), json!({"id": task_id}));
    let response = server.post_json("/agents/approver/a2a", &call).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let wire = response.text().await.unwrap();
    let first: Value = serde_json::from_str(
        wire.lines()
            .find_map(|line| line.strip_prefix("data: "))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["id"], "s1");
    assert_eq!(first["result"]["task"]["id"], task_id.as_str(), "{wire}");
    let events = decode(Dialect::A2a, wire.as_bytes());
    assert_eq!(
        last_status(&events),
        Some(RunStatus::Awaiting(agentwire_core::Awaiting::Approval))
    );
    assert!(!approval_id(&accumulate(&events)).is_empty());
}

#[tokio::test]
async fn a2a_get_task_reads_a_run_from_the_store_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let settings = || Settings {
        database_url: Some(format!("sqlite://{}", dir.path().join("aw.db").display())),
        ..Settings::default()
    };
    let agents = || vec![talker("assistant", &["Hello", " there"], 0.0)];
    let first = TestServer::start(agents(), settings()).await;
    let body = a2a_send(
        "SendMessage",
        json!(1),
        json!([{"text": "Hi"}]),
        json!({"contextId": "ctx_kept"}),
    );
    let sent: Value = first.post_json("/a2a", &body).await.json().await.unwrap();
    first.shutdown().await;

    let second = TestServer::start(agents(), settings()).await;
    let task_id = sent["result"]["task"]["id"].as_str().unwrap();
    let call = a2a_task_call("GetTask", json!(1), json!({"id": task_id}));
    let got: Value = second.post_json("/a2a", &call).await.json().await.unwrap();
    let task = &got["result"];
    assert_eq!(task["id"], task_id, "{got}");
    assert_eq!(task["contextId"], "ctx_kept");
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["artifacts"], sent["result"]["task"]["artifacts"]);
    let call = a2a_task_call("CancelTask", json!(2), json!({"id": task_id}));
    let again: Value = second.post_json("/a2a", &call).await.json().await.unwrap();
    assert_eq!(again["error"]["code"], -32002, "{again}");
}

/// What an A2A stream shows, ids and times aside: each item's kind, the task's state, and its
/// artifacts' parts (a text's text, a data part's type).
fn a2a_shape(wire: &str) -> Vec<Value> {
    let parts = |artifact: &Value| -> Vec<Value> {
        let parts = artifact["parts"].as_array().into_iter().flatten();
        parts
            .map(|part| match &part["text"] {
                Value::Null => part["data"]["type"].clone(),
                text => text.clone(),
            })
            .collect()
    };
    sse_items(wire)
        .into_iter()
        .map(|item| {
            let result = &item["result"];
            if let Value::Object(task) = &result["task"] {
                let artifacts = task["artifacts"].as_array().into_iter().flatten();
                let artifacts: Vec<Value> = artifacts.map(parts).map(Value::from).collect();
                json!({"task": task["status"]["state"], "artifacts": artifacts})
            } else if let Value::Object(update) = &result["statusUpdate"] {
                json!({"status": update["status"]["state"]})
            } else {
                json!({"artifact": parts(&result["artifactUpdate"]["artifact"])})
            }
        })
        .collect()
}

/// An approval answered by a follow-up through a node that does not execute the task: the
/// stream is the one the task's own node sends (the task as it waited, then the run on to its
/// end, the tool's result included), and `SendMessage` answers the completed task as there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_approval_answered_through_another_node() {
    let (a, b) = two_nodes().await;
    // The same answer on the task's node, then through the other.
    let mut wires = Vec::new();
    for through in [&a, &b] {
        let context = unique("ctx");
        let task_id = a2a_waiting_task(&a, &context).await;
        let approval = a2a_approval(through, &task_id).await;
        let body = a2a_approve(
            "SendStreamingMessage",
            json!("f"),
            &task_id,
            &context,
            &approval,
        );
        let response = through.post_json("/a2a", &body).await;
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        assert_eq!(response.headers()["x-agentwire-run-id"], task_id.as_str());
        let wire = response.text().await.unwrap();
        let items = sse_items(&wire);
        assert_eq!(items[0]["result"]["task"]["id"], task_id.as_str(), "{wire}");
        assert!(items.iter().all(|item| item["id"] == "f"), "{wire}");
        wires.push(wire);
    }
    let (here, elsewhere) = (&wires[0], &wires[1]);
    assert_eq!(a2a_shape(elsewhere), a2a_shape(here), "{elsewhere}");
    let events = decode(Dialect::A2a, elsewhere.as_bytes());
    assert_eq!(
        last_status(&events),
        Some(RunStatus::Completed),
        "{elsewhere}"
    );
    let messages = accumulate(&events);
    assert!(has_tool_result(&messages, "c1"), "{messages:#?}");
    assert_eq!(text(messages.last().unwrap()), "done");

    let mut tasks = Vec::new();
    for through in [&a, &b] {
        let context = unique("ctx");
        let task_id = a2a_waiting_task(&a, &context).await;
        let approval = a2a_approval(through, &task_id).await;
        let body = a2a_approve("SendMessage", json!(2), &task_id, &context, &approval);
        let reply: Value = through.post_json("/a2a", &body).await.json().await.unwrap();
        assert_eq!(reply["result"]["task"]["id"], task_id.as_str(), "{reply}");
        // Answering again: the task is over, wherever it ran.
        let again: Value = through.post_json("/a2a", &body).await.json().await.unwrap();
        assert_eq!(again["error"]["code"], -32004, "{again}");
        tasks.push(reply["result"]["task"].clone());
    }
    let (here, elsewhere) = (&tasks[0], &tasks[1]);
    assert_eq!(
        elsewhere["status"]["state"], "TASK_STATE_COMPLETED",
        "{elsewhere}"
    );
    let frame = |task: &Value| format!("data: {}\n\n", json!({"result": {"task": task}}));
    assert_eq!(
        a2a_shape(&frame(elsewhere)),
        a2a_shape(&frame(here)),
        "{elsewhere}"
    );
    let events = decode(Dialect::A2a, frame(elsewhere).as_bytes());
    let messages = accumulate(&events);
    assert!(has_tool_result(&messages, "c1"), "{messages:#?}");
    assert_eq!(text(messages.last().unwrap()), "done");
    a.shutdown().await;
    b.shutdown().await;
}

/// Starts the slow talker's task on `server` and returns its id as soon as its stream has
/// shown the task, while it works.
async fn a2a_working_task(server: &TestServer) -> String {
    let body = a2a_send(
        "SendStreamingMessage",
        json!(1),
        json!([{"text": "Talk"}]),
        json!({"contextId": unique("ctx")}),
    );
    let mut response = server.post_json("/agents/slow/a2a", &body).await;
    let mut wire = String::new();
    loop {
        let chunk = response
            .chunk()
            .await
            .unwrap()
            .expect("the task's first item");
        wire.push_str(std::str::from_utf8(&chunk).unwrap());
        if let Some((first, _)) = wire.split_once("\n\n") {
            let first = &sse_items(first)[0];
            let task = &first["result"]["task"];
            assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED", "{wire}");
            return task["id"].as_str().unwrap().to_owned();
        }
    }
}

/// `SubscribeToTask` through a node that does not execute the task streams it from its `task`
/// item, from the store and its node's live notices, and ends as on its node: a working task's
/// stream at its end, a waiting one's where it waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_subscribe_to_task_through_another_node() {
    let (a, b) = two_nodes().await;
    let task_id = a2a_working_task(&a).await;
    let call = a2a_task_call("SubscribeToTask", json!("s1"), json!({"id": task_id}));
    let response = b.post_json("/agents/slow/a2a", &call).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let wire = response.text().await.unwrap();
    let items = sse_items(&wire);
    assert_eq!(items[0]["result"]["task"]["id"], task_id.as_str(), "{wire}");
    assert!(items.iter().all(|item| item["id"] == "s1"), "{wire}");
    let events = decode(Dialect::A2a, wire.as_bytes());
    assert_eq!(last_status(&events), Some(RunStatus::Completed), "{wire}");
    assert_eq!(
        text(accumulate(&events).last().unwrap()),
        SLOW_WORDS.concat()
    );

    let task_id = a2a_waiting_task(&a, &unique("ctx")).await;
    let call = a2a_task_call("SubscribeToTask", json!("s2"), json!({"id": task_id}));
    let wire = b
        .post_json("/agents/approver/a2a", &call)
        .await
        .text()
        .await
        .unwrap();
    let items = sse_items(&wire);
    assert_eq!(items[0]["result"]["task"]["id"], task_id.as_str(), "{wire}");
    let events = decode(Dialect::A2a, wire.as_bytes());
    assert_eq!(
        last_status(&events),
        Some(RunStatus::Awaiting(agentwire_core::Awaiting::Approval)),
        "{wire}"
    );
    assert!(!approval_id(&accumulate(&events)).is_empty());
    a.shutdown().await;
    b.shutdown().await;
}

/// `CancelTask` through a node that does not execute the task answers it canceled, as its own
/// node does: a working task once its node has canceled it, a waiting one too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_cancel_task_through_another_node() {
    let (a, b) = two_nodes().await;
    let working = a2a_working_task(&a).await;
    let waiting = a2a_waiting_task(&a, &unique("ctx")).await;
    for (agent, task_id) in [("slow", working), ("approver", waiting)] {
        let call = a2a_task_call("CancelTask", json!(9), json!({"id": task_id}));
        let path = format!("/agents/{agent}/a2a");
        let canceled: Value = b.post_json(&path, &call).await.json().await.unwrap();
        let task = &canceled["result"];
        assert_eq!(task["id"], task_id.as_str(), "{canceled}");
        assert_eq!(task["status"]["state"], "TASK_STATE_CANCELED", "{canceled}");
    }
    a.shutdown().await;
    b.shutdown().await;
}

/// A task waiting for its approval outlives its server: after a restart its subscription
/// replays it to where it waits, and the answer takes it over from the store and streams on.
#[tokio::test]
async fn a2a_approval_answered_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let settings = || Settings {
        database_url: Some(format!("sqlite://{}", dir.path().join("aw.db").display())),
        ..Settings::default()
    };
    let first = TestServer::start(vec![approver()], settings()).await;
    let task_id = a2a_waiting_task(&first, "ctx_restart").await;
    first.shutdown().await;

    let second = TestServer::start(vec![approver()], settings()).await;
    let call = a2a_task_call("SubscribeToTask", json!("s"), json!({"id": task_id}));
    let wire = second.post_json("/a2a", &call).await.text().await.unwrap();
    assert_eq!(
        last_status(&decode(Dialect::A2a, wire.as_bytes())),
        Some(RunStatus::Awaiting(agentwire_core::Awaiting::Approval)),
        "{wire}"
    );
    let approval = a2a_approval(&second, &task_id).await;
    let body = a2a_approve(
        "SendStreamingMessage",
        json!("r"),
        &task_id,
        "ctx_restart",
        &approval,
    );
    let wire = second.post_json("/a2a", &body).await.text().await.unwrap();
    let first_item = &sse_items(&wire)[0]["result"]["task"];
    assert_eq!(
        first_item["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{wire}"
    );
    let events = decode(Dialect::A2a, wire.as_bytes());
    assert_eq!(last_status(&events), Some(RunStatus::Completed), "{wire}");
    let messages = accumulate(&events);
    assert!(has_tool_result(&messages, "c1"), "{messages:#?}");
    assert_eq!(text(messages.last().unwrap()), "done");
    second.shutdown().await;
}

/// An agent that asks the client's `confirm` tool, then says what it answered.
fn asker() -> agentwire_runtime::Agent {
    let script = json!({"turns": [
        [{"type": "tool_call_start", "id": "q1", "name": "confirm"},
         {"type": "tool_call_delta", "id": "q1", "args": "{\"question\": \"Sure?\"}"},
         {"type": "tool_call_end", "id": "q1"},
         {"type": "finish", "reason": "tool_calls"}],
        [{"type": "text_delta", "text": "confirmed"}, {"type": "finish", "reason": "stop"}]
    ]});
    agentwire_runtime::Agent::builder("asker")
        .brain(agentwire_brain::ScriptedBrain::from_json(&script.to_string()).unwrap())
        .build()
        .unwrap()
}

fn ag_ui_input(thread: &str, run: &str, messages: Value) -> Value {
    json!({
        "threadId": thread,
        "runId": run,
        "state": {},
        "messages": messages,
        "tools": [{"name": "confirm", "description": "Asks the user", "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}}],
        "context": [],
        "forwardedProps": {},
    })
}

async fn ag_ui_post(server: &TestServer, path: &str, body: &Value) -> (String, Vec<Event>) {
    let response = server.post_json(path, body).await;
    assert_eq!(response.status(), 200, "{body}");
    let wire = response.text().await.unwrap();
    let events = decode(Dialect::AgUi, wire.as_bytes());
    (wire, events)
}

#[tokio::test]
async fn ag_ui_frontend_tool_answered_by_a_tool_message() {
    let server = TestServer::start(vec![asker()], Settings::default()).await;
    let user = json!({"id": "u1", "role": "user", "content": "Go"});
    let body = ag_ui_input("thread_q", "run_a", json!([user]));
    let (wire, events) = ag_ui_post(&server, "/ag-ui", &body).await;
    assert!(wire.contains("\"toolCallName\":\"confirm\""), "{wire}");
    assert_eq!(
        last_status(&events),
        Some(RunStatus::Awaiting(
            agentwire_core::Awaiting::FunctionOutput
        )),
        "{wire}"
    );
    let assistant_id = accumulate(&events)[0].id.clone().unwrap().to_string();

    // The client ran the tool: its history now holds the call and the tool message.
    let messages = json!([
        user,
        {"id": assistant_id, "role": "assistant", "toolCalls": [
            {"id": "q1", "type": "function", "function": {"name": "confirm", "arguments": "{\"question\": \"Sure?\"}"}}
        ]},
        {"id": "t1", "role": "tool", "toolCallId": "q1", "content": "yes"},
    ]);
    let body = ag_ui_input("thread_q", "run_b", messages);
    let (wire, events) = ag_ui_post(&server, "/ag-ui", &body).await;
    // A new AG-UI run, named by the request.
    assert!(
        wire.starts_with("data: {\"type\":\"RUN_STARTED\""),
        "{wire}"
    );
    assert!(wire.contains("\"runId\":\"run_b\""), "{wire}");
    // Regression (the @ag-ui/client peer): the client holds its tool message already; a
    // TOOL_CALL_RESULT for it would make its reducer add a second one.
    assert!(!wire.contains("TOOL_CALL_RESULT"), "{wire}");
    assert_eq!(last_status(&events), Some(RunStatus::Completed), "{wire}");
    assert_eq!(text(accumulate(&events).last().unwrap()), "confirmed");
    // The run heard the client's answer, and the thread keeps it.
    let session: Value = server
        .http
        .get(server.url("/v1/sessions/thread_q"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(session.to_string().contains("\"yes\""), "{session}");
}

async fn ag_ui_interrupt_answered(approved: bool) -> Vec<Message> {
    let server = server().await;
    let thread = format!("thread_rm_{approved}");
    let user = json!({"id": "u1", "role": "user", "content": "Delete a.txt"});
    let body = ag_ui_input(&thread, "run_1", json!([user]));
    let mut body = body;
    body["tools"] = json!([]);
    let (wire, events) = ag_ui_post(&server, "/agents/approver/ag-ui", &body).await;
    assert!(wire.contains("interrupt"), "{wire}");
    assert_eq!(
        last_status(&events),
        Some(RunStatus::Awaiting(agentwire_core::Awaiting::Approval))
    );
    let approval = approval_id(&accumulate(&events));
    let status = if approved { "resolved" } else { "cancelled" };
    body["runId"] = json!("run_2");
    body["resume"] = json!([{"interruptId": approval, "status": status}]);
    let (wire, events) = ag_ui_post(&server, "/agents/approver/ag-ui", &body).await;
    assert!(wire.contains("\"runId\":\"run_2\""), "{wire}");
    assert_eq!(last_status(&events), Some(RunStatus::Completed), "{wire}");
    accumulate(&events)
}

/// An approval interrupt answered by `resume` through a node that does not execute the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_ui_interrupt_answered_through_another_node() {
    let (a, b) = two_nodes().await;
    let thread = unique("thread");
    let user = json!({"id": "u1", "role": "user", "content": "Delete a.txt"});
    let mut body = ag_ui_input(&thread, "run_1", json!([user]));
    body["tools"] = json!([]);
    let (_, events) = ag_ui_post(&a, "/ag-ui", &body).await;
    assert_eq!(
        last_status(&events),
        Some(RunStatus::Awaiting(agentwire_core::Awaiting::Approval))
    );
    let approval = approval_id(&accumulate(&events));
    body["runId"] = json!("run_2");
    body["resume"] = json!([{"interruptId": approval, "status": "resolved"}]);
    let (wire, events) = ag_ui_post(&b, "/ag-ui", &body).await;
    assert!(wire.contains("\"runId\":\"run_2\""), "{wire}");
    assert_eq!(last_status(&events), Some(RunStatus::Completed), "{wire}");
    let messages = accumulate(&events);
    assert!(has_tool_result(&messages, "c1"), "{messages:#?}");
    assert_eq!(text(messages.last().unwrap()), "done");
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn ag_ui_interrupt_approved_by_resume_runs_the_tool() {
    let messages = ag_ui_interrupt_answered(true).await;
    assert!(has_tool_result(&messages, "c1"), "{messages:#?}");
    assert_eq!(text(messages.last().unwrap()), "done");
}

#[tokio::test]
async fn ag_ui_interrupt_denied_by_resume_does_not_run_the_tool() {
    let messages = ag_ui_interrupt_answered(false).await;
    assert!(!has_tool_result(&messages, "c1"), "{messages:#?}");
    let parts = messages.iter().flat_map(|m| &m.parts);
    assert!(
        parts.clone().any(
            |part| matches!(part, Part::ToolError(error) if error.tool_call_id.as_str() == "c1")
        ),
        "{messages:#?}"
    );
}
