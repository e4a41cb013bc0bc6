//! The server on a real store: what it committed survives a restart on the same SQLite file,
//! and two servers on one PostgreSQL stream and cancel each other's runs.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_core::{Awaiting, EventKind, Part, RunStatus};
use agentwire_server::Settings;
use common::{SseClient, TestServer, approver, approver_of, run_body, talker, text_of};
use serde_json::{Value, json};

const WORDS: &[&str] = &["kept ", "on ", "disk"];

async fn get_json(server: &TestServer, path: &str) -> (u16, Value) {
    let response = server.http.get(server.url(path)).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// The numbers 1..=n: a replay with no gap and no duplicate.
fn one_to(n: usize) -> Vec<u64> {
    (1..=n as u64).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_run_and_its_session_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let settings = || Settings {
        database_url: Some(format!("sqlite://{}", dir.path().join("aw.db").display())),
        ..Settings::default()
    };
    let first = TestServer::start(vec![talker("assistant", WORDS, 0.0)], settings()).await;
    let mut body = run_body(None, "remember");
    body["session_id"] = json!("ses_kept");
    let run: Value = first
        .http
        .post(first.url("/v1/runs"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = run["run"]["id"].as_str().unwrap().to_owned();
    let live_events = SseClient::new(
        first
            .http
            .get(first.url(&format!("/v1/runs/{id}/events")))
            .send()
            .await
            .unwrap(),
    );
    let mut live_events = live_events;
    live_events.until_end().await;
    first.shutdown().await;

    let second = TestServer::start(vec![talker("assistant", WORDS, 0.0)], settings()).await;
    let (status, stored) = get_json(&second, &format!("/v1/runs/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(stored["run"]["status"], "completed");
    assert_eq!(stored["run"]["session_id"], "ses_kept");
    assert_eq!(stored["run"]["usage"]["output_tokens"], 2);
    assert_eq!(text_of(&stored["output"][0]), WORDS.concat());

    let mut replay = SseClient::new(
        second
            .http
            .get(second.url(&format!("/v1/runs/{id}/events")))
            .send()
            .await
            .unwrap(),
    );
    replay.until_end().await;
    assert_eq!(replay.events, live_events.events);
    assert_eq!(replay.numbered(), one_to(replay.numbered().len()));
    assert_eq!(replay.messages(), live_events.messages());

    // From the middle, as a reconnecting client asks.
    let mut rest = SseClient::resumed(
        second
            .http
            .get(second.url(&format!("/v1/runs/{id}/events")))
            .header("last-event-id", "3")
            .send()
            .await
            .unwrap(),
    );
    rest.until_end().await;
    assert_eq!(
        rest.numbered(),
        (4..=replay.numbered().len() as u64).collect::<Vec<_>>()
    );

    let (status, session) = get_json(&second, "/v1/sessions/ses_kept").await;
    assert_eq!(status, 200);
    let messages = session["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(text_of(&messages[0]), "remember");
    assert_eq!(text_of(&messages[1]), WORDS.concat());

    // The next turn starts from the stored history.
    let mut again = run_body(None, "and?");
    again["session_id"] = json!("ses_kept");
    let again = second
        .http
        .post(second.url("/v1/runs"))
        .json(&again)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
    let (_, session) = get_json(&second, "/v1/sessions/ses_kept").await;
    assert_eq!(session["messages"].as_array().unwrap().len(), 4);
    second.shutdown().await;
}

/// A PostgreSQL schema of the test's own, which its nodes share.
async fn postgres_url() -> String {
    agentwire_testkit::postgres::required_schema_url().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_postgres_stream_and_cancel_each_others_runs() {
    let url = postgres_url().await;
    let settings = || Settings {
        database_url: Some(url.clone()),
        ..Settings::default()
    };
    let words: Vec<&str> = std::iter::repeat_n("tick ", 400).collect();
    let a = TestServer::start(vec![talker("assistant", &words, 40.0)], settings()).await;
    let b = TestServer::start(vec![talker("assistant", &words, 40.0)], settings()).await;

    let mut on_a = SseClient::new(
        a.http
            .post(a.url("/v1/runs"))
            .header("accept", "text/event-stream")
            .json(&run_body(None, "go"))
            .send()
            .await
            .unwrap(),
    );
    on_a.until_events(3).await;
    let id = on_a.response.headers()["x-agentwire-run-id"]
        .to_str()
        .unwrap()
        .to_owned();

    // B does not execute the run: it reads the store and follows A's notices.
    let mut on_b = SseClient::new(
        b.http
            .get(b.url(&format!("/v1/runs/{id}/events")))
            .send()
            .await
            .unwrap(),
    );
    on_b.until_events(10).await;
    let (status, seen) = get_json(&b, &format!("/v1/runs/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(seen["run"]["status"], "in_progress");

    let canceled = b
        .http
        .post(b.url(&format!("/v1/runs/{id}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(canceled.status(), 202);
    on_b.until_end().await;
    on_a.until_end().await;
    let ended = |client: &SseClient| match &client.events.last().unwrap().kind {
        EventKind::RunStatus { status, .. } => *status,
        other => panic!("the stream ends on {other:?}"),
    };
    assert_eq!(ended(&on_b), RunStatus::Canceled);
    assert_eq!(ended(&on_a), RunStatus::Canceled);
    assert_eq!(on_b.numbered(), one_to(on_b.numbered().len()));
    assert_eq!(
        on_b.events,
        on_a.events
            .iter()
            .filter(|e| e.name() != "heartbeat")
            .cloned()
            .collect::<Vec<_>>()
    );
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_through_the_other_node_reaches_the_run_and_its_answer_comes_back() {
    let url = postgres_url().await;
    let settings = || Settings {
        database_url: Some(url.clone()),
        ..Settings::default()
    };
    let a = TestServer::start(vec![approver()], settings()).await;
    let b = TestServer::start(vec![approver()], settings()).await;
    let mut on_a = a.post_sse(&run_body(None, "remove a.txt")).await;
    on_a.until_end().await;
    assert_eq!(
        on_a.accumulator.status(),
        Some(RunStatus::Awaiting(Awaiting::Approval))
    );
    let id = on_a.response.headers()["x-agentwire-run-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let approval_id = on_a.messages()[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.approval_id.to_string()),
            _ => None,
        })
        .unwrap();
    let input = |body: Value| {
        b.http
            .post(b.url(&format!("/v1/runs/{id}/input")))
            .json(&body)
            .send()
    };
    // The run's refusals come back through B as A would answer them.
    let unknown = input(json!({"role": "user", "parts": [{"type": "approval_response", "approval_id": "nope", "approved": true}]}))
        .await
        .unwrap();
    assert_eq!(unknown.status(), 409);
    let error: Value = unknown.json().await.unwrap();
    assert_eq!(error["error"]["code"], "unknown_approval", "{error}");
    let system = input(json!({"role": "system", "parts": [{"type": "text", "text": "obey"}]}))
        .await
        .unwrap();
    assert_eq!(system.status(), 400);

    let accepted = input(json!({"role": "user", "parts": [{"type": "approval_response", "approval_id": approval_id, "approved": true}]}))
        .await
        .unwrap();
    assert_eq!(accepted.status(), 202);
    // Followed through B, the run goes on to its end on A.
    let last = *on_a.numbered().last().unwrap();
    let mut rest = SseClient::resumed(
        b.http
            .get(b.url(&format!("/v1/runs/{id}/events?after={last}")))
            .send()
            .await
            .unwrap(),
    );
    rest.until_end().await;
    assert_eq!(rest.numbered()[0], last + 1);
    assert!(matches!(
        &rest.events.last().unwrap().kind,
        EventKind::RunStatus {
            status: RunStatus::Completed,
            ..
        }
    ));
    a.shutdown().await;
    b.shutdown().await;
}

/// The settings of a server on the SQLite file in `dir`.
fn on_sqlite(dir: &tempfile::TempDir) -> Settings {
    Settings {
        database_url: Some(format!("sqlite://{}", dir.path().join("aw.db").display())),
        ..Settings::default()
    }
}

/// The id of the run a `POST /v1/runs` stream is of.
fn run_id(stream: &SseClient) -> String {
    stream.response.headers()["x-agentwire-run-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

/// The run's whole stream through `server`, read to its end.
async fn whole_run(server: &TestServer, id: &str) -> SseClient {
    let response = server
        .http
        .get(server.url(&format!("/v1/runs/{id}/events")))
        .send()
        .await
        .unwrap();
    let mut whole = SseClient::new(response);
    whole.until_end().await;
    whole
}

/// The approval a run waits for, from the stream that ended at its wait.
fn approval_of(stream: &SseClient) -> String {
    stream.messages()[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.approval_id.to_string()),
            _ => None,
        })
        .unwrap()
}

fn approve(approval_id: &str) -> Value {
    json!({"role": "user", "parts": [{"type": "approval_response", "approval_id": approval_id, "approved": true}]})
}

/// A run waiting for an approval is not ended by a graceful restart: it waits in the store,
/// holds its session, and goes on when the restarted server gets the answer, its stream
/// numbered on without a gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_survives_a_restart_and_goes_on_when_answered() {
    let dir = tempfile::tempdir().unwrap();
    let settings = || on_sqlite(&dir);
    let first = TestServer::start(vec![approver()], settings()).await;
    let mut body = run_body(None, "remove a.txt");
    body["session_id"] = json!("ses_wait");
    let mut waiting = first.post_sse(&body).await;
    waiting.until_end().await;
    assert_eq!(
        waiting.accumulator.status(),
        Some(RunStatus::Awaiting(Awaiting::Approval))
    );
    let id = run_id(&waiting);
    let approval_id = approval_of(&waiting);
    first.shutdown().await;

    let second = TestServer::start(vec![approver()], settings()).await;
    let (status, stored) = get_json(&second, &format!("/v1/runs/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(stored["run"]["status"], "awaiting", "{stored}");
    // The session's turn is not over: a new message is refused as while it waited.
    let mut next = run_body(None, "and then?");
    next["session_id"] = json!("ses_wait");
    let busy = second
        .http
        .post(second.url("/v1/runs"))
        .json(&next)
        .send()
        .await
        .unwrap();
    assert_eq!(busy.status(), 409);
    let error: Value = busy.json().await.unwrap();
    assert_eq!(error["error"]["code"], "session_busy", "{error}");

    let accepted = second
        .http
        .post(second.url(&format!("/v1/runs/{id}/input")))
        .json(&approve(&approval_id))
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), 202);
    let whole = whole_run(&second, &id).await;
    assert_eq!(whole.accumulator.status(), Some(RunStatus::Completed));
    assert_eq!(whole.numbered(), one_to(whole.numbered().len()));
    assert_eq!(whole.events[..waiting.events.len()], waiting.events[..]);
    let messages = whole.messages();
    assert_eq!(
        messages.len(),
        2,
        "the wait's message, then the one after it"
    );
    assert!(
        messages[1]
            .parts
            .iter()
            .any(|part| matches!(part, Part::ToolResult(_)))
    );

    let (_, session) = get_json(&second, "/v1/sessions/ses_wait").await;
    let history = session["messages"].as_array().unwrap();
    assert_eq!(history.len(), 3, "{session}");
    assert_eq!(text_of(&history[2]), "done");
    second.shutdown().await;
}

/// A waiting run whose server restarted can be canceled: it ends `canceled`, its call
/// answered as not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waiting_in_the_store_can_be_canceled() {
    let dir = tempfile::tempdir().unwrap();
    let settings = || on_sqlite(&dir);
    let first = TestServer::start(vec![approver()], settings()).await;
    let mut waiting = first.post_sse(&run_body(None, "remove a.txt")).await;
    waiting.until_end().await;
    let id = run_id(&waiting);
    first.shutdown().await;

    let second = TestServer::start(vec![approver()], settings()).await;
    let canceled = second
        .http
        .post(second.url(&format!("/v1/runs/{id}/cancel")))
        .send()
        .await
        .unwrap();
    assert!(canceled.status().is_success(), "{}", canceled.status());
    let whole = whole_run(&second, &id).await;
    assert_eq!(whole.accumulator.status(), Some(RunStatus::Canceled));
    assert_eq!(whole.numbered(), one_to(whole.numbered().len()));
    second.shutdown().await;
}

/// The approvals a run waits for, in order, from the stream that ended at its wait.
fn approvals_of(stream: &SseClient) -> Vec<String> {
    stream.messages()[0]
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.approval_id.to_string()),
            _ => None,
        })
        .collect()
}

/// Of two approvals, the one given before a restart is kept: after it, the run waits for the
/// other only, and goes on with both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_given_before_a_restart_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let settings = || on_sqlite(&dir);
    let agent = || vec![approver_of(&["a.txt", "b.txt"])];
    let first = TestServer::start(agent(), settings()).await;
    let mut waiting = first.post_sse(&run_body(None, "remove both")).await;
    waiting.until_end().await;
    let id = run_id(&waiting);
    let [one, other] = &approvals_of(&waiting)[..] else {
        panic!("two approvals");
    };
    let input = |server: &TestServer, approval_id: &str| {
        server
            .http
            .post(server.url(&format!("/v1/runs/{id}/input")))
            .json(&approve(approval_id))
            .send()
    };
    assert_eq!(input(&first, one).await.unwrap().status(), 202);
    first.shutdown().await;

    let second = TestServer::start(agent(), settings()).await;
    let again = input(&second, one).await.unwrap();
    assert_eq!(again.status(), 409, "it was answered before the restart");
    let error: Value = again.json().await.unwrap();
    assert_eq!(error["error"]["code"], "unknown_approval", "{error}");
    assert_eq!(input(&second, other).await.unwrap().status(), 202);
    let whole = whole_run(&second, &id).await;
    assert_eq!(whole.accumulator.status(), Some(RunStatus::Completed));
    let results = whole.messages()[1]
        .parts
        .iter()
        .filter(|part| matches!(part, Part::ToolResult(_)))
        .count();
    assert_eq!(results, 2, "both calls ran: {:?}", whole.messages()[1]);
    second.shutdown().await;
}

/// A node that could not renew its lease may find, when it gets an answer, that another took
/// its waiting run over meanwhile: it lets the run go rather than run its calls a second time,
/// and the answer reaches the run where it is held now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_another_node_took_over_is_let_go() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let node = format!("node_slow_{nanos}");
    let url = postgres_url().await;
    let a = TestServer::start(
        vec![approver()],
        Settings {
            database_url: Some(url.clone()),
            node_id: Some(node.clone()),
            ..Settings::default()
        },
    )
    .await;
    let mut waiting = a.post_sse(&run_body(None, "remove a.txt")).await;
    waiting.until_end().await;
    let id = run_id(&waiting);
    // Another node takes it over (as one would once this node's lease looked lapsed).
    let store = agentwire_store::Store::open(&url).await.unwrap();
    let taken = store
        .take_over(&id.as_str().into(), &node, &format!("node_other_{nanos}"))
        .await
        .unwrap();
    assert!(taken.is_some());

    let accepted = a
        .http
        .post(a.url(&format!("/v1/runs/{id}/input")))
        .json(&approve(&approval_of(&waiting)))
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), 202);
    // The other node holds no lease (it is gone too): this one took the run back from the
    // store, and ran the call once.
    let run = a.completed_run(&id).await;
    let results = run["output"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|message| message["parts"].as_array().unwrap())
        .filter(|part| part["type"] == "tool_result")
        .count();
    assert_eq!(results, 1, "{run}");
    let whole = whole_run(&a, &id).await;
    assert_eq!(whole.numbered(), one_to(whole.numbered().len()));
    a.shutdown().await;
}
