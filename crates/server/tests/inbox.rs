//! Messages into a busy session (`POST /v1/sessions/{id}/messages`), each mode through the
//! live server: queued in order, a steer the model sees at the next step, interrupt and
//! rollback, reject, and retries by client message id.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agentwire_brain::ScriptedBrain;
use agentwire_core::communication::CommunicationSchema;
use agentwire_runtime::Agent;
use agentwire_server::Settings;
use agentwire_tools::{FnTool, JsonSchema};
use common::{TestServer, text_of};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "agentwire_tools::schemars")]
struct Work {}

/// An agent whose every run calls `work` (which takes `ms`), then answers `done`: a run long
/// enough to send it messages, with a step boundary in the middle.
fn worker(ms: u64) -> Agent {
    worker_with(ms, None)
}

fn worker_with(ms: u64, schema: Option<CommunicationSchema>) -> Agent {
    let script = json!({"turns": [
        [{"type": "tool_call_start", "id": "w1", "name": "work"},
         {"type": "tool_call_delta", "id": "w1", "args": "{}"},
         {"type": "tool_call_end", "id": "w1"},
         {"type": "finish", "reason": "tool_calls"}],
        [{"type": "text_delta", "text": "done"}, {"type": "finish", "reason": "stop"}]
    ]});
    let work = FnTool::new("work", "Works a while", move |_: Work, _| async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok("worked".to_owned())
    });
    let mut builder = Agent::builder("worker")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .tool(work);
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    builder.build().unwrap()
}

fn on_sqlite(dir: &tempfile::TempDir) -> Settings {
    Settings {
        database_url: Some(format!("sqlite://{}", dir.path().join("aw.db").display())),
        ..Settings::default()
    }
}

fn user(text: &str) -> Value {
    json!({"role": "user", "parts": [{"type": "text", "text": text}]})
}

