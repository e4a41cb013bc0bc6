//! Retention: ended runs' logs folded into their compact form ([`Store::compact_runs`]), and
//! old sessions and runs deleted with everything of theirs ([`Store::delete_before`]).
//!
//! Each call does a bounded amount of work in one short transaction (at most `limit` runs or
//! sessions), so the writers of live runs never wait long behind it; a caller loops until a
//! call finds less than its limit. Several nodes sharing a PostgreSQL database may run the
//! same retention at once: the rows a call works on are locked as they are chosen, and another
//! call skips them (`FOR UPDATE SKIP LOCKED`) instead of waiting or doing the work twice.
//! Locks are taken in the writers' order (sessions, then runs, then their batches), so neither
//! can deadlock with them.

use std::collections::HashMap;

use sqlx::{QueryBuilder, Row};

use agentwire_core::{Event, EventKind, Message, Timestamp};

use crate::compact::CompactLog;
use crate::error::StoreError;
use crate::event_log::StoredRow;
use crate::store::{Store, with_pool};

/// The statuses of runs that have ended: their logs take no more events.
const ENDED: &str = "('completed', 'failed', 'canceled', 'incomplete', 'rejected')";

/// What one [`Store::compact_runs`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compaction {
    /// Ended runs looked at (each is looked at once); fewer than the limit: none is left.
    pub runs: u64,
    /// Of those, the runs whose logs were folded (the others are kept as they were: a log that
    /// would not unfold exactly, or an empty one).
    pub folded: u64,
    /// The bytes of event JSON those runs' logs held before and after.
    pub bytes_before: u64,
    /// See `bytes_before`.
    pub bytes_after: u64,
}

/// What one [`Store::delete_before`] call deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deletion {
    /// Sessions, each with its messages, runs and their logs.
    pub sessions: u64,
    /// Runs without a session, each with its log.
    pub runs: u64,
}

impl Store {
    /// Folds the logs of up to `limit` ended runs (completed, failed, canceled, incomplete or
    /// rejected; never one awaiting the client) last updated before `before` into their compact
    /// form, in one transaction. A replay of a folded log is the replay of the original, event
    /// for event, from any seq (see `compact/`). A run is looked at once: calling again
    /// moves on to the next ones.
    pub async fn compact_runs(
        &self,
        before: Timestamp,
        limit: u32,
    ) -> Result<Compaction, StoreError> {
        let lock = self.skip_locked();
        let _turn = self.write_turn().await;
        with_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await?;
            let sql = format!(
                "SELECT id, owner, session_id FROM runs
                 WHERE compacted = 0 AND updated_at < $1 AND status IN {ENDED}
                 ORDER BY updated_at LIMIT $2{lock}"
            );
            let runs: Vec<RunSession> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(before.0)
                .bind(i64::from(limit))
                .fetch_all(&mut *tx)
                .await?;
            if runs.is_empty() {
                return Ok(Compaction::default());
            }
            let ids: Vec<String> = runs.iter().map(|(id, ..)| id.clone()).collect();
            let mut select =
                QueryBuilder::new("SELECT run_id, events FROM event_batches WHERE run_id IN (");
            push_ids(&mut select, &ids);
            select.push(") ORDER BY run_id, last_seq");
            let mut logs: HashMap<String, RunLog> = HashMap::new();
            for row in select.build().fetch_all(&mut *tx).await? {
                let text: &str = row.try_get(1)?;
                logs.entry(row.try_get(0)?).or_default().push(text)?;
            }

            // The messages of the runs' sessions that their logs complete, by session and id.
            let mut sessions: Vec<(&str, &str)> = runs
                .iter()
                .filter_map(|(_, owner, session)| Some((owner.as_str(), session.as_deref()?)))
                .collect();
            sessions.sort_unstable();
            sessions.dedup();
            let mut message_ids: Vec<String> =
                logs.values().flat_map(RunLog::message_ids).collect();
            message_ids.sort_unstable();
            message_ids.dedup();
            let mut history = History::default();
            if !sessions.is_empty() && !message_ids.is_empty() {
                let mut select = QueryBuilder::new(
                    "SELECT owner, session_id, message_id, position, message FROM messages \
                     WHERE (owner, session_id) IN (",
                );
                let mut pairs = select.separated(", ");
                for (owner, session) in &sessions {
                    pairs
                        .push("(")
                        .push_bind_unseparated(*owner)
                        .push_unseparated(", ")
                        .push_bind_unseparated(*session)
                        .push_unseparated(")");
                }
                select.push(") AND message_id IN (");
                push_ids(&mut select, &message_ids);
                select.push(")");
                for row in select.build().fetch_all(&mut *tx).await? {
                    let key = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
                    history
                        .entry(key)
                        .or_default()
                        .push((row.try_get(3)?, row.try_get(4)?));
                }
            }

            let (compaction, rows) = fold_logs(&runs, &logs, &history)?;
            if !rows.is_empty() {
                let folded: Vec<String> = rows.iter().map(|(id, ..)| id.clone()).collect();
                let mut delete = QueryBuilder::new("DELETE FROM event_batches WHERE run_id IN (");
                push_ids(&mut delete, &folded);
                delete.push(")");
                delete.build().execute(&mut *tx).await?;
                let mut insert = QueryBuilder::new(
                    "INSERT INTO event_batches (run_id, last_seq, first_seq, events) ",
                );
                insert.push_values(&rows, |mut row, (run_id, first_seq, last_seq, events)| {
                    row.push_bind(run_id.as_str())
                        .push_bind(*last_seq)
                        .push_bind(*first_seq)
                        .push_bind(events.as_str());
                });
                insert.build().execute(&mut *tx).await?;
            }
            let mut mark = QueryBuilder::new("UPDATE runs SET compacted = 1 WHERE id IN (");
            push_ids(&mut mark, &ids);
            mark.push(")");
            mark.build().execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(compaction)
        })
    }

    /// Deletes up to `limit` sessions last updated before `before`, none of whose runs was
    /// updated since, each with its messages, runs and their logs; then up to `limit` runs
    /// without a session last updated before `before`, with their logs. One transaction; the
    /// foreign keys' cascades delete what belongs to what is deleted, so nothing is left
    /// behind.
    pub async fn delete_before(
        &self,
        before: Timestamp,
        limit: u32,
    ) -> Result<Deletion, StoreError> {
        let lock = self.skip_locked();
        let _turn = self.write_turn().await;
        with_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await?;
            let sessions = format!(
                "DELETE FROM sessions WHERE (owner, id) IN (
                     SELECT owner, id FROM sessions s WHERE updated_at < $1 AND NOT EXISTS (
                         SELECT 1 FROM runs r WHERE r.owner = s.owner AND r.session_id = s.id
                         AND r.updated_at >= $1)
                     ORDER BY updated_at LIMIT $2{lock})"
            );
            let sessions = sqlx::query(sqlx::AssertSqlSafe(sessions))
                .bind(before.0)
                .bind(i64::from(limit))
                .execute(&mut *tx)
                .await?
                .rows_affected();
            let runs = format!(
                "DELETE FROM runs WHERE id IN (
                     SELECT id FROM runs WHERE session_id IS NULL AND updated_at < $1
                     ORDER BY updated_at LIMIT $2{lock})"
            );
            let runs = sqlx::query(sqlx::AssertSqlSafe(runs))
                .bind(before.0)
                .bind(i64::from(limit))
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            Ok(Deletion { sessions, runs })
        })
    }

    /// What a query choosing rows to work on appends so that another node's call skips them.
    fn skip_locked(&self) -> &'static str {
        if self.is_postgres() {
            " FOR UPDATE SKIP LOCKED"
        } else {
            ""
        }
    }
}

