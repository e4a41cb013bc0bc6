//! The native protocol over a WebSocket: `GET /v1/ws` upgrades, and one connection
//! carries any number of runs. Every frame is a JSON text message with a `type`.
//!
//! The client sends requests that mirror the HTTP API, each with an optional `id` of its
//! choosing that the answer repeats:
//!
//! ```json
//! {"type": "start", "id": 1, "agent": "assistant", "input": [{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}]}
//! {"type": "subscribe", "id": 2, "run_id": "run_…", "after": 12}
//! {"type": "unsubscribe", "id": 3, "run_id": "run_…"}
//! {"type": "input", "id": 4, "run_id": "run_…", "message": {"role": "user", "parts": [{"type": "approval_response", "approval_id": "apr_1", "approved": true}]}}
//! {"type": "cancel", "id": 5, "run_id": "run_…"}
//! ```
//!
//! `start` takes the body of `POST /v1/runs` (`tools` included) and subscribes the connection to
//! the new run from its first event (with `"background": true` it only starts it); `subscribe` replays a run's events after `after` (default 0)
//! and follows it live (no gap, no duplicate: the HTTP streams' reader); `input` and `cancel` do
//! what `POST /v1/runs/{id}/input` and `/cancel` do, through the same functions. The server
//! answers each request with `{"type": "started" | "subscribed" | "unsubscribed" | "accepted",
//! "id", "run_id", "run"?}`, or with the API's error and the status HTTP would have given:
//! `{"type": "error", "id", "request": "input", "status": 409, "error": {"code", "message"}}`.
//! A bad frame (not JSON, no or unknown `type`, unknown run, input the run does not take) changes
//! nothing and the connection stays open. A binary frame is `invalid_frame`; a frame larger than
//! `max_body_bytes` ends the connection (the WebSocket library refuses it before it is read).
//!
//! Events come as `{"type": "event", "run_id", "data": {…}}`, one message each, `data` being
//! exactly the JSON of the SSE stream's `data:` lines (heartbeats included, every
//! `heartbeat` of quiet). A subscription follows its run through `awaiting` (answer it with
//! `input` and the events go on) and ends with `{"type": "end", "run_id"}` once the run has
//! ended. Subscribing again to a run replaces the connection's earlier subscription to it.
//!
//! Auth: the API's bearer keys, in the `Authorization` header, or, for browsers (which cannot
//! set headers on a WebSocket), as a subprotocol entry `agentwire.bearer.<key>` offered beside
//! `agentwire`: `new WebSocket(url, ["agentwire", "agentwire.bearer." + key])`. The server picks
//! `agentwire` and never echoes the key; unlike a query string, the header stays out of access
//! logs. (A key used this way must be made of token characters: letters, digits, `-._~` …)
//!
//! Backpressure: a subscription reads its run's log only once its last batch has been queued,
//! and the queue to the socket is short, so a slow client makes the server hold at most one
//! batch per subscription; nothing is dropped (the event log is the buffer). A client that goes
//! away stops its subscriptions; its runs go on. The server pings every `heartbeat`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agentwire_core::Message;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message as Frame, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use opentelemetry::context::FutureExt as _;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

use crate::caller::Caller;
use crate::error::ApiError;
use crate::native::{self, CreateRun, parse};
use crate::runs::{Reader, RunView, Until};
use crate::state::AppState;

/// The subprotocol of this transport.
const PROTOCOL: &str = "agentwire";

/// The subprotocol entry carrying a key: `agentwire.bearer.<key>`.
const BEARER_PROTOCOL: &str = "agentwire.bearer.";

/// Frames queued for the socket: a short queue, so a slow client holds its subscriptions back.
const OUTBOX: usize = 64;

/// `GET /v1/ws`: authenticates, then upgrades to the WebSocket transport.
pub(crate) async fn upgrade(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let owner = caller(&state, &headers)?;
    let upgrade = upgrade.map_err(|rejection| {
        ApiError::new(
            StatusCode::UPGRADE_REQUIRED,
            "websocket_required",
            format!("this endpoint takes a WebSocket upgrade: {rejection}"),
        )
    })?;
    let limit = state.settings.max_body_bytes;
    let parent = crate::traceparent::incoming();
    Ok(upgrade
        .protocols([PROTOCOL])
        .max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| async move {
            // The socket is served on a task of its own: the runs it starts join the trace the
            // handshake named, as an HTTP request's do.
            match parent {
                Some(parent) => serve(state, owner, socket).with_context(parent).await,
                None => serve(state, owner, socket).await,
            }
        }))
}

