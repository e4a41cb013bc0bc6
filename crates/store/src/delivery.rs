//! The queue of webhook deliveries: claimed with a lease (so two nodes sharing PostgreSQL never
//! send one at the same time, and a node that died mid-send leaves it to the others once its
//! claim lapses), then recorded as delivered, to be retried, or given up. Rows are queued by
//! the group commit (`group/steps.rs`); done ones are deleted by retention.

use std::collections::HashMap;

use agentwire_core::{RunId, RunStatus, SessionId, Timestamp, WebhookId};
use sqlx::{QueryBuilder, Row};

use crate::error::StoreError;
use crate::store::{Store, with_pool};
use crate::webhook::{WEBHOOK_COLUMNS, WebhookRecord, webhook_from_row};

/// A delivery claimed for sending: the status change and the webhook it goes to.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// Its id in the queue (`{webhook}:{run}:{seq}`).
    pub id: String,
    /// Where it goes.
    pub webhook: WebhookRecord,
    /// The run whose status changed.
    pub run_id: RunId,
    /// The seq of the run's `run_status` event.
    pub seq: u64,
    /// The status the run changed to.
    pub status: RunStatus,
    /// The run's session, if it has one.
    pub session_id: Option<SessionId>,
    /// The run's agent.
    pub agent: String,
    /// When the status change was committed.
    pub changed_at: Timestamp,
    /// How many times it has been claimed, this time included.
    pub attempts: u32,
}

/// What became of a claimed delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// The receiver answered 2xx.
    Delivered,
    /// It failed (`error` says how); tried again at `at`.
    Retry {
        /// When it is tried next.
        at: Timestamp,
        /// What went wrong this time.
        error: String,
    },
    /// It failed for longer than deliveries are tried: it is not tried again.
    GaveUp {
        /// What went wrong the last time.
        error: String,
    },
}

