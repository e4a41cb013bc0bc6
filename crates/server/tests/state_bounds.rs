//! A session's shared state through the server stays within its bounds and usable: the
//! patches that once built states deep enough to overflow the server's stack, or large enough
//! to exhaust its memory, are refused (`422 state_too_deep`, `413 state_too_large`) with
//! nothing written, random patch sequences never store a state past the bounds, a stored
//! state that cannot be read is said to be so and replaced by a `PUT`, a session without runs
//! is held to the default agent's schema, `If-Match` losers are told `412`, and a fork takes
//! the state with it.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_core::json_bounds::{JsonBounds, MAX_DEPTH, measure};
use agentwire_runtime::Agent;
use agentwire_server::Settings;
use agentwire_tools::StateSchema;
use common::{TestServer, get_state, patch_state, put_state, read, run_body, talker};
use proptest::prelude::*;
use serde_json::{Value, json};

const JSON_PATCH: &str = "application/json-patch+json";

fn sqlite(dir: &tempfile::TempDir) -> Settings {
    Settings {
        database_url: Some(format!("sqlite://{}", dir.path().join("aw.db").display())),
        ..Settings::default()
    }
}

/// Sends `patch` and checks it is refused with `status` and `code`, the state unchanged.
async fn refused(server: &TestServer, session: &str, patch: &Value, status: u16, code: &str) {
    let before = get_state(server, session).await;
    let (got, _, body) = patch_state(server, session, patch, JSON_PATCH).await;
    assert_eq!(
        (got, body["error"]["code"].as_str()),
        (status, Some(code)),
        "{body}"
    );
    assert!(!body["error"]["message"].as_str().unwrap().is_empty());
    assert_eq!(
        get_state(server, session).await,
        before,
        "a refused patch writes nothing"
    );
}

/// `{"": {"": … {} …}}`, `levels` objects deep, and the path of its innermost object.
fn nested(levels: usize) -> (Value, String) {
    let mut value = json!({});
    for _ in 1..levels {
        value = json!({ "": value });
    }
    (value, "/".repeat(levels - 1))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attacks_that_built_deep_or_huge_states_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![talker("assistant", &["Hi"], 0.0)], sqlite(&dir)).await;

    // 126 levels parse, but are past the bound: refused as a state, not as a body.
    let (deep, _) = nested(126);
    let (status, _, body) = put_state(&server, "ses_deep", &deep, None).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("state_too_deep")),
        "{body}"
    );
    // At the bound, six copies of the root into its innermost object.
    let (deep, innermost) = nested(MAX_DEPTH);
    assert_eq!(put_state(&server, "ses_deep", &deep, None).await.0, 200);
    let copies: Vec<Value> = (0..6)
        .map(|_| json!({"op": "copy", "from": "", "path": format!("{innermost}/")}))
        .collect();
    refused(&server, "ses_deep", &json!(copies), 422, "state_too_deep").await;

    // 160 adds, each 125 levels inside the one before (the most a body may nest): 20,000.
    let (value, _) = nested(123);
    let mut path = String::new();
    let adds: Vec<Value> = (0..160)
        .map(|_| {
            path.push_str("/a");
            let add = json!({"op": "add", "path": path, "value": {"a": value}});
            path.push_str("/a");
            path.push_str(&"/".repeat(122));
            add
        })
        .collect();
    assert_eq!(
        put_state(&server, "ses_adds", &json!({}), None).await.0,
        200
    );
    refused(&server, "ses_adds", &json!(adds), 422, "state_too_deep").await;

    // A 1 MB string, then 200 copies of it.
    let big = json!({"big": "x".repeat(1_000_000)});
    assert_eq!(put_state(&server, "ses_big", &big, None).await.0, 200);
    let copies: Vec<Value> = (0..200)
        .map(|i| json!({"op": "copy", "from": "/big", "path": format!("/c{i}")}))
        .collect();
    refused(&server, "ses_big", &json!(copies), 413, "state_too_large").await;

    // 18 root self-copies of a 100-byte state.
    let small = json!({"note": "x".repeat(89)});
    assert_eq!(put_state(&server, "ses_small", &small, None).await.0, 200);
    let copies: Vec<Value> = (0..18)
        .map(|i| json!({"op": "copy", "from": "", "path": format!("/c{i}")}))
        .collect();
    refused(&server, "ses_small", &json!(copies), 413, "state_too_large").await;

    // A PUT past the size, and a run's state past it (AG-UI's `RunAgentInput.state`).
    let (status, _, body) = put_state(
        &server,
        "ses_put",
        &json!({"big": "y".repeat(1 << 20)}),
        None,
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (413, Some("state_too_large"))
    );
    let input = json!({
        "threadId": "ses_agui", "runId": "run_agui", "state": {"big": "y".repeat(1 << 20)},
        "messages": [{"id": "m1", "role": "user", "content": "hi"}],
        "tools": [], "context": [], "forwardedProps": {}
    });
    let response = server.post_json("/ag-ui", &input).await;
    let (status, _, body) = read(response).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (413, Some("state_too_large")),
        "{body}"
    );

    // The server is still up, and the sessions as they were.
    assert_eq!(get_state(&server, "ses_small").await.2, small);
    let run = server
        .post_json("/v1/runs", &run_body(None, "still there?"))
        .await;
    assert_eq!(run.status(), 200);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_state_bytes_is_the_servers_bound() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        max_state_bytes: 64,
        ..sqlite(&dir)
    };
    let server = TestServer::start(vec![talker("assistant", &["Hi"], 0.0)], settings).await;
    let fits = json!({"note": "x".repeat(50)});
    assert_eq!(serde_json::to_string(&fits).unwrap().len(), 61);
    assert_eq!(put_state(&server, "ses_a", &fits, None).await.0, 200);
    let (status, _, body) =
        put_state(&server, "ses_a", &json!({"note": "x".repeat(60)}), None).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (413, Some("state_too_large"))
    );
    assert_eq!(
        body["error"]["message"],
        "the state is larger than 64 bytes as JSON"
    );
    refused(
        &server,
        "ses_a",
        &json!([{"op": "add", "path": "/n", "value": 1}]),
        413,
        "state_too_large",
    )
    .await;
    server.shutdown().await;
}

