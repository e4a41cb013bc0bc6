//! Webhooks: URLs told of runs' status changes, per key (every run of its owner) or per run.
//! Their deliveries are queued by the group commit (`group/steps.rs`) in the transaction that
//! stores the status, and worked off through `delivery`; this module holds the subscriptions.

use agentwire_core::{RunId, RunStatus, Timestamp, WebhookId};
use sqlx::Row;

use crate::error::StoreError;
use crate::store::{Store, with_pool};

/// A webhook as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookRecord {
    /// Its id.
    pub id: WebhookId,
    /// The key that created it (`None` on a server without keys): it hears only of that
    /// owner's runs.
    pub owner: Option<String>,
    /// `None`: every run of the owner; else only this run.
    pub run_id: Option<RunId>,
    /// Where deliveries are posted.
    pub url: String,
    /// The Standard Webhooks signing secret, `whsec_<base64>`.
    pub secret: String,
    /// The statuses it hears of.
    pub events: StatusSet,
    /// How deliveries are written.
    pub format: WebhookFormat,
    /// A2A: the push-notification config's own id (`None` for a native webhook).
    pub config_id: Option<String>,
    /// A2A: the token sent back with each delivery (`X-A2A-Notification-Token`).
    pub token: Option<String>,
    /// When it was created.
    pub created_at: Timestamp,
}

/// How a webhook's deliveries are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WebhookFormat {
    /// Standard Webhooks: a `run.<status>` event, signed (`webhook-id`, `webhook-timestamp`,
    /// `webhook-signature`).
    Standard,
    /// An A2A push notification: a `StreamResponse` with the task's `statusUpdate`, the
    /// config's token in `X-A2A-Notification-Token`, and the Standard Webhooks signature too.
    A2a,
}

impl WebhookFormat {
    fn as_str(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::A2a => "a2a",
        }
    }

    fn parse(text: &str) -> Result<Self, StoreError> {
        match text {
            "standard" => Ok(Self::Standard),
            "a2a" => Ok(Self::A2a),
            other => Err(StoreError::Corrupt(format!("webhook format '{other}'"))),
        }
    }
}

/// A set of run statuses, one bit each (awaiting counts as one whatever it waits for), as the
/// `webhooks.events` column holds it: the group commit matches a status change against it
/// with one `&`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StatusSet(u64);

/// The status names in bit order.
const STATUS_NAMES: [&str; 9] = [
    "created",
    "queued",
    "in_progress",
    "awaiting",
    "completed",
    "failed",
    "canceled",
    "rejected",
    "incomplete",
];

impl StatusSet {
    /// Every status.
    pub const ALL: StatusSet = StatusSet((1 << STATUS_NAMES.len()) - 1);

    /// The set of one status.
    pub fn of(status: RunStatus) -> Self {
        Self::named(status.name()).unwrap_or_default()
    }

    /// The set of the status named `name` (as the `status` key spells it), if it is one.
    pub fn named(name: &str) -> Option<Self> {
        let index = STATUS_NAMES.iter().position(|known| *known == name)?;
        Some(Self(1 << index))
    }

    /// Both sets' statuses.
    #[must_use]
    pub fn with(self, other: StatusSet) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether `status` is in the set.
    pub fn contains(self, status: RunStatus) -> bool {
        self.0 & Self::of(status).0 != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The names of its statuses, in lifecycle order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        STATUS_NAMES
            .iter()
            .enumerate()
            .filter(move |(index, _)| self.0 & (1 << index) != 0)
            .map(|(_, name)| *name)
    }

    /// The column's value.
    pub(crate) fn bits(self) -> i64 {
        i64::try_from(self.0).unwrap_or_default()
    }

    fn from_bits(bits: i64) -> Self {
        Self(u64::try_from(bits).unwrap_or_default() & Self::ALL.0)
    }
}

/// The columns a webhook is read with.
pub(crate) const WEBHOOK_COLUMNS: &str =
    "id, owner, run_id, url, secret, events, format, config_id, token, created_at";

/// What deleting session `$2` of owner `$1` deletes of webhooks, in its transaction: the webhooks of its
/// runs (their queued deliveries with them), and what other webhooks were still owed of them.
pub(crate) const DELETE_SESSION_WEBHOOKS: [&str; 2] = [
    "DELETE FROM webhooks WHERE run_id IN \
     (SELECT id FROM runs WHERE owner = $1 AND session_id = $2)",
    "DELETE FROM webhook_deliveries WHERE done_at IS NULL AND run_id IN \
     (SELECT id FROM runs WHERE owner = $1 AND session_id = $2)",
];

