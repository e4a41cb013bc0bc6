//! The statements of a group commit, in the order they run. Each statement is a round trip to
//! the database (on SQLite a hand-off to its thread and back), and so is each row it returns;
//! so every kind of row is written by multi-row statements cut into a few fixed sizes
//! ([`fixed_chunks`]), and a statement returns rows only where its count cannot tell what it
//! found.
//!
//! The steps are written once for both databases, as the default methods of [`GroupSql`]: its
//! bounds say once what the steps need of a database.

use std::collections::{HashMap, HashSet};

use sqlx::postgres::PgQueryResult;
use sqlx::sqlite::SqliteQueryResult;
use sqlx::{
    ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Postgres, QueryBuilder, Row,
    Sqlite, Transaction, Type,
};

use super::{Found, GroupRows, StartRows};
use crate::error::StoreError;
use crate::notice::CHANNEL;
use crate::owners::owner_column;
use crate::run::{OPEN_STATUSES, status_columns};
use crate::webhook::StatusSet;

/// The sizes a statement's rows are cut into, one statement each (at most fourteen parameters
/// a row: 2,048 rows stay below SQLite's 32,766-parameter limit): the powers of two, at most
/// one of each. Fixed sizes mean a bounded set of distinct statements, which the connection
/// prepares once and keeps (the store's statement cache holds them all); a statement sized to
/// each group would be prepared anew every time, and preparing costs more than running it.
const CHUNK_SIZES: [usize; 12] = [2048, 1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1];