/// A patch operation over a few paths that exist or come to, with values small, large and
/// deep, and copies of the root: most apply, many pass the bounds.
fn operation() -> impl Strategy<Value = Value> {
    let path = prop::sample::select(vec!["/a", "/b", "/a/a", "/a/-", "/b/0", "/a/b/c", "/c"]);
    let from = prop::sample::select(vec!["", "", "/a", "/b", "/big", "/a/a"]);
    let value = prop_oneof![
        Just(json!(1)),
        Just(json!([])),
        Just(json!({"a": {}})),
        Just(json!("z".repeat(900))),
        Just(nested(40).0),
    ];
    prop_oneof![
        (path.clone(), value.clone())
            .prop_map(|(path, value)| json!({"op": "add", "path": path, "value": value})),
        (from.clone(), path.clone())
            .prop_map(|(from, path)| json!({"op": "copy", "from": from, "path": path})),
        (from, path.clone())
            .prop_map(|(from, path)| json!({"op": "move", "from": from, "path": path})),
        (path.clone(), value)
            .prop_map(|(path, value)| json!({"op": "replace", "path": path, "value": value})),
        path.prop_map(|path| json!({"op": "remove", "path": path})),
    ]
}

#[test]
fn random_patch_sequences_never_store_a_state_past_the_bounds() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bounds = JsonBounds::with_max_bytes(8192);
    let settings = Settings {
        max_state_bytes: bounds.max_bytes,
        ..sqlite(&dir)
    };
    let server = runtime.block_on(TestServer::start(
        vec![talker("assistant", &["Hi"], 0.0)],
        settings,
    ));
    let config = ProptestConfig {
        cases: 40,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let strategy = (
        prop::collection::vec(prop::collection::vec(operation(), 1..6), 1..5),
        any::<u64>(),
    );
    proptest!(config, |((patches, id) in strategy)| {
        runtime.block_on(async {
            let session = format!("ses_{id}");
            let start = json!({"a": {"a": [1]}, "b": [true], "big": "w".repeat(700)});
            assert_eq!(put_state(&server, &session, &start, None).await.0, 200);
            for patch in &patches {
                let before = get_state(&server, &session).await;
                let (status, etag, body) = patch_state(&server, &session, &json!(patch), JSON_PATCH).await;
                let after = get_state(&server, &session).await;
                let code = body["error"]["code"].as_str();
                match status {
                    200 => {
                        assert_eq!((Some(after.2.clone()), etag), (Some(body), after.1.clone()));
                        let measured = measure(&after.2, JsonBounds { max_depth: usize::MAX, max_bytes: usize::MAX });
                        assert!(measured.depth <= MAX_DEPTH && measured.bytes <= bounds.max_bytes, "{measured:?}");
                    }
                    413 => assert_eq!(code, Some("state_too_large")),
                    422 => assert!(matches!(code, Some("state_too_deep" | "patch_failed")), "{body}"),
                    _ => panic!("{status} {body}"),
                }
                if status != 200 {
                    assert_eq!(after, before, "a refused patch writes nothing");
                }
            }
        });
    });
    // Up all along.
    let (status, _, _) = runtime.block_on(get_state(&server, "ses_0"));
    assert!(status == 200 || status == 404);
    runtime.block_on(server.shutdown());
}

