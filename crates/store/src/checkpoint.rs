//! Runs that wait for the client with a checkpoint (set with the status they wait in, see
//! [`EventBatch::park`](crate::EventBatch::park)): such a run outlives the node that held it, and whichever node its
//! answer reaches takes it over. The checkpoint is the runtime's JSON; the store keeps it as
//! text.

use agentwire_core::RunId;

use crate::error::StoreError;
use crate::store::{Store, with_pool};

impl Store {
    /// Takes a run that waits for the client with a checkpoint ([`EventBatch::park`](crate::EventBatch::park)) from
    /// `from`, the node that held it, for `to`: its checkpoint and the seq of its last stored
    /// event, or `None` when it is not such a run any more (answered, ended, or taken by another
    /// node first). From then on `from`'s writes of the run are refused (see
    /// [`Group::node`](crate::Group::node)). The caller makes sure `from` no longer holds it
    /// (`from` stopped, or is the caller itself, restarted).
    pub async fn take_over(
        &self,
        run_id: &RunId,
        from: &str,
        to: &str,
    ) -> Result<Option<(String, u64)>, StoreError> {
        let taken: Option<(String, i64)> = with_pool!(self, |pool, _begin| {
            sqlx::query_as(
                "UPDATE runs SET node = $3 WHERE id = $1 AND node = $2 AND status = 'awaiting' \
                 AND checkpoint IS NOT NULL RETURNING checkpoint, last_seq",
            )
            .bind(run_id.as_str())
            .bind(from)
            .bind(to)
            .fetch_optional(pool)
            .await?
        });
        Ok(taken.map(|(checkpoint, last_seq)| {
            (checkpoint, u64::try_from(last_seq).unwrap_or_default())
        }))
    }

    /// Replaces the checkpoint of a run that `node` holds and that still waits with one (the
    /// answers given so far changed it). False when it does not any more: it moved on, ended,
    /// or another node took it over.
    pub async fn update_checkpoint(
        &self,
        run_id: &RunId,
        node: &str,
        checkpoint: &str,
    ) -> Result<bool, StoreError> {
        let updated = with_pool!(self, |pool, _begin| {
            sqlx::query(
                "UPDATE runs SET checkpoint = $3 WHERE id = $1 AND node = $2 \
                 AND status = 'awaiting' AND checkpoint IS NOT NULL",
            )
            .bind(run_id.as_str())
            .bind(node)
            .bind(checkpoint)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(updated == 1)
    }
}
