//! Group commit: the writes of many runs in ONE transaction. A server streaming thousands of
//! runs starts runs, appends their events and adds their output to sessions all the time; one
//! transaction per write (on SQLite, each waiting its turn for the single writer, and each a
//! dozen hand-offs to the database thread) made run starts queue behind each other. Here a
//! [`Group`] costs a fixed number of statements however many runs it carries (see `steps`).
//!
//! A write that cannot be done (a run id that is taken, a session or run that is gone) is
//! answered on its own, in [`Written`], and does not fail the group.

mod steps;

use std::collections::HashSet;

use agentwire_core::{Message, RunId, SessionId};

use crate::error::StoreError;
use crate::event_log::{BatchRow, EventBatch, merge_runs};
use crate::owners::owner_column;
use crate::run::{RunRecord, RunRow};
use crate::session::message_texts;
use crate::store::{Connection, Store, now, with_connection};
use steps::GroupSql;

/// The writes of one transaction. Each part may be empty.
#[derive(Debug, Default)]
pub struct Group<'a> {
    /// Runs to begin: the session (created, owned by the run's owner, if new), the run's row
    /// and its input at the end of the session's history, as [`Store::start_run`].
    pub starts: Vec<(&'a RunRecord, &'a [Message])>,
    /// Messages to add at the end of a session's history, as [`Store::append_messages`].
    pub appends: Vec<Append<'a>>,
    /// Runs' events, as [`Store::append_event_batches`]; one run's batches in the order given.
    pub batches: Vec<&'a EventBatch>,
    /// The node writing, if it writes only the runs it holds: a batch of a run that another
    /// node has taken over ([`Store::take_over`]) is refused as one of a run that ended.
    pub node: Option<&'a str>,
}

/// Messages joining a session's history (see [`Group::appends`]).
#[derive(Clone, Copy, Debug)]
pub struct Append<'a> {
    /// The session's owner: with `session_id`, the session's key.
    pub owner: Option<&'a str>,
    /// The session.
    pub session_id: &'a SessionId,
    /// The messages, in order.
    pub messages: &'a [Message],
    /// The session's new schema state; `None` leaves it.
    pub schema_state: Option<&'a str>,
}

/// How a start of a [`Group`] fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Started {
    /// The run (and its session, if new) and its input are written.
    Done,
    /// Its run id was taken: nothing of it was written.
    RunExists,
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
        // The turn before the connection, as every writer takes them: a writer that waited for
        // its turn holding the connection another writer waits for would wait forever.
        let _turn = self.store.write_turn().await;
        let mut connection = match self.connection.take() {
            Some(connection) => connection,
            None => self.store.connection().await?,
        };
        let result = self.store.write_group_on(&mut connection, group).await;
        // A database in memory has one connection, which the other writers need between groups.
        if result.is_ok() && !self.store.in_memory() {
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

/// A group as rows, encoded before its transaction begins.
struct GroupRows<'a> {
    starts: Vec<StartRows<'a>>,
    appends: Vec<AppendRows<'a>>,
    /// One entry per run, in id order: a run's row is updated once per statement, and rows
    /// are locked in one order, so two writers sharing a database cannot deadlock.
    batches: Vec<BatchRow<'a>>,
    node: Option<&'a str>,
    updated_at: i64,
}

/// A start as rows.
struct StartRows<'a> {
    row: RunRow<'a>,
    session_id: Option<&'a SessionId>,
    /// Its input.
    texts: Vec<MessageText<'a>>,
}

/// An append as rows: the session's owner (its column) and id, its messages, its new schema
/// state.
type AppendRows<'a> = (
    &'a str,
    &'a SessionId,
    Vec<MessageText<'a>>,
    Option<&'a str>,
);

/// A message as it is stored: its id and its JSON.
type MessageText<'a> = (Option<&'a str>, String);

/// What the transaction found of the rows the group names.
#[derive(Debug, Default)]
struct Found {
    /// The runs started.
    inserted: HashSet<String>,
    /// The sessions appended to that exist, by owner (its column) and id.
    sessions: HashSet<(String, String)>,
    /// The runs of batches that exist and take events.
    runs: HashSet<String>,
    /// How many webhook deliveries the group's status changes queued.
    deliveries: u64,
}

impl Found {
    fn contains_session(&self, owner: &str, id: &SessionId) -> bool {
        // A tuple of borrowed strings cannot look up one of owned ones.
        self.sessions
            .contains(&(owner.to_owned(), id.as_str().to_owned()))
    }
}

impl<'a> GroupRows<'a> {
    fn new(group: &Group<'a>) -> Result<Self, StoreError> {
        Ok(Self {
            starts: group
                .starts
                .iter()
                .map(|(run, input)| {
                    Ok(StartRows {
                        row: RunRow::new(run)?,
                        session_id: run.session_id.as_ref(),
                        texts: message_texts(input)?,
                    })
                })
                .collect::<Result<_, StoreError>>()?,
            appends: group
                .appends
                .iter()
                .map(|append| {
                    Ok((
                        owner_column(append.owner),
                        append.session_id,
                        message_texts(append.messages)?,
                        append.schema_state,
                    ))
                })
                .collect::<Result<_, StoreError>>()?,
            batches: merge_runs(&group.batches),
            node: group.node,
            updated_at: now().0,
        })
    }

    fn is_empty(&self) -> bool {
        self.starts.is_empty() && self.appends.is_empty() && self.batches.is_empty()
    }

    /// The batches of runs that take events.
    fn found_batches<'f>(&'f self, found: &'f Found) -> impl Iterator<Item = &'f BatchRow<'a>> {
        self.batches
            .iter()
            .filter(|batch| found.runs.contains(batch.run_id.as_str()))
    }

    fn written(&self, found: &Found) -> Written {
        Written {
            started: self
                .starts
                .iter()
                .map(
                    |start| match found.inserted.contains(start.row.run.id.as_str()) {
                        true => Started::Done,
                        false => Started::RunExists,
                    },
                )
                .collect(),
            appended: self
                .appends
                .iter()
                .map(|(owner, id, ..)| found.contains_session(owner, id))
                .collect(),
            gone: self
                .batches
                .iter()
                .filter(|batch| !found.runs.contains(batch.run_id.as_str()))
                .map(|batch| batch.run_id.clone())
                .collect(),
        }
    }
}

impl Store {
    /// Commits a [`Group`] in ONE transaction: when this returns `Ok`, every write it reports
    /// done is committed; on an `Err`, none is. Listeners hear a [`crate::Notice::Events`] for
    /// each run whose events were appended, after the commit.
    pub async fn write_group(&self, group: &Group<'_>) -> Result<Written, StoreError> {
        let _turn = self.write_turn().await;
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

    /// Writes `group` on `connection`; the caller holds the write turn.
    async fn write_group_on(
        &self,
        connection: &mut Connection,
        group: &Group<'_>,
    ) -> Result<Written, StoreError> {
        let rows = GroupRows::new(group)?;
        if rows.is_empty() {
            return Ok(Written::default());
        }
        let found = with_connection!(connection, |connection, begin| {
            let mut tx = sqlx::Connection::begin_with(&mut **connection, begin).await?;
            let found = GroupSql::write(&mut tx, &rows).await?;
            tx.commit().await?;
            found
        });
        if found.deliveries > 0 {
            self.deliveries.notify_one();
        }
        if !self.is_postgres() {
            for batch in rows.found_batches(&found) {
                // No receiver is not an error: nobody is streaming the run.
                let _ = self.local.send(batch.notice());
            }
        }
        Ok(rows.written(&found))
    }
}
