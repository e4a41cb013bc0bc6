//! A session id a client chooses is scoped by its key. Over random sequences of two keys' calls
//! on every route that takes a session id (a run started in each dialect, the inbox, the shared
//! state, the session, its fork, its deletion, the lists), on a small set of ids: whatever key
//! B did, each of key A's calls gets the answer it gets from a server B never called, and none
//! of A's messages or runs shows in any of B's answers (nor B's in A's).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use agentwire_brain::ScriptedBrain;
use agentwire_runtime::Agent;
use agentwire_server::{ApiKey, Settings};
use common::TestServer;
use proptest::prelude::*;
use serde_json::{Value, json};

/// The ids both keys name.
const IDS: [&str; 2] = ["ses_shared", "chat-1"];

const KEYS: [&str; 2] = ["key-a", "key-b"];

/// A call on a session (or on the caller's lists).
#[derive(Clone, Copy, Debug)]
enum Call {
    NativeRun,
    AiSdk,
    AgUi,
    AgentScope,
    AgentX,
    Viber,
    A2a,
    Inbox,
    GetState,
    PutState,
    PatchState,
    GetSession,
    ListInbox,
    Fork,
    Delete,
    ListSessions,
    ListRuns,
}

const CALLS: [Call; 17] = [
    Call::NativeRun,
    Call::AiSdk,
    Call::AgUi,
    Call::AgentScope,
    Call::AgentX,
    Call::Viber,
    Call::A2a,
    Call::Inbox,
    Call::GetState,
    Call::PutState,
    Call::PatchState,
    Call::GetSession,
    Call::ListInbox,
    Call::Fork,
    Call::Delete,
    Call::ListSessions,
    Call::ListRuns,
];

