//! AgentScope's Agent API in full through the live server's `POST /process` (and AgentX's
//! `POST /chat` where it shares the path): the JSON answer to `"stream": false`, real times,
//! waiting runs answered through the request that started them, calls of plugins shown as
//! theirs, failures as `error` messages, system messages in the input. Each stream is read as
//! AgentScope's objects and back through the dialect's decoder into the strict accumulator.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_brain::ScriptedBrain;
use agentwire_core::{Accumulator, Event, Message, Part, RunStatus, ToolKind};
use agentwire_dialects::Dialect;
use agentwire_runtime::Agent;
use agentwire_server::Settings;
use agentwire_tools::{FnTool, JsonSchema};
use common::{TestServer, talker};
use serde::Deserialize;
use serde_json::{Value, json};

fn scripted(name: &str, turns: Value) -> agentwire_runtime::AgentBuilder {
    let script = json!({ "turns": turns }).to_string();
    Agent::builder(name).brain(ScriptedBrain::from_json(&script).unwrap())
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "agentwire_tools::schemars")]
struct Path {
    path: String,
}

/// Calls `rm` (a plugin that needs approval), then says `done`.
fn plugin_approver() -> Agent {
    let rm = FnTool::new("rm", "Removes a file", |args: Path, _| async move {
        Ok(format!("removed {}", args.path))
    });
    scripted(
        "approver",
        json!([
            [{"type": "tool_call_start", "id": "c1", "name": "rm"},
             {"type": "tool_call_delta", "id": "c1", "args": "{\"path\": \"a.txt\"}"},
             {"type": "tool_call_end", "id": "c1"},
             {"type": "finish", "reason": "tool_calls"}],
            [{"type": "text_delta", "text": "done"}, {"type": "finish", "reason": "stop"}]
        ]),
    )
    .tool(rm)
    .tool_kind("rm", ToolKind::Plugin)
    .approval(["rm"])
    .build()
    .unwrap()
}

/// Calls the client's `confirm`, then says `confirmed`.
fn asker() -> Agent {
    scripted(
        "asker",
        json!([
            [{"type": "tool_call_start", "id": "q1", "name": "confirm"},
             {"type": "tool_call_delta", "id": "q1", "args": "{}"},
             {"type": "tool_call_end", "id": "q1"},
             {"type": "finish", "reason": "tool_calls"}],
            [{"type": "text_delta", "text": "confirmed"}, {"type": "finish", "reason": "stop"}]
        ]),
    )
    .build()
    .unwrap()
}

/// Fails: its provider answers with an error.
fn failer() -> Agent {
    scripted(
        "failer",
        json!([[{"type": "text_delta", "text": "Let me"}, {"type": "error", "message": "upstream broke"}]]),
    )
    .build()
    .unwrap()
}

async fn server() -> TestServer {
    TestServer::start(
        vec![
            talker("assistant", &["Hello", " there"], 0.0),
            plugin_approver(),
            asker(),
            failer(),
        ],
        Settings::default(),
    )
    .await
}

fn user(text: &str) -> Value {
    json!({"role": "user", "type": "message", "content": [{"type": "text", "text": text}]})
}

/// Posts `body`; the status, the content type and the body.
async fn post(server: &TestServer, path: &str, body: &Value) -> (u16, String, String) {
    let response = server.post_json(path, body).await;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, content_type, response.text().await.unwrap())
}

/// The JSON objects of an AgentScope stream.
fn frames(wire: &str) -> Vec<Value> {
    wire.split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .map(|object| serde_json::from_str(object).unwrap())
        .collect()
}

/// `process` with `body`, which must stream; its objects and the run it decodes to.
async fn process(server: &TestServer, path: &str, body: &Value) -> (Vec<Value>, Vec<Event>) {
    let (status, content_type, wire) = post(server, path, body).await;
    assert_eq!(status, 200, "{wire}");
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let mut decoder = Dialect::AgentScope.decoder();
    let mut events = Vec::new();
    decoder.decode(wire.as_bytes(), &mut events).unwrap();
    decoder.finish(&mut events).unwrap();
    (frames(&wire), events)
}

fn accumulate(events: &[Event]) -> (Vec<Message>, Option<RunStatus>) {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator.push(event).unwrap();
    }
    (accumulator.messages().to_vec(), accumulator.status())
}

