//! A session's inbox: the messages a client sent into a busy session, in order, and what
//! became of each (see the `session_inputs` migration). The rows are the truth, whichever node
//! took the message and whichever starts its run: a message is written down before it is
//! acknowledged, and [`Store::claim_next`] hands each queued one to exactly one run start.
//!
//! Decided: claims lock the session's row (PostgreSQL) or take the single writer (SQLite), so
//! two nodes that both see the session free cannot both start a run of it, and the message
//! that starts a run is always the first still queued: the session's order is the inbox's.

use agentwire_core::{InputMode, Message, RunId, SessionId};

use crate::error::StoreError;
use crate::notice::Notice;
use crate::owners::{owner_column, owner_of};
use crate::store::{Store, now, with_pool};

/// Runs that have ended, in SQL.
const ENDED: &str = "('completed', 'failed', 'canceled', 'incomplete', 'rejected')";

/// A message in a session's inbox.
#[derive(Clone, Debug, PartialEq)]
pub struct InboxEntry {
    /// The session's owner; `None` without auth.
    pub owner: Option<String>,
    /// The session.
    pub session_id: SessionId,
    /// The client's name for it.
    pub client_message_id: String,
    /// Its place in the session's inbox, from 1.
    pub position: i64,
    /// The agent that answers it.
    pub agent: String,
    /// What the client asked for it.
    pub mode: InputMode,
    /// The message.
    pub message: Message,
    /// Where it stands.
    pub state: InboxState,
    /// The run it went to, or is going to.
    pub run_id: Option<RunId>,
    /// The step at which the run took it (0: it is the run's input).
    pub step: Option<u32>,
    /// Why it was not delivered.
    pub reason: Option<String>,
    /// For a rollback: the run that leaves the history before it runs.
    pub rollback_of: Option<RunId>,
    /// When it came, in ms since the epoch.
    pub created_at: i64,
}

/// Where an inbox message stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InboxState {
    /// It waits for the session to be free.
    Queued,
    /// A node is starting its run.
    Starting,
    /// It was given to the run going on, to take at its next step.
    Steering,
    /// A run has it.
    Delivered,
    /// It will not be delivered (`reason` says why).
    NotDelivered,
}

impl InboxState {
    /// The state as the row spells it.
    pub fn name(self) -> &'static str {
        match self {
            InboxState::Queued => "queued",
            InboxState::Starting => "starting",
            InboxState::Steering => "steering",
            InboxState::Delivered => "delivered",
            InboxState::NotDelivered => "not_delivered",
        }
    }

    fn from_name(name: &str) -> Result<Self, StoreError> {
        Ok(match name {
            "queued" => InboxState::Queued,
            "starting" => InboxState::Starting,
            "steering" => InboxState::Steering,
            "delivered" => InboxState::Delivered,
            "not_delivered" => InboxState::NotDelivered,
            other => return Err(StoreError::Corrupt(format!("inbox state {other:?}"))),
        })
    }
}

/// A message to write down in a session's inbox.
#[derive(Debug)]
pub struct NewInboxEntry<'a> {
    /// The session's owner.
    pub owner: Option<&'a str>,
    /// The session; it must exist.
    pub session_id: &'a SessionId,
    /// The client's name for it.
    pub client_message_id: &'a str,
    /// The agent that answers it.
    pub agent: &'a str,
    /// What the client asked for it.
    pub mode: InputMode,
    /// The message.
    pub message: &'a Message,
    /// Where it starts: `queued`, or `steering` (given to `run_id` at once).
    pub state: InboxState,
    /// The run it goes to, when it is given to one at once.
    pub run_id: Option<&'a RunId>,
    /// For a rollback: the run to take out of the history first.
    pub rollback_of: Option<&'a RunId>,
}

/// Where an inbox message stands now (see [`Store::settle_inbox`]).
#[derive(Clone, Copy, Debug)]
pub struct Settlement<'a> {
    /// Its new state.
    pub state: InboxState,
    /// The run it went to; `None` keeps the one it names, if that run exists.
    pub run_id: Option<&'a RunId>,
    /// The step at which the run took it.
    pub step: Option<u32>,
    /// Why it was not delivered.
    pub reason: Option<&'a str>,
}

/// What writing a message down did.
#[derive(Debug)]
pub enum Posted {
    /// It is written down.
    New(InboxEntry),
    /// The client sent it before: the entry as it stands (nothing was written).
    Again(InboxEntry),
}

type Row = (
    String,
    String,
    String,
    i64,
    String,
    String,
    String,
    String,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    i64,
);

const COLUMNS: &str = "owner, session_id, client_message_id, position, agent, mode, message, \
                       outcome, run_id, step, reason, rollback_of, created_at";