/// Messages of sessions by session (owner and id) and message id: their positions and JSON
/// text.
type History = HashMap<(String, String, String), Vec<(i64, String)>>;

/// A run as compaction reads it: its id, owner (column) and session.
type RunSession = (String, String, Option<String>);

/// A compacted log as a row: run id, first and last seq, the compact form's JSON.
type CompactRow = (String, i64, i64, String);

/// One run's log as its rows give it: every event once, in seq order.
#[derive(Default)]
struct RunLog {
    events: Vec<Event>,
    bytes: u64,
    /// Some row is in compact form already (a run compacted by an earlier version of this
    /// code would be marked): left as it is.
    compact: bool,
}

impl RunLog {
    /// Adds a row's events; those at or below the last seq taken are copies (see
    /// `Store::events_after`).
    fn push(&mut self, text: &str) -> Result<(), StoreError> {
        self.bytes += text.len() as u64;
        match StoredRow::parse(text)? {
            StoredRow::Batch(events) => {
                for event in events {
                    if self.events.last().is_none_or(|last| last.seq < event.seq) {
                        self.events.push(event);
                    }
                }
            }
            StoredRow::Compact(_) => self.compact = true,
        }
        Ok(())
    }

    /// The ids of the messages the log completes.
    fn message_ids(&self) -> impl Iterator<Item = String> + '_ {
        self.events
            .iter()
            .filter(|event| event.is_own())
            .filter_map(|event| match &event.kind {
                EventKind::MessageComplete { message } => Some(message.id.as_ref()?.to_string()),
                _ => None,
            })
    }
}

/// The runs' logs folded, as rows, and what that did.
fn fold_logs(
    runs: &[RunSession],
    logs: &HashMap<String, RunLog>,
    history: &History,
) -> Result<(Compaction, Vec<CompactRow>), StoreError> {
    let mut compaction = Compaction {
        runs: runs.len() as u64,
        ..Compaction::default()
    };
    let mut rows = Vec::new();
    for (run_id, owner, session_id) in runs {
        let Some(log) = logs.get(run_id).filter(|log| !log.compact) else {
            continue;
        };
        let (Some(first), Some(last)) = (log.events.first(), log.events.last()) else {
            continue;
        };
        // The position of a message the session's history holds exactly as the log does.
        let held = |message: &Message| {
            let key = (
                owner.clone(),
                session_id.clone()?,
                message.id.as_ref()?.to_string(),
            );
            let text = serde_json::to_string(message).ok()?;
            let (position, _) = history.get(&key)?.iter().find(|(_, held)| *held == text)?;
            u64::try_from(*position).ok()
        };
        let Some(compact) = CompactLog::fold(&log.events, held) else {
            continue;
        };
        let text = serde_json::to_string(&compact)?;
        compaction.folded += 1;
        compaction.bytes_before += log.bytes;
        compaction.bytes_after += text.len() as u64;
        rows.push((run_id.clone(), seq(first)?, seq(last)?, text));
    }
    Ok((compaction, rows))
}

/// `ids` as a list of bound parameters.
fn push_ids<DB: sqlx::Database>(query: &mut QueryBuilder<DB>, ids: &[String])
where
    for<'a> &'a str: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
{
    let mut list = query.separated(", ");
    for id in ids {
        list.push_bind(id.as_str());
    }
}

fn seq(event: &Event) -> Result<i64, StoreError> {
    crate::run::seq_to_db(event.seq)
}
