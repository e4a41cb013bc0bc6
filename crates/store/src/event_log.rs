//! The event log: every event of every run, in batches (one row per run and commit, its events
//! as a JSON array with runs of deltas folded, see `batch`, keyed by the batch's last seq; an ended run's log may be one row in compact
//! form, see `compact/`). Streams replay from it, and a run's row follows the `run_status`
//! events appended to it.

use std::borrow::Cow;
use std::collections::HashMap;

use futures::TryStreamExt;
use sqlx::{QueryBuilder, Row};

use agentwire_core::accumulator::PartStatus;
use agentwire_core::{
    Accumulator, ErrorInfo, Event, EventKind, Message, Namespace, Part, RunId, RunStatus, SessionId,
};

use crate::batch::{self, BatchText};
use crate::compact::CompactLog;
use crate::error::StoreError;
use crate::group::{Append, Group};
use crate::notice::Notice;
use crate::owners::owner_of;
use crate::run::seq_to_db;
use crate::store::{Store, with_pool};

/// The error code of runs that [`Store::mark_interrupted`] ended.
pub const INTERRUPTED: &str = "interrupted";

/// Runs [`Store::mark_interrupted`] ends in one transaction.
const INTERRUPTED_PER_GROUP: usize = 128;

/// A run's status columns as a batch sets them: seq, status, error, usage.
type StatusRow = (i64, RunStatus, Option<String>, Option<String>);

/// A run's events being encoded for the log as they come (see `batch`), so a run hands the
/// store text rather than copies of its events, and knows what it holds unsent in bytes.
#[derive(Debug)]
pub struct BatchBuilder {
    run_id: RunId,
    text: BatchText,
    /// The first and last seq pushed.
    seqs: Option<(i64, i64)>,
    last_status: Option<StatusRow>,
    /// Every `run_status` pushed, for the webhooks that hear of it.
    statuses: Vec<(i64, RunStatus)>,
}

impl BatchBuilder {
    /// An empty batch of the run's events.
    pub fn new(run_id: RunId) -> Self {
        Self {
            run_id,
            text: BatchText::default(),
            seqs: None,
            last_status: None,
            statuses: Vec::new(),
        }
    }

    /// Encodes the next event (heartbeats take no place in the log and are skipped). After an
    /// error the batch may hold part of the event: drop it.
    pub fn push(&mut self, event: &Event) -> Result<(), StoreError> {
        if let EventKind::Heartbeat {} = event.kind {
            return Ok(());
        }
        let seq = seq_to_db(event.seq)?;
        // A sub-agent's status, nested in the run's stream, is not the run's.
        let status = match &event.kind {
            EventKind::RunStatus {
                status,
                error,
                usage,
            } if event.is_own()
                && self
                    .last_status
                    .as_ref()
                    .is_none_or(|(last, ..)| *last < seq) =>
            {
                let error = error.as_ref().map(serde_json::to_string).transpose()?;
                let usage = usage.as_ref().map(serde_json::to_string).transpose()?;
                Some((seq, *status, error, usage))
            }
            _ => None,
        };
        if let Some(status) = event.own_status() {
            self.statuses.push((seq, status));
        }
        self.text.push(event)?;
        self.last_status = status.or(self.last_status.take());
        self.seqs = Some(
            self.seqs
                .map_or((seq, seq), |(first, last)| (first.min(seq), last.max(seq))),
        );
        Ok(())
    }

    /// Bytes of text encoded so far.
    pub fn bytes(&self) -> usize {
        self.text.len()
    }

    /// Whether no event is in it.
    pub fn is_empty(&self) -> bool {
        self.seqs.is_none()
    }

    /// The batch as the log stores it; `None` when it holds no event.
    pub fn finish(self) -> Option<EventBatch> {
        Some(EventBatch {
            seqs: self.seqs?,
            events: self.text.finish()?,
            run_id: self.run_id,
            last_status: self.last_status,
            statuses: self.statuses,
            reserved: 0,
            checkpoint: None,
            shared_state: None,
            run_state: None,
        })
    }
}

