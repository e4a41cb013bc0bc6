//! `GET /v1/runs`: the caller's runs, newest first, a page at a time, filtered by session,
//! agent and status, each as `GET /v1/runs/{id}` shows it (without its output) plus when it was
//! created. With keys, a key lists only its own runs. A2A's `ListTasks` reads the same list.
//!
//! The page's cursor is `<created_at>:<id>` of its last run, given back as `cursor`. Clients
//! treat it as opaque; the server reads it, and a run's id may hold any character (the time
//! comes first and holds no `:`). A cursor the server did not give is refused (`400
//! invalid_cursor`): one that does not parse, and one whose run is not the caller's run created
//! at that time (a forged one, or one whose run was deleted since: list again from the start). Creation times and ids never change, so a page follows the
//! one before exactly: across the pages of one listing every run that existed when it began
//! comes once, and a run created meanwhile (newer, so before the first page) never comes twice.

use std::sync::Arc;

use agentwire_core::{Awaiting, RunId, RunStatus, SessionId, Timestamp};
use agentwire_store::{RunCursor, RunFilter, RunRecord};
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::error::ApiError;
use crate::runs::RunView;
use crate::state::AppState;

/// Runs in a page when the client does not say.
const DEFAULT_LIMIT: u32 = 20;
/// The most runs in one page.
pub(crate) const MAX_LIMIT: u32 = 100;

/// Every status a filter may name, once (every `awaiting` is one status).
const STATUSES: [RunStatus; 9] = [
    RunStatus::Created,
    RunStatus::Queued,
    RunStatus::InProgress,
    RunStatus::Awaiting(Awaiting::Input),
    RunStatus::Completed,
    RunStatus::Failed,
    RunStatus::Canceled,
    RunStatus::Rejected,
    RunStatus::Incomplete,
];

/// `?session_id=&agent=&status=a,b&limit=N&cursor=<next>`.
#[derive(Deserialize)]
pub(crate) struct Page {
    session_id: Option<SessionId>,
    agent: Option<String>,
    status: Option<String>,
    limit: Option<u32>,
    cursor: Option<String>,
}

/// One page of runs, and the cursor of the next (`None` on the last page).
#[derive(Default)]
pub(crate) struct RunPage {
    pub(crate) runs: Vec<RunRecord>,
    pub(crate) next: Option<String>,
}

fn invalid_query(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", message)
}

/// `GET /v1/runs`.
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
    let statuses = match page.status.as_deref() {
        None | Some("") => Vec::new(),
        Some(names) => names
            .split(',')
            .map(parse_status)
            .collect::<Result<_, _>>()?,
    };
    let filter = RunFilter {
        owner: caller.owner_id(),
        session_id: page.session_id.as_ref(),
        agent: page.agent.as_deref(),
        statuses: &statuses,
    };
    let RunPage { runs, next } = list_page(&state, &filter, page.cursor.as_deref(), limit).await?;
    let runs: Vec<Value> = runs.iter().map(view).collect();
    Ok(Json(json!({"runs": runs, "next": next})).into_response())
}

/// A page of up to `limit` runs of `filter` after the cursor `after` (the `next` of the page
/// before), for `GET /v1/runs` and A2A's `ListTasks`.
pub(crate) async fn list_page(
    state: &AppState,
    filter: &RunFilter<'_>,
    after: Option<&str>,
    limit: u32,
) -> Result<RunPage, ApiError> {
    let after = after.map(parse_cursor).transpose()?;
    if let Some(cursor) = &after {
        check_anchor(state, filter, cursor).await?;
    }
    // One more than asked tells whether there is a next page.
    let mut runs = state
        .store
        .list_runs(filter, after.as_ref(), limit + 1)
        .await?;
    let more = runs.len() > limit as usize;
    runs.truncate(limit as usize);
    let next = match (more, runs.last()) {
        (true, Some(last)) => Some(cursor_text(&last.cursor())),
        _ => None,
    };
    Ok(RunPage { runs, next })
}

/// A run as the list shows it: its view, and when it was created and last changed.
fn view(record: &RunRecord) -> Value {
    let mut view = serde_json::to_value(RunView::stored(record)).unwrap_or_default();
    view["created_at"] = json!(record.created_at);
    view["updated_at"] = json!(record.updated_at);
    view
}

fn parse_status(name: &str) -> Result<RunStatus, ApiError> {
    STATUSES
        .into_iter()
        .find(|status| status.name() == name.trim())
        .ok_or_else(|| {
            let names: Vec<&str> = STATUSES.iter().map(|status| status.name()).collect();
            invalid_query(format!("status '{name}' is none of {}", names.join(", ")))
        })
}

/// The refusal of a cursor the server did not give.
fn bad_cursor() -> ApiError {
    ApiError::invalid_cursor("the cursor must be the `next` of a page of runs")
}

fn parse_cursor(text: &str) -> Result<RunCursor, ApiError> {
    let (created_at, id) = text.split_once(':').ok_or_else(bad_cursor)?;
    // Digits only: no sign, so no time before the epoch, which no run has.
    if id.is_empty() || created_at.is_empty() || !created_at.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad_cursor());
    }
    Ok(RunCursor {
        created_at: Timestamp(created_at.parse().map_err(|_| bad_cursor())?),
        id: RunId::from(id),
    })
}

/// Refuses a cursor whose run is not one of the filter's owner's, created when it says: the
/// server gives only cursors of runs it listed.
async fn check_anchor(
    state: &AppState,
    filter: &RunFilter<'_>,
    cursor: &RunCursor,
) -> Result<(), ApiError> {
    match state.store.run(&cursor.id).await? {
        Some(run)
            if run.owner.as_deref() == filter.owner && run.created_at == cursor.created_at =>
        {
            Ok(())
        }
        _ => Err(bad_cursor()),
    }
}

fn cursor_text(cursor: &RunCursor) -> String {
    format!("{}:{}", cursor.created_at.0, cursor.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_and_bad_ones_are_refused() {
        let cursor = RunCursor {
            created_at: Timestamp(1_700),
            id: RunId::from("run:with:colons"),
        };
        assert_eq!(parse_cursor(&cursor_text(&cursor)).ok(), Some(cursor));
        for bad in [
            "", "nope", "x:run", ":run", "17:", "-1:run_x", "+1:run_x", " 1:run_x",
        ] {
            assert_eq!(
                parse_cursor(bad).err().map(|error| error.code),
                Some("invalid_cursor")
            );
        }
    }

    #[test]
    fn every_status_name_is_read() {
        for status in STATUSES {
            assert_eq!(parse_status(status.name()).ok(), Some(status));
        }
        assert_eq!(
            parse_status("done").err().map(|error| error.code),
            Some("invalid_query")
        );
    }
}
