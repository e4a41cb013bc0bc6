//! The bare floor: a minimal axum server answering each POST of the three endpoints with the
//! frames an agentwire run of the `load` agent streams, and doing nothing else: no runtime, no
//! store, no event log, no decoding of the request beyond reading its body. What the full path
//! costs beyond it is what agentwire adds to axum and hyper, which both serve with.
//!
//! The frames are the same events through the same dialect encoders as the server's, encoded
//! once at start: a run (`run_created`, `in_progress`), one assistant message whose step starts
//! and whose text streams as `tokens` deltas of `"token "`, its completion (with its timeline),
//! `completed`. Ids
//! have the server's shapes and lengths, so each frame has the server's size (a test compares
//! them with a real run's). Each event is its own
//! body frame and all of them are ready at once: hyper writes them in as few writes as it
//! likes, so the floor is the best case of the framing, not a paced stream.
//!
//! It runs as `agentwire-load floor`, a child of the generator pinned to the server's core like
//! agentwire itself (`pin.rs`), with the same kind of runtime (tokio's multi-threaded one, which
//! sizes itself to that core).

use std::sync::Arc;

use agentwire_core::part::StepStart;
use agentwire_core::{
    Emitter, Event, EventKind, MessageBuilder, MessageStart, Part, Role, RunStatus, Timestamp,
};
use agentwire_dialects::Encoder;
use agentwire_dialects::ag_ui::AgUiEncoder;
use agentwire_dialects::ai_sdk::{AiSdkEncoder, RESPONSE_HEADERS};
use agentwire_dialects::native::NativeSseEncoder;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use axum::routing::post;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;

use crate::AGENT;
use crate::endpoint::Endpoint;

/// What the floor prints on its first line, before its address.
pub const LISTENING: &str = "floor listening on http://";

/// The ids of the floor's one run, shaped as the server's (a prefix and 32 hex digits).
const RUN_ID: &str = "run_01a211772ec277ea99408f576d0e587f";
const SESSION_ID: &str = "ses_01a211772ec277ea99408f567ca9f7d0";
const MESSAGE_ID: &str = "msg_01a211772ec277ea99408f591b350e3f";
const STEP_ID: &str = "step_01a211772ec277ea99408f5a30d63e35";
/// A creation time in milliseconds, of today's length.
const CREATED_AT: i64 = 1_795_589_353_154;

/// The canonical events of one run of the `load` agent answering `tokens` deltas, as the
/// runtime emits them: the run's creation and `in_progress`, an assistant message (with the
/// agent's name and a time) whose step starts and whose text streams, the message's
/// completion, `completed`.
pub(crate) fn events(tokens: u32) -> Vec<Event> {
    let mut out = Emitter::default();
    out.emit(EventKind::RunCreated {
        run_id: RUN_ID.into(),
        session_id: Some(SESSION_ID.into()),
        agent: Some(AGENT.to_owned()),
        parent_run_id: None,
        parent_tool_call_id: None,
    });
    out.emit(EventKind::RunStatus {
        status: RunStatus::InProgress,
        error: None,
        usage: None,
    });
    let mut start = MessageStart::new(MESSAGE_ID, Role::Assistant);
    start.metadata.agent_name = Some(AGENT.to_owned());
    start.created_at = Some(Timestamp(CREATED_AT));
    let mut message = MessageBuilder::start(&mut out, start);
    message.part(
        &mut out,
        Part::StepStart(StepStart {
            step_id: STEP_ID.into(),
            step_name: None,
        }),
    );
    for _ in 0..tokens {
        message.text_delta(&mut out, "token ");
    }
    // The runtime's timeline of the message: its one model call, as the scripted brain's.
    let at = CREATED_AT;
    let timeline = serde_json::json!([{"kind": "chat", "name": "chat", "step": 0, "start": at,
        "end": at + 1, "first_token": at, "finish_reason": "stop"}]);
    message
        .metadata_mut()
        .extra
        .insert("timeline".to_owned(), timeline);
    message.finish(&mut out);
    out.emit(EventKind::RunStatus {
        status: RunStatus::Completed,
        error: None,
        usage: None,
    });
    out.drain().collect()
}

/// `events` as `endpoint`'s frames, one per event that has any, then the stream's end.
pub(crate) fn frames(endpoint: Endpoint, events: &[Event]) -> Vec<Bytes> {
    let mut encoder: Box<dyn Encoder + Send> = match endpoint {
        Endpoint::Native => Box::new(NativeSseEncoder),
        Endpoint::AiSdk => Box::new(AiSdkEncoder::default()),
        Endpoint::AgUi => Box::new(AgUiEncoder::new("thread-0-0", "run-0-0")),
    };
    let mut frames = Vec::with_capacity(events.len() + 1);
    let mut out = Vec::new();
    for event in events {
        encoder.encode(event, &mut out);
        if !out.is_empty() {
            frames.push(Bytes::from(std::mem::take(&mut out)));
        }
    }
    encoder.finish(&mut out);
    if !out.is_empty() {
        frames.push(Bytes::from(out));
    }
    frames
}

/// The floor's routes: each endpoint's path answers every POST with that endpoint's frames.
pub(crate) fn router(tokens: u32) -> Router {
    let events = events(tokens);
    let mut router = Router::new();
    for endpoint in Endpoint::ALL {
        let frames: Arc<[Bytes]> = frames(endpoint, &events).into();
        router = router.route(
            endpoint.path(),
            post(move |_body: Bytes| {
                let frames = Arc::clone(&frames);
                async move { respond(endpoint, &frames) }
            }),
        );
    }
    router
}

/// A streamed response of `frames`, with the headers agentwire sends for `endpoint`.
fn respond(endpoint: Endpoint, frames: &Arc<[Bytes]>) -> Response {
    let frames = Arc::clone(frames);
    let body =
        Body::from_stream(futures::stream::iter((0..frames.len()).map(move |index| {
            Ok::<_, std::convert::Infallible>(frames[index].clone())
        })));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    let pairs: &[(&'static str, &'static str)] = match endpoint {
        Endpoint::AiSdk => &RESPONSE_HEADERS,
        Endpoint::Native | Endpoint::AgUi => &[
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
        ],
    };
    for (name, value) in pairs {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    headers.insert("x-agentwire-run-id", HeaderValue::from_static(RUN_ID));
    response
}

/// Serves the floor on `listener` until the process ends, with `TCP_NODELAY` on every
/// connection as agentwire sets it.
///
/// # Errors
/// When the listener fails.
pub async fn serve(listener: TcpListener, tokens: u32) -> std::io::Result<()> {
    // Nagle's algorithm would hold each small frame back for the last one's acknowledgement.
    let listener = listener.tap_io(|socket| {
        let _ = socket.set_nodelay(true);
    });
    axum::serve(listener, router(tokens)).await
}

#[cfg(test)]
mod tests;