/// The caller's key: the `Authorization` header, else an `agentwire.bearer.<key>` subprotocol.
fn caller(state: &AppState, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let authorization = headers.get(header::AUTHORIZATION);
    if authorization.is_some() || state.keys.is_empty() {
        return state.keys.authenticate(authorization);
    }
    let key = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .find_map(|protocol| protocol.trim().strip_prefix(BEARER_PROTOCOL));
    match key.and_then(|key| state.keys.find(key)) {
        Some(caller) => Ok(caller),
        None => state.keys.authenticate(None),
    }
}

async fn serve(state: Arc<AppState>, owner: Caller, socket: WebSocket) {
    let heartbeat = state.settings.heartbeat;
    let (sink, incoming) = socket.split();
    let (outbox, queued) = mpsc::channel(OUTBOX);
    let connection = Connection {
        state,
        owner,
        outbox,
        subscriptions: JoinSet::new(),
        active: HashMap::new(),
    };
    // Either half ending ends the connection; dropping it aborts its subscriptions.
    tokio::select! {
        () = write(sink, queued, heartbeat) => {}
        () = connection.read(incoming) => {}
    }
}

/// Sends the queued frames, as many as are ready per flush, and a ping after each quiet
/// `heartbeat`.
async fn write(
    mut sink: SplitSink<WebSocket, Frame>,
    mut queued: mpsc::Receiver<Frame>,
    heartbeat: Duration,
) {
    let mut ping = tokio::time::interval(heartbeat);
    ping.reset();
    loop {
        let frame = tokio::select! {
            frame = queued.recv() => match frame {
                Some(frame) => frame,
                None => return,
            },
            _ = ping.tick() => Frame::Ping(Bytes::new()),
        };
        if sink.feed(frame).await.is_err() {
            return;
        }
        while let Ok(frame) = queued.try_recv() {
            if sink.feed(frame).await.is_err() {
                return;
            }
        }
        if sink.flush().await.is_err() {
            return;
        }
        ping.reset();
    }
}

/// One client's connection: who it is, the queue to its socket, and its subscriptions.
struct Connection {
    state: Arc<AppState>,
    owner: Caller,
    outbox: mpsc::Sender<Frame>,
    /// The subscriptions' tasks.
    subscriptions: JoinSet<()>,
    /// The current subscription of each run.
    active: HashMap<String, AbortHandle>,
}

/// What every request frame has.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Value,
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// `subscribe`.
#[derive(Deserialize)]
struct Subscribe {
    run_id: String,
    #[serde(default)]
    after: u64,
}

/// `unsubscribe` and `cancel`.
#[derive(Deserialize)]
struct RunRef {
    run_id: String,
}

/// `input`.
#[derive(Deserialize)]
struct Input {
    run_id: String,
    message: Message,
}

impl Connection {
    async fn read(mut self, mut incoming: SplitStream<WebSocket>) {
        loop {
            tokio::select! {
                frame = incoming.next() => match frame {
                    Some(Ok(Frame::Text(text))) => self.request(text.as_bytes()).await,
                    Some(Ok(Frame::Binary(_))) => {
                        let error = ApiError::new(
                            StatusCode::BAD_REQUEST,
                            "invalid_frame",
                            "frames are JSON text messages",
                        );
                        self.send(error_frame(&Value::Null, None, &error)).await;
                    }
                    // Pings are answered by the WebSocket library.
                    Some(Ok(Frame::Ping(_) | Frame::Pong(_))) => {}
                    Some(Ok(Frame::Close(_)) | Err(_)) | None => return,
                },
                Some(ended) = self.subscriptions.join_next_with_id() => {
                    let id = match &ended {
                        Ok((id, ())) => *id,
                        Err(error) => error.id(),
                    };
                    self.active.retain(|_, handle| handle.id() != id);
                }
            }
        }
    }

