//! Retention: a background task that keeps the store from growing with the server's uptime.
//! Ended runs' logs are compacted [`Settings::compact_after`] after their last update (their
//! replays do not change), sessions and runs are deleted [`Settings::delete_after`] after it,
//! and on SQLite the pages that frees are given back to the file system.
//!
//! Every node runs it; on a shared PostgreSQL the store's calls skip the rows another node is
//! working on. Each store call does a bounded amount of work in its own short transaction, so
//! live runs' writes are never held up for long; a pass loops until nothing is left.

use std::time::Duration;

use agentwire_store::{Compaction, Deletion, Store, StoreError};
use tokio::task::JoinHandle;

use crate::clock;
use crate::settings::Settings;

/// Runs or sessions per transaction.
const BATCH: u32 = 64;

/// The longest wait between passes.
const MOST_EVERY: Duration = Duration::from_secs(60);

/// The shortest wait between passes (`compact_after = "0s"` compacts a run at the next pass).
const LEAST_EVERY: Duration = Duration::from_secs(1);

/// The running task; it stops when this is stopped or dropped.
#[derive(Debug)]
pub(crate) struct Retention {
    task: JoinHandle<()>,
}

/// How long things are kept.
#[derive(Clone, Copy, Debug)]
struct Policy {
    compact_after: Duration,
    delete_after: Option<Duration>,
    /// Done webhook deliveries (and per-run webhooks whose run is gone) are deleted this long
    /// after.
    keep_delivered: Duration,
}

impl Retention {
    /// Starts the task: a first pass at once, then one every twentieth of the shorter
    /// duration (at least a second, at most a minute).
    pub(crate) fn start(store: Store, settings: &Settings) -> Self {
        let policy = Policy {
            compact_after: settings.compact_after,
            delete_after: settings.delete_after,
            keep_delivered: settings.webhooks.keep_delivered,
        };
        let shortest = policy.delete_after.map_or(policy.compact_after, |delete| {
            delete.min(policy.compact_after)
        });
        let every = (shortest / 20).clamp(LEAST_EVERY, MOST_EVERY);
        Self {
            task: tokio::spawn(run(store, policy, every)),
        }
    }

    /// Stops the task (a transaction under way is rolled back).
    pub(crate) fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for Retention {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn run(store: Store, policy: Policy, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        // A failed pass loses nothing; the next one takes up what is left.
        if let Err(error) = pass(&store, policy).await {
            tracing::warn!("retention: {error}");
        }
    }
}

/// Compacts, deletes and gives space back until nothing is left to do now.
async fn pass(store: &Store, policy: Policy) -> Result<(), StoreError> {
    let cutoff = clock::before;
    let mut compacted = Compaction::default();
    loop {
        let batch = store
            .compact_runs(cutoff(policy.compact_after), BATCH)
            .await?;
        compacted.runs += batch.runs;
        compacted.folded += batch.folded;
        compacted.bytes_before += batch.bytes_before;
        compacted.bytes_after += batch.bytes_after;
        if batch.runs < u64::from(BATCH) {
            break;
        }
    }
    let mut deleted = Deletion::default();
    if let Some(delete_after) = policy.delete_after {
        loop {
            let batch = store.delete_before(cutoff(delete_after), BATCH).await?;
            deleted.sessions += batch.sessions;
            deleted.runs += batch.runs;
            if batch.sessions < u64::from(BATCH) && batch.runs < u64::from(BATCH) {
                break;
            }
        }
    }
    let mut webhook_rows = 0;
    loop {
        let batch = store
            .delete_done_deliveries(cutoff(policy.keep_delivered), BATCH * 16)
            .await?;
        webhook_rows += batch;
        if batch < u64::from(BATCH * 16) {
            break;
        }
    }
    if webhook_rows > 0 {
        tracing::debug!(
            rows = webhook_rows,
            "retention: done webhook deliveries deleted"
        );
    }
    if compacted.runs == 0 && deleted == Deletion::default() {
        return Ok(());
    }
    let pages = store.reclaim_space().await?;
    tracing::info!(
        compacted = compacted.folded,
        bytes_before = compacted.bytes_before,
        bytes_after = compacted.bytes_after,
        deleted_sessions = deleted.sessions,
        deleted_runs = deleted.runs,
        pages_freed = pages,
        "retention pass"
    );
    Ok(())
}
