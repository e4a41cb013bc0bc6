//! Statuses real runs take through the live server: `queued` while every slot of
//! `max_concurrent_runs` is taken, then `in_progress` in order of arrival; `rejected`
//! (`queue_full`) past `max_queued_runs`; a queued run canceled without working; and `awaiting
//! input` while the agent's question (`ask_user`) waits for the next user message, also
//! across a restart on SQLite.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_brain::ScriptedBrain;
use agentwire_core::{Event, EventKind, RunStatus};
use agentwire_runtime::Agent;
use agentwire_server::Settings;
use agentwire_tools::AskUser;
use common::{SseClient, TestServer, run_body, talker, text_of};
use serde_json::{Value, json};

const WORDS: &[&str] = &["one ", "two ", "three ", "four ", "five ", "six"];

fn limited() -> Settings {
    Settings {
        max_concurrent_runs: Some(1),
        max_queued_runs: Some(1),
        ..Settings::default()
    }
}

fn statuses(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::RunStatus { status, .. } => Some(match status {
                RunStatus::Awaiting(awaiting) => {
                    format!(
                        "awaiting {}",
                        serde_json::to_value(awaiting).unwrap().as_str().unwrap()
                    )
                }
                other => other.name().to_owned(),
            }),
            _ => None,
        })
        .collect()
}

fn run_id(client: &SseClient) -> String {
    match &client.events[0].kind {
        EventKind::RunCreated { run_id, .. } => run_id.to_string(),
        other => panic!("a stream opens with run_created, not {other:?}"),
    }
}

/// Reads until the stream shows `status`.
async fn until_status(client: &mut SseClient, status: &str) {
    while !statuses(&client.events).iter().any(|seen| seen == status) {
        assert!(
            client.read_chunk().await,
            "the stream ended before {status}"
        );
    }
}

/// `GET /v1/runs/{id}`, as it is.
async fn get_run(server: &TestServer, id: &str) -> Value {
    let response = server
        .http
        .get(server.url(&format!("/v1/runs/{id}")))
        .send()
        .await;
    response.unwrap().json().await.unwrap()
}

