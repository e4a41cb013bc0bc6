//! Keep-alives: every streaming transport sends one in its dialect's form while a run is quiet
//! (a model that pauses between words here), and the stream still decodes to the whole run.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agentwire_core::{Accumulator, EventKind, RunStatus};
use agentwire_dialects::Dialect;
use agentwire_server::{ConfigFile, Settings};
use common::{TestServer, run_body, talker};
use serde_json::{Value, json};

/// A server whose streams get a keep-alive after 100 ms of quiet, and an agent that waits
/// 400 ms between its words.
async fn server() -> TestServer {
    let settings = Settings {
        heartbeat: Duration::from_millis(100),
        ..Settings::default()
    };
    TestServer::start(vec![talker("slow", &["Hello ", "there"], 2.5)], settings).await
}

/// POSTs `body` to `path`: the raw stream.
async fn post(server: &TestServer, path: &str, body: &Value) -> String {
    let response = server
        .http
        .post(server.url(path))
        .header("accept", "text/event-stream")
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response.text().await.unwrap()
}

/// The stream decodes, keep-alives and all, to the completed run.
fn decodes(dialect: Dialect, wire: &str) {
    let mut decoder = dialect.decoder();
    let mut events = Vec::new();
    decoder.decode(wire.as_bytes(), &mut events).unwrap();
    decoder.finish(&mut events).unwrap();
    let mut accumulator = Accumulator::default();
    for event in &events {
        accumulator.push(event).unwrap();
    }
    assert_eq!(
        accumulator.status(),
        Some(RunStatus::Completed),
        "{}",
        dialect.name()
    );
    assert_eq!(
        accumulator.messages().last().unwrap().content(),
        "Hello there",
        "{}",
        dialect.name()
    );
}

/// How many lines of `wire` are exactly `line`.
fn count(wire: &str, line: &str) -> usize {
    wire.lines().filter(|candidate| *candidate == line).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sse_dialect_keeps_a_quiet_stream_alive_in_its_own_form() {
    let server = server().await;

    let wire = post(&server, "/v1/runs", &run_body(Some("slow"), "hi")).await;
    assert!(count(&wire, "event: heartbeat") >= 2, "native: {wire}");
    decodes(Dialect::Native, &wire);

    let body = json!({"id": "chat_hb", "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]});
    let wire = post(&server, "/api/chat", &body).await;
    assert!(count(&wire, ": keep-alive") >= 2, "ai-sdk: {wire}");
    decodes(Dialect::AiSdk, &wire);

    let body = json!({"threadId": "t_hb", "runId": "r_hb", "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "messages": [{"id": "m1", "role": "user", "content": "hi"}]});
    let wire = post(&server, "/ag-ui", &body).await;
    assert!(count(&wire, ": keepalive") >= 2, "ag-ui: {wire}");
    decodes(Dialect::AgUi, &wire);

    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
    let wire = post(&server, "/a2a", &body).await;
    assert!(count(&wire, ": heartbeat") >= 2, "a2a: {wire}");
    decodes(Dialect::A2a, &wire);

    let body = json!({"role": "user", "parts": [{"type": "text", "text": "hi"}]});
    let wire = post(&server, "/chat", &body).await;
    assert!(count(&wire, ": heartbeat") >= 2, "agentx: {wire}");
    decodes(Dialect::Agentx, &wire);

    // AgentScope: messages of its own `heartbeat` type, numbered in the gapless sequence.
    let body = json!({"stream": true, "input": [{"role": "user", "type": "message",
        "content": [{"type": "text", "text": "hi"}]}]});
    let wire = post(&server, "/process", &body).await;
    let objects: Vec<Value> = wire
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    let heartbeats: Vec<&Value> = objects
        .iter()
        .filter(|object| object["type"] == "heartbeat")
        .collect();
    assert!(heartbeats.len() >= 2, "agentscope: {wire}");
    for heartbeat in &heartbeats {
        assert_eq!(heartbeat["object"], "message");
        assert_eq!(heartbeat["status"], "in_progress");
    }
    let seqs: Vec<u64> = objects
        .iter()
        .map(|object| object["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..objects.len() as u64).collect::<Vec<_>>());
    decodes(Dialect::AgentScope, &wire);
    let last = objects.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert!(
        last["output"]
            .as_array()
            .unwrap()
            .iter()
            .all(|message| message["type"] != "heartbeat"),
        "keep-alives are not output"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_run_gets_no_keep_alive() {
    let settings = Settings {
        heartbeat: Duration::from_secs(5),
        ..Settings::default()
    };
    let server = TestServer::start(vec![talker("fast", &["Hi"], 0.0)], settings).await;
    let wire = post(&server, "/v1/runs", &run_body(None, "hi")).await;
    assert_eq!(count(&wire, "event: heartbeat"), 0, "{wire}");
    let events = {
        let mut decoder = Dialect::Native.decoder();
        let mut events = Vec::new();
        decoder.decode(wire.as_bytes(), &mut events).unwrap();
        events
    };
    assert!(
        !events
            .iter()
            .any(|event| matches!(event.kind, EventKind::Heartbeat {}))
    );
    server.shutdown().await;
}

#[test]
fn the_interval_is_heartbeat_seconds_in_the_server_table() {
    let read = |server: &str| ConfigFile::from_toml(&format!("[server]\n{server}"));
    let settings = read("heartbeat_seconds = 3")
        .unwrap()
        .server
        .settings(|_| None)
        .unwrap();
    assert_eq!(settings.heartbeat, Duration::from_secs(3));
    let defaults = read("").unwrap().server.settings(|_| None).unwrap();
    assert_eq!(defaults.heartbeat, Duration::from_secs(15));
    let error = read("heartbeat_seconds = 0").unwrap_err().to_string();
    assert!(error.contains("nonzero"), "{error}");
}