/// Writes `text` as the session's stored state, behind the server's back.
async fn plant(dir: &tempfile::TempDir, session: &str, text: &str) {
    let url = format!("sqlite://{}", dir.path().join("aw.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let updated = sqlx::query("UPDATE sessions SET shared_state = $1 WHERE id = $2")
        .bind(text)
        .bind(session)
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(updated.rows_affected(), 1);
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_that_cannot_be_read_is_said_to_be_so_and_a_put_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![talker("assistant", &["Hi"], 0.0)], sqlite(&dir)).await;
    assert_eq!(
        put_state(&server, "ses_u", &json!({"a": 1}), None).await.0,
        200
    );
    // As a state nested 5,000 deep stored before the bounds held.
    plant(
        &dir,
        "ses_u",
        &format!("{}{}", "[".repeat(5000), "]".repeat(5000)),
    )
    .await;

    let unreadable = |(status, _, body): (u16, Option<String>, Value)| {
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (409, Some("state_unreadable")),
            "{body}"
        );
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("PUT a new state")
        );
    };
    unreadable(get_state(&server, "ses_u").await);
    unreadable(
        patch_state(
            &server,
            "ses_u",
            &json!([{"op": "add", "path": "/b", "value": 2}]),
            JSON_PATCH,
        )
        .await,
    );
    let mut body = run_body(None, "hi");
    body["session_id"] = json!("ses_u");
    unreadable(read(server.post_json("/v1/runs", &body).await).await);
    // A message for it is settled, not retried.
    let message = json!({"message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}, "client_message_id": "m1"});
    let (status, _, entry) = read(
        server
            .post_json("/v1/sessions/ses_u/messages", &message)
            .await,
    )
    .await;
    assert_eq!(status, 202, "{entry}");
    assert_eq!(
        (entry["outcome"].as_str(), entry["reason"].as_str()),
        (Some("not_delivered"), Some("state_unreadable")),
        "{entry}"
    );
    // Another caller's session is not found, whatever its state: here, without keys, the
    // session is the caller's; its listing still works.
    let session = server
        .http
        .get(server.url("/v1/sessions/ses_u"))
        .send()
        .await
        .unwrap();
    assert_eq!(session.status(), 200);

    // A PUT replaces it, and the session works again.
    let (status, _, state) = put_state(&server, "ses_u", &json!({"fresh": true}), None).await;
    assert_eq!((status, state), (200, json!({"fresh": true})));
    assert_eq!(get_state(&server, "ses_u").await.2, json!({"fresh": true}));
    let run: Value = server
        .post_json("/v1/runs", &body)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(run["run"]["status"], "completed", "{run}");
    server.shutdown().await;
}

/// An agent whose state must be `{"count": integer}`.
fn counter(name: &str) -> Agent {
    let schema = StateSchema::compile(&json!({
        "type": "object",
        "properties": {"count": {"type": "integer"}},
        "required": ["count"]
    }))
    .unwrap();
    let script = json!({"turns": [[
        {"type": "text_delta", "text": "Hi"},
        {"type": "finish", "reason": "stop"}
    ]]});
    Agent::builder(name)
        .brain(agentwire_brain::ScriptedBrain::from_json(&script.to_string()).unwrap())
        .state_schema(schema)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_without_runs_is_held_to_the_default_agents_schema() {
    let dir = tempfile::tempdir().unwrap();
    let agents = vec![counter("assistant"), talker("other", &["Hi"], 0.0)];
    let server = TestServer::start(agents, sqlite(&dir)).await;
    let (status, _, body) = put_state(&server, "ses_s", &json!({"count": "many"}), None).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("invalid_state")),
        "{body}"
    );
    assert_eq!(get_state(&server, "ses_s").await.2, Value::Null);
    assert_eq!(
        put_state(&server, "ses_s", &json!({"count": 1}), None)
            .await
            .0,
        200
    );
    refused(
        &server,
        "ses_s",
        &json!([{"op": "remove", "path": "/count"}]),
        422,
        "invalid_state",
    )
    .await;

    // A state set otherwise (by a run of another agent) is checked when a run starts from it.
    let mut other = run_body(Some("other"), "hi");
    other["session_id"] = json!("ses_o");
    let run: Value = server
        .post_json("/v1/runs", &other)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(run["run"]["status"], "completed");
    assert_eq!(
        put_state(&server, "ses_o", &json!({"count": "many"}), None)
            .await
            .0,
        200
    );
    let mut body = run_body(Some("assistant"), "count");
    body["session_id"] = json!("ses_o");
    let (status, _, body) = read(server.post_json("/v1/runs", &body).await).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("invalid_state")),
        "{body}"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_losers_of_an_if_match_race_are_told_412() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![talker("assistant", &["Hi"], 0.0)], sqlite(&dir)).await;
    let (_, etag, _) = put_state(&server, "ses_r", &json!({"n": 0}), None).await;
    let etag = etag.unwrap();
    let puts = (1..=8).map(|n| {
        let request = server
            .http
            .put(server.url("/v1/sessions/ses_r/state"))
            .header("if-match", &etag)
            .json(&json!({"n": n}));
        async move { read(request.send().await.unwrap()).await }
    });
    let answers = futures::future::join_all(puts).await;
    let mut statuses: Vec<(u16, Option<&str>)> = answers
        .iter()
        .map(|(status, _, body)| (*status, body["error"]["code"].as_str()))
        .collect();
    statuses.sort();
    let mut expect = vec![(200, None)];
    expect.extend([(412, Some("state_changed")); 7]);
    assert_eq!(statuses, expect, "{answers:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_takes_the_shared_state_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(vec![talker("assistant", &["Hi"], 0.0)], sqlite(&dir)).await;
    let mut body = run_body(None, "hi");
    body["session_id"] = json!("ses_f");
    let run: Value = server
        .post_json("/v1/runs", &body)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(run["run"]["status"], "completed");
    let (_, etag, _) = put_state(&server, "ses_f", &json!({"plan": ["a", "b"]}), None).await;

    let created = server
        .post_json("/v1/sessions/ses_f/fork", &json!({}))
        .await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let fork = created["id"].as_str().unwrap();
    let (status, fork_etag, state) = get_state(&server, fork).await;
    assert_eq!((status, state), (200, json!({"plan": ["a", "b"]})));
    assert_eq!(
        fork_etag, etag,
        "the fork's state has the version it was copied at"
    );
    // They are two states from now on.
    assert_eq!(
        put_state(&server, fork, &json!({"plan": []}), None).await.0,
        200
    );
    assert_eq!(
        get_state(&server, "ses_f").await.2,
        json!({"plan": ["a", "b"]})
    );
    server.shutdown().await;
}

#[test]
fn max_state_bytes_is_read_from_the_server_table() {
    let read =
        |server: &str| agentwire_server::ConfigFile::from_toml(&format!("[server]\n{server}"));
    let settings = read("max_state_bytes = 4096")
        .unwrap()
        .server
        .settings(|_| None)
        .unwrap();
    assert_eq!(settings.max_state_bytes, 4096);
    let settings = read("").unwrap().server.settings(|_| None).unwrap();
    assert_eq!(settings.max_state_bytes, 1024 * 1024);
    assert!(read("max_state_bytes = \"big\"").is_err());
}
