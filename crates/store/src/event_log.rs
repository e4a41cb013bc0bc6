//! The event log: every event of every run, by `(run_id, seq)`. Streams replay from it, and a
//! run's row follows the `run_status` events appended to it.

use std::collections::HashSet;

use sqlx::{QueryBuilder, Row};

use agentwire_core::{ErrorInfo, Event, EventKind, RunId, RunStatus};

use crate::error::StoreError;
use crate::notice::Notice;
use crate::run::{seq_to_db, status_columns};
use crate::store::{Connection, Store, now, with_connection, with_pool};

/// The sizes a group's rows are cut into, one statement each (at most three parameters a row,
/// far below SQLite's 32,766-parameter limit). Few fixed sizes mean few distinct statements,
/// which the connection prepares once and keeps; a statement sized to each group would be
/// prepared anew every time, and preparing costs more than running it.
const CHUNK_SIZES: [usize; 5] = [512, 128, 32, 8, 1];

/// The error code of runs that [`Store::mark_interrupted`] ended.
pub const INTERRUPTED: &str = "interrupted";

/// Appends event batches ([`Store::append_event_batches`]) on one connection that it keeps
/// (see [`Store::event_writer`]); a connection that failed is replaced on the next call.
#[derive(Debug)]
pub struct EventWriter {
    store: Store,
    connection: Option<Connection>,
}

impl EventWriter {
    /// As [`Store::append_event_batches`], on this writer's connection.
    pub async fn append_event_batches(
        &mut self,
        batches: &[(&RunId, &[Event])],
    ) -> Result<Vec<RunId>, StoreError> {
        let mut connection = match self.connection.take() {
            Some(connection) => connection,
            None => self.store.connection().await?,
        };
        let result = self.store.append_on(&mut connection, batches).await;
        if result.is_ok() {
            self.connection = Some(connection);
        }
        result
    }

    /// Gives the connection back to the pool (the next append takes one again): a writer
    /// with nothing to do should not keep [`Store::close`] waiting.
    pub fn release(&mut self) {
        self.connection = None;
    }
}

/// A run's status columns as a batch sets them: seq, status, error, usage.
type StatusRow = (i64, RunStatus, Option<String>, Option<String>);

/// One run's batch as rows for the database.
struct Prepared<'a> {
    run_id: &'a RunId,
    /// `(seq, event JSON)`, heartbeats left out.
    rows: Vec<(i64, String)>,
    max_seq: i64,
    /// The batch's latest `run_status`.
    last_status: Option<StatusRow>,
}

impl<'a> Prepared<'a> {
    /// `None` when the batch holds nothing to store (only heartbeats).
    fn new(run_id: &'a RunId, events: &[Event]) -> Result<Option<Self>, StoreError> {
        let mut prepared = Prepared {
            run_id,
            rows: Vec::with_capacity(events.len()),
            max_seq: i64::MIN,
            last_status: None,
        };
        prepared.add(events)?;
        Ok((!prepared.rows.is_empty()).then_some(prepared))
    }

    fn add(&mut self, events: &[Event]) -> Result<(), StoreError> {
        for event in events {
            if let EventKind::Heartbeat {} = event.kind {
                continue;
            }
            let seq = seq_to_db(event.seq)?;
            if let EventKind::RunStatus {
                status,
                error,
                usage,
            } = &event.kind
                && self
                    .last_status
                    .as_ref()
                    .is_none_or(|(last, ..)| *last < seq)
            {
                let error = error.as_ref().map(serde_json::to_string).transpose()?;
                let usage = usage.as_ref().map(serde_json::to_string).transpose()?;
                self.last_status = Some((seq, *status, error, usage));
            }
            self.max_seq = self.max_seq.max(seq);
            self.rows.push((seq, serde_json::to_string(event)?));
        }
        Ok(())
    }

    fn notice(&self) -> Notice {
        Notice::Events {
            run_id: self.run_id.clone(),
            seq: u64::try_from(self.max_seq).unwrap_or_default(),
        }
    }
}

impl Store {
    /// Appends a batch of a run's events in one transaction, and returns once it is committed.
    ///
    /// Idempotent: an event whose `(run_id, seq)` is stored already is skipped, so a retried
    /// batch cannot duplicate anything. Heartbeats are not stored (they take no place in a
    /// replay). When the batch holds a `run_status` event, the run's row takes its status, error
    /// and usage, unless a later one was stored before. Listeners hear a [`Notice::Events`] with
    /// the batch's last seq after the commit.
    pub async fn append_events(&self, run_id: &RunId, events: &[Event]) -> Result<(), StoreError> {
        let missing = self.append_event_batches(&[(run_id, events)]).await?;
        match missing.is_empty() {
            true => Ok(()),
            false => Err(StoreError::RunNotFound(run_id.to_string())),
        }
    }

