//! The event log: every event of every run, in batches (one row per run and commit, its events
//! as a JSON array, keyed by the batch's last seq). Streams replay from it, and a run's row
//! follows the `run_status` events appended to it.

use futures::TryStreamExt;
use sqlx::Row;

use agentwire_core::{ErrorInfo, Event, EventKind, RunId, RunStatus};

use crate::error::StoreError;
use crate::group::Group;
use crate::notice::Notice;
use crate::run::seq_to_db;
use crate::store::{Store, with_pool};

/// The error code of runs that [`Store::mark_interrupted`] ended.
pub const INTERRUPTED: &str = "interrupted";

/// A run's status columns as a batch sets them: seq, status, error, usage.
type StatusRow = (i64, RunStatus, Option<String>, Option<String>);

/// One run's batch as a row for the database.
pub(crate) struct Prepared<'a> {
    pub(crate) run_id: &'a RunId,
    /// The events as a JSON array, heartbeats left out.
    pub(crate) events: String,
    /// The first and last seq of those events.
    pub(crate) seqs: (i64, i64),
    /// The batch's latest `run_status`.
    pub(crate) last_status: Option<StatusRow>,
}

impl<'a> Prepared<'a> {
    /// `None` when the batch holds nothing to store (only heartbeats).
    pub(crate) fn new(run_id: &'a RunId, events: &[Event]) -> Result<Option<Self>, StoreError> {
        let mut prepared = Prepared {
            run_id,
            events: String::new(),
            seqs: (i64::MAX, i64::MIN),
            last_status: None,
        };
        let mut json = Vec::with_capacity(events.len() * 96);
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
                && prepared
                    .last_status
                    .as_ref()
                    .is_none_or(|(last, ..)| *last < seq)
            {
                let error = error.as_ref().map(serde_json::to_string).transpose()?;
                let usage = usage.as_ref().map(serde_json::to_string).transpose()?;
                prepared.last_status = Some((seq, *status, error, usage));
            }
            prepared.seqs = (prepared.seqs.0.min(seq), prepared.seqs.1.max(seq));
            json.push(if json.is_empty() { b'[' } else { b',' });
            serde_json::to_writer(&mut json, event)?;
        }
        if json.is_empty() {
            return Ok(None);
        }
        json.push(b']');
        // serde_json writes UTF-8 only.
        prepared.events = String::from_utf8(json)
            .map_err(|error| StoreError::Corrupt(format!("event JSON: {error}")))?;
        Ok(Some(prepared))
    }

    pub(crate) fn notice(&self) -> Notice {
        Notice::Events {
            run_id: self.run_id.clone(),
            seq: u64::try_from(self.seqs.1).unwrap_or_default(),
        }
    }
}

impl Store {
    /// Appends a batch of a run's events in one transaction, and returns once it is committed.
    ///
    /// Idempotent: a retried batch is stored once, and an event whose seq was stored already
    /// (a batch overlapping an earlier one) is never read back twice. Heartbeats are not stored (they take no place in a
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

    /// Appends the batches of many runs in ONE transaction (a [`Group`] of batches only), each
    /// as [`Store::append_events`] would. Returns the runs that do not exist, whose batches are
    /// skipped; every other batch is committed when this returns `Ok`, and none is when it
    /// returns `Err`. Batches of one run are appended in the order given.
    pub async fn append_event_batches(
        &self,
        batches: &[(&RunId, &[Event])],
    ) -> Result<Vec<RunId>, StoreError> {
        let group = Group {
            batches: batches.to_vec(),
            ..Group::default()
        };
        Ok(self.write_group(&group).await?.gone)
    }

    /// Up to `limit` events of the run with a seq greater than `after`, in order: a replay from
    /// `Last-Event-ID`. Empty when there are none (or no such run).
    pub async fn events_after(
        &self,
        run_id: &RunId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Event>, StoreError> {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let mut events = Vec::new();
        // Seqs only grow; an event at or below the last one taken is a copy from a batch that
        // overlapped an earlier one, and is skipped.
        let mut last = after;
        let after = seq_to_db(after)?;
        with_pool!(self, |pool, _begin| {
            // Rows are read one at a time and the query stops once the page is full: a page
            // costs the batches it takes, not every batch after it.
            let mut rows = sqlx::query(
                "SELECT events FROM event_batches WHERE run_id = $1 AND last_seq > $2 \
                 ORDER BY last_seq",
            )
            .bind(run_id.as_str())
            .bind(after)
            .fetch(pool);
            while events.len() < limit
                && let Some(row) = rows.try_next().await?
            {
                let batch: Vec<Event> = serde_json::from_str(row.try_get::<&str, _>(0)?)?;
                for event in batch {
                    if event.seq > last && events.len() < limit {
                        last = event.seq;
                        events.push(event);
                    }
                }
            }
        });
        Ok(events)
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
pub(crate) fn merge_runs(mut prepared: Vec<Prepared<'_>>) -> Vec<Prepared<'_>> {
    // Stable: a run's batches stay in their order.
    prepared.sort_by(|a, b| a.run_id.as_str().cmp(b.run_id.as_str()));
    let mut merged: Vec<Prepared<'_>> = Vec::with_capacity(prepared.len());
    for entry in prepared {
        match merged.last_mut() {
            Some(last) if last.run_id == entry.run_id => {
                // Two arrays as one: `[a,b]` + `[c]` = `[a,b,c]`.
                last.events.pop();
                last.events.push(',');
                last.events.push_str(&entry.events[1..]);
                last.seqs = (last.seqs.0.min(entry.seqs.0), last.seqs.1.max(entry.seqs.1));
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
