//! A SQLite file kept bounded: its write-ahead log checkpointed in the background and cut back
//! when it grows, and the pages that deleted rows free given back to the file system.
//!
//! Checkpoints run on a task of their own, not inside whichever commit crosses 1,000 pages of
//! log (`wal_autocheckpoint = 0`): that commit used to copy and sync the pages while every
//! stream waited on it. A PASSIVE checkpoint never blocks a writer or a reader, but it cannot
//! restart the log while some reader still reads an older snapshot, and under sustained load
//! some reader always does: the log grew to 950 MB after a day. So once the log passes
//! [`WAL_TRUNCATE_BYTES`] a TRUNCATE checkpoint waits (SQLite's busy handler) for those readers
//! to move on and cuts the file to nothing, holding the writers' turn meanwhile so they queue
//! instead of sleeping in the busy handler. `journal_size_limit` cuts the file back to
//! [`WAL_KEEP_BYTES`] whenever the log restarts on its own.
//!
//! The file is in `auto_vacuum = INCREMENTAL` mode (a file made before it is switched once, by
//! a VACUUM, when opened), so [`reclaim`] can give free pages back a step at a time after
//! retention deleted or folded rows, instead of a VACUUM that rewrites the whole file. It
//! leaves a tenth of the file free: under steady load the next writes take those pages again.

use std::sync::Arc;
use std::time::Duration;

use sqlx::SqlitePool;
use tokio::sync::Mutex;

use crate::error::StoreError;

/// How often the WAL is checkpointed.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

/// The WAL's size past which a checkpoint truncates it, waiting for readers. Far below the
/// 64 MB it must stay under; large enough that it happens only under sustained load.
pub(crate) const WAL_TRUNCATE_BYTES: i64 = 16 * 1024 * 1024;

/// What is kept of the WAL file when the log restarts (`journal_size_limit`).
pub(crate) const WAL_KEEP_BYTES: i64 = 4 * 1024 * 1024;

/// Free pages given back per transaction: 4 MiB with 4 KiB pages, a few milliseconds of the
/// writers' turn.
const RECLAIM_STEP: i64 = 1024;

/// `auto_vacuum` = INCREMENTAL.
const INCREMENTAL: i64 = 2;

/// A file's checkpoints: the background task's, and any asked for ([`Checkpoints::now`]), one
/// at a time: a checkpoint that finds another running is busy at once and learns nothing of
/// the log (so it would not truncate it).
#[derive(Debug)]
pub(crate) struct Checkpoints {
    task: tokio::task::JoinHandle<()>,
    running: Arc<Mutex<()>>,
}

impl Checkpoints {
    /// Checkpoints the WAL every [`CHECKPOINT_EVERY`] until the pool closes (or this drops).
    pub(crate) fn start(pool: SqlitePool, turns: Arc<Mutex<()>>) -> Self {
        let running = Arc::new(Mutex::new(()));
        let task = tokio::spawn({
            let running = Arc::clone(&running);
            async move {
                let mut every = tokio::time::interval(CHECKPOINT_EVERY);
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                while !pool.is_closed() {
                    every.tick().await;
                    let _one = running.lock().await;
                    // A failed checkpoint loses nothing (the log keeps every commit); the next
                    // one retries.
                    let _ = checkpoint(&pool, &turns).await;
                }
            }
        });
        Self { task, running }
    }

    /// One checkpoint now, after any running.
    pub(crate) async fn now(&self, pool: &SqlitePool, turns: &Mutex<()>) -> Result<(), StoreError> {
        let _one = self.running.lock().await;
        checkpoint(pool, turns).await
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One checkpoint: PASSIVE, then TRUNCATE if the log is past [`WAL_TRUNCATE_BYTES`].
async fn checkpoint(pool: &SqlitePool, turns: &Mutex<()>) -> Result<(), StoreError> {
    // (busy, frames in the log, frames copied back)
    let (_, frames, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
        .fetch_one(pool)
        .await?;
    let page_size: i64 = sqlx::query_scalar("PRAGMA page_size")
        .fetch_one(pool)
        .await?;
    // A frame is a page and its 24-byte header.
    if frames.saturating_mul(page_size + 24) > WAL_TRUNCATE_BYTES {
        let _turn = turns.lock().await;
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .fetch_one(pool)
            .await?;
    }
    Ok(())
}

/// Switches a file made before incremental auto-vacuum to it: a VACUUM, once. The connection
/// options ask for the mode, which a new file takes with its first table.
pub(crate) async fn use_incremental_vacuum(pool: &SqlitePool) -> Result<(), StoreError> {
    let mut connection = pool.acquire().await?;
    let mode: i64 = sqlx::query_scalar("PRAGMA auto_vacuum")
        .fetch_one(&mut *connection)
        .await?;
    if mode != INCREMENTAL {
        sqlx::query("PRAGMA auto_vacuum = INCREMENTAL")
            .execute(&mut *connection)
            .await?;
        sqlx::query("VACUUM").execute(&mut *connection).await?;
    }
    Ok(())
}

/// Gives the file's free pages back to the file system, [`RECLAIM_STEP`] pages per
/// transaction, but a tenth of the file: the next writes would only take that back (a file
/// under steady load and retention reuses the pages it frees); returns how many.
pub(crate) async fn reclaim(pool: &SqlitePool, turns: &Mutex<()>) -> Result<u64, StoreError> {
    let mut reclaimed = 0;
    loop {
        let (pages, free): (i64, i64) = sqlx::query_as(
            "SELECT page_count, freelist_count FROM pragma_page_count(), pragma_freelist_count()",
        )
        .fetch_one(pool)
        .await?;
        let excess = free - pages / 10;
        if excess <= 0 {
            return Ok(reclaimed);
        }
        {
            let _turn = turns.lock().await;
            let sql = format!("PRAGMA incremental_vacuum({})", excess.min(RECLAIM_STEP));
            sqlx::query(sqlx::AssertSqlSafe(sql)).execute(pool).await?;
        }
        let left: i64 = sqlx::query_scalar("PRAGMA freelist_count")
            .fetch_one(pool)
            .await?;
        if left >= free {
            // Not in incremental mode (an in-memory database): nothing to give back.
            return Ok(reclaimed);
        }
        reclaimed += u64::try_from(free - left).unwrap_or(0);
    }
}