    /// Appends the batches of many runs in ONE transaction (group commit: a server streaming
    /// thousands of runs commits them together instead of one transaction per run and batch),
    /// each as [`Store::append_events`] would. Returns the runs that do not exist, whose
    /// batches are skipped; every other batch is committed when this returns `Ok`, and none is
    /// when it returns `Err`. Batches of one run are appended in the order given.
    pub async fn append_event_batches(
        &self,
        batches: &[(&RunId, &[Event])],
    ) -> Result<Vec<RunId>, StoreError> {
        let mut connection = self.connection().await?;
        self.append_on(&mut connection, batches).await
    }

    /// A writer of event batches on a connection of its own: what a process that appends all
    /// the time should use. On SQLite a connection keeps its page cache only while no other
    /// connection writes, so a writer that always takes the same one finds the pages it
    /// touched last time still cached (through the pool it gets another one, whose cache the
    /// last commit made stale, and reads them all again).
    pub fn event_writer(&self) -> EventWriter {
        EventWriter {
            store: self.clone(),
            connection: None,
        }
    }

    async fn append_on(
        &self,
        connection: &mut Connection,
        batches: &[(&RunId, &[Event])],
    ) -> Result<Vec<RunId>, StoreError> {
        let mut prepared = Vec::with_capacity(batches.len());
        for (run_id, events) in batches {
            prepared.extend(Prepared::new(run_id, events)?);
        }
        // One entry per run, in id order: a run's row is updated once per statement, and rows
        // are locked in one order, so two writers sharing a database cannot deadlock.
        let prepared = merge_runs(prepared);
        if prepared.is_empty() {
            return Ok(Vec::new());
        }
        let updated_at = now().0;
        let _turn = self.write_turn().await;
        let found: HashSet<String> = with_connection!(connection, |connection, begin| {
            let mut tx = sqlx::Connection::begin_with(&mut **connection, begin).await?;
            // The runs' rows first: they say which runs exist, and lock them, so batches of one
            // run are written one after the other.
            let mut found = HashSet::with_capacity(prepared.len());
            for chunk in fixed_chunks(&prepared) {
                let mut update = QueryBuilder::new("UPDATE runs SET updated_at = ");
                update.push_bind(updated_at).push(
                    ", last_seq = CASE WHEN last_seq < v.column2 THEN v.column2 ELSE last_seq END \
                     FROM (VALUES ",
                );
                let mut values = update.separated(", ");
                for entry in chunk {
                    values
                        .push("(CAST(")
                        .push_bind_unseparated(entry.run_id.as_str())
                        .push_unseparated(" AS TEXT), CAST(")
                        .push_bind_unseparated(entry.max_seq)
                        .push_unseparated(" AS BIGINT))");
                }
                update.push(") AS v WHERE runs.id = v.column1");
                let updated = update.build().execute(&mut *tx).await?.rows_affected();
                if usize::try_from(updated).is_ok_and(|updated| updated == chunk.len()) {
                    found.extend(chunk.iter().map(|entry| entry.run_id.as_str().to_owned()));
                    continue;
                }
                // Some run is gone (its session was deleted): find which, one by one (rare).
                for entry in chunk {
                    let exists = sqlx::query("SELECT 1 FROM runs WHERE id = $1")
                        .bind(entry.run_id.as_str())
                        .fetch_optional(&mut *tx)
                        .await?;
                    if exists.is_some() {
                        found.insert(entry.run_id.as_str().to_owned());
                    }
                }
            }
            let rows: Vec<(&str, i64, &str)> = prepared
                .iter()
                .filter(|entry| found.contains(entry.run_id.as_str()))
                .flat_map(|entry| {
                    entry
                        .rows
                        .iter()
                        .map(|(seq, text)| (entry.run_id.as_str(), *seq, text.as_str()))
                })
                .collect();
            for chunk in fixed_chunks(&rows) {
                let mut insert = QueryBuilder::new("INSERT INTO events (run_id, seq, event) ");
                insert.push_values(chunk, |mut row, (run_id, seq, text)| {
                    row.push_bind(*run_id).push_bind(*seq).push_bind(*text);
                });
                insert.push(" ON CONFLICT (run_id, seq) DO NOTHING");
                insert.build().execute(&mut *tx).await?;
            }
            for entry in &prepared {
                let Some((seq, status, error, usage)) = &entry.last_status else {
                    continue;
                };
                if !found.contains(entry.run_id.as_str()) {
                    continue;
                }
                let (status, awaiting) = status_columns(*status);
                sqlx::query(
                    "UPDATE runs SET status = $2, awaiting = $3, error = $4,
                         usage = COALESCE($5, usage), status_seq = $6
                     WHERE id = $1 AND status_seq < $6",
                )
                .bind(entry.run_id.as_str())
                .bind(status)
                .bind(awaiting)
                .bind(error.as_deref())
                .bind(usage.as_deref())
                .bind(*seq)
                .execute(&mut *tx)
                .await?;
            }
            if self.is_postgres() {
                // Delivered to listeners when (and only if) the transaction commits.
                let notices = prepared
                    .iter()
                    .filter(|entry| found.contains(entry.run_id.as_str()))
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
            found
        });
        if !self.is_postgres() {
            for entry in prepared
                .iter()
                .filter(|entry| found.contains(entry.run_id.as_str()))
            {
                // No receiver is not an error: nobody is streaming the run.
                let _ = self.local.send(entry.notice());
            }
        }
        Ok(prepared
            .iter()
            .filter(|entry| !found.contains(entry.run_id.as_str()))
            .map(|entry| entry.run_id.clone())
            .collect())
    }

    /// Up to `limit` events of the run with a seq greater than `after`, in order: a replay from
    /// `Last-Event-ID`. Empty when there are none (or no such run).
    pub async fn events_after(
        &self,
        run_id: &RunId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Event>, StoreError> {
        let after = seq_to_db(after)?;
        let texts: Vec<String> = with_pool!(self, |pool, _begin| {
            sqlx::query(
                "SELECT event FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
            )
            .bind(run_id.as_str())
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
            .iter()
            .map(|row| row.try_get::<String, _>("event"))
            .collect::<Result<_, _>>()?
        });
        texts
            .iter()
            .map(|text| serde_json::from_str(text).map_err(StoreError::from))
            .collect()
    }

    /// After a crash of `node` (call it when that node starts again, before it takes work):
    /// every run of the node that had not ended (created, queued, in progress or awaiting: the
    /// process that held it is gone) becomes `incomplete` with the error code `interrupted`. The
    /// `run_status` event that says so is appended to its log, so its streams replay to an end;
    /// every event stored before is kept. Returns the runs it ended.
    pub async fn mark_interrupted(&self, node: &str) -> Result<Vec<RunId>, StoreError> {
        let open: Vec<(String, i64, Option<String>)> = with_pool!(self, |pool, _begin| {
            sqlx::query(
                "SELECT id, last_seq, usage FROM runs
                 WHERE node = $1 AND status IN ('created', 'queued', 'in_progress', 'awaiting')
                 ORDER BY created_at, id",
            )
            .bind(node)
            .fetch_all(pool)
            .await?
            .iter()
            .map(|row| {
                Ok((
                    row.try_get("id")?,
                    row.try_get("last_seq")?,
                    row.try_get("usage")?,
                ))
            })
            .collect::<Result<_, sqlx::Error>>()?
        });
        let mut ended = Vec::with_capacity(open.len());
        for (id, last_seq, usage) in open {
            let run_id = RunId::from(id);
            let usage = usage.map(|text| serde_json::from_str(&text)).transpose()?;
            let event = Event {
                seq: u64::try_from(last_seq).unwrap_or_default() + 1,
                kind: EventKind::RunStatus {
                    status: RunStatus::Incomplete,
                    error: Some(ErrorInfo::new(
                        INTERRUPTED,
                        "the server stopped before the run finished",
                    )),
                    usage,
                },
            };
            self.append_events(&run_id, &[event]).await?;
            ended.push(run_id);
        }
        Ok(ended)
    }
}

/// Sorts the entries by run and joins those of one run (its batches in the order given).
fn merge_runs(mut prepared: Vec<Prepared<'_>>) -> Vec<Prepared<'_>> {
    // Stable: a run's batches stay in their order.
    prepared.sort_by(|a, b| a.run_id.as_str().cmp(b.run_id.as_str()));
    let mut merged: Vec<Prepared<'_>> = Vec::with_capacity(prepared.len());
    for entry in prepared {
        match merged.last_mut() {
            Some(last) if last.run_id == entry.run_id => {
                last.rows.extend(entry.rows);
                last.max_seq = last.max_seq.max(entry.max_seq);
                if let Some(status) = entry.last_status
                    && last
                        .last_status
                        .as_ref()
                        .is_none_or(|(seq, ..)| *seq < status.0)
                {
                    last.last_status = Some(status);
                }
            }
            _ => merged.push(entry),
        }
    }
    merged
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
        assert_eq!(sizes, [512, 512, 128, 32, 32, 8, 8, 1, 1]);
        assert_eq!(chunks.concat(), items);
        assert!(fixed_chunks::<u8>(&[]).is_empty());
    }
}