/// The types of the completed messages, in order.
fn completed_types(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .filter(|frame| frame["object"] == "message" && frame["status"] == "completed")
        .map(|frame| frame["type"].as_str().unwrap().to_owned())
        .collect()
}

fn now() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    i64::try_from(since.as_secs()).unwrap()
}

#[tokio::test]
async fn stream_false_answers_the_final_response_as_json_with_real_times() {
    let server = server().await;
    let before = now();
    let body = json!({"input": [user("Hi")], "stream": false, "session_id": "s-json"});
    let (status, content_type, text) = post(&server, "/process", &body).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(content_type, "application/json");
    let response: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(response["object"], "response");
    assert_eq!(response["status"], "completed");
    assert_eq!(response["session_id"], "s-json");
    assert_eq!(response["output"][0]["content"][0]["text"], "Hello there");
    let created_at = response["created_at"].as_i64().unwrap();
    let completed_at = response["completed_at"].as_i64().unwrap();
    assert!(created_at >= before && completed_at >= created_at && completed_at <= now());

    // Streamed, the same times stand on every response object.
    let body = json!({"input": [user("Hi")], "session_id": "s-sse"});
    let (frames, _) = process(&server, "/process", &body).await;
    let responses: Vec<&Value> = frames
        .iter()
        .filter(|frame| frame["object"] == "response")
        .collect();
    let statuses: Vec<&str> = responses
        .iter()
        .map(|frame| frame["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["created", "in_progress", "completed"]);
    assert!(
        responses
            .iter()
            .all(|frame| frame["created_at"].as_i64() >= Some(before))
    );
    assert!(responses[2]["completed_at"].as_i64() >= responses[0]["created_at"].as_i64());
}

#[tokio::test]
async fn an_approval_is_answered_through_process_and_the_plugin_call_runs() {
    let server = server().await;
    let body = json!({"input": [user("Remove a.txt")], "session_id": "s-approve"});
    let (frames, events) = process(&server, "/agents/approver/process", &body).await;
    assert_eq!(
        completed_types(&frames),
        ["plugin_call", "mcp_approval_request"]
    );
    let (messages, status) = accumulate(&events);
    assert_eq!(
        status,
        Some(RunStatus::Awaiting(agentwire_core::Awaiting::Approval))
    );
    let approval_id = messages[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.approval_id.to_string()),
            _ => None,
        })
        .unwrap();
    let run_id = frames[0]["id"].clone();

    // A question while the run waits answers nothing of it: refused when the client says so
    // (the default, `queue`, would wait for the run to end).
    let mut refused = body.clone();
    refused["mode"] = json!("reject");
    let (status, _, text) = post(&server, "/agents/approver/process", &refused).await;
    assert_eq!(status, 409, "{text}");
    assert!(text.contains("session_busy"), "{text}");

    let approve = json!({
        "type": "mcp_approval_response",
        "role": "user",
        "content": [{"type": "data", "data": {"approval_request_id": approval_id, "approve": true}}],
    });
    let body = json!({"input": [approve], "session_id": "s-approve"});
    let (frames, events) = process(&server, "/agents/approver/process", &body).await;
    // The same run, as a new response: created, in progress, what it did, completed.
    assert_eq!(frames[0]["status"], "created");
    assert_eq!(frames[0]["id"], run_id);
    assert_eq!(frames[0]["session_id"], "s-approve");
    assert_eq!(frames[1]["status"], "in_progress");
    let sequence: Vec<u64> = frames
        .iter()
        .map(|frame| frame["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(sequence, (0..frames.len() as u64).collect::<Vec<_>>());
    // The answer as the run took it, then what it did.
    assert_eq!(
        completed_types(&frames),
        ["mcp_approval_response", "plugin_call_output", "message"]
    );
    let output = frames
        .iter()
        .find(|frame| frame["type"] == "plugin_call_output" && frame["status"] == "completed")
        .unwrap();
    assert_eq!(output["role"], "tool");
    assert_eq!(output["content"][0]["data"]["output"], "\"removed a.txt\"");
    let (messages, status) = accumulate(&events);
    assert_eq!(status, Some(RunStatus::Completed));
    assert!(messages.iter().any(|message| message.content() == "done"));
}

#[tokio::test]
async fn a_client_tools_output_is_answered_through_process() {
    let server = server().await;
    let tools = json!([{"type": "function", "function": {
        "name": "confirm", "description": "Asks the user",
        "parameters": {"type": "object", "properties": {}, "required": null}}}]);
    let body = json!({"input": [user("Go")], "session_id": "s-tool", "tools": tools});
    let (frames, _) = process(&server, "/agents/asker/process", &body).await;
    assert_eq!(completed_types(&frames), ["function_call"]);
    let output = json!({
        "type": "function_call_output",
        "role": "tool",
        "content": [{"type": "data", "data": {"call_id": "q1", "output": "\"yes\""}}],
    });
    let body = json!({"input": [output], "session_id": "s-tool", "stream": false});
    let (status, _, text) = post(&server, "/agents/asker/process", &body).await;
    assert_eq!(status, 200, "{text}");
    let response: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(response["status"], "completed", "{response}");
    let texts: Vec<&Value> = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["type"] == "message")
        .map(|message| &message["content"][0]["text"])
        .collect();
    assert_eq!(texts, [&json!("confirmed")]);
}

#[tokio::test]
async fn a_failed_run_says_why_in_an_error_message_and_the_failed_response() {
    let server = server().await;
    let body = json!({"input": [user("Hi")]});
    let (frames, events) = process(&server, "/agents/failer/process", &body).await;
    let error = frames
        .iter()
        .find(|frame| frame["object"] == "message" && frame["type"] == "error")
        .unwrap();
    let last = frames.last().unwrap();
    assert_eq!(last["status"], "failed");
    assert_eq!(error["code"], last["error"]["code"]);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("upstream broke"),
        "{error}"
    );
    let output_types: Vec<&Value> = last["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| &message["type"])
        .collect();
    assert_eq!(output_types.last(), Some(&&json!("error")));
    assert_eq!(accumulate(&events).1, Some(RunStatus::Failed));
}

#[tokio::test]
async fn a_system_message_in_the_input_is_taken_and_kept() {
    let server = server().await;
    let system = json!({"role": "system", "type": "message", "content": [{"type": "text", "text": "Be brief."}]});
    let body = json!({"input": [system, user("Hi")], "session_id": "s-system"});
    let (_, events) = process(&server, "/process", &body).await;
    assert_eq!(accumulate(&events).1, Some(RunStatus::Completed));
    let session: Value = server
        .http
        .get(server.url("/v1/sessions/s-system"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let roles: Vec<&Value> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| &message["role"])
        .collect();
    assert_eq!(
        roles,
        [&json!("system"), &json!("user"), &json!("assistant")]
    );

    // Instructions alone are no turn of the conversation.
    let body = json!({"input": [system]});
    let (status, _, text) = post(&server, "/process", &body).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("no_input"), "{text}");
}

#[tokio::test]
async fn agentx_chat_answers_a_waiting_run() {
    let server = server().await;
    let question = json!({"messages": [{"role": "user", "parts": [{"type": "text", "text": "Remove a.txt"}]}],
        "session_id": "s-agentx", "agent": "approver"});
    let (status, _, wire) = post(&server, "/chat", &question).await;
    assert_eq!(status, 200, "{wire}");
    let mut decoder = Dialect::Agentx.decoder();
    let mut events = Vec::new();
    decoder.decode(wire.as_bytes(), &mut events).unwrap();
    decoder.finish(&mut events).unwrap();
    let (messages, status) = accumulate(&events);
    assert_eq!(
        status,
        Some(RunStatus::Awaiting(agentwire_core::Awaiting::Approval)),
        "{wire}"
    );
    let approval_id = messages[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.approval_id.to_string()),
            _ => None,
        })
        .unwrap();
    let answer = json!({"messages": [{"role": "user", "parts": [
        {"type": "approval_response", "approval_id": approval_id, "approved": true}]}],
        "session_id": "s-agentx", "agent": "approver"});
    let (status, _, wire) = post(&server, "/chat", &answer).await;
    assert_eq!(status, 200, "{wire}");
    let mut decoder = Dialect::Agentx.decoder();
    let mut events = Vec::new();
    decoder.decode(wire.as_bytes(), &mut events).unwrap();
    decoder.finish(&mut events).unwrap();
    let (messages, status) = accumulate(&events);
    assert_eq!(status, Some(RunStatus::Completed), "{wire}");
    assert!(
        messages.iter().any(|message| message.content() == "done"),
        "{wire}"
    );
}
