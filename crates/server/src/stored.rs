//! Runs this process does not execute, read from the store: one that finished before a restart
//! (or was interrupted by a crash), or one another node executes on a shared PostgreSQL. Their
//! JSON is the run's row plus its output rebuilt from the event log; their event stream replays
//! the log and then follows it, woken by the store's notices.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agentwire_core::{Accumulator, Event, EventKind, RunId, RunStatus};
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
use crate::stream::Until;

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

/// Hands `visit` every stored event of a run, in order, a page at a time.
pub(crate) async fn each_event(
    state: &AppState,
    run_id: &RunId,
    mut visit: impl FnMut(&Event),
) -> Result<(), ApiError> {
    let mut after = 0;
    loop {
        let page = state
            .store
            .events_after(run_id, after, PAGE)
            .await
            .map_err(store_error)?;
        let Some(last) = page.last() else {
            return Ok(());
        };
        after = last.seq;
        page.iter().for_each(&mut visit);
    }
}

/// `GET /v1/runs/{id}` of a stored run: its row and the output its events rebuild.
pub(crate) async fn run_json(state: &AppState, record: &RunRecord) -> Result<Response, ApiError> {
    let mut accumulator = Accumulator::default();
    each_event(state, &record.id, |event| {
        // A log cut by a crash ends mid-message; what did complete is still shown.
        let _ = accumulator.push(event);
    })
    .await?;
    Ok(Json(json!({"run": view(record), "output": accumulator.messages()})).into_response())
}

/// Pulls a stored run's events after a point, a page at a time.
pub(crate) struct StoredReader {
    state: Arc<AppState>,
    run_id: RunId,
    after: u64,
    notices: broadcast::Receiver<Notice>,
    heartbeat: Duration,
    until: Until,
    done: bool,
    /// The row said the run is settled; the next empty read ends the stream.
    ending: bool,
}

impl StoredReader {
    /// A reader of `record`'s events after `after`.
    pub(crate) fn new(state: Arc<AppState>, record: &RunRecord, after: u64, until: Until) -> Self {
        // Subscribed before the first read: an append after it is either read or noticed.
        let notices = state.notices.subscribe();
        let heartbeat = state.settings.heartbeat;
        Self {
            state,
            run_id: record.id.clone(),
            after,
            notices,
            heartbeat,
            until,
            done: false,
            ending: false,
        }
    }

    /// Waits until there is something to hand over, and hands `visit` the next page of events,
    /// or a heartbeat after a quiet `heartbeat`. False once the stream is complete.
    pub(crate) async fn next(&mut self, mut visit: impl FnMut(&Event)) -> bool {
        if self.done {
            return false;
        }
        loop {
            let page: Vec<Event> = match self
                .state
                .store
                .events_after(&self.run_id, self.after, PAGE)
                .await
            {
                Ok(page) => page,
                Err(error) => {
                    tracing::error!(run = %self.run_id, "replaying events: {error}");
                    self.done = true;
                    return false;
                }
            };
            if let Some(last) = page.last() {
                page.iter().for_each(&mut visit);
                self.after = last.seq;
                self.ending = false;
                self.done = match self.until {
                    Until::Settled => settles(last),
                    Until::Ended => matches!(
                        &last.kind,
                        EventKind::RunStatus { status, .. } if status.is_terminal()
                    ),
                };
                return true;
            }
            // Nothing new: the stream is complete if the run is settled (its row follows its
            // log).
            match self.state.store.run(&self.run_id).await {
                // Read once more: events and the row commit together, so that read has them all.
                Ok(Some(record)) if self.stops_at(record.status) => {
                    if self.ending {
                        self.done = true;
                        return false;
                    }
                    self.ending = true;
                    continue;
                }
                Ok(Some(_)) => {}
                Ok(None) => {
                    self.done = true;
                    return false;
                }
                Err(error) => {
                    tracing::error!(run = %self.run_id, "reading the run: {error}");
                    self.done = true;
                    return false;
                }
            }
            // Wait for a notice of this run; on silence send a heartbeat and read again (a
            // notice can be missed while a listener reconnects).
            let run_id = &self.run_id;
            let notices = &mut self.notices;
            let wait = async {
                loop {
                    match notices.recv().await {
                        Ok(Notice::Events { run_id: of, .. }) if of == *run_id => return true,
                        Ok(_) => {}
                        Err(broadcast::error::RecvError::Lagged(_)) => return true,
                        Err(broadcast::error::RecvError::Closed) => return false,
                    }
                }
            };
            match tokio::time::timeout(self.heartbeat, wait).await {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return false;
                }
                Err(_) => {
                    visit(&Event::heartbeat(self.after));
                    return true;
                }
            }
        }
    }

    /// The reader stops once the run is in `status` and its log is read.
    fn stops_at(&self, status: RunStatus) -> bool {
        match self.until {
            Until::Settled => !is_moving(status),
            Until::Ended => status.is_terminal(),
        }
    }
}

/// The native SSE body of a stored run's events after `after`: the log, then what is appended
/// to it, until the run is settled or ended.
pub(crate) fn sse_body(state: Arc<AppState>, record: &RunRecord, after: u64) -> Body {
    let reader = StoredReader::new(state, record, after, Until::Settled);
    Body::from_stream(futures::stream::unfold(reader, |mut reader| async move {
        let mut out = Vec::new();
        let mut encoder = NativeSseEncoder;
        let more = reader.next(|event| encoder.encode(event, &mut out)).await;
        (more || !out.is_empty()).then(|| (Ok::<_, Infallible>(Bytes::from(out)), reader))
    }))
}

/// The run may still append events without the client doing anything.
pub(crate) fn is_moving(status: agentwire_core::RunStatus) -> bool {
    !status.is_terminal() && !matches!(status, agentwire_core::RunStatus::Awaiting(_))
}
