//! The sessions list: one owner's sessions, most recently updated first, a page at a time, each
//! with what a list shows of it (its first and last message, its latest run).

use sqlx::Row;

use agentwire_core::{Message, SessionId, Timestamp};

use crate::error::StoreError;
use crate::owners::{owner_column, owner_of};
use crate::run::{RUN_COLUMNS, RunRecord, run_from_row};
use crate::session::SessionRecord;
use crate::store::{Store, with_pool};

/// A session as a list shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionSummary {
    /// The session.
    pub session: SessionRecord,
    /// How many messages its history holds.
    pub message_count: u64,
    /// The first message of its history (what it was about), if any.
    pub first_message: Option<Message>,
    /// The last message of its history (where it stands), if any.
    pub last_message: Option<Message>,
    /// Its latest run, if any: whether one is still going, and which agent it talked to.
    pub last_run: Option<RunRecord>,
}

impl SessionSummary {
    /// Where the page after this session starts.
    pub fn cursor(&self) -> SessionCursor {
        SessionCursor {
            updated_at: self.session.updated_at,
            id: self.session.id.clone(),
        }
    }
}

/// A place in the sessions list: the sessions after it were updated earlier (or at the same
/// time, with a smaller id), so pages neither skip nor repeat a session that did not change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionCursor {
    /// The `updated_at` of the last session of the page before.
    pub updated_at: Timestamp,
    /// Its id.
    pub id: SessionId,
}

impl Store {
    /// Up to `limit` sessions of `owner` (`None`: the sessions without an owner), most recently
    /// updated first, after `after` when given.
    pub async fn list_sessions(
        &self,
        owner: Option<&str>,
        after: Option<&SessionCursor>,
        limit: u32,
    ) -> Result<Vec<SessionSummary>, StoreError> {
        let sql = list_sql(after.is_some());
        let rows = with_pool!(self, |pool, _begin| {
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(owner_column(owner));
            if let Some(after) = after {
                query = query.bind(after.updated_at.0).bind(after.id.as_str());
            }
            query
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
                .iter()
                .map(summary_from_row)
                .collect::<Result<Vec<_>, StoreError>>()?
        });
        Ok(rows)
    }
}

/// The query of one page: the owner's condition, and the cursor's written in only when it
/// applies, so the `(owner, updated_at, id)` index serves every case; the placeholders are
/// numbered in the order the values are bound.
fn list_sql(has_cursor: bool) -> String {
    let mut next = 0;
    let mut placeholder = || {
        next += 1;
        format!("${next}")
    };
    let mut conditions = vec![format!("s.owner = {}", placeholder())];
    if has_cursor {
        let (updated_at, id) = (placeholder(), placeholder());
        conditions.push(format!(
            "(s.updated_at < {updated_at} OR (s.updated_at = {updated_at} AND s.id < {id}))"
        ));
    }
    let limit = placeholder();
    let run_columns: Vec<String> = RUN_COLUMNS
        .split(", ")
        .map(|column| format!("r.{column}"))
        .collect();
    format!(
        "SELECT s.id AS s_id, s.owner AS s_owner, s.created_at AS s_created_at,
                s.updated_at AS s_updated_at, s.schema_state AS s_schema_state,
                (SELECT COUNT(*) FROM messages m WHERE m.owner = s.owner
                 AND m.session_id = s.id) AS message_count,
                (SELECT message FROM messages m WHERE m.owner = s.owner AND m.session_id = s.id
                 ORDER BY position LIMIT 1) AS first_message,
                (SELECT message FROM messages m WHERE m.owner = s.owner AND m.session_id = s.id
                 ORDER BY position DESC LIMIT 1) AS last_message,
                {}
         FROM sessions s
         LEFT JOIN runs r ON r.id = (SELECT id FROM runs WHERE owner = s.owner
                                     AND session_id = s.id
                                     ORDER BY created_at DESC, id DESC LIMIT 1)
         WHERE {}
         ORDER BY s.updated_at DESC, s.id DESC
         LIMIT {limit}",
        run_columns.join(", "),
        conditions.join(" AND ")
    )
}

fn summary_from_row<R>(row: &R) -> Result<SessionSummary, StoreError>
where
    R: Row,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let message = |column: &str| -> Result<Option<Message>, StoreError> {
        row.try_get::<Option<String>, _>(column)?
            .map(|text| serde_json::from_str(&text).map_err(StoreError::from))
            .transpose()
    };
    // Without a run, the joined columns are all NULL; `agent` is never NULL in a run's row.
    let has_run = row.try_get::<Option<String>, _>("agent")?.is_some();
    Ok(SessionSummary {
        session: SessionRecord {
            id: SessionId::from(row.try_get::<String, _>("s_id")?),
            owner: owner_of(row.try_get("s_owner")?),
            created_at: Timestamp(row.try_get("s_created_at")?),
            updated_at: Timestamp(row.try_get("s_updated_at")?),
            schema_state: row.try_get("s_schema_state")?,
        },
        message_count: u64::try_from(row.try_get::<i64, _>("message_count")?).unwrap_or(0),
        first_message: message("first_message")?,
        last_message: message("last_message")?,
        last_run: has_run.then(|| run_from_row(row)).transpose()?,
    })
}
