//! The WebSocket transport over a real server on port 0 with a real WebSocket client
//! (tokio-tungstenite): whole runs, resuming, input, cancel, bad frames, auth, disconnects.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agentwire_core::{Accumulator, Event, EventKind, Part, RunStatus};
use agentwire_server::Settings;
use common::{TestServer, approver, run_body, talker, text_of};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

const WORDS: &[&str] = &["Hello", ",", " world", "!", " How", " are", " you", "?"];

async fn server(api_keys: Vec<String>) -> TestServer {
    TestServer::start(
        vec![
            talker("assistant", WORDS, 0.0),
            talker("slow", WORDS, 40.0),
            talker("snail", WORDS, 4.0),
            approver(),
        ],
        Settings {
            heartbeat: Duration::from_millis(100),
            api_keys: api_keys.into_iter().map(Into::into).collect(),
            ..Settings::default()
        },
    )
    .await
}

/// How a client presents its key.
enum Key<'a> {
    None,
    Header(&'a str),
    Protocol(&'a str),
}

struct WsClient {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// The subprotocol the server picked.
    protocol: Option<String>,
    pings: usize,
}

impl WsClient {
    async fn connect(server: &TestServer, key: Key<'_>) -> Result<Self, tungstenite::Error> {
        let url = format!("{}/v1/ws", server.url.replace("http://", "ws://"));
        let mut request = url.into_client_request().unwrap();
        let headers = request.headers_mut();
        match key {
            Key::None => {}
            Key::Header(key) => {
                let value = HeaderValue::from_str(&format!("Bearer {key}")).unwrap();
                headers.insert("authorization", value);
            }
            Key::Protocol(key) => {
                let value = HeaderValue::from_str(&format!("agentwire, agentwire.bearer.{key}"));
                headers.insert("sec-websocket-protocol", value.unwrap());
            }
        }
        let (socket, response) = tokio_tungstenite::connect_async(request).await?;
        let protocol = response
            .headers()
            .get("sec-websocket-protocol")
            .map(|value| value.to_str().unwrap().to_owned());
        Ok(Self {
            socket,
            protocol,
            pings: 0,
        })
    }

    async fn send(&mut self, frame: Value) {
        self.socket
            .send(Message::text(frame.to_string()))
            .await
            .unwrap();
    }

    /// The next JSON frame (pings counted and skipped).
    async fn recv(&mut self) -> Value {
        loop {
            let message = tokio::time::timeout(Duration::from_secs(10), self.socket.next())
                .await
                .expect("a frame within 10 s")
                .expect("the connection stays open")
                .unwrap();
            match message {
                Message::Text(text) => return serde_json::from_str(&text).unwrap(),
                Message::Ping(_) => self.pings += 1,
                other => panic!("unexpected frame {other:?}"),
            }
        }
    }

    /// Sends a request and returns its answer (events that arrive before it are kept in
    /// `events`).
    async fn ask(&mut self, frame: Value, events: &mut Vec<Value>) -> Value {
        let id = frame["id"].clone();
        self.send(frame).await;
        loop {
            let frame = self.recv().await;
            if frame["type"] == "event" || frame["type"] == "end" {
                events.push(frame);
            } else {
                assert_eq!(frame["id"], id, "{frame}");
                return frame;
            }
        }
    }

    /// Reads `run_id`'s events until its subscription ends.
    async fn events_until_end(&mut self, run_id: &str, events: &mut Vec<Value>) {
        while !events
            .iter()
            .any(|frame| frame["type"] == "end" && frame["run_id"] == run_id)
        {
            let frame = self.recv().await;
            assert!(
                matches!(frame["type"].as_str(), Some("event" | "end")),
                "{frame}"
            );
            events.push(frame);
        }
    }
}

/// The native events among the frames of `run_id`, heartbeats left out.
fn native_events(frames: &[Value], run_id: &str) -> Vec<Event> {
    frames
        .iter()
        .filter(|frame| frame["type"] == "event" && frame["run_id"] == run_id)
        .map(|frame| serde_json::from_value::<Event>(frame["data"].clone()).unwrap())
        .filter(|event| event.name() != "heartbeat")
        .collect()
}

fn start(id: u64, agent: &str, text: &str) -> Value {
    let mut frame = run_body(Some(agent), text);
    frame["type"] = json!("start");
    frame["id"] = json!(id);
    frame
}

fn accumulate(events: &[Event]) -> Accumulator {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator.push(event).unwrap();
    }
    accumulator
}

