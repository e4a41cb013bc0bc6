//! A session's inbox over HTTP: `POST /v1/sessions/{id}/messages` sends a message into a
//! session, busy or not, with a mode for when it is busy (`queue`, `steer`, `interrupt`,
//! `rollback`, `reject`; the agent's `input_mode` when the client names none), named by the
//! client's `client_message_id` so that a retry is answered with the message as it stands
//! rather than sent twice. `GET /v1/sessions/{id}/messages` lists the inbox in order, and
//! `GET /v1/sessions/{id}/messages/{client_message_id}` reads one message's outcome.
//!
//! The answer is the message's entry: `202` with where it stands now (`delivered` with the run
//! it started, `queued`, `steering` with the run that has it, `not_delivered` with a reason).
//! A busy session with `reject` answers `409 session_busy`, as `POST /v1/runs` does.

use std::sync::Arc;

use agentwire_core::{InputMode, Message, SessionId};
use agentwire_store::InboxEntry;
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::body::JsonBody;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::native::parse;
use crate::runs::{Posting, RunsError};
use crate::state::AppState;

/// The body of `POST /v1/sessions/{id}/messages`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PostMessage {
    /// The user's message.
    message: Message,
    /// What to do if the session is busy; the agent's default when absent.
    #[serde(default)]
    mode: Option<InputMode>,
    /// The client's name for the message, which makes a retry harmless.
    #[serde(default)]
    client_message_id: Option<String>,
    /// The agent that answers; the session's last run's agent, or the server's default.
    #[serde(default)]
    agent: Option<String>,
}

/// An inbox entry as the API shows it.
#[derive(Serialize)]
struct EntryView<'a> {
    client_message_id: &'a str,
    session_id: &'a str,
    position: i64,
    agent: &'a str,
    mode: InputMode,
    /// `queued`, `starting`, `steering`, `delivered` or `not_delivered`.
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    /// For a rollback: the run it takes out of the history before it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    rollback_of: Option<&'a str>,
    created_at: i64,
}

impl<'a> EntryView<'a> {
    fn of(entry: &'a InboxEntry) -> Self {
        EntryView {
            client_message_id: &entry.client_message_id,
            session_id: entry.session_id.as_str(),
            position: entry.position,
            agent: &entry.agent,
            mode: entry.mode,
            outcome: entry.state.name(),
            run_id: entry.run_id.as_ref().map(|id| id.as_str()),
            step: entry.step,
            reason: entry.reason.as_deref(),
            rollback_of: entry.rollback_of.as_ref().map(|id| id.as_str()),
            created_at: entry.created_at,
        }
    }
}

/// The longest client message id.
const MAX_CLIENT_ID: usize = 128;

pub(crate) async fn post(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(session): Path<String>,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let body: PostMessage = parse(&bytes)?;
    if let Some(id) = &body.client_message_id
        && (id.is_empty() || id.len() > MAX_CLIENT_ID)
    {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_client_message_id",
            format!("client_message_id must be 1 to {MAX_CLIENT_ID} bytes"),
        ));
    }
    let session_id = SessionId::from(session);
    let agent_name = match body.agent {
        Some(name) => Some(name),
        None => state.runs.session_agent(&caller, &session_id).await?,
    };
    let agent = state.agent(agent_name.as_deref())?;
    let mode = body.mode.unwrap_or(agent.input_mode());
    let posting = Posting {
        client_message_id: body.client_message_id,
        message: body.message,
        mode,
    };
    let entry = state.runs.post(agent, &caller, session_id, posting).await?;
    Ok((StatusCode::ACCEPTED, Json(EntryView::of(&entry))).into_response())
}

/// `?after=P&limit=N`: the entries after position `P`, at most `N`.
#[derive(Deserialize)]
pub(crate) struct Page {
    #[serde(default)]
    after: i64,
    limit: Option<u32>,
}

pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(session): Path<String>,
    query: Result<Query<Page>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(page) = query.map_err(|rejection| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            rejection.body_text(),
        )
    })?;
    let session_id = SessionId::from(session);
    let limit = page.limit.unwrap_or(100).clamp(1, 1000);
    let entries = state
        .runs
        .inbox(&caller, &session_id, page.after, limit)
        .await?;
    let views: Vec<EntryView<'_>> = entries.iter().map(EntryView::of).collect();
    let next = (entries.len() == limit as usize)
        .then(|| entries.last().map(|entry| entry.position))
        .flatten();
    Ok(Json(serde_json::json!({"messages": views, "next_after": next})).into_response())
}

pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((session, client_message_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let session_id = SessionId::from(session);
    let entry = state
        .runs
        .inbox_entry(&caller, &session_id, &client_message_id)
        .await?
        .ok_or_else(|| RunsError::NotFound {
            what: "message",
            id: client_message_id,
        })?;
    Ok(Json(EntryView::of(&entry)).into_response())
}