fn entry(row: Row) -> Result<InboxEntry, StoreError> {
    let (owner, session_id, client_message_id, position, agent, mode, message, state, run_id) = (
        row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8,
    );
    Ok(InboxEntry {
        owner: owner_of(owner),
        session_id: SessionId::from(session_id),
        client_message_id,
        position,
        agent,
        mode: InputMode::from_name(&mode)
            .ok_or_else(|| StoreError::Corrupt(format!("inbox mode {mode:?}")))?,
        message: serde_json::from_str(&message)?,
        state: InboxState::from_name(&state)?,
        run_id: run_id.map(RunId::from),
        step: row.9.and_then(|step| u32::try_from(step).ok()),
        reason: row.10,
        rollback_of: row.11.map(RunId::from),
        created_at: row.12,
    })
}

impl Store {
    /// Writes `new` down at the end of its session's inbox and tells the nodes
    /// ([`Notice::Inbox`]); a message the client sent before (same session and client id) is
    /// answered as it stands instead. The session must exist.
    pub async fn post_inbox(&self, new: &NewInboxEntry<'_>) -> Result<Posted, StoreError> {
        let text = serde_json::to_string(new.message)?;
        let owner = owner_column(new.owner);
        let at = now().0;
        let _turn = self.write_turn().await;
        let postgres = self.is_postgres();
        let inserted = with_pool!(self, |pool, begin| {
            let mut connection = pool.acquire().await?;
            let mut tx = sqlx::Connection::begin_with(&mut *connection, begin).await?;
            if postgres {
                // One writer per session at a time: positions follow arrival.
                sqlx::query("SELECT id FROM sessions WHERE owner = $1 AND id = $2 FOR UPDATE")
                    .bind(owner)
                    .bind(new.session_id.as_str())
                    .execute(&mut *tx)
                    .await?;
            }
            let inserted = sqlx::query(
                "INSERT INTO session_inputs (session_id, client_message_id, position, agent, mode, \
                 message, outcome, run_id, rollback_of, created_at, updated_at, owner) \
                 SELECT $1, $2, COALESCE(MAX(position), 0) + 1, $3, $4, $5, $6, $7, $8, $9, $9, \
                 $10 FROM session_inputs WHERE owner = $10 AND session_id = $1 \
                 ON CONFLICT (owner, session_id, client_message_id) DO NOTHING",
            )
            .bind(new.session_id.as_str())
            .bind(new.client_message_id)
            .bind(new.agent)
            .bind(new.mode.name())
            .bind(&text)
            .bind(new.state.name())
            .bind(new.run_id.map(RunId::as_str))
            .bind(new.rollback_of.map(RunId::as_str))
            .bind(at)
            .bind(owner)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            inserted
        });
        drop(_turn);
        let found = self
            .inbox_entry(new.owner, new.session_id, new.client_message_id)
            .await?
            .ok_or_else(|| StoreError::SessionNotFound(new.session_id.to_string()))?;
        if inserted == 0 {
            return Ok(Posted::Again(found));
        }
        self.notify(&Notice::Inbox {
            owner: new.owner.map(str::to_owned),
            session_id: new.session_id.clone(),
        })
        .await?;
        Ok(Posted::New(found))
    }

