//! Runs this process does not execute, read from the store: one that finished before a restart
//! (or was interrupted by a crash), or one another node executes on a shared PostgreSQL. Their
//! JSON is the run's row plus its output rebuilt from the event log; their event stream replays
//! the log and then follows it, woken by the store's notices.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agentwire_core::{Accumulator, Event, RunId};
use agentwire_dialects::Encoder;
use agentwire_dialects::native::NativeSseEncoder;
use agentwire_store::{Notice, RunRecord};
use axum::Json;
use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::error::ApiError;
use crate::log::settles;
use crate::state::{AppState, store_error};

/// Events read from the store at once: a replay of a long run goes out in pages.
const PAGE: u32 = 1000;

/// The run as the API shows it, from its row.
pub(crate) fn view(record: &RunRecord) -> Value {
    let mut view = json!({
        "id": record.id,
        "session_id": record.session_id,
        "agent": record.agent,
        "state": record.state.clone().unwrap_or_default(),
        "usage": record.usage,
        "error": record.error,
    });
    if let (Some(view), Ok(Value::Object(status))) =
        (view.as_object_mut(), serde_json::to_value(record.status))
    {
        view.extend(status);
    }
    view
}

/// `GET /v1/runs/{id}` of a stored run: its row and the output its events rebuild.
pub(crate) async fn run_json(state: &AppState, record: &RunRecord) -> Result<Response, ApiError> {
    let mut accumulator = Accumulator::default();
    let mut after = 0;
    loop {
        let page = state
            .store
            .events_after(&record.id, after, PAGE)
            .await
            .map_err(store_error)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for event in &page {
            // A log cut by a crash ends mid-message; what did complete is still shown.
            let _ = accumulator.push(event);
        }
    }
    Ok(Json(json!({"run": view(record), "output": accumulator.messages()})).into_response())
}

struct Reader {
    state: Arc<AppState>,
    run_id: RunId,
    after: u64,
    notices: broadcast::Receiver<Notice>,
    heartbeat: Duration,
    done: bool,
    /// The row said the run is settled; the next empty read ends the stream.
    ending: bool,
}

/// The native SSE body of a stored run's events after `after`: the log, then what is appended
/// to it, until the run is settled or ended.
pub(crate) fn sse_body(state: Arc<AppState>, record: &RunRecord, after: u64) -> Body {
    // Subscribed before the first read: an append after it is either read or noticed.
    let notices = state.notices.subscribe();
    let heartbeat = state.settings.heartbeat;
    let reader = Reader {
        state,
        run_id: record.id.clone(),
        after,
        notices,
        heartbeat,
        done: false,
        ending: false,
    };
    Body::from_stream(futures::stream::unfold(reader, next_chunk))
}

async fn next_chunk(mut reader: Reader) -> Option<(Result<Bytes, Infallible>, Reader)> {
    if reader.done {
        return None;
    }
    let mut encoder = NativeSseEncoder;
    loop {
        let page: Vec<Event> = match reader
            .state
            .store
            .events_after(&reader.run_id, reader.after, PAGE)
            .await
        {
            Ok(page) => page,
            Err(error) => {
                tracing::error!(run = %reader.run_id, "replaying events: {error}");
                return None;
            }
        };
        if let Some(last) = page.last() {
            let mut out = Vec::new();
            page.iter()
                .for_each(|event| encoder.encode(event, &mut out));
            reader.after = last.seq;
            reader.done = settles(last);
            return Some((Ok(Bytes::from(out)), reader));
        }
        // Nothing new: the stream is complete if the run is settled (its row follows its log).
        match reader.state.store.run(&reader.run_id).await {
            // Read once more: events and the row commit together, so that read has them all.
            Ok(Some(record)) if !is_moving(record.status) => {
                if reader.ending {
                    return None;
                }
                reader.ending = true;
                continue;
            }
            Ok(Some(_)) => {}
            Ok(None) => return None,
            Err(error) => {
                tracing::error!(run = %reader.run_id, "reading the run: {error}");
                return None;
            }
        }
        // Wait for a notice of this run; on silence send a heartbeat and read again (a notice
        // can be missed while a listener reconnects).
        let wait = async {
            loop {
                match reader.notices.recv().await {
                    Ok(Notice::Events { run_id, .. }) if run_id == reader.run_id => return true,
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => return true,
                    Err(broadcast::error::RecvError::Closed) => return false,
                }
            }
        };
        match tokio::time::timeout(reader.heartbeat, wait).await {
            Ok(true) => {}
            Ok(false) => return None,
            Err(_) => {
                let mut out = Vec::new();
                encoder.encode(&Event::heartbeat(reader.after), &mut out);
                return Some((Ok(Bytes::from(out)), reader));
            }
        }
    }
}

/// The run may still append events without the client doing anything.
pub(crate) fn is_moving(status: agentwire_core::RunStatus) -> bool {
    !status.is_terminal() && !matches!(status, agentwire_core::RunStatus::Awaiting(_))
}
