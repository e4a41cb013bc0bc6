//! Handoffs through the server: a triage agent hands the conversation to billing, whose
//! answer is the run's; the session then speaks with billing, also when the client keeps
//! addressing triage, and an agent named on its own answers for itself.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_brain::ScriptedBrain;
use agentwire_core::RunStatus;
use agentwire_runtime::Agent;
use agentwire_server::Settings;
use common::{TestServer, run_body};
use serde_json::{Value, json};

fn triage() -> Agent {
    let script = json!({"turns": [[
        {"type": "tool_call_start", "id": "call_t", "name": "transfer_to_billing"},
        {"type": "tool_call_delta", "id": "call_t", "args": "{}"},
        {"type": "tool_call_end", "id": "call_t"},
        {"type": "finish", "reason": "tool_calls"}
    ]]});
    Agent::builder("triage")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .handoff("billing", "Answers billing questions.")
        .build()
        .unwrap()
}

fn billing() -> Agent {
    let script = json!({"turns": [
        [{"type": "text_delta", "text": "Your invoice is paid."}, {"type": "finish", "reason": "stop"}]
    ]});
    Agent::builder("billing")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversation_stays_with_the_agent_it_was_handed_to() {
    let server = TestServer::start(vec![triage(), billing()], Settings::default()).await;
    let mut body = run_body(Some("triage"), "Is my invoice paid?");
    body["session_id"] = json!("ses_h");
    let mut stream = server.post_sse(&body).await;
    stream.until_end().await;
    assert_eq!(stream.accumulator.status(), Some(RunStatus::Completed));
    let answer = stream.messages().last().unwrap();
    assert_eq!(answer.content(), "Your invoice is paid.");
    assert_eq!(answer.metadata.agent_name.as_deref(), Some("billing"));

    let session: Value = server
        .http
        .get(server.url("/v1/sessions/ses_h"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(session["agent"], "billing");

    // The client addresses triage again: billing, who has the conversation, answers.
    let mut body = run_body(Some("triage"), "And the next invoice?");
    body["session_id"] = json!("ses_h");
    let mut next = server.post_sse(&body).await;
    next.until_end().await;
    let answers: Vec<_> = next
        .messages()
        .iter()
        .filter(|message| message.role == agentwire_core::Role::Assistant)
        .collect();
    assert_eq!(answers.len(), 1, "no second handoff: {answers:?}");
    assert_eq!(answers[0].metadata.agent_name.as_deref(), Some("billing"));
    assert!(next.accumulator.children().next().is_none());
    server.shutdown().await;
}