    /// The message `client_message_id` of the inbox of `owner`'s session, if there is one.
    pub async fn inbox_entry(
        &self,
        owner: Option<&str>,
        session_id: &SessionId,
        client_message_id: &str,
    ) -> Result<Option<InboxEntry>, StoreError> {
        let row: Option<Row> = with_pool!(self, |pool, _begin| {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM session_inputs \
                 WHERE owner = $3 AND session_id = $1 AND client_message_id = $2"
            )))
            .bind(session_id.as_str())
            .bind(client_message_id)
            .bind(owner_column(owner))
            .fetch_optional(pool)
            .await?
        });
        row.map(entry).transpose()
    }

    /// The inbox of `owner`'s session, oldest first, after position `after`, at most `limit`
    /// entries.
    pub async fn inbox(
        &self,
        owner: Option<&str>,
        session_id: &SessionId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<InboxEntry>, StoreError> {
        let rows: Vec<Row> = with_pool!(self, |pool, _begin| {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM session_inputs WHERE owner = $4 AND session_id = $1 \
                 AND position > $2 ORDER BY position LIMIT $3"
            )))
            .bind(session_id.as_str())
            .bind(after)
            .bind(i64::from(limit))
            .bind(owner_column(owner))
            .fetch_all(pool)
            .await?
        });
        rows.into_iter().map(entry).collect()
    }

    /// The queued messages of `owner`'s session (of `mode` only, when given), oldest first.
    pub async fn queued(
        &self,
        owner: Option<&str>,
        session_id: &SessionId,
        mode: Option<InputMode>,
    ) -> Result<Vec<InboxEntry>, StoreError> {
        let rows: Vec<Row> = with_pool!(self, |pool, _begin| {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM session_inputs WHERE owner = $3 AND session_id = $1 \
                 AND outcome = 'queued' AND ($2 IS NULL OR mode = $2) ORDER BY position"
            )))
            .bind(session_id.as_str())
            .bind(mode.map(InputMode::name))
            .bind(owner_column(owner))
            .fetch_all(pool)
            .await?
        });
        rows.into_iter().map(entry).collect()
    }

    /// Claims the session's first queued message for a run `run_id` to be started now, if the
    /// session is free: no run of it going on or waiting, no other message being started, and
    /// no steer unsettled (one its run could not take goes back in the queue, ahead of those
    /// that came after it).
    /// The claimed entry is `starting` until [`Store::settle_inbox`] says how its start went.
    pub async fn claim_next(
        &self,
        owner: Option<&str>,
        session_id: &SessionId,
        run_id: &RunId,
    ) -> Result<Option<InboxEntry>, StoreError> {
        let owner_key = owner_column(owner);
        let at = now().0;
        let _turn = self.write_turn().await;
        let postgres = self.is_postgres();
        let claimed: Option<(String,)> = with_pool!(self, |pool, begin| {
            let mut connection = pool.acquire().await?;
            let mut tx = sqlx::Connection::begin_with(&mut *connection, begin).await?;
            if postgres {
                sqlx::query("SELECT id FROM sessions WHERE owner = $1 AND id = $2 FOR UPDATE")
                    .bind(owner_key)
                    .bind(session_id.as_str())
                    .execute(&mut *tx)
                    .await?;
            }
            let claimed = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "UPDATE session_inputs SET outcome = 'starting', run_id = $2, updated_at = $3 \
                 WHERE owner = $4 AND session_id = $1 AND outcome = 'queued' AND position = \
                   (SELECT MIN(position) FROM session_inputs \
                    WHERE owner = $4 AND session_id = $1 AND outcome = 'queued') \
                 AND NOT EXISTS (SELECT 1 FROM session_inputs \
                    WHERE owner = $4 AND session_id = $1 AND outcome IN ('starting', 'steering')) \
                 AND NOT EXISTS (SELECT 1 FROM runs \
                    WHERE owner = $4 AND session_id = $1 AND status NOT IN {ENDED}) \
                 RETURNING client_message_id"
            )))
            .bind(session_id.as_str())
            .bind(run_id.as_str())
            .bind(at)
            .bind(owner_key)
            .fetch_optional(&mut *tx)
            .await?;
            tx.commit().await?;
            claimed
        });
        drop(_turn);
        match claimed {
            Some((client_message_id,)) => {
                self.inbox_entry(owner, session_id, &client_message_id)
                    .await
            }
            None => Ok(None),
        }
    }

    /// Records where a message of the inbox of `owner`'s session stands now: delivered (to a
    /// run, at a step), not delivered (for a reason), back in the queue, or steering. A message
    /// never names a run that was not made: the run a claim named for it is forgotten when its
    /// start made none.
    pub async fn settle_inbox(
        &self,
        owner: Option<&str>,
        session_id: &SessionId,
        client_message_id: &str,
        settlement: Settlement<'_>,
    ) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        with_pool!(self, |pool, _begin| {
            sqlx::query(
                "UPDATE session_inputs SET outcome = $3, run_id = COALESCE($4, \
                   (SELECT runs.id FROM runs WHERE runs.id = session_inputs.run_id)), \
                 step = $5, reason = $6, updated_at = $7 \
                 WHERE owner = $8 AND session_id = $1 AND client_message_id = $2",
            )
            .bind(session_id.as_str())
            .bind(client_message_id)
            .bind(settlement.state.name())
            .bind(settlement.run_id.map(RunId::as_str))
            .bind(settlement.step.map(i64::from))
            .bind(settlement.reason)
            .bind(now().0)
            .bind(owner_column(owner))
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Marks the queued message `client_message_id` as given to the run `run_id` as a steer;
    /// false when it is no longer queued (another node took it).
    pub async fn take_for_steer(
        &self,
        owner: Option<&str>,
        session_id: &SessionId,
        client_message_id: &str,
        run_id: &RunId,
    ) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let taken = with_pool!(self, |pool, _begin| {
            sqlx::query(
                "UPDATE session_inputs SET outcome = 'steering', run_id = $3, updated_at = $4 \
                 WHERE owner = $5 AND session_id = $1 AND client_message_id = $2 \
                 AND outcome = 'queued'",
            )
            .bind(session_id.as_str())
            .bind(client_message_id)
            .bind(run_id.as_str())
            .bind(now().0)
            .bind(owner_column(owner))
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(taken > 0)
    }

    /// Sessions with a message queued, at most `limit`, by owner and id: where a sweep looks
    /// for a session left free with work waiting (its run's node stopped, a notice was missed).
    pub async fn sessions_with_queued(
        &self,
        limit: u32,
    ) -> Result<Vec<(Option<String>, SessionId)>, StoreError> {
        let rows: Vec<(String, String)> = with_pool!(self, |pool, _begin| {
            sqlx::query_as(
                "SELECT DISTINCT owner, session_id FROM session_inputs \
                 WHERE outcome = 'queued' LIMIT $1",
            )
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(owner, id)| (owner_of(owner), SessionId::from(id)))
            .collect())
    }

    /// Settles inbox messages whose node stopped before it could (older than `before`, ms since
    /// the epoch): a start that left no run goes back to the queue, one that made its run is
    /// delivered; a steer whose run has ended is delivered if its message joined the session's
    /// history, else not (`run_ended`). Returns how many it settled.
    pub async fn settle_stale_inbox(&self, before: i64) -> Result<u64, StoreError> {
        let at = now().0;
        let _turn = self.write_turn().await;
        let settled = with_pool!(self, |pool, begin| {
            let mut connection = pool.acquire().await?;
            let mut tx = sqlx::Connection::begin_with(&mut *connection, begin).await?;
            // A start that made no run forgets the run it named.
            let started = sqlx::query(
                "UPDATE session_inputs SET updated_at = $2, step = 0, outcome = CASE \
                   WHEN EXISTS (SELECT 1 FROM runs WHERE runs.id = session_inputs.run_id) \
                   THEN 'delivered' ELSE 'queued' END, \
                 run_id = (SELECT runs.id FROM runs WHERE runs.id = session_inputs.run_id) \
                 WHERE outcome = 'starting' AND updated_at < $1",
            )
            .bind(before)
            .bind(at)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            let steered = sqlx::query(sqlx::AssertSqlSafe(format!(
                "UPDATE session_inputs SET updated_at = $2, outcome = CASE \
                   WHEN EXISTS (SELECT 1 FROM messages m WHERE m.owner = session_inputs.owner \
                     AND m.session_id = session_inputs.session_id AND m.message_id = \
                     {message_id}) THEN 'delivered' ELSE 'not_delivered' END, \
                 reason = CASE WHEN EXISTS (SELECT 1 FROM messages m WHERE m.owner = \
                     session_inputs.owner AND m.session_id = \
                     session_inputs.session_id AND m.message_id = \
                     {message_id}) THEN NULL ELSE 'run_ended' END \
                 WHERE outcome = 'steering' AND updated_at < $1 AND NOT EXISTS \
                   (SELECT 1 FROM runs WHERE runs.id = session_inputs.run_id \
                    AND runs.status NOT IN {ENDED})",
                message_id = self.json_text("session_inputs.message", "id"),
            )))
            .bind(before)
            .bind(at)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            started + steered
        });
        Ok(settled)
    }

    /// SQL for the text of `key` in the JSON object `column` holds, in this store's dialect.
    fn json_text(&self, column: &str, key: &str) -> String {
        match self.is_postgres() {
            true => format!("({column}::json ->> '{key}')"),
            false => format!("json_extract({column}, '$.{key}')"),
        }
    }

    /// Takes the messages of `run_id` (its input, its output) out of its session's history:
    /// the run is rolled back. Its row and events stay, for whoever streamed it.
    pub async fn roll_back(
        &self,
        owner: Option<&str>,
        session_id: &SessionId,
        run_id: &RunId,
    ) -> Result<u64, StoreError> {
        let _turn = self.write_turn().await;
        let removed = with_pool!(self, |pool, _begin| {
            // From the run's first input to the next run's, if a later run has begun.
            sqlx::query(
                "DELETE FROM messages WHERE owner = $3 AND session_id = $1 AND position >= \
                 (SELECT MIN(position) FROM messages \
                   WHERE owner = $3 AND session_id = $1 AND input_of = $2) \
                 AND position < COALESCE((SELECT MIN(later.position) FROM messages later \
                   WHERE later.owner = $3 AND later.session_id = $1 \
                   AND later.input_of IS NOT NULL \
                   AND later.input_of <> $2 AND later.position > \
                   (SELECT MIN(position) FROM messages \
                     WHERE owner = $3 AND session_id = $1 AND input_of = $2)), \
                   9223372036854775807)",
            )
            .bind(session_id.as_str())
            .bind(run_id.as_str())
            .bind(owner_column(owner))
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(removed)
    }
}
