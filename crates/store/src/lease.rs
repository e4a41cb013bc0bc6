//! Node leases. On PostgreSQL many nodes share the store, and each holds its runs by a lease
//! it renews (`nodes.lease_until`). A node whose lease has lapsed, or that holds none (a node of
//! an earlier version), is taken for dead: any other node ends its open runs `incomplete` (code
//! `interrupted`), as the node itself would on its restart ([`Store::mark_interrupted`]), and
//! the store refuses the late writes of a node that was only slow (an ended run takes no more
//! events). Times are the nodes' own clocks, in milliseconds since the epoch: they must agree
//! to well within a lease.
//!
//! A node's runs are ended under a lock of that node's (a transaction-scoped advisory lock), so
//! two nodes sweeping at once, or a sweep and the node's own restart, end each run once and add
//! its output to its session once. On SQLite (one process per file) there are no leases: a
//! restarted process ends its own runs.

use std::collections::HashMap;

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
        self.end_node(node, None).await
    }

    /// Ends the open runs of every node whose lease lapsed before `now` or that holds none, and
    /// forgets the lapsed leases. Every node may run it at once. Returns the runs it ended;
    /// nothing on SQLite.
    pub async fn sweep_lapsed(&self, now: Timestamp) -> Result<Vec<RunId>, StoreError> {
        let Backend::Postgres(pool) = &self.backend else {
            return Ok(Vec::new());
        };
        let leases: HashMap<String, i64> = sqlx::query_as("SELECT id, lease_until FROM nodes")
            .fetch_all(pool)
            .await?
            .into_iter()
            .collect();
        let open: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT node FROM runs \
             WHERE status IN ('created', 'queued', 'in_progress', 'awaiting')",
        )
        .fetch_all(pool)
        .await?;
        let mut lapsed: Vec<String> = leases
            .iter()
            .filter(|(_, until)| **until < now.0)
            .map(|(node, _)| node.clone())
            .chain(open.into_iter().filter(|node| !leases.contains_key(node)))
            .collect();
        lapsed.sort_unstable();
        lapsed.dedup();
        let mut ended = Vec::new();
        for node in lapsed {
            ended.extend(self.end_node(&node, Some(now)).await?);
        }
        Ok(ended)
    }

    /// Ends `node`'s open runs under its lock: when `lapsed_at` is given, only if its lease is
    /// still lapsed (or missing) at that time and no other node holds the lock, and its lease
    /// is then forgotten.
    async fn end_node(
        &self,
        node: &str,
        lapsed_at: Option<Timestamp>,
    ) -> Result<Vec<RunId>, StoreError> {
        let Backend::Postgres(pool) = &self.backend else {
            return self.mark_interrupted(node).await;
        };
        // The lock lives as long as this transaction; the runs are ended on other connections.
        let mut lock = pool.begin().await?;
        if let Some(now) = lapsed_at {
            let locked: bool =
                sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1, hashtext($2))")
                    .bind(LOCK_SPACE)
                    .bind(node)
                    .fetch_one(&mut *lock)
                    .await?;
            let until: Option<i64> =
                sqlx::query_scalar("SELECT lease_until FROM nodes WHERE id = $1")
                    .bind(node)
                    .fetch_optional(&mut *lock)
                    .await?;
            // Another node is at it, or the node renewed its lease meanwhile.
            if !locked || until.is_some_and(|until| until >= now.0) {
                return Ok(Vec::new());
            }
        } else {
            sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                .bind(LOCK_SPACE)
                .bind(node)
                .execute(&mut *lock)
                .await?;
        }
        let ended = self.mark_interrupted(node).await?;
        if let Some(now) = lapsed_at {
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