/// One run's events encoded for the log ([`BatchBuilder`]): what a [`Group`] appends.
#[derive(Debug)]
pub struct EventBatch {
    pub(crate) run_id: RunId,
    /// The events as a JSON array.
    pub(crate) events: String,
    /// The first and last seq of those events.
    pub(crate) seqs: (i64, i64),
    /// The batch's latest `run_status`.
    pub(crate) last_status: Option<StatusRow>,
    /// Every `run_status` in the batch (seq, status): each is a delivery to the webhooks
    /// that hear of it.
    pub(crate) statuses: Vec<(i64, RunStatus)>,
    /// The seq through which the run may show events before storing them.
    pub(crate) reserved: i64,
    /// The run waits for the client from the batch's last event on, written down so.
    pub(crate) checkpoint: Option<String>,
    /// The run's session's shared state after the batch's last event, as JSON text, when the
    /// batch changed it.
    pub(crate) shared_state: Option<String>,
    /// Where the run left its communication schema, when the batch ends it.
    pub(crate) run_state: Option<String>,
}

impl EventBatch {
    /// The batch of `events` (`None` when there is nothing to store: only heartbeats).
    pub fn encode(run_id: &RunId, events: &[Event]) -> Result<Option<Self>, StoreError> {
        let mut builder = BatchBuilder::new(run_id.clone());
        for event in events {
            builder.push(event)?;
        }
        Ok(builder.finish())
    }

    /// The run whose events these are.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The seq of its last event.
    pub fn last_seq(&self) -> u64 {
        u64::try_from(self.seqs.1).unwrap_or_default()
    }

    /// Reserves every seq through `seq` with this batch: once it is committed, the run may show
    /// events up to that seq before they are stored, and a run cut by a crash ends after it
    /// ([`Store::mark_interrupted`]), so no seq a client saw is given twice.
    pub fn reserve_through(&mut self, seq: u64) {
        self.reserved = i64::try_from(seq).unwrap_or(i64::MAX);
    }

    /// The seq this batch reserves through (0: none).
    pub fn reserved(&self) -> u64 {
        u64::try_from(self.reserved).unwrap_or_default()
    }

    /// Stores with the batch the checkpoint of a run that waits for the client from the
    /// batch's last event on (an `awaiting` status): the run then outlives its node, and goes
    /// on wherever its answer arrives ([`Store::take_over`]). The batch reserves no seq past
    /// its last, and the run's reservation comes down to it: nothing past the wait may be shown
    /// before it is stored, so the run can go on elsewhere from the seq after the last stored.
    pub fn park(&mut self, checkpoint: String) {
        self.checkpoint = Some(checkpoint);
        self.reserved = self.seqs.1;
    }

    /// Stores with the batch its run's session's shared state as the batch's events leave it
    /// (JSON text): the state and the `state_snapshot` / `state_delta` events that made it are
    /// committed together, so a client that sees them finds the session's state agreeing.
    pub fn set_shared_state(&mut self, state: String) {
        self.shared_state = Some(state);
    }

    /// Stores with the batch the state the run's communication schema is in at the batch's
    /// last event (its end): the run's row then says where the run left the schema, as the
    /// run's last answer did, rather than where its input took it.
    pub fn set_run_state(&mut self, state: String) {
        self.run_state = Some(state);
    }

    /// Whether the batch carries a checkpoint ([`EventBatch::park`]).
    pub fn is_parked(&self) -> bool {
        self.checkpoint.is_some()
    }
}

impl Store {
    /// Appends a batch of a run's events in one transaction, and returns once it is committed.
    ///
    /// Idempotent: a retried batch is stored once, and an event whose seq was stored already
    /// (a batch overlapping an earlier one) is never read back twice. Heartbeats are not stored (they take no place in a
    /// replay). When the batch holds a `run_status` event, the run's row takes its status, error
    /// and usage, unless a later one was stored before. Listeners hear a [`Notice::Events`] with
    /// the batch's last seq after the commit. A run that has ended takes no more events
    /// ([`StoreError::RunEnded`]): another node may have ended it, taking its node for dead.
    pub async fn append_events(&self, run_id: &RunId, events: &[Event]) -> Result<(), StoreError> {
        let Some(batch) = EventBatch::encode(run_id, events)? else {
            return Ok(());
        };
        let refused = self.append_event_batches(&[&batch]).await?;
        match (refused.is_empty(), self.run(run_id).await?) {
            (true, _) => Ok(()),
            (false, Some(_)) => Err(StoreError::RunEnded(run_id.to_string())),
            (false, None) => Err(StoreError::RunNotFound(run_id.to_string())),
        }
    }

