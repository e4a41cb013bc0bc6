//! Background runs and the runs list: `background: true` answers at once and the run goes on
//! with nobody connected, to be followed, polled, listed and canceled by later requests (on
//! SQLite, and through another node sharing PostgreSQL); `GET /v1/runs` pages every run exactly
//! once while runs are created between its pages.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashSet;

use agentwire_core::{EventKind, RunStatus};
use agentwire_server::Settings;
use common::{SseClient, TestServer, run_body, talker, text_of};
use serde_json::{Value, json};

async fn get_json(server: &TestServer, path: &str) -> (u16, Value) {
    let response = server.http.get(server.url(path)).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// Starts a background run of `body`: the `202` answer's run, checked.
async fn start_background(server: &TestServer, mut body: Value) -> Value {
    body["background"] = json!(true);
    let response = server.post_json("/v1/runs", &body).await;
    assert_eq!(response.status(), 202);
    let id = response.headers()["x-agentwire-run-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["run"]["id"], id.as_str());
    assert_eq!(location, format!("/v1/runs/{id}"));
    assert!(answer["run"]["session_id"].is_string(), "{answer}");
    assert!(
        answer.get("output").is_none(),
        "nothing waited for: {answer}"
    );
    answer["run"].clone()
}

/// How the stream a client read ended.
fn ended(client: &SseClient) -> RunStatus {
    match &client.events.last().unwrap().kind {
        EventKind::RunStatus { status, .. } => *status,
        other => panic!("the stream ends on {other:?}"),
    }
}

/// Every page of `GET /v1/runs?{query}` with `limit`, calling `between` after each page: the
/// ids in the order listed.
async fn every_page(
    server: &TestServer,
    query: &str,
    limit: u32,
    mut between: impl AsyncFnMut(),
) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/v1/runs?limit={limit}&{query}");
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={}", urlencode(cursor)));
        }
        let (status, page) = get_json(server, &path).await;
        assert_eq!(status, 200, "{page}");
        let runs = page["runs"].as_array().unwrap();
        assert!(runs.len() <= limit as usize);
        ids.extend(
            runs.iter()
                .map(|run| run["id"].as_str().unwrap().to_owned()),
        );
        match page["next"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return ids,
        }
        between().await;
    }
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(byte).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_answers_at_once_and_is_polled_followed_and_listed() {
    let words: Vec<&str> = std::iter::repeat_n("tick ", 40).collect();
    let server = TestServer::start(
        vec![talker("assistant", &words, 200.0)],
        Settings::default(),
    )
    .await;
    let run = start_background(&server, run_body(None, "go")).await;
    let id = run["id"].as_str().unwrap();
    assert!(
        ["created", "queued", "in_progress"].contains(&run["status"].as_str().unwrap()),
        "{run}"
    );
    // Nobody is connected; the run goes on, and a poll sees it.
    let (status, polled) = get_json(&server, &format!("/v1/runs/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(polled["run"]["id"], id);
    let mut followed = SseClient::new(
        server
            .http
            .get(server.url(&format!("/v1/runs/{id}/events")))
            .send()
            .await
            .unwrap(),
    );
    followed.until_end().await;
    assert_eq!(ended(&followed), RunStatus::Completed);
    assert_eq!(followed.numbered()[0], 1, "followed from its first event");
    assert_eq!(followed.messages().len(), 1);
    let done = server.completed_run(id).await;
    assert_eq!(text_of(&done["output"][0]), words.concat());

    let (status, list) = get_json(&server, "/v1/runs").await;
    assert_eq!(status, 200);
    assert_eq!(list["runs"][0]["id"], id);
    assert_eq!(list["runs"][0]["status"], "completed");
    assert!(list["runs"][0]["created_at"].is_number());
    assert_eq!(list["next"], Value::Null);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_is_canceled_by_a_later_request() {
    let words: Vec<&str> = std::iter::repeat_n("tick ", 400).collect();
    let server =
        TestServer::start(vec![talker("assistant", &words, 40.0)], Settings::default()).await;
    let run = start_background(&server, run_body(None, "go")).await;
    let id = run["id"].as_str().unwrap();
    let canceled = server
        .post_json(&format!("/v1/runs/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(canceled.status(), 202);
    let followed = server.events_after(id, 0).await;
    assert_eq!(ended(&followed), RunStatus::Canceled);
    let (_, listed) = get_json(&server, "/v1/runs?status=canceled").await;
    assert_eq!(listed["runs"][0]["id"], id);
    let (_, none) = get_json(&server, "/v1/runs?status=completed,failed").await;
    assert_eq!(none["runs"], json!([]));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_hold_every_run_once_while_runs_are_created_between_them() {
    let server = TestServer::start(
        vec![
            talker("assistant", &["hi"], 0.0),
            talker("other", &["yo"], 0.0),
        ],
        Settings::default(),
    )
    .await;
    // Runs in two sessions and of two agents, several in the same millisecond.
    let mut body = run_body(None, "one");
    body["session_id"] = json!("ses_a");
    let mut in_a = HashSet::new();
    for n in 0..9 {
        let mut body = match n % 3 {
            0 => body.clone(),
            1 => run_body(Some("other"), "two"),
            _ => run_body(None, "three"),
        };
        if n % 3 == 0 {
            body["session_id"] = json!("ses_a");
        }
        let answer: Value = server
            .post_json("/v1/runs", &body)
            .await
            .json()
            .await
            .unwrap();
        let id = answer["run"]["id"].as_str().unwrap().to_owned();
        if n % 3 == 0 {
            in_a.insert(id);
        }
    }
    body["session_id"] = json!("ses_a");
    for limit in 1..=4 {
        let (_, all) = get_json(&server, "/v1/runs?limit=100").await;
        let before: Vec<String> = all["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|run| run["id"].as_str().unwrap().to_owned())
            .collect();
        let server = &server;
        let listed = every_page(server, "", limit, async || {
            let mut body = run_body(None, "between");
            body["session_id"] = json!("ses_a");
            server.post_json("/v1/runs", &body).await;
        })
        .await;
        let unique: HashSet<&String> = listed.iter().collect();
        assert_eq!(unique.len(), listed.len(), "a run listed twice: {listed:?}");
        // Newest first: the runs of the first page's time, in order, then nothing new.
        assert_eq!(listed, before, "limit {limit}");
    }
    let in_session = every_page(&server, "session_id=ses_a", 2, async || {}).await;
    assert!(in_a.iter().all(|id| in_session.contains(id)));
    let (_, other) = get_json(&server, "/v1/runs?agent=other&limit=100").await;
    assert_eq!(other["runs"].as_array().unwrap().len(), 3);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_cursor_status_or_limit_is_a_400_with_a_stable_code() {
    let server =
        TestServer::start(vec![talker("assistant", &["hi"], 0.0)], Settings::default()).await;
    for (query, code) in [
        ("cursor=nope", "invalid_cursor"),
        ("cursor=12%3A", "invalid_cursor"),
        ("cursor=x%3Arun_1", "invalid_cursor"),
        ("status=done", "invalid_query"),
        ("limit=0", "invalid_query"),
        ("limit=101", "invalid_query"),
        ("limit=many", "invalid_query"),
    ] {
        let (status, body) = get_json(&server, &format!("/v1/runs?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(body["error"]["code"], code, "{query}: {body}");
        assert!(body["error"]["message"].is_string());
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_the_server_did_not_give_is_refused() {
    let server =
        TestServer::start(vec![talker("assistant", &["hi"], 0.0)], Settings::default()).await;
    for _ in 0..3 {
        let mut body = run_body(None, "go");
        body["session_id"] = json!("ses_a");
        server.post_json("/v1/runs", &body).await;
    }
    let (_, page) = get_json(&server, "/v1/runs?limit=1").await;
    let next = page["next"].as_str().unwrap().to_owned();
    let (time, run) = next.split_once(':').unwrap();
    assert_eq!(
        get_json(&server, &format!("/v1/runs?limit=1&cursor={next}"))
            .await
            .0,
        200
    );
    // Forged: no such run, a time before the epoch, a real run at another time.
    let later = time.parse::<i64>().unwrap() + 1;
    for cursor in [
        "1:run_forged".to_owned(),
        "-1:run_x".to_owned(),
        format!("{later}:{run}"),
    ] {
        let (status, body) = get_json(&server, &format!("/v1/runs?cursor={cursor}")).await;
        assert_eq!(status, 400, "{cursor}: {body}");
        assert_eq!(body["error"]["code"], "invalid_cursor", "{cursor}: {body}");
    }
    // The sessions list: a session the caller does not have, or a malformed cursor.
    for before in ["1:ses_forged", "-1:ses_a", "1:", "x:ses_a"] {
        let (status, body) = get_json(&server, &format!("/v1/sessions?before={before}")).await;
        assert_eq!(status, 400, "{before}: {body}");
        assert_eq!(body["error"]["code"], "invalid_cursor", "{before}: {body}");
    }
    let (_, page) = get_json(&server, "/v1/sessions?limit=1").await;
    assert!(page["next"].is_null(), "{page}");
    let given = format!("/v1/sessions?before={}", urlencode("5:ses_a"));
    assert_eq!(get_json(&server, &given).await.0, 200);
    // A2A's `pageToken` is the same cursor: a forged one is invalid params.
    for token in ["-1:x", "1:run_forged"] {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                          "params": {"pageToken": token}});
        let answer: Value = server.post_json("/a2a", &call).await.json().await.unwrap();
        assert_eq!(answer["error"]["code"], -32602, "{token}: {answer}");
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_on_one_node_is_polled_followed_listed_and_canceled_on_another() {
    let Some(url) = agentwire_testkit::postgres::schema_url().await else {
        eprintln!("AGENTWIRE_TEST_DATABASE_URL is not set: skipped");
        return;
    };
    let settings = || Settings {
        database_url: Some(url.clone()),
        ..Settings::default()
    };
    let words: Vec<&str> = std::iter::repeat_n("tick ", 400).collect();
    let a = TestServer::start(vec![talker("assistant", &words, 40.0)], settings()).await;
    let b = TestServer::start(vec![talker("assistant", &words, 40.0)], settings()).await;

    let run = start_background(&a, run_body(None, "go")).await;
    let id = run["id"].as_str().unwrap();
    let mut on_b = SseClient::new(
        b.http
            .get(b.url(&format!("/v1/runs/{id}/events")))
            .send()
            .await
            .unwrap(),
    );
    on_b.until_events(10).await;
    let (status, polled) = get_json(&b, &format!("/v1/runs/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(polled["run"]["status"], "in_progress");
    let (_, listed) = get_json(&b, "/v1/runs?status=in_progress").await;
    assert_eq!(listed["runs"][0]["id"], id, "{listed}");

    let canceled = b
        .post_json(&format!("/v1/runs/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(canceled.status(), 202);
    on_b.until_end().await;
    assert_eq!(ended(&on_b), RunStatus::Canceled);
    let (_, listed) = get_json(&a, "/v1/runs?status=canceled").await;
    assert_eq!(listed["runs"][0]["id"], id, "{listed}");
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_run_reports_the_state_its_answer_did() {
    let server =
        TestServer::start(vec![talker("assistant", &["hi"], 0.0)], Settings::default()).await;
    for session in [Some("ses_a"), None] {
        let mut body = run_body(None, "go");
        if let Some(session) = session {
            body["session_id"] = json!(session);
        }
        let answer: Value = server
            .post_json("/v1/runs", &body)
            .await
            .json()
            .await
            .unwrap();
        let id = answer["run"]["id"].as_str().unwrap();
        assert_eq!(answer["run"]["status"], "completed", "{answer}");
        // Where the run left the default schema, not where its input took it (`running`).
        assert_eq!(answer["run"]["state"], "idle", "{answer}");
        let (_, run) = get_json(&server, &format!("/v1/runs/{id}")).await;
        assert_eq!(
            run["run"]["state"], answer["run"]["state"],
            "{run} {answer}"
        );
        let (_, listed) = get_json(&server, "/v1/runs?limit=1").await;
        assert_eq!(
            listed["runs"][0]["state"], answer["run"]["state"],
            "{listed}"
        );
    }
    server.shutdown().await;
}
