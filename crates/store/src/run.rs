//! Runs: one row per run, a projection of its event log (status, usage, error) plus what the
//! log does not carry (its agent, node, owner and communication-schema state).

use sqlx::Row;

use agentwire_core::{ErrorInfo, RunId, RunStatus, SessionId, Timestamp, Usage};

use crate::error::StoreError;
use crate::owners::{owner_column, owner_of};
use crate::store::{Store, now, with_pool};

/// A stored run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRecord {
    /// The run.
    pub id: RunId,
    /// The session it belongs to, if any.
    pub session_id: Option<SessionId>,
    /// The API key (its id) that started it; `None` without auth.
    pub owner: Option<String>,
    /// The agent running it.
    pub agent: String,
    /// The server process executing it: after a crash, that node marks its runs interrupted.
    pub node: String,
    /// Its status, as the last `run_status` event in its log says.
    pub status: RunStatus,
    /// The state of its communication schema, as the server last set it.
    pub state: Option<String>,
    /// Tokens used so far, as the last `run_status` event that carried usage says.
    pub usage: Option<Usage>,
    /// Why it ended the way it did, when it did not complete.
    pub error: Option<ErrorInfo>,
    /// The seq of the last event in its log (0 when empty): live streaming goes on after it.
    pub last_seq: u64,
    /// When it was created.
    pub created_at: Timestamp,
    /// When its row last changed.
    pub updated_at: Timestamp,
}

impl RunRecord {
    /// A new run, `created`, with an empty log, created now.
    pub fn new(id: RunId, agent: impl Into<String>, node: impl Into<String>) -> RunRecord {
        let created_at = now();
        RunRecord {
            id,
            session_id: None,
            owner: None,
            agent: agent.into(),
            node: node.into(),
            status: RunStatus::Created,
            state: None,
            usage: None,
            error: None,
            last_seq: 0,
            created_at,
            updated_at: created_at,
        }
    }
}

pub(crate) const RUN_COLUMNS: &str = "id, session_id, owner, agent, node, status, awaiting, state, usage, \
                           error, last_seq, created_at, updated_at";

/// A run's row as bound to `INSERT INTO runs` (see `insert_run!`).
pub(crate) struct RunRow<'a> {
    pub(crate) run: &'a RunRecord,
    pub(crate) status: &'static str,
    pub(crate) awaiting: Option<&'static str>,
    pub(crate) usage: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) last_seq: i64,
}

impl<'a> RunRow<'a> {
    pub(crate) fn new(run: &'a RunRecord) -> Result<Self, StoreError> {
        let (status, awaiting) = status_columns(run.status);
        Ok(Self {
            run,
            status,
            awaiting,
            usage: run.usage.as_ref().map(serde_json::to_string).transpose()?,
            error: run.error.as_ref().map(serde_json::to_string).transpose()?,
            last_seq: seq_to_db(run.last_seq)?,
        })
    }
}

/// The query inserting a [`RunRow`] (nothing when the id is taken), for either database.
macro_rules! insert_run {
    ($row:expr) => {{
        let row = &$row;
        let run = row.run;
        sqlx::query(
            "INSERT INTO runs (id, session_id, owner, agent, node, status, awaiting, state,
                               usage, error, status_seq, last_seq, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, $11, $12, $13)
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(run.id.as_str())
        .bind(run.session_id.as_ref().map(SessionId::as_str))
        .bind($crate::owners::owner_column(run.owner.as_deref()))
        .bind(run.agent.as_str())
        .bind(run.node.as_str())
        .bind(row.status)
        .bind(row.awaiting)
        .bind(run.state.as_deref())
        .bind(row.usage.as_deref())
        .bind(row.error.as_deref())
        .bind(row.last_seq)
        .bind(run.created_at.0)
        .bind(run.updated_at.0)
    }};
}

