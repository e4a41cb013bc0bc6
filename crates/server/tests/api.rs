//! The native API over real HTTP: streamed and JSON runs, sessions, approvals through /input,
//! resuming a stream, cancel, disconnects, errors and auth.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agentwire_core::{Part, RunStatus};
use agentwire_server::Settings;
use common::{SseClient, TestServer, approver, run_body, talker, text_of};
use serde_json::{Value, json};

const WORDS: &[&str] = &["Hello", ",", " world", "!", " How", " are", " you", "?"];

/// A run far longer than the window of events a live run keeps in memory.
const LONG: [&str; 120] = [" word"; 120];

async fn server() -> TestServer {
    TestServer::start(
        vec![
            talker("assistant", WORDS, 0.0),
            talker("slow", WORDS, 40.0),
            talker("snail", WORDS, 4.0),
            talker("long", &LONG, 200.0),
            approver(),
        ],
        Settings {
            max_body_bytes: 64 * 1024,
            max_input_messages: 4,
            heartbeat: Duration::from_millis(100),
            ..Settings::default()
        },
    )
    .await
}

async fn get_json(server: &TestServer, path: &str) -> (u16, Value) {
    let response = server.http.get(server.url(path)).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// The codes of the errors a client's stream carried.
fn error_codes(client: &SseClient) -> Vec<&str> {
    client
        .accumulator
        .errors()
        .iter()
        .map(|error| error.code.as_str())
        .collect()
}

fn run_id(client: &SseClient) -> String {
    match &client.events[0].kind {
        agentwire_core::EventKind::RunCreated { run_id, .. } => run_id.to_string(),
        other => panic!("the stream starts with run_created, not {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_run_decodes_to_its_output() {
    let server = server().await;
    let mut client = server.post_sse(&run_body(None, "hi")).await;
    client.until_end().await;
    assert_eq!(client.accumulator.status(), Some(RunStatus::Completed));
    assert_eq!(client.messages().len(), 1);
    assert_eq!(client.messages()[0].content(), WORDS.concat());
    let numbered = client.numbered();
    assert_eq!(numbered, (1..=numbered.len() as u64).collect::<Vec<_>>());

    let (status, run) = get_json(&server, &format!("/v1/runs/{}", run_id(&client))).await;
    assert_eq!(status, 200);
    assert_eq!(run["run"]["status"], "completed");
    assert_eq!(run["run"]["agent"], "assistant");
    let output: Vec<agentwire_core::Message> =
        serde_json::from_value(run["output"].clone()).unwrap();
    assert_eq!(output, client.messages());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_mode_waits_and_sessions_carry_the_history() {
    let server = server().await;
    let first: Value = server
        .post_json("/v1/runs", &run_body(None, "hi"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(first["run"]["status"], "completed");
    assert_eq!(first["run"]["usage"]["output_tokens"], 2);
    assert_eq!(text_of(&first["output"][0]), WORDS.concat());
    let session = first["run"]["session_id"].as_str().unwrap().to_owned();

    let mut second = run_body(None, "again");
    second["session_id"] = json!(session);
    let second: Value = server
        .post_json("/v1/runs", &second)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(second["run"]["session_id"], session.as_str());
    let (status, history) = get_json(&server, &format!("/v1/sessions/{session}")).await;
    assert_eq!(status, 200);
    let roles: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);

    let deleted = server
        .http
        .delete(server.url(&format!("/v1/sessions/{session}")))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let (status, error) = get_json(&server, &format!("/v1/sessions/{session}")).await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_takes_a_session_up_again_before_a_message() {
    /// A completed turn in `session` (a new one when `None`); the session's id.
    async fn turn(server: &TestServer, session: Option<&str>, text: &str) -> String {
        let mut body = run_body(None, text);
        if let Some(session) = session {
            body["session_id"] = json!(session);
        }
        let run: Value = server
            .post_json("/v1/runs", &body)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(run["run"]["status"], "completed");
        run["run"]["session_id"].as_str().unwrap().to_owned()
    }
    let server = server().await;
    let texts = |session: &Value| -> Vec<String> {
        session["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(text_of)
            .collect()
    };
    let session = turn(&server, None, "hi").await;
    turn(&server, Some(&session), "again").await;
    let (_, original) = get_json(&server, &format!("/v1/sessions/{session}")).await;
    let answer = WORDS.concat();
    assert_eq!(texts(&original), ["hi", &answer, "again", &answer]);

    // Before the second question: a new session holding the first turn, as it was.
    let second = original["messages"][2]["id"].as_str().unwrap();
    let (on, fork_path) = (&server, &format!("/v1/sessions/{session}/fork"));
    let fork = move |body: Value| async move { on.post_json(fork_path, &body).await };
    let created = fork(json!({"before": second})).await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let forked = created["id"].as_str().unwrap().to_owned();
    assert_ne!(forked, session);
    assert!(forked.starts_with("ses_"));
    assert_eq!(
        created["messages"],
        json!(original["messages"].as_array().unwrap()[..2])
    );
    assert_eq!(created["last_run"], Value::Null);

    // The next turn there is the edited question; the original keeps its own.
    assert_eq!(turn(&server, Some(&forked), "edited").await, forked);
    let (_, taken_up) = get_json(&server, &format!("/v1/sessions/{forked}")).await;
    assert_eq!(texts(&taken_up), ["hi", &answer, "edited", &answer]);
    assert_eq!(taken_up["last_run"]["status"], "completed");
    let (_, unchanged) = get_json(&server, &format!("/v1/sessions/{session}")).await;
    assert_eq!(unchanged["messages"], original["messages"]);
    let (_, listed) = get_json(&server, "/v1/sessions").await;
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|listed| listed["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&forked.as_str()) && ids.contains(&session.as_str()));

    // Without `before`, every message; before the first, none.
    let whole: Value = fork(json!({})).await.json().await.unwrap();
    assert_eq!(whole["messages"], original["messages"]);
    let first = original["messages"][0]["id"].as_str().unwrap();
    let empty: Value = fork(json!({"before": first})).await.json().await.unwrap();
    assert_eq!(empty["messages"], json!([]));

    // A message or session that is not there is 404, a bad body 400; nothing is created.
    let before = get_json(&server, "/v1/sessions?limit=100").await.1["sessions"]
        .as_array()
        .unwrap()
        .len();
    for (body, path, status, code) in [
        (
            json!({"before": "msg_nope"}),
            format!("/v1/sessions/{session}/fork"),
            404,
            "not_found",
        ),
        (
            json!({}),
            "/v1/sessions/ses_nope/fork".to_owned(),
            404,
            "not_found",
        ),
        (
            json!({"before": 3}),
            format!("/v1/sessions/{session}/fork"),
            400,
            "invalid_request",
        ),
        (
            json!({"after": second}),
            format!("/v1/sessions/{session}/fork"),
            400,
            "invalid_request",
        ),
    ] {
        let response = server.post_json(&path, &body).await;
        assert_eq!(response.status(), status, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], code, "{body}");
    }
    let after = get_json(&server, "/v1/sessions?limit=100").await.1["sessions"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(after, before);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_round_trip_through_input() {
    let server = server().await;
    let mut client = server
        .post_sse(&run_body(Some("approver"), "remove a.txt"))
        .await;
    client.until_end().await;
    assert_eq!(
        client.accumulator.status(),
        Some(RunStatus::Awaiting(agentwire_core::Awaiting::Approval))
    );
    let id = run_id(&client);
    let approval_id = client.messages()[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.approval_id.to_string()),
            _ => None,
        })
        .unwrap();
    let input = |body: Value| {
        server
            .http
            .post(server.url(&format!("/v1/runs/{id}/input")))
            .json(&body)
            .send()
    };
    // Refused: a new question while the run waits, and an answer to nothing asked.
    let refused = input(json!({"role": "user", "parts": [{"type": "text", "text": "hm"}]}))
        .await
        .unwrap();
    assert_eq!(refused.status(), 409);
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["error"]["code"], "input_refused");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("awaiting_approval")
    );
    let unknown = input(json!({"role": "user", "parts": [{"type": "approval_response", "approval_id": "nope", "approved": true}]}))
        .await
        .unwrap();
    assert_eq!(unknown.status(), 409);
    let error: Value = unknown.json().await.unwrap();
    assert_eq!(error["error"]["code"], "unknown_approval");

    let accepted = input(json!({"role": "user", "parts": [{"type": "approval_response", "approval_id": approval_id, "approved": true}]}))
        .await
        .unwrap();
    assert_eq!(accepted.status(), 202);
    let last = *client.numbered().last().unwrap();
    let rest = server
        .http
        .get(server.url(&format!("/v1/runs/{id}/events?after={last}")))
        .send()
        .await
        .unwrap();
    let mut rest = SseClient::resumed(rest);
    rest.until_end().await;
    assert_eq!(rest.numbered()[0], last + 1);
    assert!(matches!(
        &rest.events.last().unwrap().kind,
        agentwire_core::EventKind::RunStatus {
            status: RunStatus::Completed,
            ..
        }
    ));
    let (_, run) = get_json(&server, &format!("/v1/runs/{id}")).await;
    assert_eq!(run["run"]["status"], "completed");
    let text = serde_json::to_string(&run["output"]).unwrap();
    assert!(text.contains("removed a.txt"), "{text}");
    assert!(text.contains("done"), "{text}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_event_id_resumes_with_exactly_the_rest() {
    let server = server().await;
    let mut whole = server.post_sse(&run_body(Some("slow"), "hi")).await;
    whole.until_events(5).await;
    let cut = whole.numbered()[4];
    let id = run_id(&whole);
    // A second reader that stopped at event `cut`.
    let resumed = server
        .http
        .get(server.url(&format!("/v1/runs/{id}/events")))
        .header("last-event-id", cut.to_string())
        .send()
        .await
        .unwrap();
    let mut resumed = SseClient::resumed(resumed);
    resumed.until_end().await;
    whole.until_end().await;
    // What the reader had, then the rest, rebuilds the run.
    let mut rebuilt = agentwire_core::Accumulator::default();
    for event in whole
        .events
        .iter()
        .filter(|event| event.seq <= cut && event.name() != "heartbeat")
    {
        rebuilt.push(event).unwrap();
    }
    for event in &resumed.events {
        rebuilt.push(event).unwrap();
    }
    assert_eq!(rebuilt.messages(), whole.messages());
    let expected: Vec<u64> = whole
        .numbered()
        .into_iter()
        .filter(|seq| *seq > cut)
        .collect();
    assert_eq!(resumed.numbered(), expected);
    assert_eq!(whole.accumulator.status(), Some(RunStatus::Completed));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_behind_the_in_memory_window_read_the_store_then_follow_live() {
    let server = server().await;
    let mut whole = server.post_sse(&run_body(Some("long"), "hi")).await;
    whole.until_events(60).await;
    let id = run_id(&whole);
    // While the run goes on: from its beginning, and from a point long forgotten in memory.
    let (from_start, from_five) =
        tokio::join!(server.events_after(&id, 0), server.events_after(&id, 5));
    whole.until_end().await;
    let all = whole.numbered();
    assert!(all.len() > 120, "{} events", all.len());
    assert_eq!(from_start.numbered(), all);
    let rest: Vec<u64> = all.iter().copied().filter(|seq| *seq > 5).collect();
    assert_eq!(from_five.numbered(), rest);
    // The same events, not only the same numbers: the store's copy is the log's.
    let numbered = |client: &SseClient| -> Vec<agentwire_core::Event> {
        let events = client.events.iter();
        events
            .filter(|event| event.name() != "heartbeat")
            .cloned()
            .collect()
    };
    assert_eq!(numbered(&from_start), numbered(&whole));
    // After its end, while the process still holds the run.
    assert_eq!(server.events_after(&id, 0).await.numbered(), all);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_the_run_and_quiet_streams_get_heartbeats() {
    let server = server().await;
    let mut client = server.post_sse(&run_body(Some("snail"), "hi")).await;
    while !client
        .events
        .iter()
        .any(|event| event.name() == "heartbeat")
    {
        assert!(client.read_chunk().await);
    }
    let id = run_id(&client);
    let canceled = server
        .http
        .post(server.url(&format!("/v1/runs/{id}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(canceled.status(), 202);
    client.until_end().await;
    assert_eq!(client.accumulator.status(), Some(RunStatus::Canceled));
    let (_, run) = get_json(&server, &format!("/v1/runs/{id}")).await;
    assert_eq!(run["run"]["status"], "canceled");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_does_not_kill_its_run() {
    let server = server().await;
    let mut client = server.post_sse(&run_body(Some("slow"), "hi")).await;
    client.until_events(3).await;
    let id = run_id(&client);
    drop(client);
    let run = server.completed_run(&id).await;
    assert_eq!(text_of(&run["output"][0]), WORDS.concat());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_4xx_json_error_and_the_server_goes_on() {
    let server = server().await;
    let post = |body: Vec<u8>| {
        server
            .http
            .post(server.url("/v1/runs"))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let many: Vec<Value> = (0..5)
        .map(|_| json!({"role": "user", "parts": [{"type": "text", "text": "x"}]}))
        .collect();
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (b"{not json".to_vec(), 400, "invalid_json"),
        (b"{\"input\": 3}".to_vec(), 400, "invalid_request"),
        (
            run_body(Some("nobody"), "hi").to_string().into_bytes(),
            404,
            "unknown_agent",
        ),
        (
            run_body(None, &"x".repeat(100_000))
                .to_string()
                .into_bytes(),
            413,
            "payload_too_large",
        ),
        (
            json!({"input": many}).to_string().into_bytes(),
            400,
            "too_many_messages",
        ),
        (b"{\"input\": []}".to_vec(), 400, "no_input"),
        (
            json!({"input": [{"role": "assistant", "parts": [{"type": "text", "text": "x"}]}]})
                .to_string()
                .into_bytes(),
            400,
            "invalid_role",
        ),
    ];
    for (body, status, code) in cases {
        let response = post(body).await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{code}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], code);
        assert!(!error["error"]["message"].as_str().unwrap().is_empty());
    }
    let (status, error) = get_json(&server, "/v1/runs/run_nope").await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    let (status, error) = get_json(&server, "/v1/runs/run_nope/events?after=x").await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (400, Some("invalid_query"))
    );

    let (status, health) = get_json(&server, "/healthz").await;
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")));
    let (status, agents) = get_json(&server, "/v1/agents").await;
    assert_eq!(status, 200);
    assert_eq!(agents["agents"].as_array().unwrap().len(), 5);
    let (status, card) = get_json(&server, "/v1/agents/approver").await;
    assert_eq!(status, 200);
    assert_eq!(card["tools"][0]["name"], "rm");
    assert!(card["schema"].is_object());
    assert!(card["brain"].is_string());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_sees_only_its_own_runs_and_sessions() {
    let server = TestServer::start(
        vec![talker("assistant", WORDS, 0.0)],
        Settings {
            api_keys: vec!["key-a".into(), "key-b".into()],
            ..Settings::default()
        },
    )
    .await;
    let unauthenticated = server.post_json("/v1/runs", &run_body(None, "hi")).await;
    assert_eq!(unauthenticated.status(), 401);
    let error: Value = unauthenticated.json().await.unwrap();
    assert_eq!(error["error"]["code"], "unauthorized");
    let wrong = server
        .http
        .get(server.url("/v1/agents"))
        .bearer_auth("key-c")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);

    let run: Value = server
        .http
        .post(server.url("/v1/runs"))
        .bearer_auth("key-a")
        .json(&run_body(None, "hi"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = run["run"]["id"].as_str().unwrap();
    let session = run["run"]["session_id"].as_str().unwrap();
    for path in [
        format!("/v1/runs/{id}"),
        format!("/v1/runs/{id}/events"),
        format!("/v1/sessions/{session}"),
    ] {
        let get = |key: &'static str| server.http.get(server.url(&path)).bearer_auth(key).send();
        assert_eq!(get("key-a").await.unwrap().status(), 200, "{path}");
        assert_eq!(get("key-b").await.unwrap().status(), 404, "{path}");
    }
    // Key b naming key a's session id starts a session of its own, which a never sees.
    let mut body = run_body(None, "mine now");
    body["session_id"] = json!(session);
    let taken = server
        .http
        .post(server.url("/v1/runs"))
        .bearer_auth("key-b")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(taken.status(), 200);
    let of = |key: &'static str| {
        let path = format!("/v1/sessions/{session}");
        server.http.get(server.url(&path)).bearer_auth(key).send()
    };
    let theirs: Value = of("key-b").await.unwrap().json().await.unwrap();
    assert!(!theirs.to_string().contains("\"hi\""), "{theirs}");
    let ours: Value = of("key-a").await.unwrap().json().await.unwrap();
    assert!(!ours.to_string().contains("mine now"), "{ours}");
    // Nor copy it into a session of its own.
    let fork = |key: &'static str| {
        server
            .http
            .post(server.url(&format!("/v1/sessions/{session}/fork")))
            .bearer_auth(key)
            .json(&json!({}))
            .send()
    };
    let theirs: Value = fork("key-b").await.unwrap().json().await.unwrap();
    assert!(!theirs.to_string().contains("\"hi\""), "{theirs}");
    let forked: Value = fork("key-a").await.unwrap().json().await.unwrap();
    let forked = forked["id"].as_str().unwrap();
    let get = |key: &'static str| {
        server
            .http
            .get(server.url(&format!("/v1/sessions/{forked}")))
            .bearer_auth(key)
            .send()
    };
    assert_eq!(get("key-a").await.unwrap().status(), 200);
    assert_eq!(get("key-b").await.unwrap().status(), 404);
    assert_eq!(
        server
            .http
            .get(server.url("/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_runs_that_do_not_settle_in_the_grace_period_incomplete() {
    let mut server = TestServer::start(
        vec![talker("snail", WORDS, 2.0)],
        Settings {
            shutdown_grace: Duration::from_millis(200),
            ..Settings::default()
        },
    )
    .await;
    let mut client = server.post_sse(&run_body(None, "hi")).await;
    client.until_events(2).await;
    server.stop();
    client.until_end().await;
    assert_eq!(client.accumulator.status(), Some(RunStatus::Incomplete));
    assert_eq!(error_codes(&client), ["shutdown"]);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_session_is_deleted_while_it_runs_stops() {
    // 10 s of words: its deltas go to the store (and find the run gone) after 3 s.
    let words = ["word "; 100];
    let server = TestServer::start(vec![talker("snail", &words, 10.0)], Settings::default()).await;
    let mut client = server.post_sse(&run_body(None, "hi")).await;
    client.until_events(2).await;
    let run = client.accumulator.run_id().unwrap().to_string();
    let (_, found) = get_json(&server, &format!("/v1/runs/{run}")).await;
    let session = found["run"]["session_id"].as_str().unwrap().to_owned();
    let deleted = server
        .http
        .delete(server.url(&format!("/v1/sessions/{session}")))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    // Its next commit finds it gone: the run stops rather than run on unkept.
    client.until_end().await;
    assert_eq!(client.accumulator.status(), Some(RunStatus::Incomplete));
    assert_eq!(error_codes(&client), ["run_gone"]);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_leaves_memory_at_its_end_and_is_served_from_the_store() {
    let server =
        TestServer::start(vec![talker("assistant", WORDS, 0.0)], Settings::default()).await;
    let mut whole = server.post_sse(&run_body(None, "hi")).await;
    whole.until_end().await;
    let id = run_id(&whole);
    // The process lets go of the run (and its session's turn) once its log is closed, right
    // after the last event: no time-based retention.
    let held = |text: &str, name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.trim().parse::<i64>().ok())
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = server.get_text("/metrics").await;
        let runs = held(&text, "agentwire_runs_held ");
        let sessions = held(&text, "agentwire_sessions_busy ");
        if runs == Some(0) && sessions == Some(0) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the ended run is still held: {runs:?} runs, {sessions:?} sessions"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let (status, run) = get_json(&server, &format!("/v1/runs/{id}")).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["run"]["status"], "completed", "{run}");
    let replay = server
        .http
        .get(server.url(&format!("/v1/runs/{id}/events")))
        .send()
        .await
        .unwrap();
    let mut replay = SseClient::resumed(replay);
    replay.until_end().await;
    assert_eq!(replay.numbered(), whole.numbered());
    let mut rebuilt = agentwire_core::Accumulator::default();
    for event in &replay.events {
        rebuilt.push(event).unwrap();
    }
    assert_eq!(rebuilt.messages(), whole.messages());
    // Input to it is refused as to any run that has ended, not sent to another node.
    let answer = server
        .post_json(
            &format!("/v1/runs/{id}/input"),
            &json!({"role": "user", "parts": [{"type": "text", "text": "more"}]}),
        )
        .await;
    assert_eq!(answer.status(), 409);
    let error: Value = answer.json().await.unwrap();
    assert_eq!(error["error"]["code"], "run_finished", "{error}");
    server.shutdown().await;
}

#[test]
fn the_lease_and_the_shutdown_grace_come_from_the_server_table() {
    let read = |server: &str| {
        agentwire_server::ConfigFile::from_toml(&format!("[server]\n{server}"))
            .unwrap()
            .server
            .settings(|_| None)
            .unwrap()
    };
    let settings = read("lease_seconds = 3\nshutdown_grace_seconds = 0");
    assert_eq!(settings.lease, Duration::from_secs(3));
    assert_eq!(settings.shutdown_grace, Duration::ZERO);
    let defaults = read("");
    assert_eq!(defaults.lease, Duration::from_secs(6));
    assert_eq!(defaults.shutdown_grace, Duration::from_secs(10));
}
