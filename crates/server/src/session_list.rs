//! `GET /v1/sessions`: the caller's sessions, most recently updated first, a page at a time,
//! each as a list shows it (a title from its first message, a preview of its last, its agent and
//! latest run). With keys, a key lists only its own sessions.
//!
//! The page's cursor is `<updated_at>:<id>` of its last session, given back as `before`; it is
//! opaque to clients, but readable, and a session's id may hold any character (the time comes
//! first and holds no `:`). A cursor the server did not give is refused (`400 invalid_cursor`):
//! one that does not parse, and one naming no session of the caller's.

use std::sync::Arc;

use agentwire_core::{Message, SessionId, Timestamp};
use agentwire_store::{RunRecord, SessionCursor, SessionSummary};
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::error::ApiError;
use crate::state::AppState;

/// Sessions in a page when the client does not say.
const DEFAULT_LIMIT: u32 = 20;
/// The most sessions in one page.
const MAX_LIMIT: u32 = 100;
/// The longest title, in characters (a list shows one line).
const TITLE_CHARS: usize = 80;
/// The longest preview, in characters.
const PREVIEW_CHARS: usize = 160;

/// `?limit=N&before=<cursor>`.
#[derive(Deserialize)]
pub(crate) struct Page {
    limit: Option<u32>,
    before: Option<String>,
}

fn invalid_query(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", message)
}

/// `GET /v1/sessions`.
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    query: Result<Query<Page>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(page) = query.map_err(|rejection| invalid_query(rejection.body_text()))?;
    let limit = page.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(invalid_query(format!(
            "limit must be between 1 and {MAX_LIMIT}"
        )));
    }
    let before = page.before.as_deref().map(parse_cursor).transpose()?;
    // A cursor names a session of the caller's: one it does not have is not one the server
    // gave (its time is not checked, as the session may have moved on since the page).
    if let Some(cursor) = &before
        && state
            .store
            .session(caller.owner_id(), &cursor.id)
            .await?
            .is_none()
    {
        return Err(bad_cursor());
    }
    // One more than asked tells whether there is a next page.
    let mut sessions = state
        .store
        .list_sessions(caller.owner_id(), before.as_ref(), limit + 1)
        .await?;
    let more = sessions.len() > limit as usize;
    sessions.truncate(limit as usize);
    let next = match (more, sessions.last()) {
        (true, Some(last)) => Value::String(cursor_text(&last.cursor())),
        _ => Value::Null,
    };
    let sessions: Vec<Value> = sessions.iter().map(view).collect();
    Ok(Json(json!({"sessions": sessions, "next": next})).into_response())
}

/// The refusal of a cursor the server did not give.
fn bad_cursor() -> ApiError {
    ApiError::invalid_cursor("before must be the `next` of a page of sessions")
}

fn parse_cursor(text: &str) -> Result<SessionCursor, ApiError> {
    let (updated_at, id) = text.split_once(':').ok_or_else(bad_cursor)?;
    // Digits only (no time before the epoch), and an id of the shape sessions have.
    if updated_at.is_empty()
        || !updated_at.bytes().all(|b| b.is_ascii_digit())
        || !crate::runs::sessions::is_valid(id)
    {
        return Err(bad_cursor());
    }
    Ok(SessionCursor {
        updated_at: Timestamp(updated_at.parse().map_err(|_| bad_cursor())?),
        id: SessionId::from(id),
    })
}

fn cursor_text(cursor: &SessionCursor) -> String {
    format!("{}:{}", cursor.updated_at.0, cursor.id)
}

/// A session as the list shows it.
fn view(summary: &SessionSummary) -> Value {
    let run = summary.last_run.as_ref();
    json!({
        "id": summary.session.id,
        "title": summary.first_message.as_ref().and_then(|message| excerpt(message, TITLE_CHARS)),
        "preview": summary.last_message.as_ref().and_then(|message| excerpt(message, PREVIEW_CHARS)),
        "message_count": summary.message_count,
        "agent": run.map(|run| run.agent.as_str()),
        "created_at": summary.session.created_at,
        "updated_at": summary.session.updated_at,
        "last_run": run.map(run_view),
    })
}

/// A session's latest run, as the sessions list and `GET /v1/sessions/{id}` show it: enough
/// for a client to tell whether it goes on (then it follows its events from `last_seq` or 0).
pub(crate) fn run_view(run: &RunRecord) -> Value {
    let mut view = json!({"id": run.id, "agent": run.agent, "last_seq": run.last_seq});
    // The status as the run's own JSON spells it: `status`, and `awaiting` when it waits.
    if let (Some(view), Ok(Value::Object(status))) =
        (view.as_object_mut(), serde_json::to_value(run.status))
    {
        view.extend(status);
    }
    view
}

/// The latest run of a session the caller may see (`GET /v1/sessions/{id}` adds it).
pub(crate) async fn last_run(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<Option<Value>, ApiError> {
    let runs = state
        .store
        .session_runs(caller.owner_id(), &SessionId::from(id))
        .await?;
    Ok(runs.last().map(run_view))
}

/// The message's text on one line, cut to `max` characters (with `…`); `None` when it has no
/// text (only tool calls, files, …).
fn excerpt(message: &Message, max: usize) -> Option<String> {
    let content = message.content();
    let mut words = content.split_whitespace();
    let mut line = String::from(words.next()?);
    for word in words {
        line.push(' ');
        line.push_str(word);
        if line.len() > max * 4 {
            break;
        }
    }
    match line.char_indices().nth(max) {
        Some((at, _)) => {
            line.truncate(at);
            line.truncate(line.trim_end().len());
            line.push('…');
            Some(line)
        }
        None => Some(line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_excerpt_is_one_line_cut_at_a_character_boundary() {
        let message = Message::user("  héllo\n\n  wörld  again ");
        assert_eq!(excerpt(&message, 80).as_deref(), Some("héllo wörld again"));
        assert_eq!(excerpt(&message, 6).as_deref(), Some("héllo…"));
        assert_eq!(excerpt(&message, 7).as_deref(), Some("héllo w…"));
        assert_eq!(excerpt(&Message::user(" \n "), 10), None);
    }

    #[test]
    fn a_cursor_reads_back_and_bad_ones_are_refused() {
        let cursor = SessionCursor {
            updated_at: Timestamp(1_700),
            id: SessionId::from("ses:with:colons"),
        };
        assert_eq!(parse_cursor(&cursor_text(&cursor)).ok(), Some(cursor));
        for bad in ["", "nope", "x:ses", ":ses", "-1:ses", "1:", "1:a b"] {
            assert_eq!(
                parse_cursor(bad).err().map(|error| error.code),
                Some("invalid_cursor")
            );
        }
    }
}