    /// Appends the batches of many runs in ONE transaction (a [`Group`] of batches only), each
    /// as [`Store::append_events`] would. Returns the runs that do not exist or have ended, whose
    /// batches are skipped; every other batch is committed when this returns `Ok`, and none is when it
    /// returns `Err`. Batches of one run are appended in the order given.
    pub async fn append_event_batches(
        &self,
        batches: &[&EventBatch],
    ) -> Result<Vec<RunId>, StoreError> {
        let group = Group {
            batches: batches.to_vec(),
            ..Group::default()
        };
        Ok(self.write_group(&group).await?.gone)
    }

    /// Up to `limit` events of the run with a seq greater than `after`, in order: a replay from
    /// `Last-Event-ID`. Empty when there are none (or no such run). A compacted log replays
    /// exactly as the events it was folded from.
    pub async fn events_after(
        &self,
        run_id: &RunId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Event>, StoreError> {
        let mut page = Page {
            events: Vec::new(),
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
            last: after,
        };
        let mut rows_after = seq_to_db(after)?;
        loop {
            // A compact row is unfolded once the rows are closed: it reads the session's
            // history, and an in-memory SQLite database has one connection.
            let mut compact = None;
            with_pool!(self, |pool, _begin| {
                // Rows are read one at a time and the query stops once the page is full: a
                // page costs the batches it takes, not every batch after it.
                let mut rows = sqlx::query(
                    "SELECT events, last_seq FROM event_batches WHERE run_id = $1 AND last_seq > $2 \
                     ORDER BY last_seq",
                )
                .bind(run_id.as_str())
                .bind(rows_after)
                .fetch(pool);
                while !page.is_full()
                    && let Some(row) = rows.try_next().await?
                {
                    match StoredRow::parse(row.try_get::<&str, _>(0)?)? {
                        StoredRow::Batch(batch) => page.take(batch),
                        StoredRow::Compact(log) => {
                            compact = Some((log, row.try_get::<i64, _>(1)?));
                            break;
                        }
                    }
                }
            });
            let Some((log, last_seq)) = compact else {
                return Ok(page.events);
            };
            let history = self.held_messages(run_id, &log).await?;
            page.take(log.expand(&history)?);
            rows_after = last_seq;
        }
    }

    /// The messages of the run's session that its compact log refers to, by position.
    async fn held_messages(
        &self,
        run_id: &RunId,
        log: &CompactLog,
    ) -> Result<HashMap<u64, Message>, StoreError> {
        let positions: Vec<i64> = log
            .held_positions()
            .map(|position| i64::try_from(position).unwrap_or(i64::MAX))
            .collect();
        if positions.is_empty() {
            return Ok(HashMap::new());
        }
        let rows: Vec<(i64, String)> = with_pool!(self, |pool, _begin| {
            let mut select = QueryBuilder::new(
                "SELECT m.position, m.message FROM messages m JOIN runs r \
                 ON m.owner = r.owner AND m.session_id = r.session_id WHERE r.id = ",
            );
            select
                .push_bind(run_id.as_str())
                .push(" AND m.position IN (");
            let mut list = select.separated(", ");
            for position in positions {
                list.push_bind(position);
            }
            select.push(")");
            select.build_query_as().fetch_all(pool).await?
        });
        rows.into_iter()
            .map(|(position, text)| {
                let position = u64::try_from(position).unwrap_or_default();
                Ok((position, serde_json::from_str(&text)?))
            })
            .collect()
    }

    /// After a crash of `node` (call it when that node starts again, before it takes work):
    /// every run of the node that had not ended (created, queued, in progress or awaiting: the
    /// process that held it is gone) becomes `incomplete` with the error code `interrupted`,
    /// except those that wait for the client with a checkpoint ([`EventBatch::park`]): they
    /// wait on, for whichever node their answer reaches ([`Store::take_over`]). The
    /// `run_status` event that says so is appended to its log, so its streams replay to an end;
    /// every event stored before is kept. Its seq comes after every seq the run had stored or
    /// reserved ([`EventBatch::reserve_through`]): a client that saw deltas that were never
    /// stored and resumes from the last one still gets it. What the run completed joins its
    /// session in the same transaction (`interrupted_output`), so the history shows it and
    /// the next turn's model knows which tools already ran. Returns the runs it ended.
    pub async fn mark_interrupted(&self, node: &str) -> Result<Vec<RunId>, StoreError> {
        type OpenRun = (String, String, Option<String>, i64, Option<String>);
        let open: Vec<OpenRun> = with_pool!(self, |pool, _begin| {
            sqlx::query(
                "SELECT id, owner, session_id, \
                 CASE WHEN last_seq < seq_reserved THEN seq_reserved \
                 ELSE last_seq END AS last_seq, usage FROM runs
                 WHERE node = $1 AND status IN ('created', 'queued', 'in_progress', 'awaiting')
                 AND NOT (status = 'awaiting' AND checkpoint IS NOT NULL)
                 ORDER BY created_at, id",
            )
            .bind(node)
            .fetch_all(pool)
            .await?
            .iter()
            .map(|row| {
                Ok((
                    row.try_get("id")?,
                    row.try_get("owner")?,
                    row.try_get("session_id")?,
                    row.try_get("last_seq")?,
                    row.try_get("usage")?,
                ))
            })
            .collect::<Result<_, sqlx::Error>>()?
        });
        let mut ended = Vec::with_capacity(open.len());
        // Many runs to a transaction: one each made a restart after a crash with thousands of
        // runs going take seconds before the server listened (about 2 ms a run on PostgreSQL).
        for share in open.chunks(INTERRUPTED_PER_GROUP) {
            let mut ends = Vec::with_capacity(share.len());
            for (id, owner, session_id, last_seq, usage) in share {
                let run_id = RunId::from(id.as_str());
                let usage = usage.as_deref().map(serde_json::from_str).transpose()?;
                let logged = self.events_after(&run_id, 0, u32::MAX).await?;
                let interrupted = |usage| EventKind::RunStatus {
                    status: RunStatus::Incomplete,
                    error: Some(ErrorInfo::new(
                        INTERRUPTED,
                        "the server stopped before the run finished",
                    )),
                    usage,
                };
                // Sub-agents' runs still open in the log end first, deepest first, so every
                // nested stream ends before the one it is nested in.
                let mut events: Vec<Event> = open_nested_runs(&logged)
                    .into_iter()
                    .map(|namespace| Event {
                        seq: 0,
                        namespace,
                        kind: interrupted(None),
                    })
                    .collect();
                events.push(Event::new(0, interrupted(usage)));
                let first_seq = u64::try_from(*last_seq).unwrap_or_default() + 1;
                for (event, seq) in events.iter_mut().zip(first_seq..) {
                    event.seq = seq;
                }
                let output = match session_id {
                    Some(_) => interrupted_output(&logged),
                    None => Vec::new(),
                };
                let batch = EventBatch::encode(&run_id, &events)?;
                let session = session_id
                    .clone()
                    .map(|id| (owner_of(owner.clone()), SessionId::from(id)));
                ends.push((run_id, session, batch, output));
            }
            // In the order the runs were created: two runs of one session append their output
            // in that order, as they did one transaction each.
            let group = Group {
                batches: ends
                    .iter()
                    .filter_map(|(_, _, batch, _)| batch.as_ref())
                    .collect(),
                appends: ends
                    .iter()
                    .filter_map(|(_, session, _, output)| {
                        let (owner, session_id) =
                            session.as_ref().filter(|_| !output.is_empty())?;
                        Some(Append {
                            owner: owner.as_deref(),
                            session_id,
                            messages: &output[..],
                            schema_state: None,
                        })
                    })
                    .collect(),
                ..Group::default()
            };
            self.write_group(&group).await?;
            ended.extend(ends.into_iter().map(|(run_id, ..)| run_id));
        }
        Ok(ended)
    }
}

/// The namespaces of the sub-agents' runs a log opened (`run_created`) and did not end, the
/// deepest first.
fn open_nested_runs(events: &[Event]) -> Vec<Namespace> {
    let mut open: Vec<Namespace> = Vec::new();
    for event in events.iter().filter(|event| !event.is_own()) {
        match &event.kind {
            EventKind::RunCreated { .. } => open.push(event.namespace.clone()),
            EventKind::RunStatus { status, .. } if status.is_terminal() => {
                open.retain(|namespace| *namespace != event.namespace);
            }
            _ => {}
        }
    }
    open.sort_by_key(|namespace| std::cmp::Reverse(namespace.depth()));
    open
}

/// The metadata key marking a message of a run cut short (`true`): what it completed, kept.
pub const INCOMPLETE_KEY: &str = "incomplete";

/// What a run cut by a crash leaves its session: each of its messages with the parts that
/// completed (a part still streaming when the run was cut is dropped), marked with
/// [`INCOMPLETE_KEY`]; a message with no completed part but its step start is left out.
pub(crate) fn interrupted_output(events: &[Event]) -> Vec<Message> {
    let mut accumulator = Accumulator::default();
    for event in events {
        // A log cut by a crash ends mid-part; everything before it still accumulates.
        let _ = accumulator.push(event);
    }
    accumulator
        .messages()
        .iter()
        .filter_map(|message| {
            let id = message.id.as_ref()?;
            let parts: Vec<Part> = (0..message.parts.len())
                .filter(|&index| {
                    accumulator.part_status(id.as_str(), index) == Some(PartStatus::Complete)
                })
                .map(|index| message.parts[index].clone())
                .collect();
            if parts.iter().all(|part| matches!(part, Part::StepStart(_))) {
                return None;
            }
            let mut kept = Message {
                parts,
                ..message.clone()
            };
            kept.metadata
                .extra
                .insert(INCOMPLETE_KEY.to_owned(), serde_json::Value::Bool(true));
            Some(kept)
        })
        .collect()
}

/// An `event_batches` row: a batch of events, or an ended run's whole log in compact form.
pub(crate) enum StoredRow {
    /// Events as committed (see `batch`).
    Batch(Vec<Event>),
    /// A JSON object (see `compact/`).
    Compact(CompactLog),
}

impl StoredRow {
    pub(crate) fn parse(text: &str) -> Result<StoredRow, StoreError> {
        Ok(if text.starts_with('{') {
            StoredRow::Compact(serde_json::from_str(text)?)
        } else {
            StoredRow::Batch(batch::parse(text)?)
        })
    }
}

/// A page of a replay being filled.
struct Page {
    events: Vec<Event>,
    limit: usize,
    /// The seq of the last event taken (or where the replay starts).
    last: u64,
}

impl Page {
    fn is_full(&self) -> bool {
        self.events.len() >= self.limit
    }