    /// Handles one request frame and answers it.
    async fn request(&mut self, bytes: &[u8]) {
        let envelope: Envelope = match parse(bytes) {
            Ok(envelope) => envelope,
            Err(error) => return self.send(error_frame(&Value::Null, None, &error)).await,
        };
        let kind = envelope.kind.as_deref();
        let answer = match kind {
            Some("start") => self.start(bytes).await,
            Some("subscribe") => self.subscribe(bytes).await,
            Some("unsubscribe") => parse(bytes).map(|RunRef { run_id }| {
                if let Some(handle) = self.active.remove(&run_id) {
                    handle.abort();
                }
                Answer::new(json!({"type": "unsubscribed", "run_id": run_id}))
            }),
            Some("input") => self.input(bytes).await,
            Some("cancel") => self.cancel(bytes).await,
            Some(other) => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "unknown_type",
                format!(
                    "unknown frame type '{other}'; one of start, subscribe, unsubscribe, input, cancel"
                ),
            )),
            None => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "a frame is a JSON object with a `type`",
            )),
        };
        match answer {
            Ok(Answer { mut frame, follow }) => {
                frame["id"] = envelope.id;
                self.send(frame).await;
                // Followed once the answer is queued, so the answer comes before the events.
                if let Some((run_id, reader)) = follow {
                    self.follow(run_id, reader);
                }
            }
            Err(error) => self.send(error_frame(&envelope.id, kind, &error)).await,
        }
    }

    async fn start(&mut self, bytes: &[u8]) -> Result<Answer, ApiError> {
        let body: CreateRun = parse(bytes)?;
        let background = body.background();
        let live = native::start_run(&self.state, &self.owner, body)
            .await?
            .live;
        let run_id = live.handle.id().to_string();
        let frame = json!({"type": "started", "run_id": run_id, "run": RunView::live(&live)});
        // A background run is only started: the connection subscribes to it if it wants.
        if background {
            return Ok(Answer {
                frame,
                follow: None,
            });
        }
        let reader = self.state.runs.follow_live(live, 0, Until::Ended, false);
        Ok(Answer {
            frame,
            follow: Some((run_id, reader)),
        })
    }

    async fn subscribe(&mut self, bytes: &[u8]) -> Result<Answer, ApiError> {
        let Subscribe { run_id, after } = parse(bytes)?;
        let reader = self
            .state
            .runs
            .follow(&run_id, &self.owner, after, Until::Ended)
            .await?;
        Ok(Answer {
            frame: json!({"type": "subscribed", "run_id": run_id, "after": after}),
            follow: Some((run_id, reader)),
        })
    }

    async fn input(&mut self, bytes: &[u8]) -> Result<Answer, ApiError> {
        let Input { run_id, message } = parse(bytes)?;
        let run = self.state.runs.give(&run_id, &self.owner, message).await?;
        Ok(Answer::new(
            json!({"type": "accepted", "run_id": run_id, "run": run}),
        ))
    }

    async fn cancel(&mut self, bytes: &[u8]) -> Result<Answer, ApiError> {
        let RunRef { run_id } = parse(bytes)?;
        let run = self.state.runs.cancel(&run_id, &self.owner).await?;
        Ok(Answer::new(
            json!({"type": "accepted", "run_id": run_id, "run": run}),
        ))
    }

    /// Subscribes the connection to `run_id`'s events from `reader`, in place of any earlier
    /// subscription to it.
    fn follow(&mut self, run_id: String, reader: Reader) {
        let task = forward(reader, run_id.clone(), self.outbox.clone());
        let handle = self.subscriptions.spawn(task);
        if let Some(earlier) = self.active.insert(run_id, handle) {
            earlier.abort();
        }
    }

    /// Queues a frame for the socket (waits while the queue is full).
    async fn send(&self, frame: Value) {
        let _ = self
            .outbox
            .send(Frame::Text(frame.to_string().into()))
            .await;
    }
}

/// A request's answer, and the run the connection follows from now on, if any.
struct Answer {
    frame: Value,
    follow: Option<(String, Reader)>,
}

impl Answer {
    fn new(frame: Value) -> Self {
        Self {
            frame,
            follow: None,
        }
    }
}

/// The error answer to a request.
fn error_frame(id: &Value, request: Option<&str>, error: &ApiError) -> Value {
    json!({
        "type": "error",
        "id": id,
        "request": request,
        "status": error.status.as_u16(),
        "error": {"code": error.code, "message": error.message},
    })
}

/// Forwards a run's events to the socket as `event` frames, one batch at a time, then `end`.
async fn forward(mut reader: Reader, run_id: String, outbox: mpsc::Sender<Frame>) {
    let mut prefix = br#"{"type":"event","run_id":"#.to_vec();
    let _ = serde_json::to_writer(&mut prefix, &run_id);
    prefix.extend_from_slice(br#","data":"#);
    loop {
        let mut out = Vec::new();
        let mut ends = Vec::new();
        let more = reader
            .next(|event| {
                out.extend_from_slice(&prefix);
                // Writing to a Vec cannot fail.
                let _ = serde_json::to_writer(&mut out, event);
                out.push(b'}');
                ends.push(out.len());
            })
            .await;
        let batch = Bytes::from(out);
        let mut start = 0;
        for end in ends {
            let text = Utf8Bytes::try_from(batch.slice(start..end));
            start = end;
            // Serialized JSON is UTF-8; a failure here would be a bug in serde_json.
            let Ok(text) = text else { continue };
            if outbox.send(Frame::Text(text)).await.is_err() {
                return;
            }
        }
        if !more {
            let end = json!({"type": "end", "run_id": run_id});
            let _ = outbox.send(Frame::Text(end.to_string().into())).await;
            return;
        }
    }
}