async fn sse_replay(server: &TestServer, run_id: &str, after: u64) -> Vec<Event> {
    server
        .events_after(run_id, after)
        .await
        .events
        .into_iter()
        .filter(|event| event.name() != "heartbeat")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_run_over_ws_equals_its_sse_stream() {
    let server = server(vec![]).await;
    let mut ws = WsClient::connect(&server, Key::None).await.unwrap();
    let mut frames = Vec::new();
    let started = ws.ask(start(1, "assistant", "hi"), &mut frames).await;
    assert_eq!(started["type"], "started", "{started}");
    assert_eq!(started["run"]["agent"], "assistant");
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    assert_eq!(started["run"]["id"], run_id.as_str());
    ws.events_until_end(&run_id, &mut frames).await;

    let events = native_events(&frames, &run_id);
    let accumulator = accumulate(&events);
    assert_eq!(accumulator.status(), Some(RunStatus::Completed));
    assert_eq!(accumulator.messages()[0].content(), WORDS.concat());
    let seqs: Vec<u64> = events.iter().map(|event| event.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    // The `end` frame is the last one.
    assert_eq!(frames.last().unwrap()["type"], "end");
    assert_eq!(sse_replay(&server, &run_id, 0).await, events);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribe_resumes_after_a_point_mid_run() {
    let server = server(vec![]).await;
    let mut first = WsClient::connect(&server, Key::None).await.unwrap();
    let mut whole = Vec::new();
    let started = first.ask(start(1, "slow", "hi"), &mut whole).await;
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    while native_events(&whole, &run_id).len() < 5 {
        whole.push(first.recv().await);
    }
    let cut = native_events(&whole, &run_id)[4].seq;

    // A second connection that had stopped at `cut` picks up mid-run.
    let mut second = WsClient::connect(&server, Key::None).await.unwrap();
    let mut rest = Vec::new();
    let subscribed = second
        .ask(
            json!({"type": "subscribe", "id": "s", "run_id": run_id, "after": cut}),
            &mut rest,
        )
        .await;
    assert_eq!(subscribed["type"], "subscribed", "{subscribed}");
    second.events_until_end(&run_id, &mut rest).await;
    first.events_until_end(&run_id, &mut whole).await;

    let whole = native_events(&whole, &run_id);
    let rest = native_events(&rest, &run_id);
    let expected: Vec<Event> = whole.iter().filter(|e| e.seq > cut).cloned().collect();
    assert!(!rest.is_empty());
    assert_eq!(rest, expected);
    assert_eq!(accumulate(&whole).status(), Some(RunStatus::Completed));

    // After the run ended, a subscription replays it from the store's log or memory and ends.
    let mut replay = Vec::new();
    second
        .ask(
            json!({"type": "subscribe", "id": "again", "run_id": run_id}),
            &mut replay,
        )
        .await;
    second.events_until_end(&run_id, &mut replay).await;
    assert_eq!(native_events(&replay, &run_id), whole);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_over_ws_answers_an_approval_and_the_subscription_follows_on() {
    let server = server(vec![]).await;
    let mut ws = WsClient::connect(&server, Key::None).await.unwrap();
    let mut frames = Vec::new();
    let started = ws
        .ask(start(1, "approver", "remove a.txt"), &mut frames)
        .await;
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    let awaiting = |frames: &[Value]| {
        native_events(frames, &run_id).iter().any(|event| {
            matches!(
                &event.kind,
                EventKind::RunStatus {
                    status: RunStatus::Awaiting(_),
                    ..
                }
            )
        })
    };
    while !awaiting(&frames) {
        frames.push(ws.recv().await);
    }
    let approval_id = native_events(&frames, &run_id)
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::PartComplete {
                part: Part::ApprovalRequest(request),
                ..
            } => Some(request.approval_id.to_string()),
            _ => None,
        })
        .unwrap();

    // Input the run does not take in its state: refused, nothing changes, the connection goes on.
    let refused = ws
        .ask(
            json!({"type": "input", "id": 2, "run_id": run_id,
                   "message": {"role": "user", "parts": [{"type": "text", "text": "hm"}]}}),
            &mut frames,
        )
        .await;
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(refused["request"], "input");
    assert_eq!(refused["status"], 409);
    assert_eq!(refused["error"]["code"], "input_refused");
    let unknown = ws
        .ask(
            json!({"type": "input", "id": 3, "run_id": run_id,
                   "message": {"role": "user", "parts": [{"type": "approval_response", "approval_id": "nope", "approved": true}]}}),
            &mut frames,
        )
        .await;
    assert_eq!(unknown["error"]["code"], "unknown_approval");

    let accepted = ws
        .ask(
            json!({"type": "input", "id": 4, "run_id": run_id,
                   "message": {"role": "user", "parts": [{"type": "approval_response", "approval_id": approval_id, "approved": true}]}}),
            &mut frames,
        )
        .await;
    assert_eq!(accepted["type"], "accepted", "{accepted}");
    assert_eq!(accepted["run_id"], run_id.as_str());
    // The same subscription carries the rest of the run.
    ws.events_until_end(&run_id, &mut frames).await;
    let events = native_events(&frames, &run_id);
    assert!(matches!(
        &events.last().unwrap().kind,
        EventKind::RunStatus {
            status: RunStatus::Completed,
            ..
        }
    ));
    assert_eq!(sse_replay(&server, &run_id, 0).await, events);
    let text = serde_json::to_string(&accumulate(&events).messages()).unwrap();
    assert!(text.contains("removed a.txt"), "{text}");

    // A finished run takes no input.
    let finished = ws
        .ask(
            json!({"type": "input", "id": 5, "run_id": run_id,
                   "message": {"role": "user", "parts": [{"type": "text", "text": "more"}]}}),
            &mut frames,
        )
        .await;
    assert_eq!(finished["error"]["code"], "run_finished", "{finished}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_over_ws_ends_the_run_and_quiet_connections_get_heartbeats() {
    let server = server(vec![]).await;
    let mut ws = WsClient::connect(&server, Key::None).await.unwrap();
    let mut frames = Vec::new();
    let started = ws.ask(start(1, "snail", "hi"), &mut frames).await;
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    while !frames
        .iter()
        .any(|frame| frame["data"]["event"] == "heartbeat")
    {
        frames.push(ws.recv().await);
    }
    let canceled = ws
        .ask(
            json!({"type": "cancel", "id": 2, "run_id": run_id}),
            &mut frames,
        )
        .await;
    assert_eq!(canceled["type"], "accepted", "{canceled}");
    ws.events_until_end(&run_id, &mut frames).await;
    assert_eq!(
        accumulate(&native_events(&frames, &run_id)).status(),
        Some(RunStatus::Canceled)
    );

    // With nothing subscribed, the server still pings.
    let pings = ws.pings;
    let read = tokio::time::timeout(Duration::from_millis(500), ws.recv()).await;
    assert!(read.is_err(), "no frame but pings: {read:?}");
    assert!(ws.pings > pings);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_frames_get_errors_and_the_connection_stays_usable() {
    let server = server(vec![]).await;
    let mut ws = WsClient::connect(&server, Key::None).await.unwrap();
    let mut frames = Vec::new();

    ws.socket.send(Message::text("{not json")).await.unwrap();
    let error = ws.recv().await;
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["code"], "invalid_json");
    assert_eq!(error["id"], Value::Null);
    ws.socket
        .send(Message::binary(b"{}".to_vec()))
        .await
        .unwrap();
    assert_eq!(ws.recv().await["error"]["code"], "invalid_frame");

    let cases = [
        (json!({"id": 1}), "invalid_request", 400),
        (json!({"type": "frobnicate", "id": 2}), "unknown_type", 400),
        (
            json!({"type": "subscribe", "id": 3}),
            "invalid_request",
            400,
        ),
        (
            json!({"type": "subscribe", "id": 4, "run_id": "run_nope"}),
            "not_found",
            404,
        ),
        (
            json!({"type": "input", "id": 5, "run_id": "run_nope", "message": {"role": "user", "parts": []}}),
            "not_found",
            404,
        ),
        (
            json!({"type": "cancel", "id": 6, "run_id": "run_nope"}),
            "not_found",
            404,
        ),
        (start(7, "nobody", "hi"), "unknown_agent", 404),
        (
            json!({"type": "start", "id": 8, "input": []}),
            "no_input",
            400,
        ),
    ];
    for (frame, code, status) in cases {
        let answer = ws.ask(frame.clone(), &mut frames).await;
        assert_eq!(answer["type"], "error", "{frame} → {answer}");
        assert_eq!(answer["error"]["code"], code, "{frame} → {answer}");
        assert_eq!(answer["status"], status, "{frame} → {answer}");
        assert_eq!(answer["request"], frame["type"], "{frame} → {answer}");
    }
    assert!(frames.is_empty(), "no run was started: {frames:?}");

    // Still usable.
    let started = ws.ask(start(9, "assistant", "hi"), &mut frames).await;
    assert_eq!(started["type"], "started");
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    ws.events_until_end(&run_id, &mut frames).await;

    // A plain GET is not an upgrade: the API's error shape.
    let plain = server.http.get(server.url("/v1/ws")).send().await.unwrap();
    assert_eq!(plain.status(), 426);
    let error: Value = plain.json().await.unwrap();
    assert_eq!(error["error"]["code"], "websocket_required");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_by_header_or_subprotocol_and_a_key_sees_only_its_runs() {
    let server = server(vec!["key-a".into(), "key-b".into()]).await;
    for key in [Key::None, Key::Header("key-c"), Key::Protocol("key-c")] {
        match WsClient::connect(&server, key).await {
            Err(tungstenite::Error::Http(response)) => {
                assert_eq!(response.status(), 401);
                let body: Value =
                    serde_json::from_slice(response.body().as_ref().unwrap()).unwrap();
                assert_eq!(body["error"]["code"], "unauthorized");
            }
            Err(other) => panic!("refused with {other}"),
            Ok(_) => panic!("connected without a valid key"),
        }
    }

    let mut a = WsClient::connect(&server, Key::Header("key-a"))
        .await
        .unwrap();
    let mut frames = Vec::new();
    let started = a
        .ask(start(1, "approver", "remove a.txt"), &mut frames)
        .await;
    let run_id = started["run_id"].as_str().unwrap().to_owned();

    // A browser's way: the key as a subprotocol entry; the server picks `agentwire`.
    let mut b = WsClient::connect(&server, Key::Protocol("key-b"))
        .await
        .unwrap();
    assert_eq!(b.protocol.as_deref(), Some("agentwire"));
    let mut seen = Vec::new();
    for frame in [
        json!({"type": "subscribe", "id": 1, "run_id": run_id}),
        json!({"type": "cancel", "id": 2, "run_id": run_id}),
        json!({"type": "input", "id": 3, "run_id": run_id, "message": {"role": "user", "parts": [{"type": "text", "text": "x"}]}}),
    ] {
        let answer = b.ask(frame, &mut seen).await;
        assert_eq!(answer["error"]["code"], "not_found", "{answer}");
    }
    assert!(seen.is_empty());

    // Key a, by subprotocol too, sees its run.
    let mut a2 = WsClient::connect(&server, Key::Protocol("key-a"))
        .await
        .unwrap();
    let mut replay = Vec::new();
    let subscribed = a2
        .ask(
            json!({"type": "subscribe", "id": 1, "run_id": run_id}),
            &mut replay,
        )
        .await;
    assert_eq!(subscribed["type"], "subscribed", "{subscribed}");
    while native_events(&replay, &run_id).is_empty() {
        replay.push(a2.recv().await);
    }
    assert_eq!(native_events(&replay, &run_id)[0].seq, 1);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_does_not_kill_its_run() {
    let server = server(vec![]).await;
    let mut ws = WsClient::connect(&server, Key::None).await.unwrap();
    let mut frames = Vec::new();
    let started = ws.ask(start(1, "slow", "hi"), &mut frames).await;
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    while native_events(&frames, &run_id).len() < 3 {
        frames.push(ws.recv().await);
    }
    drop(ws);
    let run = server.completed_run(&run_id).await;
    assert_eq!(text_of(&run["output"][0]), WORDS.concat());
    server.shutdown().await;
}
