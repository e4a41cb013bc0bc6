//! Sub-agents through the server: a run whose agent calls another agent streams the child's
//! run nested in its own log, the client answers a child's approval through the top run, the
//! session keeps only the top run's conversation, and the log replays from any point.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_brain::ScriptedBrain;
use agentwire_core::{Awaiting, EventKind, Part, RunStatus};
use agentwire_runtime::Agent;
use agentwire_server::Settings;
use common::{SseClient, TestServer, approver, run_body};
use serde_json::{Value, json};

/// An agent that asks `approver` to clean up, then reports what it said.
fn coordinator() -> Agent {
    let script = json!({"turns": [
        [
            {"type": "tool_call_start", "id": "call_1", "name": "approver"},
            {"type": "tool_call_delta", "id": "call_1", "args": "{\"input\": \"remove a.txt\"}"},
            {"type": "tool_call_end", "id": "call_1"},
            {"type": "finish", "reason": "tool_calls"}
        ],
        [{"type": "text_delta", "text": "The approver is done."}, {"type": "finish", "reason": "stop"}]
    ]});
    Agent::builder("coordinator")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .subagent(approver())
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_approval_is_answered_through_the_top_run_and_its_log_replays() {
    let server = TestServer::start(vec![coordinator(), approver()], Settings::default()).await;
    let mut body = run_body(Some("coordinator"), "clean up");
    body["session_id"] = json!("ses_team");
    let mut stream = server.post_sse(&body).await;
    stream.until_end().await;
    // The stream settles where the top run waits, after the child's request.
    assert_eq!(
        stream.accumulator.status(),
        Some(RunStatus::Awaiting(Awaiting::Approval))
    );
    let run_id = stream.accumulator.run_id().unwrap().clone();
    let child = stream.accumulator.children().next().unwrap();
    assert_eq!(child.agent(), Some("approver"));
    assert_eq!(
        child.status(),
        Some(RunStatus::Awaiting(Awaiting::Approval))
    );
    let approval_id = child.messages()[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.approval_id.clone()),
            _ => None,
        })
        .unwrap();

    // The answer goes to the top run.
    let answer = json!({"role": "user", "parts": [
        {"type": "approval_response", "approval_id": approval_id, "approved": true}
    ]});
    let response = server
        .post_json(&format!("/v1/runs/{run_id}/input"), &answer)
        .await;
    assert_eq!(response.status(), 202, "{:?}", response.text().await);

    // The whole log, from the start: the child's request, the answer going down, the end.
    let mut replay = SseClient::new(
        server
            .http
            .get(server.url(&format!("/v1/runs/{run_id}/events")))
            .send()
            .await
            .unwrap(),
    );
    replay.until_end().await;
    assert_eq!(replay.accumulator.status(), Some(RunStatus::Completed));
    let numbered = replay.numbered();
    assert_eq!(numbered, (1..=numbered.len() as u64).collect::<Vec<_>>());
    let child = replay.accumulator.children().next().unwrap();
    assert_eq!(child.status(), Some(RunStatus::Completed));
    assert_eq!(child.messages().last().unwrap().content(), "done");
    let top = replay.messages();
    assert_eq!(top.last().unwrap().content(), "The approver is done.");
    let result = top
        .iter()
        .flat_map(|message| &message.parts)
        .find_map(|part| match part {
            Part::ToolResult(result) if result.tool_call_id == "call_1" => {
                Some(result.result.clone())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(result, json!("done"));

    // The session holds the top run's conversation, not the child's.
    let session: Value = server
        .http
        .get(server.url("/v1/sessions/ses_team"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let messages = session["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        3,
        "the question, the answer until the wait, the rest"
    );
    let agents: Vec<&str> = messages
        .iter()
        .filter_map(|message| message["metadata"]["agent_name"].as_str())
        .collect();
    assert!(
        agents.iter().all(|agent| *agent == "coordinator"),
        "{agents:?}"
    );

    // A replay from the middle of the child's stream is gapless and ends where the run does.
    let middle = replay
        .events
        .iter()
        .find(|event| !event.is_own() && matches!(event.kind, EventKind::PartComplete { .. }))
        .unwrap()
        .seq;
    let mut resumed = SseClient::resumed(
        server
            .http
            .get(server.url(&format!("/v1/runs/{run_id}/events")))
            .header("last-event-id", middle.to_string())
            .send()
            .await
            .unwrap(),
    );
    resumed.until_end().await;
    let after: Vec<u64> = resumed.numbered();
    assert_eq!(
        after,
        ((middle + 1)..=*numbered.last().unwrap()).collect::<Vec<_>>()
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_waiting_in_a_child_outlives_a_restart_and_goes_on_from_there() {
    let dir = tempfile::tempdir().unwrap();
    let settings = || Settings {
        database_url: Some(format!("sqlite://{}", dir.path().join("aw.db").display())),
        ..Settings::default()
    };
    let first = TestServer::start(vec![coordinator(), approver()], settings()).await;
    let mut stream = first
        .post_sse(&run_body(Some("coordinator"), "clean up"))
        .await;
    stream.until_end().await;
    let run_id = stream.accumulator.run_id().unwrap().clone();
    let approval_id = stream.accumulator.children().next().unwrap().messages()[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.approval_id.clone()),
            _ => None,
        })
        .unwrap();
    let before = stream.numbered();
    first.shutdown().await;

    let second = TestServer::start(vec![coordinator(), approver()], settings()).await;
    let answer = json!({"role": "user", "parts": [
        {"type": "approval_response", "approval_id": approval_id, "approved": true}
    ]});
    let response = second
        .post_json(&format!("/v1/runs/{run_id}/input"), &answer)
        .await;
    assert_eq!(response.status(), 202, "{:?}", response.text().await);
    let mut replay = SseClient::new(
        second
            .http
            .get(second.url(&format!("/v1/runs/{run_id}/events")))
            .send()
            .await
            .unwrap(),
    );
    replay.until_end().await;
    assert_eq!(replay.accumulator.status(), Some(RunStatus::Completed));
    let numbered = replay.numbered();
    assert_eq!(numbered, (1..=numbered.len() as u64).collect::<Vec<_>>());
    assert_eq!(
        &numbered[..before.len()],
        &before[..],
        "the first life is kept"
    );
    let child = replay.accumulator.children().next().unwrap();
    assert_eq!(child.status(), Some(RunStatus::Completed));
    assert_eq!(child.messages().last().unwrap().content(), "done");
    assert_eq!(
        replay.messages().last().unwrap().content(),
        "The approver is done."
    );
    second.shutdown().await;
}