impl Store {
    /// Stores a new run. Fails with [`StoreError::AlreadyExists`] when the id is taken and
    /// [`StoreError::SessionNotFound`] when its session does not exist.
    pub async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        if let Some(session_id) = &run.session_id
            && self
                .session(run.owner.as_deref(), session_id)
                .await?
                .is_none()
        {
            return Err(StoreError::SessionNotFound(session_id.to_string()));
        }
        let row = RunRow::new(run)?;
        let _turn = self.write_turn().await;
        let inserted = with_pool!(self, |pool, _begin| {
            insert_run!(row).execute(pool).await?.rows_affected()
        });
        if inserted == 0 {
            return Err(StoreError::AlreadyExists(format!("run {}", run.id)));
        }
        Ok(())
    }

    /// The run, or `None` when there is none with this id.
    pub async fn run(&self, id: &RunId) -> Result<Option<RunRecord>, StoreError> {
        with_pool!(self, |pool, _begin| {
            let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1");
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(id.as_str())
                .fetch_optional(pool)
                .await?
                .map(|row| run_from_row(&row))
                .transpose()
        })
    }

    /// The latest run of `owner`'s session, if it has any.
    pub async fn last_session_run(
        &self,
        owner: Option<&str>,
        id: &SessionId,
    ) -> Result<Option<RunRecord>, StoreError> {
        with_pool!(self, |pool, _begin| {
            let sql = format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE owner = $1 AND session_id = $2 \
                 ORDER BY created_at DESC, id DESC LIMIT 1"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(owner_column(owner))
                .bind(id.as_str())
                .fetch_optional(pool)
                .await?
                .map(|row| run_from_row(&row))
                .transpose()
        })
    }

    /// The runs of `owner`'s session, oldest first.
    pub async fn session_runs(
        &self,
        owner: Option<&str>,
        id: &SessionId,
    ) -> Result<Vec<RunRecord>, StoreError> {
        with_pool!(self, |pool, _begin| {
            let sql = format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE owner = $1 AND session_id = $2 \
                 ORDER BY created_at, id"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(owner_column(owner))
                .bind(id.as_str())
                .fetch_all(pool)
                .await?
                .iter()
                .map(run_from_row)
                .collect()
        })
    }

    /// Records the state of the run's communication schema (it is not in the event log).
    pub async fn set_run_state(&self, id: &RunId, state: &str) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        let updated = with_pool!(self, |pool, _begin| {
            sqlx::query("UPDATE runs SET state = $2, updated_at = $3 WHERE id = $1")
                .bind(id.as_str())
                .bind(state)
                .bind(now().0)
                .execute(pool)
                .await?
                .rows_affected()
        });
        if updated == 0 {
            return Err(StoreError::RunNotFound(id.to_string()));
        }
        Ok(())
    }
}

/// The `status` and `awaiting` columns of a status.
pub(crate) fn status_columns(status: RunStatus) -> (&'static str, Option<&'static str>) {
    let awaiting = match status {
        RunStatus::Awaiting(awaiting) => Some(match awaiting {
            agentwire_core::Awaiting::Approval => "approval",
            agentwire_core::Awaiting::FunctionOutput => "function_output",
            agentwire_core::Awaiting::Input => "input",
        }),
        _ => None,
    };
    (status.name(), awaiting)
}

/// The statuses of a run that has not ended, as an SQL list.
pub(crate) const OPEN_STATUSES: &str = "('created', 'queued', 'in_progress', 'awaiting')";

/// A seq as the database stores it (BIGINT is signed).
pub(crate) fn seq_to_db(seq: u64) -> Result<i64, StoreError> {
    i64::try_from(seq).map_err(|_| StoreError::Corrupt(format!("seq {seq} is out of range")))
}

pub(crate) fn run_from_row<R>(row: &R) -> Result<RunRecord, StoreError>
where
    R: Row,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let text = |column: &str| row.try_get::<Option<String>, _>(column);
    let status = text("status")?.unwrap_or_default();
    let awaiting = text("awaiting")?;
    let status: RunStatus =
        serde_json::from_value(serde_json::json!({"status": status, "awaiting": awaiting}))?;
    let json_of = |column: &str| -> Result<Option<serde_json::Value>, StoreError> {
        text(column)?
            .map(|text| serde_json::from_str(&text).map_err(StoreError::from))
            .transpose()
    };
    let last_seq = row.try_get::<i64, _>("last_seq")?;
    Ok(RunRecord {
        id: RunId::from(row.try_get::<String, _>("id")?),
        session_id: text("session_id")?.map(SessionId::from),
        owner: text("owner")?.and_then(owner_of),
        agent: row.try_get("agent")?,
        node: row.try_get("node")?,
        status,
        state: text("state")?,
        usage: json_of("usage")?.map(serde_json::from_value).transpose()?,
        error: json_of("error")?.map(serde_json::from_value).transpose()?,
        last_seq: u64::try_from(last_seq).unwrap_or(0),
        created_at: Timestamp(row.try_get("created_at")?),
        updated_at: Timestamp(row.try_get("updated_at")?),
    })
}