    /// Takes the events of a row in order until the page is full. Seqs only grow: an event at
    /// or below the last one taken is a copy from a batch that overlapped an earlier one.
    fn take(&mut self, events: Vec<Event>) {
        for event in events {
            if self.is_full() {
                return;
            }
            if event.seq > self.last {
                self.last = event.seq;
                self.events.push(event);
            }
        }
    }
}

/// A row of `event_batches`: the batches of one run in a group, joined.
pub(crate) struct BatchRow<'a> {
    pub(crate) run_id: &'a RunId,
    /// The events as one JSON array (copied only when batches were joined).
    pub(crate) events: Cow<'a, str>,
    pub(crate) seqs: (i64, i64),
    pub(crate) last_status: Option<&'a StatusRow>,
    pub(crate) statuses: Vec<(i64, RunStatus)>,
    pub(crate) reserved: i64,
    pub(crate) checkpoint: Option<&'a str>,
    /// The shared state the last of the joined batches that has one leaves.
    pub(crate) shared_state: Option<&'a str>,
    /// The run's schema state the last of the joined batches that has one leaves.
    pub(crate) run_state: Option<&'a str>,
}

impl BatchRow<'_> {
    pub(crate) fn notice(&self) -> Notice {
        Notice::Events {
            run_id: self.run_id.clone(),
            seq: u64::try_from(self.seqs.1).unwrap_or_default(),
        }
    }
}

