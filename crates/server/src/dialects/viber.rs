//! Viber's chat endpoints: `POST /viber/api/chat`, what `useXChat({spaceId})` posts (Viber's
//! `POST /api/chat`, under `/viber` so it does not meet the AI SDK's), answered
//! with message packets and the chat's status over SSE; `GET /viber/api/chat/{id}/stream`, the
//! space's stream again (after `Last-Event-ID`); and `POST /viber/api/chat/{id}/cancel`.
//!
//! A space is a session. A request whose new messages (those after its last assistant
//! message) answer what the space's waiting run waits for (`approval-response` parts,
//! `tool-result`s of client tools) continues that run, and the stream picks up where the run
//! stopped; any other request starts a run in the space, and is refused while one waits
//! (409 `session_busy`). Viber describes no cancel or resume: these follow the native API.

use agentwire_core::Part;
use agentwire_dialects::viber::{self, ViberEncoder};
use agentwire_runtime::RunStart;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use super::{
    Params, SSE_HEADERS, Shared, agent, answers, answers_to, bad_request, last_seq, settled,
    stream, stream_reader,
};
use crate::body::JsonBody;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::runs::Waiting;
use crate::state::AppState;

pub(super) fn routes() -> Router<std::sync::Arc<AppState>> {
    Router::new()
        .route("/viber/api/chat", post(chat))
        .route("/viber/api/chat/{id}/stream", get(resume))
        .route("/viber/api/chat/{id}/cancel", post(cancel))
}

async fn chat(
    State(state): Shared,
    params: Params,
    caller: Caller,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let request = viber::decode_request(&bytes).map_err(|error| bad_request(&error))?;
    state.check_message_count(request.messages.len())?;
    let agent = agent(&state, &params)?;
    let new = request.new_messages();
    if new.is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "no_input",
            "a chat request needs a message after the last assistant message",
        ));
    }
    let parts: Vec<Part> = new
        .iter()
        .flat_map(|message| message.parts.clone())
        .collect();
    if let Some(space_id) = &request.space_id {
        match state.runs.waiting(&caller, space_id.as_str()).await? {
            Some(Waiting::Here(live)) => {
                let found = answers_to(&live.handle, &parts);
                if found.parts.is_empty() {
                    return Err(busy(space_id.as_str(), live.handle.id().as_str()));
                }
                live.log.settled().await;
                let after = last_seq(&live);
                state.runs.answer(&live, found).await?;
                let run_id = live.handle.id().clone();
                let encoder = Box::new(ViberEncoder::continuing(space_id.clone(), run_id));
                return Ok(stream(&state, live, after, encoder, &SSE_HEADERS));
            }
            Some(Waiting::Elsewhere(record)) => {
                // Another node executes the space's waiting run: the answer goes there through
                // the store, and the run streams on from the store and that node's notices.
                let run_id = record.id.to_string();
                let (_, output) = state.runs.status(&run_id, &caller).await?;
                let found = answers(&output, &parts);
                if found.parts.is_empty() {
                    return Err(busy(space_id.as_str(), &run_id));
                }
                let encoder = Box::new(ViberEncoder::continuing(
                    space_id.clone(),
                    record.id.clone(),
                ));
                let reader = state.runs.continue_elsewhere(*record, found).await?;
                return Ok(stream_reader(reader, &run_id, encoder, &SSE_HEADERS));
            }
            None => {}
        }
    }
    let start = RunStart::new(new.to_vec())
        .with_client_tools(request.tools.clone())
        .with_settings(request.settings.clone());
    let live = state
        .runs
        .start(agent, &caller, request.space_id.clone(), start)
        .await?;
    Ok(stream(
        &state,
        live,
        0,
        Box::new(ViberEncoder::default()),
        &SSE_HEADERS,
    ))
}

/// `GET /viber/api/chat/{id}/stream`: the space's run going on, from its start or after
/// `Last-Event-ID`; 204 when nothing streams in the space.
async fn resume(
    State(state): Shared,
    params: Params,
    caller: Caller,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Some(space_id) = params.get("id") else {
        return Err(ApiError::not_found("space", ""));
    };
    let after = match headers.get("last-event-id") {
        None => 0,
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_last_event_id",
                    "Last-Event-ID must be an event's sequence number",
                )
            })?,
    };
    let Some(current) = state.runs.current(&caller, space_id) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    if settled(&current.live) {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let run_id = current.live.handle.id().clone();
    let encoder = Box::new(ViberEncoder::continuing(space_id.as_str().into(), run_id));
    Ok(stream(&state, current.live, after, encoder, &SSE_HEADERS))
}

/// `POST /viber/api/chat/{id}/cancel`: cancels the space's run that goes on or waits (202 with
/// the space and the run); 409 `run_finished` when it has none.
async fn cancel(
    State(state): Shared,
    params: Params,
    caller: Caller,
) -> Result<Response, ApiError> {
    let Some(space_id) = params.get("id") else {
        return Err(ApiError::not_found("space", ""));
    };
    let going = state
        .runs
        .current(&caller, space_id)
        .filter(|current| !current.live.handle.status().is_terminal());
    let run_id = match going {
        Some(current) => current.live.handle.id().to_string(),
        None => match state.runs.waiting(&caller, space_id).await? {
            Some(Waiting::Here(live)) => live.handle.id().to_string(),
            Some(Waiting::Elsewhere(record)) => record.id.to_string(),
            None => {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "run_finished",
                    format!("space '{space_id}' has no run going on"),
                ));
            }
        },
    };
    state.runs.cancel(&run_id, &caller).await?;
    let answer = json!({"spaceId": space_id, "runId": run_id});
    Ok((StatusCode::ACCEPTED, Json(answer)).into_response())
}

/// 409: the space's run waits, and the request answers none of what it waits for.
fn busy(space_id: &str, run_id: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "session_busy",
        format!(
            "space '{space_id}' has run '{run_id}' waiting; answer its approvals or tool calls first"
        ),
    )
}
