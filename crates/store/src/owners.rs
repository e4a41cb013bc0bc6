//! Owners: who a session and its runs belong to, and moving the owner ids of earlier versions.
//!
//! An owner is an opaque id the server gives (an API key's identity). Earlier servers stored the
//! key's place in their key list (`key-1`, `key-2`, …), which passes data to another key when
//! the list changes; [`Store::adopt_legacy_owners`] replaces those ids once.

use sqlx::Row;

use crate::error::StoreError;
use crate::store::{Store, with_pool};

/// What an owner id of an earlier version becomes when no key stands at its place any more: an
/// id no key is ever given, so its data is nobody's to read.
const ORPHAN_PREFIX: &str = "removed:";

/// The owner as its column holds it: `''` for none (a server without auth). The owner is part
/// of a session's key, and a key column cannot be NULL.
pub(crate) fn owner_column(owner: Option<&str>) -> &str {
    owner.unwrap_or("")
}

/// The owner a column holds, `None` for `''`.
pub(crate) fn owner_of(column: String) -> Option<String> {
    (!column.is_empty()).then_some(column)
}

impl Store {
    /// Replaces every owner id of the form `key-N` (the key's place in an earlier version's
    /// list): each `(legacy, id)` pair as given, any other `key-N` with an id no key has.
    /// Afterwards no `key-N` is left, so a later call changes nothing. One transaction;
    /// returns how many session and run rows changed.
    pub async fn adopt_legacy_owners(
        &self,
        owners: &[(String, String)],
    ) -> Result<u64, StoreError> {
        let _turn = self.write_turn().await;
        let changed = with_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await?;
            let legacy = sqlx::query(
                "SELECT COUNT(*) FROM sessions WHERE owner LIKE 'key-%'
                 UNION ALL SELECT COUNT(*) FROM runs WHERE owner LIKE 'key-%'",
            )
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|row| row.try_get::<i64, _>(0))
            .sum::<Result<i64, _>>()?;
            if legacy == 0 {
                return Ok(0);
            }
            let mut changed = 0;
            for (rename, orphan) in [
                (
                    "UPDATE sessions SET owner = $1 WHERE owner = $2",
                    "UPDATE sessions SET owner = $1 || owner WHERE owner LIKE 'key-%'",
                ),
                (
                    "UPDATE runs SET owner = $1 WHERE owner = $2",
                    "UPDATE runs SET owner = $1 || owner WHERE owner LIKE 'key-%'",
                ),
            ] {
                for (old, new) in owners {
                    changed += sqlx::query(rename)
                        .bind(new)
                        .bind(old)
                        .execute(&mut *tx)
                        .await?
                        .rows_affected();
                }
                changed += sqlx::query(orphan)
                    .bind(ORPHAN_PREFIX)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            }
            tx.commit().await?;
            changed
        });
        Ok(changed)
    }
}