/// Sorts the batches by run and joins those of one run (its batches in the order given).
pub(crate) fn merge_runs<'a>(batches: &[&'a EventBatch]) -> Vec<BatchRow<'a>> {
    let mut batches = batches.to_vec();
    // Stable: a run's batches stay in their order.
    batches.sort_by(|a, b| a.run_id.as_str().cmp(b.run_id.as_str()));
    let mut merged: Vec<BatchRow<'a>> = Vec::with_capacity(batches.len());
    for batch in batches {
        match merged.last_mut() {
            Some(last) if *last.run_id == batch.run_id => {
                // Two arrays as one: `[a,b]` + `[c]` = `[a,b,c]`.
                let text = last.events.to_mut();
                text.pop();
                text.push(',');
                text.push_str(&batch.events[1..]);
                last.seqs = (last.seqs.0.min(batch.seqs.0), last.seqs.1.max(batch.seqs.1));
                last.reserved = match batch.checkpoint {
                    Some(_) => batch.reserved,
                    None => last.reserved.max(batch.reserved),
                };
                last.checkpoint = batch.checkpoint.as_deref();
                if let Some(state) = &batch.shared_state {
                    last.shared_state = Some(state);
                }
                if let Some(state) = &batch.run_state {
                    last.run_state = Some(state);
                }
                last.statuses.extend_from_slice(&batch.statuses);
                if let Some(status) = &batch.last_status
                    && last.last_status.is_none_or(|(seq, ..)| *seq < status.0)
                {
                    last.last_status = Some(status);
                }
            }
            _ => merged.push(BatchRow {
                run_id: &batch.run_id,
                events: Cow::Borrowed(&batch.events),
                seqs: batch.seqs,
                last_status: batch.last_status.as_ref(),
                statuses: batch.statuses.clone(),
                reserved: batch.reserved,
                checkpoint: batch.checkpoint.as_deref(),
                shared_state: batch.shared_state.as_deref(),
                run_state: batch.run_state.as_deref(),
            }),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use agentwire_core::part::StepStart;
    use agentwire_core::{Emitter, MessageBuilder, MessageStart, Role};

    use super::*;

    #[test]
    fn a_cut_run_leaves_its_completed_parts_marked_and_drops_the_rest() {
        let mut out = Emitter::default();
        let mut first =
            MessageBuilder::start(&mut out, MessageStart::new("msg_1", Role::Assistant));
        first.part(
            &mut out,
            Part::StepStart(StepStart {
                step_id: "step_1".into(),
                step_name: None,
            }),
        );
        first.reasoning_delta(&mut out, "thinking");
        first.text_delta(&mut out, "the answer is");
        first.finish(&mut out);
        let mut second =
            MessageBuilder::start(&mut out, MessageStart::new("msg_2", Role::Assistant));
        second.part(
            &mut out,
            Part::StepStart(StepStart {
                step_id: "step_2".into(),
                step_name: None,
            }),
        );
        second.text_delta(&mut out, "cut off mid-");
        let events: Vec<Event> = out.drain().collect();
        // The first message completed; the second was cut while its text streamed.
        let output = interrupted_output(&events);
        assert_eq!(output.len(), 1, "{output:?}");
        assert_eq!(output[0].id.as_ref().map(|id| id.as_str()), Some("msg_1"));
        assert_eq!(output[0].content(), "the answer is");
        assert_eq!(
            output[0].metadata.extra.get(INCOMPLETE_KEY),
            Some(&serde_json::Value::Bool(true))
        );

        // Cut before the text completed: the reasoning is kept, the text is not.
        let cut = events
            .iter()
            .position(|event| {
                matches!(
                    &event.kind,
                    EventKind::PartComplete {
                        part: Part::Text(_),
                        ..
                    }
                )
            })
            .unwrap_or(events.len());
        let output = interrupted_output(&events[..cut]);
        assert_eq!(output.len(), 1);
        assert!(matches!(
            output[0].parts[..],
            [Part::StepStart(_), Part::Reasoning(_)]
        ));
    }
}