impl Store {
    /// Stores a new webhook (its id must be fresh), unless its owner already has `limit`
    /// webhooks of its kind (hearing every run, or of its run): then nothing is written and
    /// the answer is false. An A2A config replaces the config of its task with the same
    /// `config_id`, in the same transaction (its queued deliveries go with it).
    pub async fn create_webhook(
        &self,
        webhook: &WebhookRecord,
        limit: u32,
    ) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let created = with_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await?;
            if let (Some(run_id), Some(config_id)) = (&webhook.run_id, &webhook.config_id) {
                sqlx::query(
                    "DELETE FROM webhooks WHERE run_id = $1 AND config_id = $2 \
                     AND owner IS NOT DISTINCT FROM $3",
                )
                .bind(run_id.as_str())
                .bind(config_id.as_str())
                .bind(webhook.owner.as_deref())
                .execute(&mut *tx)
                .await?;
            }
            let created = sqlx::query(
                "INSERT INTO webhooks (id, owner, run_id, url, secret, events, format, \
                 config_id, token, created_at) \
                 SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 \
                 WHERE (SELECT COUNT(*) FROM webhooks WHERE owner IS NOT DISTINCT FROM $2 \
                 AND run_id IS NOT DISTINCT FROM $3) < $11",
            )
            .bind(webhook.id.as_str())
            .bind(webhook.owner.as_deref())
            .bind(webhook.run_id.as_ref().map(RunId::as_str))
            .bind(&webhook.url)
            .bind(&webhook.secret)
            .bind(webhook.events.bits())
            .bind(webhook.format.as_str())
            .bind(webhook.config_id.as_deref())
            .bind(webhook.token.as_deref())
            .bind(webhook.created_at.0)
            .bind(i64::from(limit))
            .execute(&mut *tx)
            .await?
            .rows_affected()
                > 0;
            // Nothing is replaced when nothing is created.
            if created {
                tx.commit().await?;
            }
            created
        });
        Ok(created)
    }

    /// Up to `limit` webhooks of `owner` (of every kind), in the order of their ids (which are
    /// minted in creation order), after the id `after` when given.
    pub async fn webhooks_page(
        &self,
        owner: Option<&str>,
        after: Option<&WebhookId>,
        limit: u32,
    ) -> Result<Vec<WebhookRecord>, StoreError> {
        let sql = format!(
            "SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE owner IS NOT DISTINCT FROM $1 \
             AND (CAST($2 AS TEXT) IS NULL OR id > $2) ORDER BY id LIMIT $3"
        );
        with_pool!(self, |pool, _begin| {
            sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(owner)
                .bind(after.map(WebhookId::as_str))
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
                .iter()
                .map(webhook_from_row)
                .collect()
        })
    }

    /// The webhooks of `owner` (only those of `run_id`, when given), oldest first.
    pub async fn webhooks(
        &self,
        owner: Option<&str>,
        run_id: Option<&RunId>,
    ) -> Result<Vec<WebhookRecord>, StoreError> {
        let sql = format!(
            "SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE owner IS NOT DISTINCT FROM $1 \
             AND (CAST($2 AS TEXT) IS NULL OR run_id = $2) ORDER BY created_at, id"
        );
        with_pool!(self, |pool, _begin| {
            sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(owner)
                .bind(run_id.map(RunId::as_str))
                .fetch_all(pool)
                .await?
                .iter()
                .map(webhook_from_row)
                .collect()
        })
    }

    /// A webhook of `owner`, if there is one with this id.
    pub async fn webhook(
        &self,
        id: &WebhookId,
        owner: Option<&str>,
    ) -> Result<Option<WebhookRecord>, StoreError> {
        let sql = format!(
            "SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1 \
             AND owner IS NOT DISTINCT FROM $2"
        );
        with_pool!(self, |pool, _begin| {
            sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(id.as_str())
                .bind(owner)
                .fetch_optional(pool)
                .await?
                .as_ref()
                .map(webhook_from_row)
                .transpose()
        })
    }

    /// Deletes a webhook of `owner` with its queued deliveries; false when there is none.
    pub async fn delete_webhook(
        &self,
        id: &WebhookId,
        owner: Option<&str>,
    ) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let deleted = with_pool!(self, |pool, _begin| {
            sqlx::query("DELETE FROM webhooks WHERE id = $1 AND owner IS NOT DISTINCT FROM $2")
                .bind(id.as_str())
                .bind(owner)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(deleted > 0)
    }
}

pub(crate) fn webhook_from_row<R>(row: &R) -> Result<WebhookRecord, StoreError>
where
    R: Row,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let format: String = row.try_get("format")?;
    Ok(WebhookRecord {
        id: WebhookId::from(row.try_get::<String, _>("id")?),
        owner: row.try_get("owner")?,
        run_id: row.try_get::<Option<String>, _>("run_id")?.map(RunId::from),
        url: row.try_get("url")?,
        secret: row.try_get("secret")?,
        events: StatusSet::from_bits(row.try_get("events")?),
        format: WebhookFormat::parse(&format)?,
        config_id: row.try_get("config_id")?,
        token: row.try_get("token")?,
        created_at: Timestamp(row.try_get("created_at")?),
    })
}

#[cfg(test)]
mod tests {
    use agentwire_core::Awaiting;

    use super::*;

    #[test]
    fn a_status_set_holds_statuses_by_name_and_awaiting_whatever_it_waits_for() {
        let set = StatusSet::of(RunStatus::Completed)
            .with(StatusSet::of(RunStatus::Awaiting(Awaiting::Approval)));
        assert!(set.contains(RunStatus::Awaiting(Awaiting::Input)));
        assert!(set.contains(RunStatus::Completed));
        assert!(!set.contains(RunStatus::Failed));
        assert_eq!(set.names().collect::<Vec<_>>(), ["awaiting", "completed"]);
        assert_eq!(StatusSet::from_bits(set.bits()), set);
        assert_eq!(StatusSet::ALL.names().count(), STATUS_NAMES.len());
        assert_eq!(StatusSet::named("done"), None);
    }
}
