//! Group commit: the writes of many runs in ONE transaction. A server streaming thousands of
//! runs starts runs, appends their events and adds their output to sessions all the time; one
//! transaction per write (on SQLite, each waiting its turn for the single writer, and each a
//! dozen hand-offs to the database thread) made run starts queue behind each other. Here a
//! [`Group`] costs a fixed number of statements however many runs it carries: every kind of
//! row is written by multi-row statements cut into a few fixed sizes ([`fixed_chunks`]).
//!
//! A write that cannot be done (a run id that is taken, a session or run that is gone) is
//! answered on its own, in [`Written`], and does not fail the group.

use std::collections::{HashMap, HashSet};

use sqlx::{QueryBuilder, Row};

use agentwire_core::{Message, RunId, SessionId};

use crate::error::StoreError;
use crate::event_log::{EventBatch, merge_runs};
use crate::run::{OPEN_STATUSES, RunRecord, RunRow, status_columns};
use crate::session::message_texts;
use crate::store::{Connection, Store, now, with_connection};

/// A run's new status columns: id, seq, status, awaiting, error, usage.
type StatusUpdate<'a> = (
    &'a str,
    i64,
    &'a str,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
);

/// The sizes a statement's rows are cut into, one statement each (at most fourteen parameters
/// a row: 2,048 rows stay below SQLite's 32,766-parameter limit; every statement is a round
/// trip to the database, on SQLite a hand-off to its thread and back, so a group takes as few
/// as it can: the powers of two, at most one of each). Fixed sizes mean a bounded set of
/// distinct statements, which the connection prepares once and keeps (the store's statement
/// cache holds them all); a statement sized to each group would be prepared anew every time,
/// and preparing costs more than running it.
const CHUNK_SIZES: [usize; 12] = [2048, 1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1];

/// The writes of one transaction. Each part may be empty.
#[derive(Debug, Default)]
pub struct Group<'a> {
    /// Runs to begin: the session (created, owned by the run's owner, if new), the run's row
    /// and its input at the end of the session's history, as [`Store::start_run`].
    pub starts: Vec<(&'a RunRecord, &'a [Message])>,
    /// Messages to add at the end of a session's history, as [`Store::append_messages`].
    pub appends: Vec<(&'a SessionId, &'a [Message])>,
    /// Runs' events, as [`Store::append_event_batches`]; one run's batches in the order given.
    pub batches: Vec<&'a EventBatch>,
    /// The node writing, if it writes only the runs it holds: a batch of a run that another
    /// node has taken over ([`Store::take_over`]) is refused as one of a run that ended.
    pub node: Option<&'a str>,
}

/// How a start of a [`Group`] fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Started {
    /// The run (and its session, if new) and its input are written.
    Done,
    /// Its run id was taken: nothing of it was written.
    RunExists,
    /// Its session belongs to another owner: nothing of it was written.
    SessionOwned,
}

/// What a committed [`Group`] did, write by write.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// For each start, in order, how it fared.
    pub started: Vec<Started>,
    /// For each append, in order: false when its session does not exist.
    pub appended: Vec<bool>,
    /// The runs of `batches` that do not exist (their session was deleted) or have ended (taken
    /// for dead, another node ended them): their batches were skipped.
    pub gone: Vec<RunId>,
}

/// Writes groups on one connection that it keeps (see [`Store::group_writer`]); a connection
/// that failed is replaced on the next call.
#[derive(Debug)]
pub struct GroupWriter {
    store: Store,
    connection: Option<Connection>,
}

impl GroupWriter {
    /// As [`Store::write_group`], on this writer's connection.
    pub async fn write(&mut self, group: &Group<'_>) -> Result<Written, StoreError> {
        let mut connection = match self.connection.take() {
            Some(connection) => connection,
            None => self.store.connection().await?,
        };
        let result = self.store.write_group_on(&mut connection, group).await;
        if result.is_ok() {
            self.connection = Some(connection);
        }
        result
    }

    /// Gives the connection back to the pool (the next write takes one again): a writer with
    /// nothing to do should not keep [`Store::close`] waiting.
    pub fn release(&mut self) {
        self.connection = None;
    }
}