impl Store {
    /// Claims up to `limit` deliveries that are due at `now`, oldest first, until
    /// `claim_until`: no other claim takes them before then, so the claimer records their
    /// outcome before it (else they are due again, for whichever node comes first).
    pub async fn claim_deliveries(
        &self,
        now: Timestamp,
        claim_until: Timestamp,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        let limit = i64::from(limit);
        // PostgreSQL: rows another node is claiming are skipped, not waited for.
        let lock = if self.is_postgres() {
            " FOR UPDATE SKIP LOCKED"
        } else {
            ""
        };
        let claim = format!(
            "UPDATE webhook_deliveries SET next_attempt_at = $1, attempts = attempts + 1 \
             WHERE id IN (SELECT id FROM webhook_deliveries WHERE done_at IS NULL \
             AND next_attempt_at <= $2 ORDER BY next_attempt_at LIMIT $3{lock}) \
             RETURNING id, webhook_id, run_id, seq, status, awaiting, session_id, agent, \
             created_at, attempts"
        );
        let _turn = self.write_turn().await;
        let (claimed, webhooks) = with_pool!(self, |pool, _begin| {
            let claimed = sqlx::query(sqlx::AssertSqlSafe(claim.as_str()))
                .bind(claim_until.0)
                .bind(now.0)
                .bind(limit)
                .fetch_all(pool)
                .await?
                .iter()
                .map(|row| {
                    let status: String = row.try_get("status")?;
                    let awaiting: Option<String> = row.try_get("awaiting")?;
                    let status: RunStatus = serde_json::from_value(
                        serde_json::json!({"status": status, "awaiting": awaiting}),
                    )?;
                    Ok(Claimed {
                        id: row.try_get("id")?,
                        webhook_id: row.try_get("webhook_id")?,
                        run_id: RunId::from(row.try_get::<String, _>("run_id")?),
                        seq: u64::try_from(row.try_get::<i64, _>("seq")?).unwrap_or_default(),
                        status,
                        session_id: row
                            .try_get::<Option<String>, _>("session_id")?
                            .map(SessionId::from),
                        agent: row.try_get("agent")?,
                        changed_at: Timestamp(row.try_get("created_at")?),
                        attempts: u32::try_from(row.try_get::<i64, _>("attempts")?)
                            .unwrap_or(u32::MAX),
                    })
                })
                .collect::<Result<Vec<Claimed>, StoreError>>()?;
            let mut webhooks = HashMap::new();
            let mut ids: Vec<&str> = claimed.iter().map(|c| c.webhook_id.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            if !ids.is_empty() {
                let mut select = QueryBuilder::new(format!(
                    "SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE id IN ("
                ));
                let mut list = select.separated(", ");
                for id in &ids {
                    list.push_bind(*id);
                }
                select.push(")");
                for row in select.build().fetch_all(pool).await? {
                    let webhook = webhook_from_row(&row)?;
                    webhooks.insert(webhook.id.clone(), webhook);
                }
            }
            (claimed, webhooks)
        });
        // A webhook deleted meanwhile took its deliveries with it.
        Ok(claimed
            .into_iter()
            .filter_map(|claimed| {
                let webhook = webhooks.get(&WebhookId::from(claimed.webhook_id))?.clone();
                Some(Delivery {
                    id: claimed.id,
                    webhook,
                    run_id: claimed.run_id,
                    seq: claimed.seq,
                    status: claimed.status,
                    session_id: claimed.session_id,
                    agent: claimed.agent,
                    changed_at: claimed.changed_at,
                    attempts: claimed.attempts,
                })
            })
            .collect())
    }

    /// Records what became of claimed deliveries, all in one transaction, at `now`.
    pub async fn record_deliveries(
        &self,
        outcomes: &[(String, DeliveryOutcome)],
        now: Timestamp,
    ) -> Result<(), StoreError> {
        if outcomes.is_empty() {
            return Ok(());
        }
        let _turn = self.write_turn().await;
        with_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await?;
            for chunk in outcomes.chunks(512) {
                let mut update = QueryBuilder::new(
                    "UPDATE webhook_deliveries SET done_at = v.column2, outcome = v.column3, \
                     next_attempt_at = COALESCE(v.column4, webhook_deliveries.next_attempt_at), \
                     last_error = v.column5 FROM (VALUES ",
                );
                let mut values = update.separated(", ");
                for (id, outcome) in chunk {
                    let (done_at, name, next, error) = match outcome {
                        DeliveryOutcome::Delivered => (Some(now.0), Some("delivered"), None, None),
                        DeliveryOutcome::Retry { at, error } => {
                            (None, None, Some(at.0), Some(error.as_str()))
                        }
                        DeliveryOutcome::GaveUp { error } => {
                            (Some(now.0), Some("gave_up"), None, Some(error.as_str()))
                        }
                    };
                    values
                        .push("(CAST(")
                        .push_bind_unseparated(id.as_str())
                        .push_unseparated(" AS TEXT), CAST(")
                        .push_bind_unseparated(done_at)
                        .push_unseparated(" AS BIGINT), CAST(")
                        .push_bind_unseparated(name)
                        .push_unseparated(" AS TEXT), CAST(")
                        .push_bind_unseparated(next)
                        .push_unseparated(" AS BIGINT), CAST(")
                        .push_bind_unseparated(error)
                        .push_unseparated(" AS TEXT))");
                }
                update.push(") AS v WHERE webhook_deliveries.id = v.column1");
                update.build().execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    /// Deletes up to `limit` deliveries done (delivered or given up) before `before`, and as
    /// many per-run webhooks created before it whose run is gone; returns how many rows.
    pub async fn delete_done_deliveries(
        &self,
        before: Timestamp,
        limit: u32,
    ) -> Result<u64, StoreError> {
        let _turn = self.write_turn().await;
        let deleted = with_pool!(self, |pool, _begin| {
            let deliveries = sqlx::query(
                "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries \
                 WHERE done_at IS NOT NULL AND done_at < $1 LIMIT $2)",
            )
            .bind(before.0)
            .bind(i64::from(limit))
            .execute(pool)
            .await?
            .rows_affected();
            let webhooks = sqlx::query(
                "DELETE FROM webhooks WHERE id IN (SELECT id FROM webhooks w \
                 WHERE w.run_id IS NOT NULL AND w.created_at < $1 \
                 AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.id = w.run_id) LIMIT $2)",
            )
            .bind(before.0)
            .bind(i64::from(limit))
            .execute(pool)
            .await?
            .rows_affected();
            deliveries + webhooks
        });
        Ok(deleted)
    }

    /// Completes once deliveries may have been queued by this store since the last call (a
    /// group commit that queued some), at once if some were; a worker waits on it between
    /// polls. Other nodes' commits are not heard: they send their own.
    pub async fn deliveries_queued(&self) {
        self.deliveries.notified().await;
    }
}

/// A claimed row, before its webhook is joined to it.
struct Claimed {
    id: String,
    webhook_id: String,
    run_id: RunId,
    seq: u64,
    status: RunStatus,
    session_id: Option<SessionId>,
    agent: String,
    changed_at: Timestamp,
    attempts: u32,
}