/// A database a group is written to.
pub(super) trait GroupSql: Database + Sized
where
    for<'t> &'t str: Encode<'t, Self> + Type<Self>,
    for<'t> Option<&'t str>: Encode<'t, Self> + Type<Self>,
    for<'t> i64: Encode<'t, Self> + Type<Self>,
    for<'r> String: Decode<'r, Self> + Type<Self>,
    for<'r> Option<String>: Decode<'r, Self> + Type<Self>,
    for<'c> &'c mut Self::Connection: Executor<'c, Database = Self>,
    usize: ColumnIndex<Self::Row>,
    Self::Arguments: Default + IntoArguments<Self>,
{
    /// Whether the commit itself tells the store's listeners of the events (PostgreSQL's
    /// `NOTIFY`; a SQLite store tells its own listeners once the commit is done).
    const NOTIFIES: bool;

    /// How many rows a statement changed.
    fn count(result: &Self::QueryResult) -> u64;

    /// Writes `rows` in the transaction `tx`: what the group found, write by write.
    async fn write(
        tx: &mut Transaction<'_, Self>,
        rows: &GroupRows<'_>,
    ) -> Result<Found, StoreError> {
        let mut found = Found::default();
        Self::start_sessions(tx, rows).await?;
        Self::insert_runs(tx, rows, &mut found).await?;
        Self::touch_sessions(tx, rows, &mut found).await?;
        Self::insert_messages(tx, rows, &found).await?;
        Self::update_runs(tx, rows, &mut found).await?;
        Self::insert_batches(tx, rows, &found).await?;
        Self::save_checkpoints(tx, rows, &found).await?;
        Self::save_shared_states(tx, rows, &found).await?;
        Self::queue_deliveries(tx, rows, &mut found).await?;
        if Self::NOTIFIES {
            Self::notify(tx, rows, &found).await?;
        }
        Ok(found)
    }

    /// The sessions the starts name, created if new. A session is its owner's: the same id
    /// named by another owner is another session, so a session id is no way into another key's
    /// conversation, and none blocks another key.
    async fn start_sessions(
        tx: &mut Transaction<'_, Self>,
        rows: &GroupRows<'_>,
    ) -> Result<(), StoreError> {
        // Each session once (PostgreSQL refuses to upsert a row twice in one statement), with
        // the time of the first start naming it.
        let mut seen = HashSet::new();
        let sessions: Vec<(&str, &str, i64)> = rows
            .starts
            .iter()
            .filter_map(|start| {
                let id = start.session_id?.as_str();
                let owner = owner_column(start.row.run.owner.as_deref());
                seen.insert((owner, id))
                    .then_some((id, owner, start.row.run.created_at.0))
            })
            .collect();
        for chunk in fixed_chunks(&sessions) {
            let mut upsert =
                QueryBuilder::new("INSERT INTO sessions (id, owner, created_at, updated_at) ");
            upsert.push_values(chunk, |mut row, (id, owner, created_at)| {
                row.push_bind(*id)
                    .push_bind(*owner)
                    .push_bind(*created_at)
                    .push_bind(*created_at);
            });
            upsert.push(" ON CONFLICT (owner, id) DO UPDATE SET updated_at = excluded.updated_at");
            upsert.build().execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// The runs of the starts, each if its id is free.
    async fn insert_runs(
        tx: &mut Transaction<'_, Self>,
        rows: &GroupRows<'_>,
        found: &mut Found,
    ) -> Result<(), StoreError> {
        let starts: Vec<&StartRows<'_>> = rows.starts.iter().collect();
        for chunk in fixed_chunks(&starts) {
            let mut insert = QueryBuilder::new(
                "INSERT INTO runs (id, session_id, owner, agent, node, status, awaiting, \
                 state, usage, error, status_seq, last_seq, created_at, updated_at) ",
            );
            insert.push_values(chunk, |mut row, start| {
                let (run, rows) = (start.row.run, &start.row);
                row.push_bind(run.id.as_str())
                    .push_bind(run.session_id.as_ref().map(|id| id.as_str()))
                    .push_bind(owner_column(run.owner.as_deref()))
                    .push_bind(run.agent.as_str())
                    .push_bind(run.node.as_str())
                    .push_bind(rows.status)
                    .push_bind(rows.awaiting)
                    .push_bind(run.state.as_deref())
                    .push_bind(rows.usage.as_deref())
                    .push_bind(rows.error.as_deref())
                    .push_bind(0_i64)
                    .push_bind(rows.last_seq)
                    .push_bind(run.created_at.0)
                    .push_bind(run.updated_at.0);
            });
            // Which ids were free only the rows can tell: a count would not say which.
            insert.push(" ON CONFLICT (id) DO NOTHING RETURNING id");
            for row in insert.build().fetch_all(&mut **tx).await? {
                found.inserted.insert(row.try_get(0)?);
            }
        }
        Ok(())
    }

    /// The appends' sessions, touched (which locks their rows, so no other writer appends to
    /// them until this commits) and given their new schema state where the append has one,
    /// and found or not.
    async fn touch_sessions(
        tx: &mut Transaction<'_, Self>,
        rows: &GroupRows<'_>,
        found: &mut Found,
    ) -> Result<(), StoreError> {
        let ids: Vec<(&str, &str, Option<&str>)> = rows
            .appends
            .iter()
            .map(|(owner, id, _, state)| (*owner, id.as_str(), *state))
            .collect();
        for chunk in fixed_chunks(&ids) {
            let touch = |returning: bool| {
                let mut touch = QueryBuilder::new("UPDATE sessions SET updated_at = ");
                touch.push_bind(rows.updated_at).push(
                    ", schema_state = COALESCE(v.column2, sessions.schema_state) FROM (VALUES ",
                );
                let mut values = touch.separated(", ");
                for (owner, id, state) in chunk {
                    values
                        .push("(CAST(")
                        .push_bind_unseparated(*id)
                        .push_unseparated(" AS TEXT), CAST(")
                        .push_bind_unseparated(*state)
                        .push_unseparated(" AS TEXT), CAST(")
                        .push_bind_unseparated(*owner)
                        .push_unseparated(" AS TEXT))");
                }
                touch.push(") AS v WHERE sessions.owner = v.column3 AND sessions.id = v.column1");
                if returning {
                    touch.push(" RETURNING sessions.owner, sessions.id");
                }
                touch
            };
            let touched = Self::count(&touch(false).build().execute(&mut **tx).await?);
            if count_is(touched, chunk.len()) {
                found.sessions.extend(
                    chunk
                        .iter()
                        .map(|(owner, id, _)| ((*owner).to_owned(), (*id).to_owned())),
                );
                continue;
            }
            // Some session is gone (or named twice): touch them again (the same time, so the
            // same rows) and read which were found.
            for row in touch(true).build().fetch_all(&mut **tx).await? {
                found.sessions.insert((row.try_get(0)?, row.try_get(1)?));
            }
        }
        Ok(())
    }

    /// The messages, the starts' inputs then the appends, each at the end of its session's
    /// history: the session rows are locked, so the ends cannot move, and the statement reads
    /// each end itself (rather than one more statement returning a row per session).
    async fn insert_messages(
        tx: &mut Transaction<'_, Self>,
        rows: &GroupRows<'_>,
        found: &Found,
    ) -> Result<(), StoreError> {
        let mut messages: Vec<MessageRow<'_>> = Vec::new();
        for start in &rows.starts {
            let (Some(session_id), true) = (
                start.session_id,
                found.inserted.contains(start.row.run.id.as_str()),
            ) else {
                continue;
            };
            let run = Some(start.row.run.id.as_str());
            let session = (
                owner_column(start.row.run.owner.as_deref()),
                session_id.as_str(),
            );
            messages.extend(
                start
                    .texts
                    .iter()
                    .map(|(id, text)| (session, *id, run, text.as_str())),
            );
        }
        for (owner, session_id, texts, _) in &rows.appends {
            if found.contains_session(owner, session_id) {
                let session = (*owner, session_id.as_str());
                messages.extend(
                    texts
                        .iter()
                        .map(|(id, text)| (session, *id, None, text.as_str())),
                );
            }
        }
        for chunk in fixed_chunks(&messages) {
            let mut insert = QueryBuilder::new(
                "INSERT INTO messages (session_id, position, message_id, input_of, message, \
                 owner) \
                 SELECT v.column1, COALESCE((SELECT MAX(position) FROM messages \
                 WHERE owner = v.column6 AND session_id = v.column1), -1) + v.column2, \
                 v.column3, v.column4, v.column5, v.column6 FROM (VALUES ",
            );
            // A message's place after its session's end, counted within the statement: its
            // subquery sees the messages as they were before it.
            let mut after_end: HashMap<(&str, &str), i64> = HashMap::new();
            let mut values = insert.separated(", ");
            for ((owner, session), id, run, text) in chunk {
                let place = after_end.entry((owner, session)).or_insert(0);
                *place += 1;
                values
                    .push("(CAST(")
                    .push_bind_unseparated(*session)
                    .push_unseparated(" AS TEXT), CAST(")
                    .push_bind_unseparated(*place)
                    .push_unseparated(" AS BIGINT), CAST(")
                    .push_bind_unseparated(*id)
                    .push_unseparated(" AS TEXT), CAST(")
                    .push_bind_unseparated(*run)
                    .push_unseparated(" AS TEXT), CAST(")
                    .push_bind_unseparated(*text)
                    .push_unseparated(" AS TEXT), CAST(")
                    .push_bind_unseparated(*owner)
                    .push_unseparated(" AS TEXT))");
            }
            insert.push(") AS v");
            insert.build().execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// The rows of the runs whose batches are written: the seqs they reached, and the status
    /// columns of those whose batch carries a status (an older status never overwrites a
    /// newer: a retried batch). Which runs exist and take events is what it finds; updating
    /// their rows locks them, so one run's batches are written one after the other.
    async fn update_runs(
        tx: &mut Transaction<'_, Self>,
        rows: &GroupRows<'_>,
        found: &mut Found,
    ) -> Result<(), StoreError> {
        // The status columns change where the batch has a newer status.
        const NEWER: &str = "WHEN v.column4 IS NOT NULL AND runs.status_seq < v.column5 THEN";
        for chunk in fixed_chunks(&rows.batches) {
            let mut update = QueryBuilder::new("UPDATE runs SET updated_at = ");
            update.push_bind(rows.updated_at).push(format!(
                ", last_seq = CASE WHEN last_seq < v.column2 THEN v.column2 ELSE last_seq END, \
                 seq_reserved = CASE WHEN seq_reserved < v.column3 THEN v.column3 \
                 ELSE seq_reserved END, \
                 status = CASE {NEWER} v.column4 ELSE runs.status END, \
                 awaiting = CASE {NEWER} v.column6 ELSE runs.awaiting END, \
                 error = CASE {NEWER} v.column7 ELSE runs.error END, \
                 usage = CASE {NEWER} COALESCE(v.column8, runs.usage) ELSE runs.usage END, \
                 checkpoint = CASE {NEWER} NULL ELSE runs.checkpoint END, \
                 state = COALESCE(v.column9, runs.state), \
                 status_seq = CASE {NEWER} v.column5 ELSE runs.status_seq END \
                 FROM (VALUES "
            ));
            let mut values = update.separated(", ");
            for batch in chunk {
                let status = batch.last_status.map(|(seq, status, error, usage)| {
                    let (status, awaiting) = status_columns(*status);
                    (*seq, status, awaiting, error.as_deref(), usage.as_deref())
                });
                values
                    .push("(CAST(")
                    .push_bind_unseparated(batch.run_id.as_str())
                    .push_unseparated(" AS TEXT), CAST(")
                    .push_bind_unseparated(batch.seqs.1)
                    .push_unseparated(" AS BIGINT), CAST(")
                    .push_bind_unseparated(batch.reserved)
                    .push_unseparated(" AS BIGINT), CAST(")
                    .push_bind_unseparated(status.map(|(_, status, ..)| status))
                    .push_unseparated(" AS TEXT), CAST(")
                    .push_bind_unseparated(status.map_or(0, |(seq, ..)| seq))
                    .push_unseparated(" AS BIGINT), CAST(")
                    .push_bind_unseparated(status.and_then(|(_, _, awaiting, ..)| awaiting))
                    .push_unseparated(" AS TEXT), CAST(")
                    .push_bind_unseparated(status.and_then(|(.., error, _)| error))
                    .push_unseparated(" AS TEXT), CAST(")
                    .push_bind_unseparated(status.and_then(|(.., usage)| usage))
                    .push_unseparated(" AS TEXT), CAST(")
                    .push_bind_unseparated(batch.run_state)
                    .push_unseparated(" AS TEXT))");
            }
            // A run that has ended takes no more events: its node was taken for dead and
            // another ended it, so the node's late writes are refused.
            update.push(") AS v WHERE runs.id = v.column1 AND runs.status IN ");
            update.push(OPEN_STATUSES);
            // Nor one another node has taken over (see `Group::node`).
            if let Some(node) = rows.node {
                update.push(" AND runs.node = ").push_bind(node);
            }
            let updated = Self::count(&update.build().execute(&mut **tx).await?);
            if count_is(updated, chunk.len()) {
                found
                    .runs
                    .extend(chunk.iter().map(|batch| batch.run_id.as_str().to_owned()));
                continue;
            }
            // Some run is gone (its session was deleted) or ended: find which, one by one
            // (rare).
            for batch in chunk {
                let exists = sqlx::query(
                    "SELECT 1 FROM runs WHERE id = $1 \
                     AND status IN ('created', 'queued', 'in_progress', 'awaiting') \
                     AND (CAST($2 AS TEXT) IS NULL OR node = $2)",
                )
                .bind(batch.run_id.as_str())
                .bind(rows.node)
                .fetch_optional(&mut **tx)
                .await?;
                if exists.is_some() {
                    found.runs.insert(batch.run_id.as_str().to_owned());
                }
            }
        }
        Ok(())
    }

    /// The events of the runs found.
    async fn insert_batches(
        tx: &mut Transaction<'_, Self>,
        rows: &GroupRows<'_>,
        found: &Found,
    ) -> Result<(), StoreError> {
        let batches: Vec<_> = rows.found_batches(found).collect();
        for chunk in fixed_chunks(&batches) {
            let mut insert = QueryBuilder::new(
                "INSERT INTO event_batches (run_id, last_seq, first_seq, events) ",
            );
            insert.push_values(chunk, |mut row, batch| {
                row.push_bind(batch.run_id.as_str())
                    .push_bind(batch.seqs.1)
                    .push_bind(batch.seqs.0)
                    .push_bind(&*batch.events);
            });
            // A retried batch is the same batch: stored once.
            insert.push(" ON CONFLICT (run_id, last_seq) DO NOTHING");
            insert.build().execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// The checkpoints of runs that wait from their batch's last event on (one statement
    /// each: a run waits a few times at most, not once per batch).
    async fn save_checkpoints(
        tx: &mut Transaction<'_, Self>,
        rows: &GroupRows<'_>,
        found: &Found,
    ) -> Result<(), StoreError> {
        for batch in rows.found_batches(found) {
            let Some(checkpoint) = batch.checkpoint else {
                continue;
            };
            sqlx::query(
                "UPDATE runs SET checkpoint = $2, seq_reserved = $3 WHERE id = $1 \
                 AND status = 'awaiting' AND status_seq = $3",
            )
            .bind(batch.run_id.as_str())
            .bind(checkpoint)
            .bind(batch.seqs.1)
            .execute(&mut **tx)
            .await?;
        }
        Ok(())
    }

    /// The shared states of the sessions of runs found whose batches changed them (one
    /// statement each: only a batch with state events carries one).
    async fn save_shared_states(
        tx: &mut Transaction<'_, Self>,
        rows: &GroupRows<'_>,
        found: &Found,
    ) -> Result<(), StoreError> {
        for batch in rows.found_batches(found) {
            let Some(state) = batch.shared_state else {
                continue;
            };
            let state = (state != "null").then_some(state);
            sqlx::query(
                "UPDATE sessions SET shared_state = $2, \
                 shared_state_version = shared_state_version + 1 \
                 FROM runs WHERE runs.id = $1 AND sessions.owner = runs.owner \
                 AND sessions.id = runs.session_id",
            )
            .bind(batch.run_id.as_str())
            .bind(state)
            .execute(&mut **tx)
            .await?;
        }
        Ok(())
    }

    /// A webhook delivery for each status change of the runs found and each webhook that hears
    /// of it (the run's own, or its owner's), in this transaction: a status that is stored has
    /// its deliveries queued. A retried batch queues none twice (their ids are the webhook, run
    /// and seq). See `delivery.rs`.
    async fn queue_deliveries(
        tx: &mut Transaction<'_, Self>,
        rows: &GroupRows<'_>,
        found: &mut Found,
    ) -> Result<(), StoreError> {
        let changes: Vec<(&str, i64, &str, Option<&str>, i64)> = rows
            .found_batches(found)
            .flat_map(|batch| {
                batch.statuses.iter().map(|(seq, status)| {
                    let (name, awaiting) = status_columns(*status);
                    let bit = StatusSet::of(*status).bits();
                    (batch.run_id.as_str(), *seq, name, awaiting, bit)
                })
            })
            .collect();
        for chunk in fixed_chunks(&changes) {
            let mut insert = QueryBuilder::new(
                "INSERT INTO webhook_deliveries (id, webhook_id, run_id, seq, status, awaiting, \
                 session_id, agent, created_at, next_attempt_at) \
                 SELECT w.id || ':' || r.id || ':' || CAST(v.column2 AS TEXT), w.id, r.id, \
                 v.column2, v.column3, v.column4, r.session_id, r.agent, ",
            );
            insert
                .push_bind(rows.updated_at)
                .push(", ")
                .push_bind(rows.updated_at)
                .push(" FROM (VALUES ");
            let mut values = insert.separated(", ");
            for (run_id, seq, status, awaiting, bit) in chunk {
                values
                    .push("(CAST(")
                    .push_bind_unseparated(*run_id)
                    .push_unseparated(" AS TEXT), CAST(")
                    .push_bind_unseparated(*seq)
                    .push_unseparated(" AS BIGINT), CAST(")
                    .push_bind_unseparated(*status)
                    .push_unseparated(" AS TEXT), CAST(")
                    .push_bind_unseparated(*awaiting)
                    .push_unseparated(" AS TEXT), CAST(")
                    .push_bind_unseparated(*bit)
                    .push_unseparated(" AS BIGINT))");
            }
            // The run's own webhooks, and its owner's that hear of every run of theirs. The
            // WHERE also tells SQLite that `ON CONFLICT` is the upsert's, not a join's.
            insert.push(
                ") AS v JOIN runs r ON r.id = v.column1 JOIN webhooks w \
                 ON (w.run_id = r.id OR (w.run_id IS NULL AND (w.owner = r.owner \
                 OR (w.owner IS NULL AND r.owner = '')))) \
                 WHERE (w.events & v.column5) <> 0 ON CONFLICT (id) DO NOTHING",
            );
            found.deliveries += Self::count(&insert.build().execute(&mut **tx).await?);
        }
        Ok(())
    }

    /// Tells listeners of the events written, when (and only if) the transaction commits.
    async fn notify(
        tx: &mut Transaction<'_, Self>,
        rows: &GroupRows<'_>,
        found: &Found,
    ) -> Result<(), StoreError> {
        let notices = rows
            .found_batches(found)
            .map(|batch| serde_json::to_string(&batch.notice()))
            .collect::<Result<Vec<_>, _>>()?;
        for chunk in fixed_chunks(&notices) {
            let mut notify = QueryBuilder::new("SELECT pg_notify(");
            notify.push_bind(CHANNEL).push(", v.column1) FROM (VALUES ");
            let mut values = notify.separated(", ");
            for text in chunk {
                values
                    .push("(")
                    .push_bind_unseparated(text.as_str())
                    .push_unseparated(")");
            }
            notify.push(") AS v");
            notify.build().execute(&mut **tx).await?;
        }
        Ok(())
    }
}

impl GroupSql for Sqlite {
    const NOTIFIES: bool = false;

    fn count(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }
}

impl GroupSql for Postgres {
    const NOTIFIES: bool = true;

    fn count(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }
}

/// A message row: its session (owner column and id), its id, the run it is the input of, its
/// JSON.
type MessageRow<'a> = (
    (&'a str, &'a str),
    Option<&'a str>,
    Option<&'a str>,
    &'a str,
);

/// Whether a statement's count of rows is `len`.
fn count_is(count: u64, len: usize) -> bool {
    usize::try_from(count).is_ok_and(|count| count == len)
}

/// `items` cut into pieces of the [`CHUNK_SIZES`], largest first.
fn fixed_chunks<T>(mut items: &[T]) -> Vec<&[T]> {
    let mut chunks = Vec::new();
    for size in CHUNK_SIZES {
        while items.len() >= size {
            let (chunk, rest) = items.split_at(size);
            chunks.push(chunk);
            items = rest;
        }
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_cut_into_the_fixed_sizes_and_none_is_lost() {
        let items: Vec<usize> = (0..1234).collect();
        let chunks = fixed_chunks(&items);
        let sizes: Vec<usize> = chunks.iter().map(|chunk| chunk.len()).collect();
        // 1234 = 1024 + 128 + 64 + 16 + 2: its binary digits.
        assert_eq!(sizes, [1024, 128, 64, 16, 2]);
        assert_eq!(chunks.concat(), items);
        assert!(fixed_chunks::<u8>(&[]).is_empty());
    }
}
