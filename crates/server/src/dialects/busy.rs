//! A dialect's new user message to a session whose run is still going ([`post_busy`]): instead
//! of `409 session_busy`, it goes into the session's inbox ([`Runs::post`](crate::runs)) with
//! the client's mode, or the agent's `input_mode`, and the client streams what answers it:
//!
//! - `steer`: the current run from the moment the message was posted, in which the run reports
//!   the message delivered (or not) and shows it as a user message where the model saw it;
//! - `queue`, `interrupt`, `rollback`: the run the message starts, from its start, once it has
//!   started (the stream is quiet until then: a queued message waits for the run before it);
//!   a message that will never run ends the stream with its `not_delivered` outcome;
//! - `reject`: today's `409 session_busy`.
//!
//! Each dialect's module says how its client names the mode.

use agentwire_core::{InputMode, Message, SessionId};
use agentwire_runtime::Agent;
use agentwire_store::InboxState;
use axum::http::StatusCode;
use serde_json::Value;

use super::last_seq;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::runs::{PostedReader, Posting, Reader, Until};
use crate::state::AppState;

/// A message for a busy session, as a dialect decoded it.
pub(crate) struct BusyMessage {
    /// The user's message.
    pub(crate) message: Message,
    /// The client's mode; the agent's default when `None`.
    pub(crate) mode: Option<InputMode>,
    /// The client's name for the message, which makes a retry harmless.
    pub(crate) client_message_id: Option<String>,
}

/// The stream that answers a message posted into a busy session, and its run's id (the run
/// going on, for a steer; otherwise the id is not known yet and is the message's).
pub(crate) struct Answer {
    pub(crate) reader: Reader,
    pub(crate) run_id: String,
    /// The message rolled the session's run back (it is out of the session's history).
    pub(crate) rolled_back: bool,
}

/// The mode a client named in a field of its request (`field` says which, for the error):
/// `None` when absent, 400 `invalid_request` when it names no mode.
pub(crate) fn mode_in(value: Option<&Value>, field: &str) -> Result<Option<InputMode>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_str()
            .and_then(InputMode::from_name)
            .map(Some)
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    format!("{field} must be one of queue, steer, interrupt, rollback, reject"),
                )
            }),
    }
}

/// Posts `busy` into the caller's session `session_id` for `agent` (see the module docs).
pub(crate) async fn post_busy(
    state: &AppState,
    agent: &Agent,
    caller: &Caller,
    session_id: &SessionId,
    busy: BusyMessage,
) -> Result<Answer, ApiError> {
    let mode = busy.mode.unwrap_or(agent.input_mode());
    // Where the client's stream of the current run picks up a steer: what it has not seen.
    let current = state
        .runs
        .current(caller, session_id.as_str())
        .map(|current| {
            let after = last_seq(&current.live);
            (current.live, after)
        });
    let posting = Posting {
        client_message_id: busy.client_message_id,
        message: busy.message,
        mode,
    };
    let entry = state
        .runs
        .post(agent, caller, session_id.clone(), posting)
        .await?;
    let steered = matches!(entry.state, InboxState::Steering)
        || (mode == InputMode::Steer && entry.state == InboxState::Delivered);
    if steered && let Some(run_id) = entry.run_id.as_ref() {
        let reader = match current {
            Some((live, after)) if live.handle.id() == run_id => {
                state.runs.follow_live(live, after, Until::Settled, false)
            }
            _ => {
                state
                    .runs
                    .follow(run_id.as_str(), caller, 0, Until::Settled)
                    .await?
            }
        };
        return Ok(Answer {
            reader,
            run_id: run_id.to_string(),
            rolled_back: false,
        });
    }
    let reader = PostedReader::new(
        std::sync::Arc::clone(&state.runs),
        caller.clone(),
        session_id.clone(),
        entry.client_message_id.clone(),
    );
    Ok(Answer {
        reader: Reader::Posted(Box::new(reader)),
        run_id: entry
            .run_id
            .as_ref()
            .map_or_else(|| entry.client_message_id.clone(), ToString::to_string),
        rolled_back: entry.rollback_of.is_some(),
    })
}
