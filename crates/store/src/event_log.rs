//! The event log: every event of every run, by `(run_id, seq)`. Streams replay from it, and a
//! run's row follows the `run_status` events appended to it.

use sqlx::{QueryBuilder, Row};

use agentwire_core::{ErrorInfo, Event, EventKind, RunId, RunStatus};

use crate::error::StoreError;
use crate::notice::Notice;
use crate::run::{seq_to_db, status_columns};
use crate::store::{Store, now, with_pool};

/// Rows per INSERT: three parameters each stays far below SQLite's 32,766-parameter limit.
const ROWS_PER_INSERT: usize = 500;

/// The error code of runs that [`Store::mark_interrupted`] ended.
pub const INTERRUPTED: &str = "interrupted";

impl Store {
    /// Appends a batch of a run's events in one transaction, and returns once it is committed.
    ///
    /// Idempotent: an event whose `(run_id, seq)` is stored already is skipped, so a retried
    /// batch cannot duplicate anything. Heartbeats are not stored (they take no place in a
    /// replay). When the batch holds a `run_status` event, the run's row takes its status, error
    /// and usage, unless a later one was stored before. Listeners hear a [`Notice::Events`] with
    /// the batch's last seq after the commit.
    pub async fn append_events(&self, run_id: &RunId, events: &[Event]) -> Result<(), StoreError> {
        let mut rows = Vec::with_capacity(events.len());
        let mut last_status: Option<(i64, RunStatus, Option<String>, Option<String>)> = None;
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
                && last_status.as_ref().is_none_or(|(last, ..)| *last < seq)
            {
                let error = error.as_ref().map(serde_json::to_string).transpose()?;
                let usage = usage.as_ref().map(serde_json::to_string).transpose()?;
                last_status = Some((seq, *status, error, usage));
            }
            rows.push((seq, serde_json::to_string(event)?));
        }
        let Some(max_seq) = rows.iter().map(|(seq, _)| *seq).max() else {
            return Ok(());
        };
        let notice = Notice::Events {
            run_id: run_id.clone(),
            seq: u64::try_from(max_seq).unwrap_or_default(),
        };
        let notice_text = serde_json::to_string(&notice)?;
        let updated_at = now().0;
        with_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await?;
            // The run's row first: it says whether the run exists, and locks it, so batches of
            // one run are written one after the other.
            let found = sqlx::query(
                "UPDATE runs SET updated_at = $2,
                     last_seq = CASE WHEN last_seq < $3 THEN $3 ELSE last_seq END
                 WHERE id = $1",
            )
            .bind(run_id.as_str())
            .bind(updated_at)
            .bind(max_seq)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if found == 0 {
                return Err(StoreError::RunNotFound(run_id.to_string()));
            }
            for chunk in rows.chunks(ROWS_PER_INSERT) {
                let mut insert = QueryBuilder::new("INSERT INTO events (run_id, seq, event) ");
                insert.push_values(chunk, |mut row, (seq, text)| {
                    row.push_bind(run_id.as_str())
                        .push_bind(*seq)
                        .push_bind(text.as_str());
                });
                insert.push(" ON CONFLICT (run_id, seq) DO NOTHING");
                insert.build().execute(&mut *tx).await?;
            }
            if let Some((seq, status, error, usage)) = &last_status {
                let (status, awaiting) = status_columns(*status);
                sqlx::query(
                    "UPDATE runs SET status = $2, awaiting = $3, error = $4,
                         usage = COALESCE($5, usage), status_seq = $6
                     WHERE id = $1 AND status_seq < $6",
                )
                .bind(run_id.as_str())
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
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(crate::notice::CHANNEL)
                    .bind(notice_text.as_str())
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
        });
        if !self.is_postgres() {
            // No receiver is not an error: nobody is streaming the run.
            let _ = self.local.send(notice);
        }
        Ok(())
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
