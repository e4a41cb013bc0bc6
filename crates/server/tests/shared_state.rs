//! A session's shared state through the server, on SQLite and on PostgreSQL: a run's
//! `update_state` streams into it and the store keeps it (across a restart too), the next run
//! starts from it, and clients read and set it with `GET`, `PUT` and `PATCH
//! /v1/sessions/{id}/state` — checked against the agent's state schema, refused while a run
//! is open, and every refused change leaving the state as it was.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_brain::ScriptedBrain;
use agentwire_core::EventKind;
use agentwire_runtime::Agent;
use agentwire_server::{ApiKey, Settings};
use agentwire_tools::{StateSchema, UpdateState};
use common::{SseClient, TestServer, approver, get_state, patch_state, put_state, run_body};
use serde_json::{Value, json};

/// An agent whose every run adds a task with `update_state` (its arguments streamed in small
/// pieces), then answers; its state must be `{"todo": [{"title": string}]}`.
fn planner() -> Agent {
    let args =
        json!({"ops": [{"op": "add", "path": "/todo/-", "value": {"title": "Write the docs"}}]})
            .to_string();
    let mut call = vec![json!({"type": "tool_call_start", "id": "c1", "name": UpdateState::NAME})];
    let bytes: Vec<char> = args.chars().collect();
    for piece in bytes.chunks(6) {
        let piece: String = piece.iter().collect();
        call.push(json!({"type": "tool_call_delta", "id": "c1", "args": piece}));
    }
    call.push(json!({"type": "tool_call_end", "id": "c1"}));
    call.push(json!({"type": "finish", "reason": "tool_calls"}));
    let script = json!({"turns": [call, [
        {"type": "text_delta", "text": "Added."},
        {"type": "finish", "reason": "stop"}
    ]]});
    let schema = StateSchema::compile(&json!({
        "type": "object",
        "required": ["todo"],
        "properties": {"todo": {"type": "array", "items": {
            "type": "object",
            "required": ["title"],
            "properties": {"title": {"type": "string"}}
        }}}
    }))
    .unwrap();
    Agent::builder("planner")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .tool(UpdateState::new())
        .state_schema(schema)
        .build()
        .unwrap()
}

async fn sqlite(dir: &tempfile::TempDir) -> Settings {
    Settings {
        database_url: Some(format!("sqlite://{}", dir.path().join("aw.db").display())),
        ..Settings::default()
    }
}

async fn postgres() -> Settings {
    Settings {
        database_url: Some(agentwire_testkit::postgres::required_schema_url().await),
        ..Settings::default()
    }
}

/// Runs the planner in `session` over SSE to its end: the stream's client.
async fn plan(server: &TestServer, session: &str) -> SseClient {
    let mut body = run_body(Some("planner"), "Plan");
    body["session_id"] = json!(session);
    let mut client = server.post_sse(&body).await;
    client.until_end().await;
    client
}