/// One step: which key (0 is A), which call, which id.
type Step = (usize, Call, &'static str);

/// What a call answered: the part that must not depend on the other key (`seen`), and the
/// whole body, to look for the other key's data in.
#[derive(Debug)]
struct Answer {
    seen: Value,
    raw: String,
}

/// An agent whose every run says the same, however many runs there are.
fn talker() -> Agent {
    let turn = json!([{"type": "text_delta", "text": "all is well"},
                      {"type": "finish", "reason": "stop"}]);
    let script = json!({"turns": vec![turn; 400]});
    let brain = ScriptedBrain::from_json(&script.to_string()).unwrap();
    Agent::builder("assistant").brain(brain).build().unwrap()
}

async fn server() -> TestServer {
    let settings = Settings {
        api_keys: KEYS.iter().map(|key| ApiKey::from(*key)).collect(),
        ..Settings::default()
    };
    TestServer::start(vec![talker()], settings).await
}

fn user_parts(text: &str) -> Value {
    json!({"role": "user", "parts": [{"type": "text", "text": text}]})
}

/// The request of `call` on session `id`, with `text` as the user's words (the path, the
/// method, the body and its content type).
fn request(call: Call, id: &str, text: &str, n: usize) -> (reqwest::Method, String, Value) {
    use reqwest::Method;
    let post = |path: String, body: Value| (Method::POST, path, body);
    match call {
        Call::NativeRun => post(
            "/v1/runs".into(),
            json!({"input": [user_parts(text)], "session_id": id}),
        ),
        Call::AiSdk => post(
            "/api/chat".into(),
            json!({"id": id, "trigger": "submit-message", "messages": [
                {"id": format!("u{n}"), "role": "user", "parts": [{"type": "text", "text": text}]}]}),
        ),
        Call::AgUi => post(
            "/ag-ui".into(),
            json!({"threadId": id, "runId": format!("r{n}"), "state": {}, "tools": [],
                   "context": [], "forwardedProps": {},
                   "messages": [{"id": format!("m{n}"), "role": "user", "content": text}]}),
        ),
        Call::AgentScope => post(
            "/process".into(),
            json!({"input": [{"role": "user", "type": "message",
                              "content": [{"type": "text", "text": text}]}],
                   "stream": true, "session_id": id}),
        ),
        Call::AgentX => post(
            "/chat".into(),
            json!({"messages": [user_parts(text)], "session_id": id}),
        ),
        Call::Viber => post(
            "/viber/api/chat".into(),
            json!({"spaceId": id, "messages": [user_parts(text)]}),
        ),
        Call::A2a => post(
            "/a2a".into(),
            json!({"jsonrpc": "2.0", "id": n, "method": "SendStreamingMessage", "params": {
                "message": {"messageId": format!("a2a{n}"), "role": "ROLE_USER",
                            "contextId": id, "parts": [{"text": text}]}}}),
        ),
        Call::Inbox => post(
            format!("/v1/sessions/{id}/messages"),
            json!({"message": user_parts(text), "client_message_id": format!("cm{n}")}),
        ),
        Call::GetState => (Method::GET, format!("/v1/sessions/{id}/state"), Value::Null),
        Call::PutState => (
            Method::PUT,
            format!("/v1/sessions/{id}/state"),
            json!({"note": text}),
        ),
        Call::PatchState => (
            Method::PATCH,
            format!("/v1/sessions/{id}/state"),
            json!([{"op": "add", "path": "/patched", "value": text}]),
        ),
        Call::GetSession => (Method::GET, format!("/v1/sessions/{id}"), Value::Null),
        Call::ListInbox => (
            Method::GET,
            format!("/v1/sessions/{id}/messages"),
            Value::Null,
        ),
        Call::Fork => post(format!("/v1/sessions/{id}/fork"), json!({})),
        Call::Delete => (Method::DELETE, format!("/v1/sessions/{id}"), Value::Null),
        Call::ListSessions => (Method::GET, "/v1/sessions?limit=100".into(), Value::Null),
        Call::ListRuns => (
            Method::GET,
            format!("/v1/runs?session_id={id}&limit=100"),
            Value::Null,
        ),
    }
}

/// Makes `call` as `key`, and waits for any run it started to end.
async fn act(server: &TestServer, key: &str, call: Call, id: &str, n: usize) -> Answer {
    let text = format!("from-{key}-{n}");
    let (method, path, body) = request(call, id, &text, n);
    let mut request = server
        .http
        .request(method.clone(), server.url(&path))
        .bearer_auth(key);
    if !body.is_null() {
        let content_type = match call {
            Call::PatchState => "application/json-patch+json",
            _ => "application/json",
        };
        request = request
            .header("content-type", content_type)
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    // A stream is read to its end: the run has ended.
    let raw = response.text().await.unwrap();
    let json: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
    if let (Call::Inbox, Some(run)) = (call, json["run_id"].as_str()) {
        let events = format!("/v1/runs/{run}/events");
        let events = server.http.get(server.url(&events)).bearer_auth(key);
        events.send().await.unwrap().text().await.unwrap();
    }
    Answer {
        seen: seen(call, status, &json, &raw),
        raw,
    }
}

/// The part of an answer that must not depend on what another key did: what the call did
/// (status and error code), and what it shows of the caller's sessions, without the ids and
/// times the server mints.
fn seen(call: Call, status: u16, json: &Value, raw: &str) -> Value {
    let error = json["error"]["code"].clone();
    let texts = |messages: &Value| -> Vec<String> {
        let messages = messages.as_array().cloned().unwrap_or_default();
        messages
            .iter()
            .map(|message| {
                message["parts"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned()
            })
            .collect()
    };
    let detail = match call {
        Call::NativeRun => json["run"]["status"].clone(),
        Call::AiSdk | Call::AgUi | Call::AgentScope | Call::AgentX | Call::Viber | Call::A2a => {
            json!({"answered": raw.contains("all is well"),
                   "refused": raw.contains("NOT_FOUND") || raw.contains("\"error\"")})
        }
        Call::Inbox => json!([json["outcome"], json["reason"]]),
        Call::GetState | Call::PutState | Call::PatchState => json.clone(),
        Call::GetSession => json!({"messages": texts(&json["messages"]), "state": json["state"]}),
        Call::ListInbox => json!(
            json["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|entry| json!([entry["client_message_id"], entry["outcome"]]))
                .collect::<Vec<_>>()
        ),
        Call::Fork => json!(texts(&json["messages"])),
        Call::Delete => Value::Null,
        Call::ListSessions => {
            // Forks get minted ids: counted, not named.
            let ids: Vec<&str> = json["sessions"]
                .as_array()
                .map(|sessions| sessions.iter().filter_map(|s| s["id"].as_str()).collect())
                .unwrap_or_default();
            let named: BTreeSet<&str> = ids.iter().copied().filter(|id| IDS.contains(id)).collect();
            json!({"named": named, "all": ids.len()})
        }
        Call::ListRuns => json!(json["runs"].as_array().map_or(0, Vec::len)),
    };
    json!({"status": status, "error": error, "detail": detail})
}

/// The run ids an answer names (`run_` and 32 hex digits, as the server mints them).
fn run_ids(raw: &str) -> BTreeSet<String> {
    raw.match_indices("run_")
        .filter_map(|(at, _)| {
            let id = raw.get(at..at + 36)?;
            id[4..]
                .bytes()
                .all(|byte| byte.is_ascii_hexdigit())
                .then(|| id.to_owned())
        })
        .collect()
}

async fn check(steps: Vec<Step>) {
    let (both, alone) = (server().await, server().await);
    let (mut a_with_b, mut a_alone, mut b_answers) = (Vec::new(), Vec::new(), Vec::new());
    for (n, (key, call, id)) in steps.iter().copied().enumerate() {
        let answer = act(&both, KEYS[key], call, id, n).await;
        match key {
            0 => {
                a_with_b.push((call, id, answer));
                a_alone.push(act(&alone, KEYS[0], call, id, n).await);
            }
            _ => b_answers.push(answer),
        }
    }
    let a_runs: BTreeSet<String> = a_with_b
        .iter()
        .flat_map(|(.., a)| run_ids(&a.raw))
        .collect();
    for ((call, id, with_b), alone) in a_with_b.iter().zip(&a_alone) {
        assert_eq!(with_b.seen, alone.seen, "A's {call:?} on {id} in {steps:?}");
        assert!(
            !with_b.raw.contains("from-key-b"),
            "{call:?}: {}",
            with_b.raw
        );
    }
    for answer in &b_answers {
        assert!(
            !answer.raw.contains("from-key-a"),
            "B saw A's: {}",
            answer.raw
        );
        if let Some(run) = run_ids(&answer.raw).intersection(&a_runs).next() {
            let (call, ..) = a_with_b
                .iter()
                .find(|(.., a)| a.raw.contains(run.as_str()))
                .unwrap();
            panic!("A's {call:?} and B both name {run}: {}", answer.raw);
        }
    }
    both.shutdown().await;
    alone.shutdown().await;
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step = (0..2usize, 0..CALLS.len(), 0..IDS.len())
        .prop_map(|(key, call, id)| (key, CALLS[call], IDS[id]));
    prop::collection::vec(step, 1..14)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 12,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn another_keys_calls_never_change_what_a_key_gets(steps in steps()) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(check(steps));
    }
}

/// The case the property first found on a server that keyed sessions by id alone, spelled
/// out: B names an id first on every route (and keeps its session), and A then works in it as
/// in a fresh one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naming_an_id_first_blocks_nobody() {
    let by_b = CALLS.iter().filter(|call| !matches!(call, Call::Delete));
    let mut steps: Vec<Step> = by_b.map(|call| (1, *call, IDS[0])).collect();
    steps.extend(CALLS.iter().map(|call| (0, *call, IDS[0])));
    check(steps).await;
}
