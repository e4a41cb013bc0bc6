//! A session's shared state as the store keeps it: read, and set by a client (a run's changes
//! are written with its events, in the group commit: see `group/steps.rs`).
//!
//! Decided: a client may set the state only while no run of the session is open (created,
//! queued, working or awaiting), checked in the same statement that writes it, so that no
//! node's run ever works on a state that changed under it. A write names the version it read,
//! so a read-modify-write (`PATCH`) that raced another write is refused rather than lost.

use serde_json::Value;
use sqlx::Row;

use agentwire_core::{RunId, SessionId};

use crate::error::StoreError;
use crate::owners::owner_column;
use crate::store::{Store, with_pool};

/// A session's shared state as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedStateRecord {
    /// The API key (its id) that owns the session; `None` without auth.
    pub owner: Option<String>,
    /// The state; `null` when the session has none.
    pub state: Value,
    /// How many times it was written: what [`Store::set_shared_state`] checks.
    pub version: i64,
}

/// How a [`Store::set_shared_state`] fared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateWrite {
    /// The state is set; it now has this version.
    Written {
        /// The new version.
        version: i64,
    },
    /// There is no such session.
    NoSession,
    /// A run of the session is open (this one, the latest): nothing was written.
    RunOpen(Option<RunId>),
    /// The state was written since the version given: nothing was written.
    Stale,
}

impl Store {
    /// The shared state of `owner`'s session, or `None` when the owner has no such session. A
    /// state stored that cannot be read back is [`StoreError::UnreadableState`]
    /// ([`Store::state_version`] still reads its version, and a write replaces it).
    pub async fn shared_state(
        &self,
        owner: Option<&str>,
        id: &SessionId,
    ) -> Result<Option<SharedStateRecord>, StoreError> {
        let row = with_pool!(self, |pool, _begin| {
            sqlx::query(
                "SELECT shared_state, shared_state_version FROM sessions \
                 WHERE owner = $1 AND id = $2",
            )
            .bind(owner_column(owner))
            .bind(id.as_str())
            .fetch_optional(pool)
            .await?
            .map(|row| -> Result<_, sqlx::Error> {
                Ok((
                    row.try_get::<Option<String>, _>(0)?,
                    row.try_get::<i64, _>(1)?,
                ))
            })
            .transpose()?
        });
        let Some((text, version)) = row else {
            return Ok(None);
        };
        let state = match text {
            Some(text) => {
                serde_json::from_str(&text).map_err(|error| StoreError::UnreadableState {
                    session: id.to_string(),
                    reason: error.to_string(),
                })?
            }
            None => Value::Null,
        };
        Ok(Some(SharedStateRecord {
            owner: owner.map(str::to_owned),
            state,
            version,
        }))
    }

    /// The version of the shared state of `owner`'s session, without reading the state, or
    /// `None` when the owner has no such session.
    pub async fn state_version(
        &self,
        owner: Option<&str>,
        id: &SessionId,
    ) -> Result<Option<i64>, StoreError> {
        let version = with_pool!(self, |pool, _begin| {
            sqlx::query("SELECT shared_state_version FROM sessions WHERE owner = $1 AND id = $2")
                .bind(owner_column(owner))
                .bind(id.as_str())
                .fetch_optional(pool)
                .await?
                .map(|row| row.try_get::<i64, _>(0))
                .transpose()?
        });
        Ok(version)
    }

    /// Sets the shared state of `owner`'s session, if it is still at `version` (`None`:
    /// whatever it is) and no run of the session is open; one statement, so neither can change
    /// between the check and the write.
    pub async fn set_shared_state(
        &self,
        owner: Option<&str>,
        id: &SessionId,
        state: &Value,
        version: Option<i64>,
    ) -> Result<StateWrite, StoreError> {
        let text = match state {
            Value::Null => None,
            state => Some(serde_json::to_string(state)?),
        };
        let _turn = self.write_turn().await;
        let written: Option<i64> = with_pool!(self, |pool, _begin| {
            // The open statuses are `run::OPEN_STATUSES`.
            sqlx::query(
                "UPDATE sessions SET shared_state = $2, \
                 shared_state_version = shared_state_version + 1 \
                 WHERE owner = $4 AND id = $1 \
                 AND (CAST($3 AS BIGINT) IS NULL OR shared_state_version = $3) \
                 AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.owner = $4 \
                 AND runs.session_id = $1 \
                 AND runs.status IN ('created', 'queued', 'in_progress', 'awaiting')) \
                 RETURNING shared_state_version",
            )
            .bind(id.as_str())
            .bind(text.as_deref())
            .bind(version)
            .bind(owner_column(owner))
            .fetch_optional(pool)
            .await?
            .map(|row| row.try_get::<i64, _>(0))
            .transpose()?
        });
        if let Some(version) = written {
            return Ok(StateWrite::Written { version });
        }
        // Nothing was written: say why.
        let Some(stored_version) = self.state_version(owner, id).await? else {
            return Ok(StateWrite::NoSession);
        };
        let open = self
            .last_session_run(owner, id)
            .await?
            .filter(|run| !run.status.is_terminal());
        Ok(match (open, version) {
            (Some(run), _) => StateWrite::RunOpen(Some(run.id)),
            (None, Some(version)) if version != stored_version => StateWrite::Stale,
            // A run opened and ended between the write and this look.
            (None, _) => StateWrite::RunOpen(None),
        })
    }
}