/// A message as a row: session, position, message id, the run it is the input of, JSON.
type MessageRow<'a> = (&'a str, i64, Option<&'a str>, Option<&'a str>, &'a str);

/// A start as rows.
struct StartRows<'a> {
    row: RunRow<'a>,
    session_id: Option<&'a SessionId>,
    texts: Vec<(Option<&'a str>, String)>,
}

impl Store {
    /// Commits a [`Group`] in ONE transaction: when this returns `Ok`, every write it reports
    /// done is committed; on an `Err`, none is. Listeners hear a [`crate::Notice::Events`] for
    /// each run whose events were appended, after the commit.
    pub async fn write_group(&self, group: &Group<'_>) -> Result<Written, StoreError> {
        let mut connection = self.connection().await?;
        self.write_group_on(&mut connection, group).await
    }

    /// A writer of groups on a connection of its own: what a process that writes all the time
    /// should use. On SQLite a connection keeps its page cache only while no other connection
    /// writes, so a writer that always takes the same one finds the pages it touched last time
    /// still cached (through the pool it gets another one, whose cache the last commit made
    /// stale, and reads them all again).
    pub fn group_writer(&self) -> GroupWriter {
        GroupWriter {
            store: self.clone(),
            connection: None,
        }
    }

    async fn write_group_on(
        &self,
        connection: &mut Connection,
        group: &Group<'_>,
    ) -> Result<Written, StoreError> {
        let starts = group
            .starts
            .iter()
            .map(|(run, input)| {
                Ok(StartRows {
                    row: RunRow::new(run)?,
                    session_id: run.session_id.as_ref(),
                    texts: message_texts(input)?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let appends = group
            .appends
            .iter()
            .map(|(session_id, messages)| Ok((*session_id, message_texts(messages)?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        // One entry per run, in id order: a run's row is updated once per statement, and rows
        // are locked in one order, so two writers sharing a database cannot deadlock.
        let prepared = merge_runs(&group.batches);
        if starts.is_empty() && appends.is_empty() && prepared.is_empty() {
            return Ok(Written::default());
        }
        let updated_at = now().0;
        // Sessions the starts name, each once (PostgreSQL refuses to upsert a row twice in one
        // statement), with the owner and time of the first start naming it.
        let mut seen = HashSet::new();
        let sessions: Vec<(&str, Option<&str>, i64)> = starts
            .iter()
            .filter_map(|start| {
                let id = start.session_id?.as_str();
                seen.insert(id).then_some((
                    id,
                    start.row.run.owner.as_deref(),
                    start.row.run.created_at.0,
                ))
            })
            .collect();
        let _turn = self.write_turn().await;
        let (inserted, owners, found_sessions, found_runs) = with_connection!(
            connection,
            |connection, begin| {
                let mut tx = sqlx::Connection::begin_with(&mut **connection, begin).await?;

                // 1. The starts: their sessions, then their runs (the ids that were free).
                for chunk in fixed_chunks(&sessions) {
                    let mut upsert = QueryBuilder::new(
                        "INSERT INTO sessions (id, owner, created_at, updated_at) ",
                    );
                    upsert.push_values(chunk, |mut row, (id, owner, created_at)| {
                        row.push_bind(*id)
                            .push_bind(*owner)
                            .push_bind(*created_at)
                            .push_bind(*created_at);
                    });
                    // Another owner's session is left as it is.
                    upsert.push(
                        " ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at \
                         WHERE sessions.owner IS NOT DISTINCT FROM excluded.owner",
                    );
                    upsert.build().execute(&mut *tx).await?;
                }
                // A run joins a session only if it has the session's owner: a session id is no
                // way into another key's conversation.
                let session_ids: Vec<&str> = sessions.iter().map(|(id, ..)| *id).collect();
                let mut owners: HashMap<String, Option<String>> = HashMap::new();
                for chunk in fixed_chunks(&session_ids) {
                    let mut select =
                        QueryBuilder::new("SELECT id, owner FROM sessions WHERE id IN (");
                    let mut ids = select.separated(", ");
                    for id in chunk {
                        ids.push_bind(*id);
                    }
                    select.push(")");
                    for row in select.build().fetch_all(&mut *tx).await? {
                        owners.insert(row.try_get(0)?, row.try_get(1)?);
                    }
                }
                let owned: Vec<&StartRows<'_>> = starts
                    .iter()
                    .filter(|start| {
                        start.session_id.is_none_or(|id| {
                            owners.get(id.as_str()).is_some_and(|owner| {
                                owner.as_deref() == start.row.run.owner.as_deref()
                            })
                        })
                    })
                    .collect();
                let mut inserted: HashSet<String> = HashSet::with_capacity(starts.len());
                for chunk in fixed_chunks(&owned) {
                    let mut insert = QueryBuilder::new(
                        "INSERT INTO runs (id, session_id, owner, agent, node, status, awaiting, \
                         state, usage, error, status_seq, last_seq, created_at, updated_at) ",
                    );
                    insert.push_values(chunk, |mut row, start| {
                        let (run, rows) = (start.row.run, &start.row);
                        row.push_bind(run.id.as_str())
                            .push_bind(run.session_id.as_ref().map(SessionId::as_str))
                            .push_bind(run.owner.as_deref())
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
                    insert.push(" ON CONFLICT (id) DO NOTHING RETURNING id");
                    for row in insert.build().fetch_all(&mut *tx).await? {
                        inserted.insert(row.try_get::<String, _>(0)?);
                    }
                }

                // 2. The appends' sessions: touched (which locks their rows, so no other writer
                // appends to them until this commits), and found or not.
                let append_ids: Vec<&str> = appends.iter().map(|(id, _)| id.as_str()).collect();
                let mut found_sessions: HashSet<String> = HashSet::with_capacity(appends.len());
                for chunk in fixed_chunks(&append_ids) {
                    let mut touch = QueryBuilder::new("UPDATE sessions SET updated_at = ");
                    touch.push_bind(updated_at).push(" FROM (VALUES ");
                    let mut values = touch.separated(", ");
                    for id in chunk {
                        values
                            .push("(CAST(")
                            .push_bind_unseparated(*id)
                            .push_unseparated(" AS TEXT))");
                    }
                    touch.push(") AS v WHERE sessions.id = v.column1 RETURNING sessions.id");
                    for row in touch.build().fetch_all(&mut *tx).await? {
                        found_sessions.insert(row.try_get::<String, _>(0)?);
                    }
                }

                // 3. The messages, the starts' inputs then the appends, each at the end of its
                // session's history (the session rows are locked: the ends cannot move).
                // Each row: session, message id, the run it is the input of, JSON.
                let mut messages: Vec<(&str, Option<&str>, Option<&str>, &str)> = Vec::new();
                for start in &starts {
                    let (Some(session_id), true) = (
                        start.session_id,
                        inserted.contains(start.row.run.id.as_str()),
                    ) else {
                        continue;
                    };
                    let run = Some(start.row.run.id.as_str());
                    messages.extend(
                        start
                            .texts
                            .iter()
                            .map(|(id, text)| (session_id.as_str(), *id, run, text.as_str())),
                    );
                }
                for (session_id, texts) in &appends {
                    if found_sessions.contains(session_id.as_str()) {
                        messages.extend(
                            texts
                                .iter()
                                .map(|(id, text)| (session_id.as_str(), *id, None, text.as_str())),
                        );
                    }
                }
                let mut ends: HashMap<String, i64> = HashMap::new();
                let mut named: Vec<&str> = messages.iter().map(|(session, ..)| *session).collect();
                named.sort_unstable();
                named.dedup();
                for chunk in fixed_chunks(&named) {
                    let mut last = QueryBuilder::new(
                        "SELECT session_id, MAX(position) FROM messages WHERE session_id IN (",
                    );
                    let mut ids = last.separated(", ");
                    for id in chunk {
                        ids.push_bind(*id);
                    }
                    last.push(") GROUP BY session_id");
                    for row in last.build().fetch_all(&mut *tx).await? {
                        ends.insert(row.try_get(0)?, row.try_get(1)?);
                    }
                }
                let rows: Vec<MessageRow<'_>> = messages
                    .iter()
                    .map(|(session, id, run, text)| {
                        let end = ends.entry((*session).to_owned()).or_insert(-1);
                        *end += 1;
                        (*session, *end, *id, *run, *text)
                    })
                    .collect();
                for chunk in fixed_chunks(&rows) {
                    let mut insert = QueryBuilder::new(
                        "INSERT INTO messages (session_id, position, message_id, input_of, message) ",
                    );
                    insert.push_values(chunk, |mut row, (session, position, id, run, text)| {
                        row.push_bind(*session)
                            .push_bind(*position)
                            .push_bind(*id)
                            .push_bind(*run)
                            .push_bind(*text);
                    });
                    insert.build().execute(&mut *tx).await?;
                }

                // 4. The events: the runs' rows first (they say which runs exist, and lock them,
                // so batches of one run are written one after the other), then the events, then
                // the status columns of the runs whose batches carry a status.
                let mut found_runs = HashSet::with_capacity(prepared.len());
                for chunk in fixed_chunks(&prepared) {
                    let mut update = QueryBuilder::new("UPDATE runs SET updated_at = ");
                    update.push_bind(updated_at).push(
                        ", last_seq = CASE WHEN last_seq < v.column2 THEN v.column2 ELSE last_seq END, \
                         seq_reserved = CASE WHEN seq_reserved < v.column3 THEN v.column3 \
                         ELSE seq_reserved END FROM (VALUES ",
                    );
                    let mut values = update.separated(", ");
                    for entry in chunk {
                        values
                            .push("(CAST(")
                            .push_bind_unseparated(entry.run_id.as_str())
                            .push_unseparated(" AS TEXT), CAST(")
                            .push_bind_unseparated(entry.seqs.1)
                            .push_unseparated(" AS BIGINT), CAST(")
                            .push_bind_unseparated(entry.reserved)
                            .push_unseparated(" AS BIGINT))");
                    }
                    // A run that has ended takes no more events: its node was taken for dead
                    // and another ended it, so the node's late writes are refused.
                    update.push(") AS v WHERE runs.id = v.column1 AND runs.status IN ");
                    update.push(OPEN_STATUSES);
                    // Nor one another node has taken over (see `Group::node`).
                    if let Some(node) = group.node {
                        update.push(" AND runs.node = ").push_bind(node);
                    }
                    // The count, not `RETURNING`: each row returned is a hand-off from sqlx's
                    // SQLite thread, and this statement names every streaming run.
                    let updated = update.build().execute(&mut *tx).await?.rows_affected();
                    if usize::try_from(updated).is_ok_and(|updated| updated == chunk.len()) {
                        found_runs
                            .extend(chunk.iter().map(|entry| entry.run_id.as_str().to_owned()));
                        continue;
                    }
                    // Some run is gone (its session was deleted) or ended: find which, one by
                    // one (rare).
                    for entry in chunk {
                        let exists = sqlx::query(
                            "SELECT 1 FROM runs WHERE id = $1 \
                             AND status IN ('created', 'queued', 'in_progress', 'awaiting') \
                             AND (CAST($2 AS TEXT) IS NULL OR node = $2)",
                        )
                        .bind(entry.run_id.as_str())
                        .bind(group.node)
                        .fetch_optional(&mut *tx)
                        .await?;
                        if exists.is_some() {
                            found_runs.insert(entry.run_id.as_str().to_owned());
                        }
                    }
                }
                let rows: Vec<(&str, i64, i64, &str)> = prepared
                    .iter()
                    .filter(|entry| found_runs.contains(entry.run_id.as_str()))
                    .map(|entry| {
                        let (first_seq, last_seq) = entry.seqs;
                        (entry.run_id.as_str(), last_seq, first_seq, &*entry.events)
                    })
                    .collect();
                for chunk in fixed_chunks(&rows) {
                    let mut insert = QueryBuilder::new(
                        "INSERT INTO event_batches (run_id, last_seq, first_seq, events) ",
                    );
                    insert.push_values(chunk, |mut row, (run_id, last_seq, first_seq, events)| {
                        row.push_bind(*run_id)
                            .push_bind(*last_seq)
                            .push_bind(*first_seq)
                            .push_bind(*events);
                    });
                    // A retried batch is the same batch: stored once.
                    insert.push(" ON CONFLICT (run_id, last_seq) DO NOTHING");
                    insert.build().execute(&mut *tx).await?;
                }
                // One statement for every status, not one per run: each statement is a round
                // trip to the database (on SQLite, two thread hand-offs on a busy machine), and
                // hundreds of runs start or end in one group under load.
                let statuses: Vec<StatusUpdate<'_>> = prepared
                    .iter()
                    .filter(|entry| found_runs.contains(entry.run_id.as_str()))
                    .filter_map(|entry| {
                        let (seq, status, error, usage) = entry.last_status?;
                        let (status, awaiting) = status_columns(*status);
                        Some((
                            entry.run_id.as_str(),
                            *seq,
                            status,
                            awaiting,
                            error.as_deref(),
                            usage.as_deref(),
                        ))
                    })
                    .collect();
                for chunk in fixed_chunks(&statuses) {
                    let mut update = QueryBuilder::new(
                        "UPDATE runs SET status = v.column3, awaiting = v.column4, \
                         error = v.column5, usage = COALESCE(v.column6, runs.usage), \
                         status_seq = v.column2, checkpoint = NULL FROM (VALUES ",
                    );
                    let mut values = update.separated(", ");
                    for (run_id, seq, status, awaiting, error, usage) in chunk {
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
                            .push_bind_unseparated(*error)
                            .push_unseparated(" AS TEXT), CAST(")
                            .push_bind_unseparated(*usage)
                            .push_unseparated(" AS TEXT))");
                    }
                    update.push(") AS v WHERE runs.id = v.column1 AND runs.status_seq < v.column2");
                    update.build().execute(&mut *tx).await?;
                }
                // Runs that wait from their batch's last event on keep their checkpoint (one
                // statement each: a run waits a few times at most, not once per batch).
                for entry in prepared.iter().filter(|entry| {
                    entry.checkpoint.is_some() && found_runs.contains(entry.run_id.as_str())
                }) {
                    sqlx::query(
                        "UPDATE runs SET checkpoint = $2, seq_reserved = $3 WHERE id = $1 \
                         AND status = 'awaiting' AND status_seq = $3",
                    )
                    .bind(entry.run_id.as_str())
                    .bind(entry.checkpoint)
                    .bind(entry.seqs.1)
                    .execute(&mut *tx)
                    .await?;
                }
                if self.is_postgres() {
                    // Delivered to listeners when (and only if) the transaction commits.
                    let notices = prepared
                        .iter()
                        .filter(|entry| found_runs.contains(entry.run_id.as_str()))
                        .map(|entry| serde_json::to_string(&entry.notice()))
                        .collect::<Result<Vec<_>, _>>()?;
                    for chunk in fixed_chunks(&notices) {
                        let mut notify = QueryBuilder::new("SELECT pg_notify(");
                        notify
                            .push_bind(crate::notice::CHANNEL)
                            .push(", v.column1) FROM (VALUES ");
                        let mut values = notify.separated(", ");
                        for text in chunk {
                            values
                                .push("(")
                                .push_bind_unseparated(text.as_str())
                                .push_unseparated(")");
                        }
                        notify.push(") AS v");
                        notify.build().execute(&mut *tx).await?;
                    }
                }
                tx.commit().await?;
                (inserted, owners, found_sessions, found_runs)
            }
        );
        if !self.is_postgres() {
            for entry in prepared
                .iter()
                .filter(|entry| found_runs.contains(entry.run_id.as_str()))
            {
                // No receiver is not an error: nobody is streaming the run.
                let _ = self.local.send(entry.notice());
            }
        }
        Ok(Written {
            started: starts
                .iter()
                .map(|start| {
                    let owner = start.row.run.owner.as_deref();
                    match start.session_id.and_then(|id| owners.get(id.as_str())) {
                        _ if inserted.contains(start.row.run.id.as_str()) => Started::Done,
                        Some(session_owner) if session_owner.as_deref() != owner => {
                            Started::SessionOwned
                        }
                        _ => Started::RunExists,
                    }
                })
                .collect(),
            appended: appends
                .iter()
                .map(|(id, _)| found_sessions.contains(id.as_str()))
                .collect(),
            gone: prepared
                .iter()
                .filter(|entry| !found_runs.contains(entry.run_id.as_str()))
                .map(|entry| entry.run_id.clone())
                .collect(),
        })
    }
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
