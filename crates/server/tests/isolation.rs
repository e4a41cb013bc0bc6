//! Isolation between keys as a property: for any sequence of operations by two keys on a few
//! shared session names — starting runs, reading, listing, deleting and cancelling, reading
//! events — with restarts in between that change the key list (a key's secret rotated under its
//! name, the list reordered, an unrelated key added or removed), nothing of one key is visible
//! to, changeable by or blocked by the other: a session name is each key's own. The real server, on a SQLite file, over HTTP.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use agentwire_server::{ApiKey, Settings};
use common::{TestServer, run_body, talker};
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Actor {
    /// A named key, whose secret is rotated across restarts.
    Alice,
    /// An unnamed key (owned by its hash).
    Bob,
}

#[derive(Clone, Debug)]
enum Op {
    Start(Actor, usize),
    GetSession(Actor, usize),
    DeleteSession(Actor, usize),
    List(Actor),
    GetRun(Actor, usize),
    Cancel(Actor, usize),
    Events(Actor, usize),
    /// Restart with Alice's secret at this version, the list reversed or not, Carol's key in
    /// it or not.
    Restart {
        alice: u8,
        reversed: bool,
        carol: bool,
    },
}

const SESSIONS: usize = 3;

fn actor() -> impl Strategy<Value = Actor> {
    prop_oneof![Just(Actor::Alice), Just(Actor::Bob)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (actor(), 0..SESSIONS).prop_map(|(a, s)| Op::Start(a, s)),
        2 => (actor(), 0..SESSIONS).prop_map(|(a, s)| Op::GetSession(a, s)),
        1 => (actor(), 0..SESSIONS).prop_map(|(a, s)| Op::DeleteSession(a, s)),
        1 => actor().prop_map(Op::List),
        2 => (actor(), 0..64_usize).prop_map(|(a, r)| Op::GetRun(a, r)),
        1 => (actor(), 0..64_usize).prop_map(|(a, r)| Op::Cancel(a, r)),
        1 => (actor(), 0..64_usize).prop_map(|(a, r)| Op::Events(a, r)),
        1 => (0..3_u8, any::<bool>(), any::<bool>())
            .prop_map(|(alice, reversed, carol)| Op::Restart { alice, reversed, carol }),
    ]
}

/// What the keys are and what each owns, as the server should see it.
struct World {
    alice_secret: String,
    /// Which session names each key has (Alice's first): the same name is two sessions.
    sessions: [[bool; SESSIONS]; 2],
    /// Every run: its id, owner and session, and whether its session was deleted since.
    runs: Vec<(String, Actor, usize, bool)>,
}

impl World {
    fn has(&mut self, actor: Actor, index: usize) -> &mut bool {
        &mut self.sessions[actor as usize][index]
    }

    fn secret(&self, actor: Actor) -> String {
        match actor {
            Actor::Alice => self.alice_secret.clone(),
            Actor::Bob => "bob-secret".to_owned(),
        }
    }

    fn keys(&self, reversed: bool, carol: bool) -> Vec<ApiKey> {
        let mut keys = vec![
            ApiKey::named("alice", &self.alice_secret),
            ApiKey::from("bob-secret"),
        ];
        if carol {
            keys.insert(1, ApiKey::from("carol-secret"));
        }
        if reversed {
            keys.reverse();
        }
        keys
    }
}

fn session_name(index: usize) -> String {
    format!("shared_{index}")
}