async fn metric(server: &TestServer, name: &str) -> String {
    let text = server.get_text("/metrics").await;
    text.lines()
        .find(|line| line.starts_with(name))
        .unwrap_or_else(|| panic!("{name} in {text}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_the_slots_queues_then_works_and_past_the_line_is_rejected() {
    let server = TestServer::start(vec![talker("assistant", WORDS, 30.0)], limited()).await;
    let mut first = server.post_sse(&run_body(None, "first")).await;
    until_status(&mut first, "in_progress").await;
    let mut second = server.post_sse(&run_body(None, "second")).await;
    until_status(&mut second, "queued").await;
    assert_eq!(
        metric(&server, "agentwire_runs_queued").await,
        "agentwire_runs_queued 1"
    );

    let mut third = server.post_sse(&run_body(None, "third")).await;
    third.until_end().await;
    assert_eq!(statuses(&third.events), ["rejected"]);
    let Some(EventKind::RunStatus {
        error: Some(error), ..
    }) = third.events.last().map(|event| &event.kind)
    else {
        panic!("a rejected run says why: {:?}", third.events);
    };
    assert_eq!(error.code, "queue_full");
    let rejected = get_run(&server, &run_id(&third)).await;
    assert_eq!(rejected["run"]["status"], "rejected");
    assert_eq!(rejected["output"], json!([]));

    first.until_end().await;
    assert_eq!(statuses(&first.events), ["in_progress", "completed"]);
    second.until_end().await;
    assert_eq!(
        statuses(&second.events),
        ["queued", "in_progress", "completed"]
    );
    assert_eq!(text_of(&json!(second.messages()[0])), WORDS.concat());
    assert_eq!(
        metric(&server, "agentwire_runs_queued").await,
        "agentwire_runs_queued 0"
    );
    let ended = server.get_text("/metrics").await;
    assert!(
        ended.contains("agentwire_runs_ended_total{agent=\"assistant\",status=\"rejected\"} 1"),
        "{ended}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_run_can_be_canceled_and_never_works() {
    let server = TestServer::start(vec![talker("assistant", WORDS, 30.0)], limited()).await;
    let mut first = server.post_sse(&run_body(None, "first")).await;
    until_status(&mut first, "in_progress").await;
    let mut second = server.post_sse(&run_body(None, "second")).await;
    until_status(&mut second, "queued").await;
    let id = run_id(&second);
    let canceled = server
        .post_json(&format!("/v1/runs/{id}/cancel"), &json!({}))
        .await;
    assert!(canceled.status().is_success());
    second.until_end().await;
    assert_eq!(statuses(&second.events), ["queued", "canceled"]);
    assert!(second.messages().is_empty(), "it never worked");
    first.until_end().await;
    assert_eq!(statuses(&first.events), ["in_progress", "completed"]);
}

/// An agent that asks the user which city, then answers with it.
fn asker() -> Agent {
    let ask = json!([
        {"type": "text_delta", "text": "One question first."},
        {"type": "tool_call_start", "id": "c1", "name": "ask_user"},
        {"type": "tool_call_delta", "id": "c1", "args": "{\"question\": \"Which city?\"}"},
        {"type": "tool_call_end", "id": "c1"},
        {"type": "finish", "reason": "tool_calls"}
    ]);
    let answer = json!([
        {"type": "text_delta", "text": "Booked."},
        {"type": "finish", "reason": "stop"}
    ]);
    let script = json!({"turns": [ask, answer]});
    Agent::builder("asker")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .tool(AskUser::new())
        .build()
        .unwrap()
}

fn in_session(text: &str) -> Value {
    let mut body = run_body(None, text);
    body["session_id"] = json!("ses_trip");
    body
}

/// Asks, then answers the question with the next user message to the session.
async fn ask_and_answer(server: &TestServer) {
    let mut asked = server.post_sse(&in_session("Book me a trip")).await;
    asked.until_end().await;
    assert_eq!(statuses(&asked.events), ["in_progress", "awaiting input"]);
    let id = run_id(&asked);
    let waiting = get_run(server, &id).await;
    assert_eq!(waiting["run"]["status"], "awaiting");
    assert_eq!(waiting["run"]["awaiting"], "input");
    assert_eq!(waiting["run"]["state"], "awaiting_input");
    let response = server
        .http
        .post(server.url("/v1/runs"))
        .header("accept", "text/event-stream")
        .json(&in_session("Paris"))
        .send()
        .await
        .unwrap();
    let mut answered = SseClient::resumed(response);
    answered.until_end().await;
    assert_eq!(statuses(&answered.events), ["in_progress", "completed"]);
    let last_asked = asked.events.last().unwrap().seq;
    assert_eq!(
        answered.events[0].seq,
        last_asked + 1,
        "the same run, its stream unbroken"
    );
    let done = server.completed_run(&id).await;
    assert_eq!(done["run"]["status"], "completed");
    let output = done["output"].as_array().unwrap();
    assert_eq!(output.len(), 2);
    let result = &output[1]["parts"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["result"], json!({"answer": "Paris"}));
    assert_eq!(text_of(&output[1]), "Booked.");
    let session: Value = server
        .http
        .get(server.url("/v1/sessions/ses_trip"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let roles: Vec<&str> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "assistant"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_awaits_input_and_the_next_user_message_answers_it() {
    let server = TestServer::start(vec![asker()], Settings::default()).await;
    ask_and_answer(&server).await;
    // An answer through /input works the same way.
    let mut asked = server
        .post_sse(&{
            let mut body = run_body(None, "Again");
            body["session_id"] = json!("ses_other");
            body
        })
        .await;
    asked.until_end().await;
    let id = run_id(&asked);
    let given = server
        .post_json(
            &format!("/v1/runs/{id}/input"),
            &json!({"role": "user", "parts": [{"type": "text", "text": "Rome"}]}),
        )
        .await;
    assert_eq!(given.status(), 202);
    let mut rest = server
        .events_after(&id, asked.events.last().unwrap().seq)
        .await;
    rest.until_end().await;
    assert_eq!(statuses(&rest.events), ["in_progress", "completed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_survives_a_restart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let settings = || Settings {
        database_url: Some(format!("sqlite://{}", dir.path().join("aw.db").display())),
        ..Settings::default()
    };
    let first = TestServer::start(vec![asker()], settings()).await;
    let mut asked = first.post_sse(&in_session("Book me a trip")).await;
    asked.until_end().await;
    assert_eq!(statuses(&asked.events), ["in_progress", "awaiting input"]);
    let id = run_id(&asked);
    first.shutdown().await;

    let second = TestServer::start(vec![asker()], settings()).await;
    let waiting = get_run(&second, &id).await;
    assert_eq!(waiting["run"]["awaiting"], "input");
    let response = second
        .http
        .post(second.url("/v1/runs"))
        .header("accept", "text/event-stream")
        .json(&in_session("Paris"))
        .send()
        .await
        .unwrap();
    let mut answered = SseClient::resumed(response);
    answered.until_end().await;
    assert_eq!(statuses(&answered.events), ["in_progress", "completed"]);
    assert_eq!(answered.events[0].seq, asked.events.last().unwrap().seq + 1);
    let done = second.completed_run(&id).await;
    assert_eq!(
        done["output"][1]["parts"][0]["result"],
        json!({"answer": "Paris"})
    );
}
