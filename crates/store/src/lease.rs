//! Node leases. On PostgreSQL many nodes share the store, and each holds its runs by a lease
//! it renews (`nodes.lease_until`). A node whose lease has lapsed is taken for dead (one that
//! holds none, a node of an earlier version, is found once as a node starts): any other node
//! ends its open runs `incomplete` (code `interrupted`), as the node itself would on its restart ([`Store::mark_interrupted`]), and
//! the store refuses the late writes of a node that was only slow (an ended run takes no more
//! events). Times are the nodes' own clocks, in milliseconds since the epoch: they must agree
//! to well within a lease.
//!
//! A node's runs are ended under a lock of that node's (a transaction-scoped advisory lock), so
//! two nodes sweeping at once, or a sweep and the node's own restart, end each run once and add
//! its output to its session once. On SQLite (one process per file) there are no leases: a
//! restarted process ends its own runs.

use agentwire_core::{RunId, Timestamp};

use crate::error::StoreError;
use crate::store::{Backend, Store};

/// The first key of the advisory locks of nodes (the second is the hash of the node's name).
const LOCK_SPACE: i32 = 0x6177;

impl Store {
    /// Holds `node`'s lease until `until` (taking it if it had none). Nothing on SQLite.
    pub async fn renew_lease(&self, node: &str, until: Timestamp) -> Result<(), StoreError> {
        let Backend::Postgres(pool) = &self.backend else {
            return Ok(());
        };
        sqlx::query(
            "INSERT INTO nodes (id, lease_until) VALUES ($1, $2) \
             ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until",
        )
        .bind(node)
        .bind(until.0)
        .execute(pool)
        .await?;
        Ok(())
    }

    /// Gives `node`'s lease up (a node that stops, its runs ended). Nothing on SQLite.
    pub async fn release_lease(&self, node: &str) -> Result<(), StoreError> {
        let Backend::Postgres(pool) = &self.backend else {
            return Ok(());
        };
        sqlx::query("DELETE FROM nodes WHERE id = $1")
            .bind(node)
            .execute(pool)
            .await?;
        Ok(())
    }

    /// Whether `node` holds a lease at `now` (always, on SQLite: one process, alive).
    pub async fn node_alive(&self, node: &str, now: Timestamp) -> Result<bool, StoreError> {
        let Backend::Postgres(pool) = &self.backend else {
            return Ok(true);
        };
        let until: Option<i64> = sqlx::query_scalar("SELECT lease_until FROM nodes WHERE id = $1")
            .bind(node)
            .fetch_optional(pool)
            .await?;
        Ok(until.is_some_and(|until| until >= now.0))
    }

    /// After a crash of `node`, when it starts again (before it takes work): ends its runs as
    /// [`Store::mark_interrupted`] does, under the node's lock, so a sweep of another node's
    /// ending them at the same time does not end them twice.
    pub async fn recover_node(&self, node: &str) -> Result<Vec<RunId>, StoreError> {
        self.end_node(node, When::Restarted).await
    }

    /// Ends the open runs of every node whose lease lapsed before `now`, and forgets those
    /// leases. Every node may run it at once. Returns the runs it ended; nothing on SQLite.
    pub async fn sweep_lapsed(&self, now: Timestamp) -> Result<Vec<RunId>, StoreError> {
        let Backend::Postgres(pool) = &self.backend else {
            return Ok(Vec::new());
        };
        let lapsed: Vec<String> = sqlx::query_scalar("SELECT id FROM nodes WHERE lease_until < $1")
            .bind(now.0)
            .fetch_all(pool)
            .await?;
        self.end_lapsed(lapsed, now).await
    }

    /// Ends the open runs of every node that holds no lease (a node of an earlier version, or
    /// one that gave its lease up with runs left): once, as a node starts, since it reads
    /// every open run. Returns the runs it ended; nothing on SQLite.
    pub async fn sweep_unleased(&self, now: Timestamp) -> Result<Vec<RunId>, StoreError> {
        let Backend::Postgres(pool) = &self.backend else {
            return Ok(Vec::new());
        };
        let unleased: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT node FROM runs \
             WHERE status IN ('created', 'queued', 'in_progress', 'awaiting') \
             AND NOT EXISTS (SELECT 1 FROM nodes WHERE nodes.id = runs.node)",
        )
        .fetch_all(pool)
        .await?;
        self.end_lapsed(unleased, now).await
    }

    /// Ends `node`'s open runs if it holds no lease at `now` (it stopped): what a node does
    /// at once when asked to cancel or answer a run of a node that stopped, rather than wait
    /// for the next sweep. Returns the runs it ended.
    pub async fn end_if_dead(&self, node: &str, now: Timestamp) -> Result<Vec<RunId>, StoreError> {
        if !self.is_postgres() {
            return Ok(Vec::new());
        }
        // Waits for a sweep under way, so the runs have ended when this returns.
        self.end_node(node, When::Lapsed { now, wait: true }).await
    }

    /// Ends the runs of these nodes taken for dead, leaving any another node is ending.
    async fn end_lapsed(
        &self,
        nodes: Vec<String>,
        now: Timestamp,
    ) -> Result<Vec<RunId>, StoreError> {
        let mut ended = Vec::new();
        for node in nodes {
            ended.extend(
                self.end_node(&node, When::Lapsed { now, wait: false })
                    .await?,
            );
        }
        Ok(ended)
    }

    /// Ends `node`'s open runs under its lock (see [`When`]); a lapsed node's only if its lease
    /// is still lapsed (or missing) once the lock is held, and its lease is then forgotten.
    async fn end_node(&self, node: &str, when: When) -> Result<Vec<RunId>, StoreError> {
        let Backend::Postgres(pool) = &self.backend else {
            return self.mark_interrupted(node).await;
        };
        // The lock lives as long as this transaction; the runs are ended on other connections.
        let mut lock = pool.begin().await?;
        let locked: bool = match when {
            When::Lapsed { wait: false, .. } => {
                sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1, hashtext($2))")
                    .bind(LOCK_SPACE)
                    .bind(node)
                    .fetch_one(&mut *lock)
                    .await?
            }
            When::Lapsed { wait: true, .. } | When::Restarted => {
                sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                    .bind(LOCK_SPACE)
                    .bind(node)
                    .execute(&mut *lock)
                    .await?;
                true
            }
        };
        // Another node is at it (a sweep leaves it to that one).
        if !locked {
            return Ok(Vec::new());
        }
        if let When::Lapsed { now, .. } = when {
            let until: Option<i64> =
                sqlx::query_scalar("SELECT lease_until FROM nodes WHERE id = $1")
                    .bind(node)
                    .fetch_optional(&mut *lock)
                    .await?;
            // The node renewed its lease meanwhile: it is alive.
            if until.is_some_and(|until| until >= now.0) {
                return Ok(Vec::new());
            }
        }
        let ended = self.mark_interrupted(node).await?;
        if let When::Lapsed { now, .. } = when {
            sqlx::query("DELETE FROM nodes WHERE id = $1 AND lease_until < $2")
                .bind(node)
                .bind(now.0)
                .execute(&mut *lock)
                .await?;
        }
        lock.commit().await?;
        Ok(ended)
    }
}

/// When a node's runs are ended.
#[derive(Clone, Copy, Debug)]
enum When {
    /// It starts again after its crash.
    Restarted,
    /// Its lease lapsed before `now` (or it holds none). `wait`: for another node ending them
    /// (so they have ended on return), or leave them to it (a sweep).
    Lapsed { now: Timestamp, wait: bool },
}