async fn post(server: &TestServer, session: &str, body: Value) -> (u16, Value) {
    let response = server
        .post_json(&format!("/v1/sessions/{session}/messages"), &body)
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

async fn get(server: &TestServer, path: &str) -> Value {
    server
        .http
        .get(server.url(path))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The session's inbox once every message in it has settled and its last run has ended.
async fn settled_inbox(server: &TestServer, session: &str) -> Vec<Value> {
    for _ in 0..200 {
        let inbox = get(server, &format!("/v1/sessions/{session}/messages")).await;
        let messages = inbox["messages"].as_array().unwrap().clone();
        let settled = messages
            .iter()
            .all(|m| m["outcome"] == "delivered" || m["outcome"] == "not_delivered");
        let session_now = get(server, &format!("/v1/sessions/{session}")).await;
        let run_over = session_now["last_run"]["status"]
            .as_str()
            .is_some_and(|status| {
                ["completed", "canceled", "failed", "incomplete"].contains(&status)
            });
        if settled && run_over {
            return messages;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the inbox did not settle: {}",
        get(server, &format!("/v1/sessions/{session}/messages")).await
    );
}

/// The texts of the session's user messages, in order.
async fn user_texts(server: &TestServer, session: &str) -> Vec<String> {
    let session = get(server, &format!("/v1/sessions/{session}")).await;
    session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "user")
        .map(text_of)
        .collect()
}

/// The `input` events of a run, as stored.
async fn input_events(server: &TestServer, run_id: &str) -> Vec<Value> {
    let mut events = server.events_after(run_id, 0).await;
    events.until_end().await;
    events
        .events
        .iter()
        .filter(|event| event.name() == "input")
        .map(|event| serde_json::to_value(event).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_a_free_session_starts_its_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![worker(10)], on_sqlite(&dir)).await;
    let (status, entry) = post(
        &server,
        "ses_free",
        json!({"message": user("hello"), "client_message_id": "m1"}),
    )
    .await;
    assert_eq!(status, 202, "{entry}");
    assert_eq!(entry["outcome"], "delivered", "{entry}");
    assert_eq!(entry["step"], 0);
    assert_eq!(entry["mode"], "queue");
    let run_id = entry["run_id"].as_str().unwrap().to_owned();
    let inputs = input_events(&server, &run_id).await;
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    assert_eq!(inputs[0]["seq"], 2, "right after run_created");
    assert_eq!(inputs[0]["client_message_id"], "m1");
    assert_eq!(inputs[0]["outcome"], "delivered");
    assert_eq!(user_texts(&server, "ses_free").await, ["hello"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_messages_run_after_the_current_run_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![worker(300)], on_sqlite(&dir)).await;
    let (_, first) = post(&server, "ses_q", json!({"message": user("one")})).await;
    let first_run = first["run_id"].as_str().unwrap().to_owned();
    for (n, text) in ["two", "three"].into_iter().enumerate() {
        let (status, entry) = post(
            &server,
            "ses_q",
            json!({"message": user(text), "mode": "queue", "client_message_id": format!("q{n}")}),
        )
        .await;
        assert_eq!(status, 202);
        assert_eq!(entry["outcome"], "queued", "{entry}");
    }
    let inbox = settled_inbox(&server, "ses_q").await;
    assert!(
        inbox.iter().all(|m| m["outcome"] == "delivered"),
        "{inbox:?}"
    );
    let runs: Vec<&str> = inbox
        .iter()
        .map(|m| m["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(runs.len(), 3);
    assert!(runs[0] != runs[1] && runs[1] != runs[2], "a run each");
    assert_eq!(user_texts(&server, "ses_q").await, ["one", "two", "three"]);
    // The first run's stream told its client that both were queued.
    let queued: Vec<Value> = input_events(&server, &first_run)
        .await
        .into_iter()
        .filter(|event| event["outcome"] == "queued")
        .collect();
    assert_eq!(queued.len(), 2, "{queued:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_joins_the_run_at_its_next_step() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![worker(1_500)], on_sqlite(&dir)).await;
    let (_, first) = post(&server, "ses_s", json!({"message": user("start")})).await;
    let run_id = first["run_id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, entry) = post(
        &server,
        "ses_s",
        json!({"message": user("also this"), "mode": "steer", "client_message_id": "s1"}),
    )
    .await;
    assert_eq!(status, 202);
    assert_eq!(entry["outcome"], "steering", "{entry}");
    assert_eq!(entry["run_id"], run_id.as_str());
    let inbox = settled_inbox(&server, "ses_s").await;
    let steer = inbox
        .iter()
        .find(|m| m["client_message_id"] == "s1")
        .unwrap();
    assert_eq!(steer["outcome"], "delivered", "{steer}");
    assert_eq!(steer["step"], 1, "after the first model call's tools");
    assert_eq!(steer["run_id"], run_id.as_str(), "the same run");
    // The history has the steer between the run's two assistant messages.
    let session = get(&server, "/v1/sessions/ses_s").await;
    let roles: Vec<&str> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert_eq!(user_texts(&server, "ses_s").await, ["start", "also this"]);
    let inputs = input_events(&server, &run_id).await;
    assert!(
        inputs.iter().any(|e| e["client_message_id"] == "s1"
            && e["outcome"] == "delivered"
            && e["step"] == 1),
        "{inputs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_keeps_the_run_and_rollback_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![worker(2_000)], on_sqlite(&dir)).await;
    for (session, mode, kept) in [("ses_i", "interrupt", true), ("ses_r", "rollback", false)] {
        let (_, first) = post(&server, session, json!({"message": user("long task")})).await;
        let first_run = first["run_id"].as_str().unwrap().to_owned();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (status, entry) = post(
            &server,
            session,
            json!({"message": user("no, this"), "mode": mode}),
        )
        .await;
        assert_eq!(status, 202, "{entry}");
        let inbox = settled_inbox(&server, session).await;
        assert_eq!(inbox[1]["outcome"], "delivered", "{inbox:?}");
        assert_ne!(inbox[1]["run_id"], first_run.as_str());
        let cut = get(&server, &format!("/v1/runs/{first_run}")).await;
        assert_eq!(cut["run"]["status"], "canceled", "{cut}");
        let expected: &[&str] = match kept {
            true => &["long task", "no, this"],
            false => &["no, this"],
        };
        assert_eq!(user_texts(&server, session).await, expected, "{mode}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_refuses_and_a_retry_is_answered_as_it_stands() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![worker(300)], on_sqlite(&dir)).await;
    post(&server, "ses_x", json!({"message": user("one")})).await;
    let (status, error) = post(
        &server,
        "ses_x",
        json!({"message": user("now!"), "mode": "reject"}),
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(error["error"]["code"], "session_busy", "{error}");
    let body = json!({"message": user("later"), "client_message_id": "again"});
    let (_, once) = post(&server, "ses_x", body.clone()).await;
    let (_, twice) = post(&server, "ses_x", body).await;
    assert_eq!(once["position"], twice["position"]);
    let inbox = settled_inbox(&server, "ses_x").await;
    assert_eq!(inbox.len(), 2, "{inbox:?}");
    assert_eq!(user_texts(&server, "ses_x").await, ["one", "later"]);
    let one = get(&server, "/v1/sessions/ses_x/messages/again").await;
    assert_eq!(one["outcome"], "delivered", "{one}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_the_schema_refuses_is_not_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(
        vec![worker_with(1_500, Some(CommunicationSchema::chat()))],
        on_sqlite(&dir),
    )
    .await;
    post(&server, "ses_c", json!({"message": user("start")})).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, entry) = post(
        &server,
        "ses_c",
        json!({"message": user("hurry"), "mode": "steer", "client_message_id": "s1"}),
    )
    .await;
    assert_eq!(status, 202, "{entry}");
    assert_eq!(entry["outcome"], "not_delivered", "{entry}");
    assert_eq!(entry["reason"], "input_refused");
    settled_inbox(&server, "ses_c").await;
    assert_eq!(user_texts(&server, "ses_c").await, ["start"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_messages_get_clear_errors_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![worker(10)], on_sqlite(&dir)).await;
    for (body, code) in [
        (
            json!({"message": user("x"), "mode": "later"}),
            "invalid_request",
        ),
        (
            json!({"message": {"role": "assistant", "parts": []}}),
            "invalid_role",
        ),
        (
            json!({"message": {"role": "user", "parts": []}}),
            "no_input",
        ),
        (
            json!({"message": user("x"), "agent": "nobody"}),
            "unknown_agent",
        ),
        (
            json!({"message": user("x"), "client_message_id": ""}),
            "invalid_client_message_id",
        ),
    ] {
        let (status, error) = post(&server, "ses_bad", body).await;
        assert!((400..500).contains(&status), "{status} {error}");
        assert_eq!(error["error"]["code"], code, "{error}");
    }
    let inbox = get(&server, "/v1/sessions/ses_bad/messages").await;
    assert!(
        inbox["messages"].as_array().is_none_or(Vec::is_empty),
        "{inbox}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_whose_run_is_refused_names_no_run() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(
        vec![worker_with(0, Some(CommunicationSchema::one_shot()))],
        on_sqlite(&dir),
    )
    .await;
    post(
        &server,
        "ses_once",
        json!({"message": user("one question")}),
    )
    .await;
    settled_inbox(&server, "ses_once").await;
    // The one-shot session is done: a second question's run is refused, and none is made.
    let (status, entry) = post(
        &server,
        "ses_once",
        json!({"message": user("another"), "client_message_id": "again"}),
    )
    .await;
    assert_eq!(status, 202, "{entry}");
    assert_eq!(
        (&entry["outcome"], &entry["reason"]),
        (&json!("not_delivered"), &json!("refused")),
        "{entry}"
    );
    assert!(entry.get("run_id").is_none(), "{entry}");
    for message in settled_inbox(&server, "ses_once").await {
        if let Some(run) = message["run_id"].as_str() {
            let response = server.http.get(server.url(&format!("/v1/runs/{run}")));
            assert_eq!(response.send().await.unwrap().status(), 200, "{message}");
        }
    }
    server.shutdown().await;
}
