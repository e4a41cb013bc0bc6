//! The runs list: one owner's runs, newest first, a page at a time, filtered by session, agent
//! and status. Runs are ordered by creation then id, which never change, so a cursor stays
//! valid however the runs before or after it move on (their status changes do not reorder).

use agentwire_core::{RunId, RunStatus, SessionId, Timestamp};

use crate::error::StoreError;
use crate::run::{RUN_COLUMNS, RunRecord, run_from_row, status_columns};
use crate::store::{Store, with_pool};

/// Which runs a list holds. The owner always applies (`None`: the runs without an owner);
/// every other field narrows the list only when set.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunFilter<'a> {
    /// The API key (its id) that started them; `None`: runs started without auth.
    pub owner: Option<&'a str>,
    /// Only the runs of this session.
    pub session_id: Option<&'a SessionId>,
    /// Only the runs of this agent.
    pub agent: Option<&'a str>,
    /// Only runs in one of these statuses (every `awaiting` is one status); empty: any status.
    pub statuses: &'a [RunStatus],
}

/// A place in the runs list: the runs after it were created earlier (or at the same time, with
/// a smaller id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunCursor {
    /// The `created_at` of the last run of the page before.
    pub created_at: Timestamp,
    /// Its id.
    pub id: RunId,
}

impl RunRecord {
    /// Where the page after this run starts.
    pub fn cursor(&self) -> RunCursor {
        RunCursor {
            created_at: self.created_at,
            id: self.id.clone(),
        }
    }
}

impl Store {
    /// Up to `limit` runs that `filter` holds, newest first, after `after` when given.
    pub async fn list_runs(
        &self,
        filter: &RunFilter<'_>,
        after: Option<&RunCursor>,
        limit: u32,
    ) -> Result<Vec<RunRecord>, StoreError> {
        let statuses = status_names(filter.statuses);
        let (conditions, next) = conditions(filter, statuses.len(), after.is_some());
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE {conditions} \
             ORDER BY created_at DESC, id DESC LIMIT ${next}"
        );
        with_pool!(self, |pool, _begin| {
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            bind_filter!(query, filter, statuses);
            if let Some(after) = after {
                query = query.bind(after.created_at.0).bind(after.id.as_str());
            }
            query
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
                .iter()
                .map(run_from_row)
                .collect()
        })
    }

    /// How many runs `filter` holds (A2A's `ListTasks` answers with the total).
    pub async fn count_runs(&self, filter: &RunFilter<'_>) -> Result<u64, StoreError> {
        let statuses = status_names(filter.statuses);
        let (conditions, _) = conditions(filter, statuses.len(), false);
        let sql = format!("SELECT COUNT(*) FROM runs WHERE {conditions}");
        let count: i64 = with_pool!(self, |pool, _begin| {
            let mut query = sqlx::query_scalar(sqlx::AssertSqlSafe(sql));
            bind_filter!(query, filter, statuses);
            query.fetch_one(pool).await?
        });
        Ok(u64::try_from(count).unwrap_or(0))
    }
}

/// Binds a filter's values in the order [`conditions`] numbers their placeholders.
macro_rules! bind_filter {
    ($query:ident, $filter:expr, $statuses:expr) => {
        $query = $query.bind($crate::owners::owner_column($filter.owner));
        if let Some(session_id) = $filter.session_id {
            $query = $query.bind(session_id.as_str());
        }
        if let Some(agent) = $filter.agent {
            $query = $query.bind(agent);
        }
        for status in &$statuses {
            $query = $query.bind(*status);
        }
    };
}
use bind_filter;

/// The status column's distinct values for `statuses`.
fn status_names(statuses: &[RunStatus]) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = statuses
        .iter()
        .map(|status| status_columns(*status).0)
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The `WHERE` conditions of a filter (and cursor), and the number of the next placeholder.
/// Only the conditions that apply are written, numbered in the order the values are bound.
fn conditions(filter: &RunFilter<'_>, n_statuses: usize, has_cursor: bool) -> (String, usize) {
    let mut next = 0;
    let mut placeholder = || {
        next += 1;
        format!("${next}")
    };
    let mut conditions = vec![format!("owner = {}", placeholder())];
    if filter.session_id.is_some() {
        conditions.push(format!("session_id = {}", placeholder()));
    }
    if filter.agent.is_some() {
        conditions.push(format!("agent = {}", placeholder()));
    }
    if n_statuses > 0 {
        let list: Vec<String> = (0..n_statuses).map(|_| placeholder()).collect();
        conditions.push(format!("status IN ({})", list.join(", ")));
    }
    if has_cursor {
        let (created_at, id) = (placeholder(), placeholder());
        conditions.push(format!(
            "(created_at < {created_at} OR (created_at = {created_at} AND id < {id}))"
        ));
    }
    (conditions.join(" AND "), next + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_in_binding_order() {
        let session = SessionId::from("ses_1");
        let statuses = [RunStatus::Completed, RunStatus::Failed];
        let filter = RunFilter {
            owner: Some("key_1"),
            session_id: Some(&session),
            agent: None,
            statuses: &statuses,
        };
        let (sql, next) = conditions(&filter, 2, true);
        assert_eq!(
            sql,
            "owner = $1 AND session_id = $2 AND status IN ($3, $4) AND \
             (created_at < $5 OR (created_at = $5 AND id < $6))"
        );
        assert_eq!(next, 7);
        let (sql, next) = conditions(&RunFilter::default(), 0, false);
        assert_eq!((sql.as_str(), next), ("owner = $1", 2));
    }
}