async fn send(
    server: &TestServer,
    method: reqwest::Method,
    path: &str,
    secret: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = server
        .http
        .request(method, server.url(path))
        .bearer_auth(secret);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn start(settings: Settings) -> TestServer {
    TestServer::start(vec![talker("assistant", &["ok"], 0.0)], settings).await
}

async fn check(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("aw.db").display());
    let mut world = World {
        alice_secret: "alice-0".to_owned(),
        sessions: [[false; SESSIONS]; 2],
        runs: Vec::new(),
    };
    let settings = |keys| Settings {
        api_keys: keys,
        database_url: Some(url.clone()),
        ..Settings::default()
    };
    let mut server = start(settings(world.keys(false, false))).await;
    for op in ops {
        match op {
            Op::Start(actor, index) => {
                let mut body = run_body(None, "hi");
                body["session_id"] = json!(session_name(index));
                let secret = world.secret(actor);
                let (status, answer) = send(
                    &server,
                    reqwest::Method::POST,
                    "/v1/runs",
                    &secret,
                    Some(body),
                )
                .await;
                // Whoever else named it: the name is the caller's own session.
                assert_eq!(status, 200, "{op:?}: {answer}");
                assert_eq!(answer["run"]["status"], "completed", "{answer}");
                *world.has(actor, index) = true;
                let id = answer["run"]["id"].as_str().unwrap().to_owned();
                world.runs.push((id, actor, index, false));
            }
            Op::GetSession(actor, index) => {
                let path = format!("/v1/sessions/{}", session_name(index));
                let secret = world.secret(actor);
                let (status, answer) =
                    send(&server, reqwest::Method::GET, &path, &secret, None).await;
                if *world.has(actor, index) {
                    assert_eq!(status, 200, "{op:?}: {answer}");
                    let runs = world
                        .runs
                        .iter()
                        .filter(|(_, owner, session, deleted)| {
                            *owner == actor && *session == index && !deleted
                        })
                        .count();
                    let messages = answer["messages"].as_array().unwrap().len();
                    assert_eq!(messages, 2 * runs, "{op:?}: {answer}");
                } else {
                    assert_eq!(status, 404, "{op:?}: {answer}");
                }
            }
            Op::DeleteSession(actor, index) => {
                let path = format!("/v1/sessions/{}", session_name(index));
                let secret = world.secret(actor);
                let (status, answer) =
                    send(&server, reqwest::Method::DELETE, &path, &secret, None).await;
                if *world.has(actor, index) {
                    assert_eq!(status, 204, "{op:?}: {answer}");
                    *world.has(actor, index) = false;
                    for run in world
                        .runs
                        .iter_mut()
                        .filter(|run| run.1 == actor && run.2 == index)
                    {
                        run.3 = true;
                    }
                } else {
                    assert_eq!(status, 404, "{op:?}: {answer}");
                }
            }
            Op::List(actor) => {
                let secret = world.secret(actor);
                let (status, answer) =
                    send(&server, reqwest::Method::GET, "/v1/sessions", &secret, None).await;
                assert_eq!(status, 200, "{answer}");
                let listed: BTreeSet<String> = answer["sessions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|session| session["id"].as_str().unwrap().to_owned())
                    .collect();
                let owned: BTreeSet<String> = (0..SESSIONS)
                    .filter(|index| world.sessions[actor as usize][*index])
                    .map(session_name)
                    .collect();
                assert_eq!(listed, owned, "{op:?}");
            }
            Op::GetRun(actor, pick) | Op::Cancel(actor, pick) | Op::Events(actor, pick) => {
                if world.runs.is_empty() {
                    continue;
                }
                let (id, owner, _, deleted) = world.runs[pick % world.runs.len()].clone();
                let (method, path, ok) = match op {
                    Op::GetRun(..) => (reqwest::Method::GET, format!("/v1/runs/{id}"), 200),
                    Op::Cancel(..) => (reqwest::Method::POST, format!("/v1/runs/{id}/cancel"), 202),
                    _ => (reqwest::Method::GET, format!("/v1/runs/{id}/events"), 200),
                };
                let secret = world.secret(actor);
                let response = server
                    .http
                    .request(method, server.url(&path))
                    .bearer_auth(&secret)
                    .send()
                    .await
                    .unwrap();
                let status = response.status().as_u16();
                let text = response.text().await.unwrap();
                if owner != actor {
                    assert_eq!(status, 404, "{op:?} of {owner:?}'s run: {text}");
                    assert!(!text.contains("\"output\""), "{text}");
                } else if deleted {
                    // Gone from the store; the process may still hold it a while.
                    assert!(status == 404 || status == ok, "{op:?}: {status} {text}");
                } else {
                    assert_eq!(status, ok, "{op:?}: {text}");
                }
            }
            Op::Restart {
                alice,
                reversed,
                carol,
            } => {
                server.shutdown().await;
                world.alice_secret = format!("alice-{alice}");
                server = start(settings(world.keys(reversed, carol))).await;
                // Carol, there or not, owns nothing.
                if carol {
                    let (status, answer) = send(
                        &server,
                        reqwest::Method::GET,
                        "/v1/sessions",
                        "carol-secret",
                        None,
                    )
                    .await;
                    assert_eq!(status, 200);
                    assert_eq!(answer["sessions"], json!([]));
                }
            }
        }
    }
    server.shutdown().await;
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 12,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn nothing_of_one_key_is_visible_changeable_or_blockable_by_the_other(
        ops in proptest::collection::vec(op(), 1..30)
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(check(ops));
    }
}