fn state_events(client: &SseClient) -> Vec<&'static str> {
    client
        .events
        .iter()
        .filter(|event| {
            matches!(
                event.kind,
                EventKind::StateSnapshot { .. } | EventKind::StateDelta { .. }
            )
        })
        .map(|event| event.name())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_a_run_makes_is_kept_across_a_restart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    a_run_keeps_its_state_across_a_restart(|| sqlite(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_a_run_makes_is_kept_across_a_restart_on_postgres() {
    let settings = postgres().await;
    a_run_keeps_its_state_across_a_restart(|| async { settings.clone() }).await;
}

async fn a_run_keeps_its_state_across_a_restart<F, S>(settings: F)
where
    F: Fn() -> S,
    S: std::future::Future<Output = Settings>,
{
    let first = TestServer::start(vec![planner()], settings().await).await;
    let (status, ..) = put_state(&first, "ses_plan", &json!({"todo": []}), None).await;
    assert_eq!(status, 200, "a PUT makes the session");
    let client = plan(&first, "ses_plan").await;
    let expect = json!({"todo": [{"title": "Write the docs"}]});
    assert_eq!(client.accumulator.state(), &expect);
    assert_eq!(
        state_events(&client)[0],
        "state_snapshot",
        "the run shows it first"
    );
    assert!(
        state_events(&client).len() > 2,
        "then streams the call's changes"
    );
    // The store has what the events made, once the run's end is seen.
    assert_eq!(get_state(&first, "ses_plan").await.2, expect);
    first.shutdown().await;

    let second = TestServer::start(vec![planner()], settings().await).await;
    let (status, etag, state) = get_state(&second, "ses_plan").await;
    assert_eq!(status, 200);
    assert_eq!(state, expect);
    assert!(etag.is_some());
    // The next run starts from it, and adds to it.
    let client = plan(&second, "ses_plan").await;
    assert!(matches!(
        &client.events.iter().find(|event| event.name() == "state_snapshot").unwrap().kind,
        EventKind::StateSnapshot { state } if *state == expect
    ));
    let two = json!({"todo": [{"title": "Write the docs"}, {"title": "Write the docs"}]});
    assert_eq!(client.accumulator.state(), &two);
    assert_eq!(get_state(&second, "ses_plan").await.2, two);
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_read_and_set_the_state_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    clients_read_and_set_the_state(sqlite(&dir).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_read_and_set_the_state_on_postgres() {
    clients_read_and_set_the_state(postgres().await).await;
}

async fn clients_read_and_set_the_state(settings: Settings) {
    let server = TestServer::start(vec![planner(), approver()], settings).await;
    let (status, _, body) = get_state(&server, "ses_none").await;
    assert_eq!((status, &body["error"]["code"]), (404, &json!("not_found")));

    // A session of the planner: its schema holds from now on.
    assert_eq!(
        put_state(&server, "ses_1", &json!({"todo": []}), None)
            .await
            .0,
        200
    );
    plan(&server, "ses_1").await;
    let (status, etag, state) = get_state(&server, "ses_1").await;
    assert_eq!(status, 200);
    assert_eq!(state, json!({"todo": [{"title": "Write the docs"}]}));
    let etag = etag.unwrap();

    let (status, new_etag, state) = patch_state(
        &server,
        "ses_1",
        &json!([{"op": "add", "path": "/todo/-", "value": {"title": "Test"}}]),
        "application/json-patch+json",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(state["todo"][1], json!({"title": "Test"}));
    assert_ne!(new_etag.as_deref(), Some(etag.as_str()));
    let kept = state;

    // Every refused change leaves the state as it was.
    for (status, code, (answer, _, body)) in [
        (
            415,
            "unsupported_media_type",
            patch_state(&server, "ses_1", &json!([]), "application/json").await,
        ),
        (
            422,
            "patch_failed",
            patch_state(
                &server,
                "ses_1",
                &json!([{"op": "add", "path": "/todo/-", "value": {"title": "x"}}, {"op": "remove", "path": "/gone"}]),
                "application/json-patch+json",
            )
            .await,
        ),
        (
            422,
            "invalid_state",
            patch_state(
                &server,
                "ses_1",
                &json!([{"op": "replace", "path": "/todo/0/title", "value": 7}]),
                "application/json-patch+json",
            )
            .await,
        ),
        (
            422,
            "invalid_state",
            put_state(&server, "ses_1", &json!({"tasks": []}), None).await,
        ),
        (
            412,
            "state_changed",
            put_state(&server, "ses_1", &json!({"todo": []}), Some(&etag)).await,
        ),
        (
            400,
            "invalid_request",
            patch_state(&server, "ses_1", &json!({"op": "add"}), "application/json-patch+json").await,
        ),
    ] {
        assert_eq!((answer, body["error"]["code"].as_str()), (status, Some(code)), "{body}");
        assert_eq!(get_state(&server, "ses_1").await.2, kept, "after {code}");
    }
    let message = patch_state(
        &server,
        "ses_1",
        &json!([{"op": "replace", "path": "/todo/0/title", "value": 7}]),
        "application/json-patch+json",
    )
    .await
    .2["error"]["message"]
        .clone();
    assert_eq!(
        message,
        "the state would not match its schema: at '/todo/0/title': 7 is not of type \"string\""
    );

    // With the version it read, a PUT goes through; `null` clears the state.
    let (_, etag, _) = get_state(&server, "ses_1").await;
    let (status, _, state) =
        put_state(&server, "ses_1", &json!({"todo": []}), etag.as_deref()).await;
    assert_eq!((status, state), (200, json!({"todo": []})));
    // A patch to a session without state starts it as an empty object.
    assert_eq!(put_state(&server, "ses_1", &Value::Null, None).await.0, 200);
    let (status, _, state) = patch_state(
        &server,
        "ses_1",
        &json!([{"op": "add", "path": "/todo", "value": []}]),
        "application/json-patch+json",
    )
    .await;
    assert_eq!((status, state), (200, json!({"todo": []})));

    // While a run of the session is open (waiting for an approval), no change is taken.
    let mut body = run_body(Some("approver"), "remove it");
    body["session_id"] = json!("ses_busy");
    let run: Value = server
        .post_json("/v1/runs", &body)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(run["run"]["status"], "awaiting", "{run}");
    let (status, _, body) = put_state(&server, "ses_busy", &json!({"a": 1}), None).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (409, &json!("session_busy"))
    );
    assert_eq!(get_state(&server, "ses_busy").await.2, Value::Null);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_keys_session_state_is_not_there_and_its_id_is_ones_own() {
    let settings = Settings {
        api_keys: vec![ApiKey::named("alice", "alice-key"), ApiKey::from("bob-key")],
        ..Settings::default()
    };
    let server = TestServer::start(vec![planner()], settings).await;
    let url = server.url("/v1/sessions/ses_a/state");
    let put = server
        .http
        .put(&url)
        .bearer_auth("alice-key")
        .json(&json!({"todo": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200);
    for (key, status) in [("alice-key", 200), ("bob-key", 404)] {
        let got = server.http.get(&url).bearer_auth(key).send().await.unwrap();
        assert_eq!(got.status(), status, "{key}");
    }
    // Bob's `ses_a` is Bob's own session: setting its state leaves Alice's as it was.
    let bob = server
        .http
        .put(&url)
        .bearer_auth("bob-key")
        .json(&json!({"todo": [{"title": "mine"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(bob.status(), 200);
    for (key, state) in [
        ("alice-key", json!({"todo": []})),
        ("bob-key", json!({"todo": [{"title": "mine"}]})),
    ] {
        let got = server.http.get(&url).bearer_auth(key).send().await.unwrap();
        assert_eq!(got.json::<Value>().await.unwrap(), state, "{key}");
    }
    let unauthenticated = server.http.get(&url).send().await.unwrap();
    assert_eq!(unauthenticated.status(), 401);
    server.shutdown().await;
}
