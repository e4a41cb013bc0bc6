//! Sub-agents through the server: a run whose agent calls another agent streams the child's
//! run nested in its own log, the client answers a child's approval through the top run, the
//! session keeps only the top run's conversation, and the log replays from any point, also
//! from the middle of a run three levels down, live or after the end.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_brain::ScriptedBrain;
use agentwire_core::{Accumulator, Awaiting, Event, EventKind, Part, RunStatus};
use agentwire_runtime::{Agent, AgentBuilder};
use agentwire_server::Settings;
use common::{SseClient, TestServer, approver, run_body, talker};
use serde_json::{Value, json};

/// An agent that asks `approver` to clean up, then reports what it said.
fn coordinator() -> Agent {
    delegating("coordinator", &["approver"], "The approver is done.")
        .subagent(approver())
        .build()
        .unwrap()
}

/// An agent `name` that calls the agents `calls` at once (call ids `call_1`…), then says
/// `answer`; its sub-agents are the caller's to add.
fn delegating(name: &str, calls: &[&str], answer: &str) -> AgentBuilder {
    let mut turn = Vec::new();
    for (n, agent) in calls.iter().enumerate() {
        let id = format!("call_{}", n + 1);
        turn.extend([
            json!({"type": "tool_call_start", "id": id, "name": agent}),
            json!({"type": "tool_call_delta", "id": id, "args": "{\"input\": \"remove a.txt\"}"}),
            json!({"type": "tool_call_end", "id": id}),
        ]);
    }
    turn.push(json!({"type": "finish", "reason": "tool_calls"}));
    let script = json!({"turns": [
        turn,
        [{"type": "text_delta", "text": answer}, {"type": "finish", "reason": "stop"}]
    ]});
    Agent::builder(name).brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
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

/// The approval request of the run three levels down (the approver's), from an accumulator.
fn deepest_approval(top: &Accumulator) -> String {
    let director = top
        .children()
        .find(|run| run.agent() == Some("director"))
        .unwrap();
    let manager = director.children().next().unwrap();
    let approver = manager.children().next().unwrap();
    assert_eq!(approver.agent(), Some("approver"));
    approver.messages()[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.approval_id.to_string()),
            _ => None,
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumed_mid_child_three_levels_down_is_gapless() {
    // top → director → manager → approver (whose `rm` needs approval), beside a paced scout.
    let manager = delegating("manager", &["approver"], "The approver is done.")
        .subagent(approver())
        .build()
        .unwrap();
    let director = delegating("director", &["manager"], "The manager is done.")
        .subagent(manager)
        .build()
        .unwrap();
    let scout = talker("scout", &["far ", "and ", "wide ", "and ", "back"], 40.0);
    let top = delegating("top", &["director", "scout"], "Everyone is done.")
        .subagent(director)
        .subagent(scout)
        .build()
        .unwrap();
    let server = TestServer::start(vec![top], Settings::default()).await;
    // The agents list names each agent's sub-agents, so a client knows those calls start runs.
    let agents: Value = server
        .http
        .get(server.url("/v1/agents"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        agents["agents"][0]["subagents"],
        json!(["director", "scout"])
    );

    // Live: the stream breaks at the first event three levels down, and is picked up there.
    let mut live = server.post_sse(&run_body(Some("top"), "clean up")).await;
    while !live.events.iter().any(|event| event.namespace.depth() == 3) {
        assert!(
            live.read_chunk().await,
            "the stream ended before the approver's run"
        );
    }
    let broken_at = live
        .events
        .iter()
        .find(|event| event.namespace.depth() == 3)
        .unwrap()
        .seq;
    let run_id = live.accumulator.run_id().unwrap().clone();
    let mut head: Vec<_> = live
        .events
        .iter()
        .filter(|event| event.seq <= broken_at)
        .cloned()
        .collect();
    drop(live);
    let mut picked_up = SseClient::resumed(
        server
            .http
            .get(server.url(&format!("/v1/runs/{run_id}/events")))
            .header("last-event-id", broken_at.to_string())
            .send()
            .await
            .unwrap(),
    );
    picked_up.until_end().await;
    head.extend(picked_up.events.iter().cloned());
    let mut resumed = Accumulator::default();
    for event in &head {
        resumed.push(event).unwrap();
    }
    assert_eq!(
        resumed.status(),
        Some(RunStatus::Awaiting(Awaiting::Approval))
    );

    // The top run takes the answer for the approver, three levels down.
    let answer = json!({"role": "user", "parts": [
        {"type": "approval_response", "approval_id": deepest_approval(&resumed), "approved": true}
    ]});
    let response = server
        .post_json(&format!("/v1/runs/{run_id}/input"), &answer)
        .await;
    assert_eq!(response.status(), 202, "{:?}", response.text().await);

    // The whole log: the same events the broken stream and its resumption gave, then the rest.
    let mut whole = SseClient::new(
        server
            .http
            .get(server.url(&format!("/v1/runs/{run_id}/events")))
            .send()
            .await
            .unwrap(),
    );
    whole.until_end().await;
    assert_eq!(whole.accumulator.status(), Some(RunStatus::Completed));
    let numbered = whole.numbered();
    assert_eq!(numbered, (1..=numbered.len() as u64).collect::<Vec<_>>());
    let own = |events: &[Event]| -> Vec<Event> {
        events
            .iter()
            .filter(|event| event.name() != "heartbeat")
            .cloned()
            .collect()
    };
    assert_eq!(own(&head), own(&whole.events)[..own(&head).len()]);
    let director = whole
        .accumulator
        .children()
        .find(|run| run.agent() == Some("director"))
        .unwrap();
    let manager = director.children().next().unwrap();
    let approver_run = manager.children().next().unwrap();
    for run in [director, manager, approver_run] {
        assert_eq!(
            run.status(),
            Some(RunStatus::Completed),
            "{:?}",
            run.agent()
        );
    }
    assert_eq!(approver_run.messages().last().unwrap().content(), "done");
    assert_eq!(
        whole.messages().last().unwrap().content(),
        "Everyone is done."
    );

    // After the end: from every event of the approver's run after the answer, the rest of the
    // log comes whole and in order.
    let after_answer: Vec<u64> = whole
        .events
        .iter()
        .filter(|event| event.namespace.depth() == 3 && event.seq > broken_at)
        .map(|event| event.seq)
        .collect();
    assert!(after_answer.len() > 3, "{after_answer:?}");
    for from in after_answer {
        let rest = server.events_after(run_id.as_str(), from).await;
        let expected: Vec<_> = own(&whole.events)
            .into_iter()
            .filter(|event| event.seq > from)
            .collect();
        assert_eq!(own(&rest.events), expected, "resumed after {from}");
    }
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
